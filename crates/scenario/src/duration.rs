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
    if let Ok(secs) = text.parse::<f64>() {
        return seconds(secs);
    }
    let mut total = 0.0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!("expected a number at `{rest}`"));
        }
        let number: f64 = rest[..digits]
            .parse()
            .map_err(|_| format!("`{}` is not a number", &rest[..digits]))?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = rest[..unit_len].trim();
        let scale = match unit {
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            "" => return Err("a unit (ms, s, m, h) is needed after a number in a sum".into()),
            other => return Err(format!("unknown unit `{other}` (use us, ms, s, m or h)")),
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    seconds(total)
}

fn seconds(secs: f64) -> Result<Duration, String> {
    if !secs.is_finite() || secs < 0.0 {
        return Err("must be a finite, non-negative time".into());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| "too long".to_string())
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
        assert_eq!(show(Duration::from_millis(90_000)), "1m30s");
        assert_eq!(show(Duration::from_millis(250)), "250ms");
        assert_eq!(show_us(231_400.0), "231.4 ms");
        assert_eq!(show_us(850.0), "850 µs");
        assert_eq!(show_us(1_200_000.0), "1.20 s");
    }
}
