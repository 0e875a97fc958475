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
    /// Held at the end of the last interval.
    pub at_end: u64,
    /// The fewest held at an interval's end after the first interval (which opens them).
    pub fewest: u64,
    /// The most held at an interval's end.
    pub most: u64,
}

/// The figures, when the run held connections.
pub(crate) fn figures(report: &Report) -> Option<HeldFigures> {
    let held = report.totals.held()?;
    let points = report.series.points();
    let gauge = points.iter().map(|p| p.held);
    let settled = || points.iter().skip(1).map(|p| p.held);
    Some(HeldFigures {
        opened: held.opened,
        closed: held.closed,
        failed: held.failed.clone(),
        at_end: points.last().map_or(0, |p| p.held),
        fewest: settled().min().or_else(|| gauge.clone().min()).unwrap_or(0),
        most: gauge.max().unwrap_or(0),
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
        "  held {} at the end, {} at the fewest and {} at the most (at intervals' ends)",
        thousands(h.at_end),
        thousands(h.fewest),
        thousands(h.most)
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
        "**Held connections**: {} at the end ({} at the fewest, {} at the most); opened {}, \
         ended by the server {}, failed {}{}\n",
        thousands(h.at_end),
        thousands(h.fewest),
        thousands(h.most),
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
        run.series = seeded::series_with_gauges(&[gauges(4), gauges(10), gauges(9), gauges(10)]);
        let report = run.report();
        let text = crate::text::render_text(&report);
        assert!(
            text.contains("held 10 at the end, 9 at the fewest and 10 at the most"),
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
        assert!(md.contains("10 at the end (9 at the fewest"), "{md}");
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
