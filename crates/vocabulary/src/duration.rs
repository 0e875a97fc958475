//! Durations as people write them — `250ms`, `1.5s`, `2m30s`, `1h 30m`, `800µs`, a bare number
//! of seconds — and as a plan would write them back.
//!
//! One grammar for flags, plans and `--fail-if` limits: one or more `NUMBER UNIT` parts, with
//! humantime's units (`ns`, `us`/`µs`, `ms`, `s`/`sec`, `m`/`min`, `h`/`hr`, `d`, `w`, `M`
//! for 30.44 days, `y` for 365.25 days, and their long forms), so whatever
//! `humantime::format_duration` writes reads back. It is not parsed by humantime itself: a
//! plan's `1.0000000005s` (rounded to the nanosecond) and `.5s` are refused there, and a
//! number's digits may not be split by a space (`1 2s`, twelve seconds to humantime).
//! Numbers are read in integer nanoseconds, not f64 seconds: `5195727670432us` read as f64
//! came out a nanosecond short.

use std::time::Duration;

/// Longest duration accepted, 100 years: a run adds its durations to the clock (`Instant +
/// Duration`), which panics past about 292 billion years, and 10^19 s is still a valid
/// `Duration`. No run, pause or timeout needs more.
pub const LONGEST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A unit a duration may be written in, shortest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unit {
    /// `ns`, `nsec`, `nanos`.
    Nanosecond,
    /// `us`, `µs`, `usec`.
    Microsecond,
    /// `ms`, `msec`, `millis`.
    Millisecond,
    /// `s`, `sec`, `secs`, `second`, `seconds`.
    Second,
    /// `m`, `min`, `mins`, `minute`, `minutes`.
    Minute,
    /// `h`, `hr`, `hrs`, `hour`, `hours`.
    Hour,
    /// `d`, `day`, `days`.
    Day,
    /// `w`, `wk`, `wks`, `week`, `weeks`.
    Week,
    /// `M`, `month`, `months`: 30.44 days, as humantime counts them.
    Month,
    /// `y`, `yr`, `yrs`, `year`, `years`: 365.25 days, as humantime counts them.
    Year,
}

impl Unit {
    /// The unit a word names (humantime's spellings).
    pub fn named(word: &str) -> Option<Unit> {
        Some(match word {
            "ns" | "nsec" | "nanos" => Unit::Nanosecond,
            "us" | "µs" | "usec" => Unit::Microsecond,
            "ms" | "msec" | "millis" => Unit::Millisecond,
            "s" | "sec" | "secs" | "second" | "seconds" => Unit::Second,
            "m" | "min" | "mins" | "minute" | "minutes" => Unit::Minute,
            "h" | "hr" | "hrs" | "hour" | "hours" => Unit::Hour,
            "d" | "day" | "days" => Unit::Day,
            "w" | "wk" | "wks" | "week" | "weeks" => Unit::Week,
            "M" | "month" | "months" => Unit::Month,
            "y" | "yr" | "yrs" | "year" | "years" => Unit::Year,
            _ => return None,
        })
    }

    fn nanos(self) -> u128 {
        const S: u128 = NANOS_PER_S;
        match self {
            Unit::Nanosecond => 1,
            Unit::Microsecond => 1_000,
            Unit::Millisecond => 1_000_000,
            Unit::Second => S,
            Unit::Minute => 60 * S,
            Unit::Hour => 3600 * S,
            Unit::Day => 86_400 * S,
            Unit::Week => 7 * 86_400 * S,
            Unit::Month => 2_630_016 * S,
            Unit::Year => 31_557_600 * S,
        }
    }
}

const NANOS_PER_S: u128 = 1_000_000_000;

/// What a caller accepts beyond the common grammar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    /// Whether a bare number (`1.5`, `1e3`) is read as seconds; if not, a unit is needed.
    pub bare_seconds: bool,
    /// The longest unit that may be written (`--fail-if` latencies stop at seconds: `1m`
    /// there is refused rather than read as a minute).
    pub longest_unit: Unit,
}

/// Every form: bare seconds and every unit.
pub const ANY: Rules = Rules {
    bare_seconds: true,
    longest_unit: Unit::Year,
};

/// A text that is not a duration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{text}`: {problem}")]
pub struct DurationError {
    /// The text as given.
    pub text: String,
    /// What is wrong with it.
    pub problem: String,
}

/// Why a duration is refused for being too long.
pub const TOO_LONG: &str = "too long: at most 100 years";

