//! Escaping for everything on the page that came from the user or the network (run names,
//! URL, method, error messages, warnings): safe both in text and in quoted attributes.

use std::fmt::{self, Display};

/// `s` escaped for HTML text and quoted attribute values alike.
pub(super) struct Esc<'a>(&'a str);

pub(super) fn esc(s: &str) -> Esc<'_> {
    Esc(s)
}

impl Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(['&', '<', '>', '"', '\'']) {
            f.write_str(&rest[..i])?;
            f.write_str(match rest.as_bytes()[i] {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                _ => "&#39;",
            })?;
            rest = &rest[i + 1..];
        }
        f.write_str(rest)
    }
}
