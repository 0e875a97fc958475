//! Targets files: many requests for one run, in the formats other tools read, turned into
//! the engine's virtual users.
//!
//! Three formats are read ([`Format`]): vegeta's (a `METHOD URL` line, header lines, an
//! optional `@file` body, a blank line between targets), JSON lines (vegeta's `-format=json`:
//! `method`, `url`, `header` as a map of lists, `body` in base64) and Siege's URL list (`URL`,
//! or `URL POST body`). [`Reader`] parses any of them one target at a time, so a stream (a
//! generator program on standard input) is read as it comes; a file is read whole before the
//! run with [`load`], so that every error shows before anything is sent.
//!
//! [`TargetUsers`] hands the targets to the engine: each iteration of a user is one request to
//! the next target, taken in turn across the run ([`Order::InTurn`]) or drawn at random from a
//! seeded generator ([`Order::Random`]); from a stream, each target is sent once, as it comes.
//! Every distinct method and URL is a statistics row, which the reports show as the per-target
//! table.

pub(crate) mod follow;
mod parse;
mod users;

use std::path::{Path, PathBuf};

pub use parse::Reader;
pub use users::{Order, TargetUsers, MAX_STREAM_ROWS};

use crate::error::{PlanError, Pos};
use crate::model::Scheme;

/// A targets file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// vegeta's: `METHOD URL`, then `Name: value` headers, then `@path` for a body, blank
    /// lines between targets; `#` starts a comment line.
    Http,
    /// One JSON object a line: `{"method", "url", "header": {"Name": ["value"]}, "body"}`,
    /// the body in base64.
    Json,
    /// Siege's URL list: `URL`, or `URL POST body` (`PUT` too; `<path` reads the body from a
    /// file); `#` starts a comment.
    Siege,
}

impl Format {
    /// The name `--targets-format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Http => "http",
            Format::Json => "json",
            Format::Siege => "siege",
        }
    }

    /// Guesses the format from the first line that is neither blank nor a comment: `{` starts
    /// JSON, a method followed by a URL is vegeta's, anything else a URL list.
    pub fn detect(line: &str) -> Format {
        let line = line.trim_start();
        if line.starts_with('{') {
            return Format::Json;
        }
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some(first), Some(_))
                if !first.is_empty() && first.bytes().all(|b| b.is_ascii_uppercase()) =>
            {
                Format::Http
            }
            _ => Format::Siege,
        }
    }
}

/// One request of a targets file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Method, e.g. `GET`.
    pub method: String,
    /// The URL as written (the per-target table's name for it).
    pub url: String,
    /// Where it goes.
    pub origin: Origin,
    /// Origin-form request target: path and query.
    pub path_and_query: String,
    /// Header lines, in order.
    pub headers: Vec<(String, String)>,
    /// Request body.
    pub body: Vec<u8>,
    /// The line it starts on.
    pub line: usize,
}

/// Scheme, host and port of a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// Host name or address literal (IPv6 without brackets).
    pub host: String,
    /// TCP port (the scheme's default when the URL has none).
    pub port: u16,
}

impl Origin {
    /// `scheme://host:port`, IPv6 literals in brackets.
    pub fn url(&self) -> String {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        if self.host.contains(':') {
            format!("{scheme}://[{}]:{}", self.host, self.port)
        } else {
            format!("{scheme}://{}:{}", self.host, self.port)
        }
    }
}

/// Takes the credentials out of `url` (`user:pass@`, percent-decoded) and returns them as the
/// Basic `Authorization` header they stand for, as curl sends them: the URL is left without
/// them, fit to be shown in a report.
pub fn basic_auth(url: &mut url::Url) -> Option<(String, String)> {
    use base64::Engine as _;
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let decode = |s: &str| {
        // Percent-decoding; a `+` in a user name or password is a plus, not a space.
        url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    let user = decode(url.username());
    let password = decode(url.password().unwrap_or(""));
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    // Neither the password nor the user name is shown anywhere the URL is.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    Some(("Authorization".to_string(), format!("Basic {token}")))
}

/// A targets file read whole: its targets in order.
#[derive(Clone, Debug)]
pub struct Targets {
    /// The file, as given.
    pub file: PathBuf,
    /// The format it was read in.
    pub format: Format,
    /// Its targets, at least one.
    pub targets: Vec<Target>,
}

/// Reads the targets file at `path` whole, in `format` or the one its first line shows;
/// `@file` and `<file` bodies are relative to the file's directory. Fails on the first line
/// that cannot be read, naming the file and the line, and on a file without targets.
pub fn load(path: &Path, format: Option<Format>) -> Result<Targets, PlanError> {
    // Every target is held for the run: the file is bounded like a plan's data file.
    let file = crate::files::check(path, crate::files::MOST_DATA_BYTES)
        .and_then(|_| std::fs::File::open(path).map_err(crate::files::FileError::Io))
        .map_err(|e| {
            PlanError::new(
                path,
                Pos { line: 1, col: 1 },
                format!("cannot read the targets file: {e}"),
            )
        })?;
    let base = path.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut reader = Reader::new(std::io::BufReader::new(file), path, base, format);
    let mut targets = Vec::new();
    while let Some(target) = reader.next_target()? {
        targets.push(target);
    }
    if targets.is_empty() {
        return Err(PlanError::new(
            path,
            Pos {
                line: reader.line().max(1),
                col: 1,
            },
            "expected at least one target, found none",
        ));
    }
    Ok(Targets {
        file: path.to_path_buf(),
        format: reader.format().unwrap_or(Format::Siege),
        targets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_each_format_from_its_first_line() {
        assert_eq!(
            Format::detect(r#"{"method":"GET","url":"http://a/"}"#),
            Format::Json
        );
        assert_eq!(Format::detect("GET http://a/"), Format::Http);
        assert_eq!(Format::detect("  POST  http://a/x"), Format::Http);
        assert_eq!(Format::detect("http://a/"), Format::Siege);
        assert_eq!(Format::detect("http://a/ POST x=1"), Format::Siege);
        assert_eq!(Format::detect("get http://a/"), Format::Siege);
    }

    #[test]
    fn origins_bracket_ipv6() {
        let o = Origin {
            scheme: Scheme::Https,
            host: "::1".into(),
            port: 8443,
        };
        assert_eq!(o.url(), "https://[::1]:8443");
    }
}
