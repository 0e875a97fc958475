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

mod parse;
mod target;
mod users;

use std::path::{Path, PathBuf};

pub use belier_plan::Origin;
pub use parse::Reader;
pub use target::{basic_auth, Format, Target};
pub use users::{Order, TargetUsers, MAX_STREAM_ROWS};

use belier_plan::{PlanError, Pos};

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
    let file = belier_plan::files::check(path, belier_plan::files::MOST_DATA_BYTES)
        .and_then(|_| std::fs::File::open(path).map_err(belier_plan::files::FileError::Io))
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
    use belier_plan::Scheme;

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
