//! What restoring stored counters and histograms (a results file, a worker's stream) refuses,
//! and why: the bounds that keep a file from sizing what a reader allocates.

/// Most step rows, and most custom-metric rows, one stored recorder may hold. Each row is a
/// latency histogram of about 180 KiB while its stored counters take some 40 bytes, so a file
/// could claim a million rows in 40 MB and make a reader allocate 180 GB. A plan of more
/// request steps than this would hold as much per worker's recorder already.
pub const MOST_ROWS: usize = 1024;

/// Refuses more than [`MOST_ROWS`] stored rows (`what`: "step rows", …) before any is made.
/// (Checks need no bound: 16 bytes each in memory, fewer than they take stored.)
pub fn check_rows(what: &str, rows: usize) -> Result<(), RestoreError> {
    if rows > MOST_ROWS {
        return Err(RestoreError(format!(
            "{rows} {what}, more than the {MOST_ROWS} belier reads"
        )));
    }
    Ok(())
}

/// Why stored counters or histograms could not be restored.
#[derive(Debug, PartialEq, Eq)]
pub struct RestoreError(pub String);

impl std::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RestoreError {}
