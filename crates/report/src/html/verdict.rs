//! The HTML report's verdict on an open-loop run.

use std::fmt::{self, Write as _};

use super::escape::esc;
use crate::Verdict;

/// An open-loop run's verdict: whether belier kept up, and if not what went wrong.
pub(super) fn write_verdict(out: &mut String, v: &Verdict) -> fmt::Result {
    if v.kept_up {
        write!(
            out,
            "<p class=\"ok\">Verdict: belier kept up ({})</p>",
            esc(&v.summary)
        )
    } else {
        write!(
            out,
            "<div class=\"warn\">Verdict: the generator may have shaped these results ({})<ul>",
            esc(&v.summary)
        )?;
        for f in &v.findings {
            write!(out, "<li>{}</li>", esc(f))?;
        }
        out.push_str("</ul></div>");
        Ok(())
    }
}