/// Parses a duration in any form (see the module's documentation); zero is accepted.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    parse_by(text, ANY)
}

/// Parses a duration, accepting only what `rules` allow.
pub fn parse_by(text: &str, rules: Rules) -> Result<Duration, DurationError> {
    read(text.trim(), rules).map_err(|problem| DurationError {
        text: text.to_string(),
        problem,
    })
}

fn read(text: &str, rules: Rules) -> Result<Duration, String> {
    if text.is_empty() {
        return Err("empty".into());
    }
    // Other numbers f64 reads (`1e3`, `+2`) are seconds too.
    if is_decimal(text) || text.parse::<f64>().is_ok() {
        if !rules.bare_seconds {
            return Err("a unit is needed, e.g. `200ms` or `1s`".into());
        }
        if is_decimal(text) {
            return within_longest(nanos(text, NANOS_PER_S)?);
        }
        return seconds(text.parse::<f64>().unwrap_or(f64::NAN));
    }
    let mut total = 0u128;
    let mut rest = text;
    while !rest.is_empty() {
        let (number, unit, after) = part(rest)?;
        let unit_ns = match Unit::named(unit) {
            Some(u) if u <= rules.longest_unit => u.nanos(),
            Some(_) => return Err(format!("`{unit}` is too long a unit here")),
            None if unit.is_empty() => {
                return Err("a unit (ms, s, m, h) is needed after a number in a sum".into())
            }
            None => return Err(format!("unknown unit `{unit}` (use us, ms, s, m or h)")),
        };
        total = total.saturating_add(nanos(number, unit_ns)?);
        rest = after;
    }
    within_longest(total)
}

/// The first `NUMBER UNIT` of `text` (spaces allowed around the unit) and what follows it.
fn part(text: &str) -> Result<(&str, &str, &str), String> {
    let digits = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    if digits == 0 {
        return Err(format!("expected a number at `{text}`"));
    }
    let (number, rest) = text.split_at(digits);
    let rest = rest.trim_start();
    let letters = rest
        .find(|c: char| !c.is_alphabetic())
        .unwrap_or(rest.len());
    let (unit, rest) = rest.split_at(letters);
    Ok((number, unit, rest.trim_start()))
}

/// Digits with at most one `.`, and at least one digit.
fn is_decimal(text: &str) -> bool {
    text.bytes().any(|b| b.is_ascii_digit())
        && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && text.bytes().filter(|&b| b == b'.').count() <= 1
}

/// `number` (digits and `.`) units of `unit_ns` nanoseconds, to the nearest nanosecond.
fn nanos(number: &str, unit_ns: u128) -> Result<u128, String> {
    let not_a_number = || format!("`{number}` is not a number");
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
        return Err(not_a_number());
    }
    // Only an overflow fails here (digits only): far too long in any unit.
    let whole: u128 = whole
        .parse()
        .unwrap_or(if whole.is_empty() { 0 } else { u128::MAX });
    // Digits past the 18th weigh less than a nanosecond in any unit up to a week (a tenth
    // of one for a year).
    let fraction = &fraction[..fraction.len().min(18)];
    let scale = 10u128.pow(fraction.len() as u32);
    let fraction: u128 = fraction.parse().unwrap_or(0);
    Ok(whole
        .saturating_mul(unit_ns)
        .saturating_add((fraction * unit_ns + scale / 2) / scale))
}

fn within_longest(nanos: u128) -> Result<Duration, String> {
    if nanos > LONGEST.as_nanos() {
        return Err(TOO_LONG.into());
    }
    Ok(Duration::from_nanos(nanos as u64))
}

fn seconds(secs: f64) -> Result<Duration, String> {
    if !secs.is_finite() || secs < 0.0 {
        return Err("must be a finite, non-negative time".into());
    }
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if d <= LONGEST => Ok(d),
        _ => Err(TOO_LONG.into()),
    }
}

/// A duration as a plan would write it: `1m30s`, `250ms`, `850us`, `0s`.
pub fn format(d: Duration) -> String {
    let ms = d.as_millis();
    if !d.as_nanos().is_multiple_of(1_000_000) {
        return format!("{}us", d.as_micros());
    }
    if ms == 0 {
        return "0s".into();
    }
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let s = ms / 1000;
    let (h, m, s) = (s / 3600, (s / 60) % 60, s % 60);
    let mut out = String::new();
    for (n, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
