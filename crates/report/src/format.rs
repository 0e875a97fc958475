//! Number and name formatting shared by the human-readable reports.

use std::borrow::Cow;

/// Most characters a name (a step, target, check, metric or scenario) takes in a text or
/// Markdown table; a longer one is cut in its middle (JSON keeps it whole). Besides keeping
/// the tables readable, this keeps every padding width far below the 65,535 that `std::fmt`
/// accepts: a wider one panics, which lost the report of a run with a 65,536-character step.
pub(crate) const NAME_COLUMN: usize = 60;

/// Most characters a threshold expression takes in the text report (cut like a name): wider
/// than a name, as an expression scoped to a step carries the step's name.
pub(crate) const EXPRESSION_COLUMN: usize = 160;

/// `name` in at most `max` characters: whole when it fits, else its start and its end joined
/// by `…` (the end too, as names that differ only there, URLs of one host, stay apart).
pub(crate) fn cut(name: &str, max: usize) -> Cow<'_, str> {
    let count = name.chars().count();
    if count <= max {
        return Cow::Borrowed(name);
    }
    let head = max.saturating_sub(1) / 2;
    let tail = max.saturating_sub(1) - head;
    let mut out: String = name.chars().take(head).collect();
    out.push('…');
    out.extend(name.chars().skip(count - tail));
    Cow::Owned(out)
}

/// The width of a table column holding `names` (each cut to `max`), at least `least`.
pub(crate) fn column_width<'a>(
    names: impl Iterator<Item = &'a str>,
    max: usize,
    least: usize,
) -> usize {
    names
        .map(|n| n.chars().count().min(max))
        .fold(least, usize::max)
}

// Counts (`1,234,567`), rates (`12,345.6`) and milliseconds (`1,234.567 ms`, of whole or
// fractional microseconds) as every format shows them: the vocabulary's.
pub(crate) use belier_vocabulary::format::{ms, ms_f, rate, thousands};

/// A check's pass ratio as a percentage, `-` when it was never evaluated.
pub(crate) fn pass_percent(ratio: Option<f64>) -> String {
    ratio.map_or_else(|| "-".to_string(), |r| format!("{:.2}", r * 100.0))
}

/// Bytes with a binary unit.
pub(crate) fn bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A percentile label: `50` → `p50`, `99.9` → `p99.9`, `100` → `max`.
pub(crate) fn percentile_label(p: f64) -> String {
    if p >= 100.0 {
        "max".into()
    } else {
        format!("p{p}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(pass_percent(None), "-");
        assert_eq!(pass_percent(Some(0.9796)), "97.96");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(rate(12345.66), "12,345.7");
        assert_eq!(rate(9.96), "10.0");
        assert_eq!(ms(1), "0.001 ms");
        assert_eq!(ms(1_234_567), "1,234.567 ms");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(percentile_label(99.9), "p99.9");
        assert_eq!(percentile_label(100.0), "max");
    }

    #[test]
    fn long_names_are_cut_in_their_middle() {
        assert_eq!(cut("GET /a", 10), "GET /a");
        assert_eq!(cut("0123456789", 10), "0123456789");
        assert_eq!(cut("0123456789a", 10), "0123…6789a");
        // Characters, not bytes: no cut inside a character.
        assert_eq!(cut("ééééééééééé", 5), "éé…éé");
        let long = "x".repeat(70_000);
        assert_eq!(cut(&long, NAME_COLUMN).chars().count(), NAME_COLUMN);
        assert_eq!(column_width([long.as_str(), "ab"].into_iter(), 60, 4), 60);
        assert_eq!(column_width(["ab"].into_iter(), 60, 4), 4);
    }
}
