//! The server's own account of its time (`--server-timing`, `--server-time-header`), from the
//! recorded results for every renderer: each metric's percentiles, the server's time (its
//! `total` metric, else its largest) and the time outside the server (latency minus the
//! server's time), and what became of the responses that gave none. A run that did not read
//! the header shows nothing.

use std::fmt::Write as _;

use belier_stats::{value_at_percentile, FigureRow, TimingCounts};

use crate::format::thousands;
use crate::Report;

/// The row of the server's time, named as the report shows it.
pub(crate) const SERVER_ROW: &str = "server's time";
/// The row of the time outside the server.
pub(crate) const OUTSIDE_ROW: &str = "outside";

/// One row of the table: a metric, the server's time or the time outside, in microseconds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TimingLine {
    pub name: String,
    pub count: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

/// A run's server times as the reports show them.
pub(crate) struct Figures {
    pub counts: TimingCounts,
    /// Each metric, by name.
    pub metrics: Vec<TimingLine>,
    /// The server's time, then the time outside (absent when no response was timed).
    pub whole: Vec<TimingLine>,
}

impl Figures {
    /// Every row: the metrics, then the server's time and the time outside.
    pub(crate) fn lines(&self) -> impl Iterator<Item = &TimingLine> {
        self.metrics.iter().chain(&self.whole)
    }

    /// What became of the responses, in words: "1,000 responses timed; 2 without the
    /// header, …" (the counts that are not zero past the first).
    pub(crate) fn counted(&self) -> String {
        let c = &self.counts;
        let mut parts = vec![format!("{} responses timed", thousands(c.timed))];
        for (n, what) in [
            (c.missing, "without the header"),
            (c.malformed, "with a header that gave no duration"),
            (c.dropped, "metric figures dropped (past 16 names)"),
            (
                c.above_latency,
                "where the server's time exceeded the latency",
            ),
        ] {
            if n > 0 {
                parts.push(format!("{} {what}", thousands(n)));
            }
        }
        parts.join("; ")
    }
}

/// The server times of `report`, when its run read them.
pub(crate) fn figures(report: &Report) -> Option<Figures> {
    let times = report.totals.server_times()?;
    let metrics = times
        .metrics
        .iter()
        .filter(|(_, row)| row.counts.figures > 0)
        .map(|(name, row)| line(name, row))
        .collect();
    let whole = match times.counts.timed {
        0 => Vec::new(),
        _ => vec![
            line(SERVER_ROW, &times.server),
            line(OUTSIDE_ROW, &times.outside),
        ],
    };
    Some(Figures {
        counts: times.counts,
        metrics,
        whole,
    })
}

fn line(name: &str, row: &FigureRow) -> TimingLine {
    let h = row.values_us();
    TimingLine {
        name: name.to_string(),
        count: row.counts.figures,
        p50_us: value_at_percentile(h, 50.0),
        p90_us: value_at_percentile(h, 90.0),
        p99_us: value_at_percentile(h, 99.0),
        max_us: h.max(),
    }
}

impl TimingLine {
    /// The row's cells after its name, as every format shows them: its count, then p50, p90,
    /// p99 and max in milliseconds (`unit` after each: "" or " ms").
    pub(crate) fn cells(&self, unit: &str) -> [String; 5] {
        let ms = |us: u64| format!("{:.3}{unit}", us as f64 / 1000.0);
        [
            thousands(self.count),
            ms(self.p50_us),
            ms(self.p90_us),
            ms(self.p99_us),
            ms(self.max_us),
        ]
    }
}

/// The text report's table.
pub(crate) fn write_text(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(f) = figures(report) else {
        return Ok(());
    };
    writeln!(out, "\nServer timing  ({})", f.counted())?;
    let width = f.lines().map(|l| l.name.len()).max().unwrap_or(0).max(13);
    writeln!(
        out,
        "  {:<width$}  {:>10}  {:>9}  {:>9}  {:>9}  {:>9}",
        "metric", "count", "p50 ms", "p90 ms", "p99 ms", "max ms"
    )?;
    for l in f.lines() {
        let [count, p50, p90, p99, max] = l.cells("");
        writeln!(
            out,
            "  {:<width$}  {count:>10}  {p50:>9}  {p90:>9}  {p99:>9}  {max:>9}",
            l.name
        )?;
    }
    if !f.whole.is_empty() {
        writeln!(
            out,
            "  (server's time: its `total` metric, else its largest; outside: latency minus it)"
        )?;
    }
    Ok(())
}

