//! Numbers as every report and view shows them: latencies in milliseconds, rates, counts.
//!
//! Each format keeps its own look (a CSV cell has no thousands separators, a text table
//! does), so there are several functions; each look is written once, here.

use std::time::Duration;

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Microseconds as milliseconds with three decimals, so microsecond resolution shows:
/// `1234567` → `1,234.567 ms`.
pub fn ms(us: u64) -> String {
    format!("{} ms", ms_bare(us))
}

/// Microseconds (fractional) as milliseconds with three decimals: [`ms`] of the nearest
/// microsecond.
pub fn ms_f(us: f64) -> String {
    ms(us.round() as u64)
}

/// [`ms`] without the unit, for a column headed `ms`: `1234567` → `1,234.567`.
pub fn ms_bare(us: u64) -> String {
    format!("{}.{:03}", thousands(us / 1000), us % 1000)
}

/// [`ms_bare`] without thousands separators, for machine-read cells (CSV): `1234567` →
/// `1234.567`.
pub fn ms_plain(us: u64) -> String {
    format!("{}.{:03}", us / 1000, us % 1000)
}

/// Microseconds as milliseconds with two decimals, for a narrow live view: `1234` →
/// `1.23 ms`.
pub fn ms_2(us: u64) -> String {
    format!("{:.2} ms", us as f64 / 1000.0)
}

/// A duration as milliseconds with three decimals, right-aligned in ten characters, for a
/// column of phases: `    12.345 ms`.
pub fn ms_column(d: Duration) -> String {
    format!("{:>10.3} ms", d.as_secs_f64() * 1000.0)
}

/// Milliseconds (fractional) with three decimals: `12.000 ms`.
pub fn ms_of_ms(ms: f64) -> String {
    format!("{ms:.3} ms")
}

/// A latency in the unit that reads best: `850 µs`, `231.4 ms`, `1.20 s`.
pub fn latency(us: f64) -> String {
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1_000_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// A rate with one decimal and thousands separators: `12,345.6`.
pub fn rate(r: f64) -> String {
    let whole = r.trunc() as u64;
    let tenth = ((r - r.trunc()) * 10.0).round() as u64;
    if tenth == 10 {
        format!("{}.0", thousands(whole + 1))
    } else {
        format!("{}.{}", thousands(whole), tenth)
    }
}

/// A level or a rate with thousands separators, and one decimal below 100 unless whole:
/// `1,880`, `12.5`, `64`.
pub fn level(r: f64) -> String {
    if r < 100.0 {
        return if r.fract() == 0.0 {
            format!("{r:.0}")
        } else {
            format!("{r:.1}")
        };
    }
    thousands(r.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds() {
        for (us, ms_, bare, plain, two) in [
            (0, "0.000 ms", "0.000", "0.000", "0.00 ms"),
            (1, "0.001 ms", "0.001", "0.001", "0.00 ms"),
            (1_234, "1.234 ms", "1.234", "1.234", "1.23 ms"),
            (
                1_234_567,
                "1,234.567 ms",
                "1,234.567",
                "1234.567",
                "1234.57 ms",
            ),
        ] {
            assert_eq!(ms(us), ms_, "{us}");
            assert_eq!(ms_bare(us), bare, "{us}");
            assert_eq!(ms_plain(us), plain, "{us}");
            assert_eq!(ms_2(us), two, "{us}");
        }
        assert_eq!(ms_f(1_499.5), "1.500 ms");
        assert_eq!(ms_column(Duration::from_micros(12_345)), "    12.345 ms");
        assert_eq!(ms_of_ms(12.0), "12.000 ms");
    }

    #[test]
    fn latencies() {
        for (us, shown) in [
            (850.0, "850 µs"),
            (231_400.0, "231.4 ms"),
            (1_200_000.0, "1.20 s"),
        ] {
            assert_eq!(latency(us), shown);
        }
    }

    #[test]
    fn counts_and_rates() {
        for (n, shown) in [
            (0, "0"),
            (999, "999"),
            (1_000, "1,000"),
            (1_234_567, "1,234,567"),
        ] {
            assert_eq!(thousands(n), shown);
        }
        for (r, shown) in [(12345.66, "12,345.7"), (9.96, "10.0"), (0.0, "0.0")] {
            assert_eq!(rate(r), shown);
        }
        for (r, shown) in [
            (1_880.4, "1,880"),
            (12.5, "12.5"),
            (64.0, "64"),
            (99.95, "100.0"),
        ] {
            assert_eq!(level(r), shown);
        }
    }
}
