//! The values flags take beyond numbers and paths: durations (the vocabulary's grammar, as
//! clap value parsers), on/off, the spacing of open-loop arrivals, the report format.

use std::time::Duration;

use clap::ValueEnum;

/// A setting turned on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    /// On.
    On,
    /// Off.
    Off,
}

/// Spacing of open-loop arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalsArg {
    /// Evenly spaced: exactly 1/rate apart.
    Even,
    /// Exponential gaps with mean 1/rate.
    Poisson,
}

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human-readable text.
    Text,
    /// JSON (schema: crates/report/schema/report.schema.json).
    Json,
}

/// Parses `30s`, `2m`, `1h30m`, `250ms`, `1.5s`, or a bare number of seconds (the
/// vocabulary's one grammar), longer than zero. Clap names the flag and the value, so the
/// error is the problem alone.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration_or_zero(s)?;
    if d.is_zero() {
        return Err("must be longer than zero".into());
    }
    Ok(d)
}

/// Longest duration accepted, 100 years: a run adds durations to the clock (`Instant +
/// Duration`), which panicked for `-z 1e19` (a valid `Duration`); no run needs more. The
/// parser holds it; the tests name it here.
#[cfg(test)]
pub use belier_vocabulary::duration::LONGEST;

/// A share of requests, `10%` or `0.1`, from none to all (`--trace-sample`).
pub fn parse_sample_share(s: &str) -> Result<f64, String> {
    let share = belier_vocabulary::percent::share(s).map_err(|e| e.to_string())?;
    match (0.0..=1.0).contains(&share) {
        true => Ok(share),
        false => Err(format!("{s} is not a share from 0% to 100%")),
    }
}

/// As [`parse_duration`], zero included (for settings where zero means "none").
pub fn parse_duration_or_zero(s: &str) -> Result<Duration, String> {
    belier_vocabulary::duration::parse(s).map_err(|e| e.problem)
}
