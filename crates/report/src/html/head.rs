//! The head of every HTML page belier writes (runs and capacity searches alike).

use std::fmt::{self, Write as _};

use super::escape::esc;

const CSS: &str = include_str!("report.css");

/// The page's head (the policy forbidding scripts and fetches, the report's CSS followed by
/// `extra_css`) titled `belier {kind}: {title}`, and the opening of its body.
pub(super) fn write_head(
    out: &mut String,
    kind: &str,
    title: &str,
    extra_css: &str,
) -> fmt::Result {
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>belier {kind}: {}</title>\n<style>{CSS}{extra_css}</style>\n</head>\n<body>\n<main>\n",
        esc(title)
    )
}
