//! A curl command line → the request it sends, the equivalent `belier` flags, and a
//! one-step [`Draft`].
//!
//! The line is split as a POSIX shell would (quotes, backslashes, line continuations). The
//! options a copied request uses are read ("Copy as cURL" in browsers writes `-H`,
//! `--data-raw`, `--compressed`); options that only change what curl prints are ignored;
//! any other option is an error naming it, rather than a request that silently differs.

use super::draft::Draft;
use super::error::ImportError;

mod args;
mod refusals;
mod request;

use args::Args;
use request::INPUT;
pub use request::{CurlBody, CurlRequest};

/// A curl command made into belier's terms.
#[derive(Clone, Debug)]
pub struct CurlImport {
    /// The request.
    pub request: CurlRequest,
    /// The equivalent `belier` arguments (after the program name), for one request each time.
    pub flags: Vec<String>,
    /// A plan of that one request.
    pub draft: Draft,
    /// Options read and not carried over, and why.
    pub notes: Vec<String>,
}

/// Reads the curl `command`; `read` gives the bytes of a file a `@FILE` value names.
pub fn from_curl(
    command: &str,
    read: &mut dyn FnMut(&str) -> std::io::Result<Vec<u8>>,
) -> Result<CurlImport, ImportError> {
    let (request, notes) = Args::read(arguments(command)?)?.request(read)?;
    let flags = request.flags();
    let draft = request.draft()?;
    Ok(CurlImport {
        request,
        flags,
        draft,
        notes,
    })
}

/// The words of `command` after `curl`, split as a POSIX shell would.
fn arguments(command: &str) -> Result<impl Iterator<Item = String>, ImportError> {
    let words = shell_words::split(command)
        .map_err(|e| ImportError::new(INPUT, format!("cannot be split as a shell would: {e}")))?;
    // Bash's ANSI-C quoting, which browsers' "Copy as cURL (bash)" writes for bodies with
    // newlines or quotes, is not POSIX: split as POSIX, `$'a\nb'` would be sent as `$a\nb`.
    if let Some(word) = words.iter().find(|w| w.starts_with('$')) {
        if command.contains(" $'") || command.contains("\t$'") {
            return Err(ImportError::new(
                INPUT,
                format!(
                    "bash ANSI-C quoting (`$'…'`, here `{}`) is not read: quote the value with '…' (POSIX), or save the body to a file and use --data-binary @FILE",
                    word.chars().take(20).collect::<String>()
                ),
            ));
        }
    }
    let mut words = words.into_iter();
    match words.next() {
        Some(w) if w == "curl" || w.ends_with("/curl") => {}
        Some(w) => {
            return Err(ImportError::new(
                INPUT,
                format!("expected a command starting with `curl`, found `{w}`"),
            ))
        }
        None => {
            return Err(ImportError::new(
                INPUT,
                "expected `curl URL …`, found nothing",
            ))
        }
    }
    Ok(words)
}

#[cfg(test)]
mod tests;
