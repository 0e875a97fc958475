//! Durations as plans write them (`250ms`, `2s`, `1m30s`, `1.5s`, or bare seconds) and as
//! messages show them.

use std::time::Duration;

/// Parses a duration: one or more `NUMBER UNIT` parts (`us`, `ms`, `s`, `m`, `h`), or a bare
/// number of seconds.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty".into());
    }
    if is_decimal(text) {
        return within_longest(nanos(text, NANOS_PER_S)?);
    }
    // Other numbers f64 reads (`1e3`, `+2`) stay accepted as seconds.
    if let Ok(secs) = text.parse::<f64>() {
        return seconds(secs);
    }
    let mut total = 0u128;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!("expected a number at `{rest}`"));
        }
        let number = &rest[..digits];
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = rest[..unit_len].trim();
        let unit_ns = match unit {
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" => NANOS_PER_S,
            "m" | "min" => 60 * NANOS_PER_S,
            "h" => 3600 * NANOS_PER_S,
            "" => return Err("a unit (ms, s, m, h) is needed after a number in a sum".into()),
            other => return Err(format!("unknown unit `{other}` (use us, ms, s, m or h)")),
        };
        total = total.saturating_add(nanos(number, unit_ns)?);
        rest = &rest[unit_len..];
    }
    within_longest(total)
}

const NANOS_PER_S: u128 = 1_000_000_000;

/// Digits with at most one `.`, and at least one digit.
fn is_decimal(text: &str) -> bool {
    text.bytes().any(|b| b.is_ascii_digit())
        && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && text.bytes().filter(|&b| b == b'.').count() <= 1
}

/// `number` (digits and `.`) units of `unit_ns` nanoseconds, to the nearest nanosecond. In
/// integers, not f64 seconds: `5195727670432us` read as f64 came out a nanosecond short, and
/// `belier check` then showed a microsecond less than the plan wrote.
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
    // Digits past the 18th weigh less than a nanosecond, whatever the unit.
    let fraction = &fraction[..fraction.len().min(18)];
    let scale = 10u128.pow(fraction.len() as u32);
    let fraction: u128 = fraction.parse().unwrap_or(0);
    Ok(whole
        .saturating_mul(unit_ns)
        .saturating_add((fraction * unit_ns + scale / 2) / scale))
}

/// Longest duration a plan may write, 100 years: a run adds its durations to the clock
/// (`Instant + Duration`), which panics past about 292 billion years, and 10^19 s is still a
/// valid `Duration`. No run, pause or timeout needs more.
const LONGEST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

const TOO_LONG: &str = "too long: at most 100 years";

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

/// A duration for humans: `850 µs`, `231.4 ms`, `1.20 s`.
pub(crate) fn show_us(us: f64) -> String {
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1_000_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// A duration as a plan would write it (`1m30s`, `250ms`).
pub(crate) fn show(d: Duration) -> String {
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
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 {
        out.push_str(&format!("{s}s"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_shows() {
        for (text, ms) in [
            ("250ms", 250),
            ("2s", 2000),
            ("1m30s", 90_000),
            ("1.5s", 1500),
            ("3", 3000),
            ("0.25", 250),
            ("1h", 3_600_000),
            ("2m", 120_000),
        ] {
            assert_eq!(parse(text), Ok(Duration::from_millis(ms)), "{text}");
        }
        for bad in ["", "s", "5 parsecs", "-1s", "1s5", "abc", "NaN", "1e400"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        // Found by the property tests: valid `Duration`s that overflowed a run's clock.
        for too_long in [
            "1e19",
            "10000000000000000000s",
            "5000000000000000000s",
            "876001h",
        ] {
            assert_eq!(parse(too_long), Err(TOO_LONG.into()), "{too_long}");
        }
        assert_eq!(parse("876000h"), Ok(LONGEST));
        // Found by the round-trip property: f64 seconds lost a nanosecond here.
        assert_eq!(
            parse("5195727670432us"),
            Ok(Duration::from_micros(5_195_727_670_432))
        );
        assert_eq!(parse("1.0000000005s"), Ok(Duration::new(1, 1)));
        assert_eq!(parse(".5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("1e3"), Ok(Duration::from_secs(1000)));
        for bad in ["1.2.3s", ".s", "1..2"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(show(Duration::from_millis(90_000)), "1m30s");
        assert_eq!(show(Duration::from_millis(250)), "250ms");
        assert_eq!(show_us(231_400.0), "231.4 ms");
        assert_eq!(show_us(850.0), "850 µs");
        assert_eq!(show_us(1_200_000.0), "1.20 s");
    }
}
