//! Durations in plans: the vocabulary's one parser and formatter
//! ([`belier_vocabulary::duration`]). Plan messages quote the text themselves (`found
//! `5 parsecs`: …`), so they take the parser's problem alone.

use std::time::Duration;

pub(crate) use belier_vocabulary::duration::format as show;

/// A duration as plans write it (`250ms`, `2s`, `1m30s`, `1.5s`, bare seconds); the error is
/// what is wrong with `text`.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    belier_vocabulary::duration::parse(text).map_err(|e| e.problem)
}
