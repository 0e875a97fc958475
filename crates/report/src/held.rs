//! Held connections (`--hold`): what became of the connections a run kept open beside its
//! load, in each report format. Read from the recorded counts and the series' gauge of how
//! many were held at each interval's end.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::{json, Value};

use crate::format::thousands;
use crate::Report;

/// A run's held connections, as every format shows them.
pub(crate) struct HeldFigures {
    /// Held connections that opened (connected and, when idle, answered).
    pub opened: u64,
    /// Those the server ended.
    pub closed: u64,
    /// Attempts that failed, by error kind name.
    pub failed: BTreeMap<String, u64>,
    /// Held at the end of the run's last whole interval.
    pub at_end: u64,
    /// The fewest held at an interval's end from the first at which the most were held on
    /// (before, they were opening).
    pub fewest: u64,
    /// The most held at an interval's end.
    pub most: u64,
}

/// The figures, when the run held connections.
pub(crate) fn figures(report: &Report) -> Option<HeldFigures> {
    let held = report.totals.held()?;
    let gauge: Vec<u64> = report.series.points().iter().map(|p| p.held).collect();
    let most = gauge.iter().copied().max().unwrap_or(0);
    // The last point may be the sliver after the last whole interval, which the workers of a
    // distributed run do not all record: its sum is not the run's.
    let whole = match gauge.len() {
        0 | 1 => &gauge[..],
        n => &gauge[..n - 1],
    };
    let from = whole.iter().position(|&h| h == most).unwrap_or(0);
    Some(HeldFigures {
        opened: held.opened,
        closed: held.closed,
        failed: held.failed.clone(),
        at_end: whole.last().copied().unwrap_or(0),
        fewest: whole[from..].iter().copied().min().unwrap_or(most),
        most,
    })
}

/// Failures as `timeout 3, connect_refused 1`.
fn failures(failed: &BTreeMap<String, u64>) -> String {
    let parts: Vec<String> = failed
        .iter()
        .map(|(kind, n)| format!("{kind} {}", thousands(*n)))
        .collect();
    parts.join(", ")
}

/// The text report's "Held connections" section.
pub(crate) fn write_text(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(h) = figures(report) else {
        return Ok(());
    };
    writeln!(out, "Held connections  (--hold, apart from the load)")?;
    writeln!(
        out,
        "  held {} at the most, {} at the fewest once that many had opened, {} at the end \
         (at intervals' ends)",
        thousands(h.most),
        thousands(h.fewest),
        thousands(h.at_end)
    )?;
    let failed: u64 = h.failed.values().sum();
    write!(
        out,
        "  opened {}, ended by the server {}, failed {}",
        thousands(h.opened),
        thousands(h.closed),
        thousands(failed)
    )?;
    if failed > 0 {
        write!(out, " ({})", failures(&h.failed))?;
    }
    writeln!(out, "\n")
}

/// The markdown report's held connections line.
pub(crate) fn write_markdown(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(h) = figures(report) else {
        return Ok(());
    };
    let failed: u64 = h.failed.values().sum();
    writeln!(
        out,
        "**Held connections**: {} at the most ({} at the fewest once that many had opened, {} at \
         the end); opened {}, ended by the server {}, failed {}{}\n",
        thousands(h.most),
        thousands(h.fewest),
        thousands(h.at_end),
        thousands(h.opened),
        thousands(h.closed),
        thousands(failed),
        match failed {
            0 => String::new(),
            _ => format!(" ({})", failures(&h.failed)),
        }
    )
}

/// The JSON document's `held`, present only when the run held connections.
pub(crate) fn json(report: &Report) -> Option<Value> {
    figures(report).map(|h| {
        json!({
            "opened": h.opened,
            "closed_by_server": h.closed,
            "failed": h.failed,
            "at_end": h.at_end,
            "fewest": h.fewest,
            "most": h.most,
        })
    })
}

#[cfg(test)]
mod tests {
    use belier_stats::{ErrorKind, Gauges, Recorder};

    use crate::seeded;

    #[test]
    fn held_connections_show_in_text_markdown_and_json() {
        let mut run = seeded::base();
        let mut r = Recorder::new();
        for _ in 0..12 {
            r.record_held_opened();
        }
        r.record_held_closed();
        r.record_held_closed();
        r.record_held_failed(ErrorKind::Timeout);
        run.totals += &r;
        let gauges = |held| Gauges {
            held,
            ..Gauges::default()
        };
        // Opening (4), all open (10), one ended and opened again (9), and the sliver after
        // the last whole interval, which not every worker recorded (5).
        run.series =
            seeded::series_with_gauges(&[gauges(4), gauges(10), gauges(9), gauges(10), gauges(5)]);
        let report = run.report();
        let text = crate::text::render_text(&report);
        assert!(
            text.contains(
                "held 10 at the most, 9 at the fewest once that many had opened, 10 at the end"
            ),
            "{text}"
        );
        assert!(
            text.contains("opened 12, ended by the server 2, failed 1 (timeout 1)"),
            "{text}"
        );
        let doc: serde_json::Value =
            serde_json::from_str(&crate::json::render_json(&report)).unwrap();
        assert_eq!(doc["held"]["opened"], 12);
        assert_eq!(doc["held"]["closed_by_server"], 2);
        assert_eq!(doc["held"]["failed"]["timeout"], 1);
        assert_eq!(doc["held"]["fewest"], 9);
        let mut md = String::new();
        super::write_markdown(&mut md, &report).unwrap();
        assert!(md.contains("10 at the most (9 at the fewest"), "{md}");
    }

    #[test]
    fn a_run_without_held_connections_says_nothing_of_them() {
        let run = seeded::base();
        let report = run.report();
        assert!(!crate::text::render_text(&report).contains("Held connections"));
        let doc: serde_json::Value =
            serde_json::from_str(&crate::json::render_json(&report)).unwrap();
        assert!(doc.get("held").is_none());
    }
}