/// The markdown report's table, as the text report has it.
pub(crate) fn write_markdown(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(f) = figures(report) else {
        return Ok(());
    };
    writeln!(out, "\nServer timing: {}.\n", f.counted())?;
    writeln!(
        out,
        "| Metric | Count | p50 | p90 | p99 | max |\n| :-- | --: | --: | --: | --: | --: |"
    )?;
    for l in f.lines() {
        let name = l.name.replace('|', "\\|").replace('`', "'");
        writeln!(out, "| `{name}` | {} |", l.cells(" ms").join(" | "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use belier_stats::{Outcome, Sample, TimingHeader};

    use crate::seeded;

    /// [`seeded::base`] with 100 responses timed by their server (`app` 1..=100 ms inside a
    /// `total` 1 ms longer, 200 ms of latency each), one without the header and one whose
    /// header gives no duration.
    fn timed() -> seeded::Run {
        let mut run = seeded::base();
        let t = Instant::now();
        let ok = Outcome::Response { status: 200 };
        for i in 1..=102u64 {
            let sample = Sample::simulated(t, 0, 200_000, ok);
            run.totals.record(&sample);
            let value = match i {
                101 => None,
                102 => Some("app;desc=\"no dur\"".to_string()),
                _ => Some(format!("app;dur={i}, total;dur={}", i + 1)),
            };
            let header = TimingHeader::ServerTiming;
            run.totals
                .record_server_timing(header, value.as_deref().map(str::as_bytes), 200_000);
        }
        run
    }

    /// Whether `ms` is `expected` within the histograms' precision (0.1 %).
    fn close(ms: f64, expected: f64) -> bool {
        (ms - expected).abs() <= expected * 0.001
    }

    #[test]
    fn each_format_shows_the_server_timing_table() {
        let run = timed();
        let report = run.report();
        let text = crate::render_text(&report);
        assert!(
            text.contains(
                "\nServer timing  (100 responses timed; 1 without the header; 1 with a header \
                 that gave no duration)\n"
            ),
            "{text}"
        );
        // Each row's count, then its figures in ms, which must be those given within the
        // histograms' 0.1 %.
        let row = |name: &str, count: &str, expected_ms: &[f64]| {
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with(name))
                .unwrap_or_else(|| panic!("no row {name}\n{text}"));
            let cells: Vec<&str> = line[2 + 13..].split_whitespace().collect();
            assert_eq!(cells[0], count, "{line}");
            for (cell, expected) in cells[1..].iter().zip(expected_ms) {
                assert!(close(cell.parse().unwrap(), *expected), "{line}");
            }
        };
        row("app", "100", &[50.0, 90.0, 99.0, 100.0]);
        // total = app + 1 ms: 2..=101 ms; outside = 200 ms minus it: 99..=198 ms.
        row("server's time", "100", &[51.0, 91.0, 100.0, 101.0]);
        row("outside", "100", &[148.0, 188.0, 197.0, 198.0]);

        let doc: serde_json::Value = serde_json::from_str(&crate::render_json(&report)).unwrap();
        let st = &doc["server_timing"];
        assert_eq!(
            (st["timed"].as_u64(), st["missing"].as_u64()),
            (Some(100), Some(1))
        );
        let p99_ms = st["metrics_us"]["app"]["percentiles"]["p99"]
            .as_f64()
            .unwrap()
            / 1000.0;
        assert!(close(p99_ms, 99.0), "{st}");
        assert_eq!(st["outside_us"]["measured_from"], "outside");
        let schema: serde_json::Value = serde_json::from_str(crate::SCHEMA).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}");

        let markdown = crate::render_markdown(&[crate::NamedReport {
            name: "timed",
            report: &report,
        }]);
        assert!(
            markdown.contains("| `app` | 100 | 50.015 ms | 90.047 ms | 99.007 ms | 100.031 ms |"),
            "{markdown}"
        );
        let html = crate::render_html(&[crate::HtmlRun {
            name: "timed".into(),
            report: &report,
        }]);
        assert!(html.contains("Server timing of timed</h2>"), "no table");
        assert!(html.contains("<tr><th>app</th><td>100</td>"), "no app row");
        // A run that did not read the header shows nothing of it.
        let plain = seeded::base();
        let report = plain.report();
        assert!(!crate::render_text(&report).contains("Server timing"));
        let doc: serde_json::Value = serde_json::from_str(&crate::render_json(&report)).unwrap();
        assert!(doc.get("server_timing").is_none());
    }
}
