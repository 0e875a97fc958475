//! The HTML page of a trend: one metric of the runs of a name, run after run, as a chart whose
//! every point links to its run's section of the page (its figures, labels and results file),
//! then those sections in a table.
//!
//! Built from the run report's pieces (the head with its Content-Security-Policy, the
//! escaping, the SVG chart), so it is as self-contained and script-free as that page.

use std::fmt::{self, Write as _};

use super::charts::figure;
use super::escape::esc;
use super::head::write_head;
use super::svg::{Axis, Chart, Scale, Stroke, Tick};
use crate::trend::{figure as value_text, Trend};

/// The trend's line and dots: the p99 colour of the run report.
const COLOUR: &str = "#0072b2";

/// What this page adds to the run report's CSS: the runs' table keeps its figures on one line
/// and wraps its long texts (labels with commit hashes, paths).
const CSS: &str = "table.trend th,table.trend td{white-space:nowrap}\
table.trend td.text{white-space:normal;overflow-wrap:anywhere;text-align:left;font-size:12px;\
min-width:10em}";

/// At most this many runs are named under the chart; past it, every k-th.
const MOST_TICKS: usize = 16;

/// Renders `t` as one self-contained HTML page.
pub fn render_trend_html(t: &Trend) -> String {
    let mut out = String::with_capacity(16 * 1024);
    // Writing into a String cannot fail; `let _` discards that impossible error.
    let _ = write_page(&mut out, t);
    out
}

fn write_page(out: &mut String, t: &Trend) -> fmt::Result {
    write_head(out, "trend", &t.title(), CSS)?;
    writeln!(
        out,
        "<header><h1>belier trend</h1><p class=\"target\">{}</p>\
         <p class=\"sub\">one point per run kept in the history, oldest first; a point links \
         to its run below</p></header>",
        esc(&t.title())
    )?;
    out.push_str(&chart(t));
    write_runs(out, t)?;
    out.push_str("</main>\n</body>\n</html>\n");
    Ok(())
}

/// The value `v` of a point, when it can be drawn.
fn drawable(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite() && *v >= 0.0)
}

/// The runs along x (one position each, named by their ids), the metric along y from 0.
fn chart(t: &Trend) -> String {
    let n = t.points.len();
    let every = n.div_ceil(MOST_TICKS).max(1);
    let x = Axis {
        scale: Scale::Linear {
            lo: -0.5,
            hi: n.max(1) as f64 - 0.5,
        },
        ticks: (0..n)
            .step_by(every)
            .map(|i| Tick {
                at: i as f64,
                label: format!("#{}", t.points[i].run),
            })
            .collect(),
        title: "run (oldest first)".into(),
        grid: false,
    };
    let hi = t
        .points
        .iter()
        .filter_map(|p| drawable(p.value))
        .fold(0.0, f64::max);
    let y = Axis::linear(hi * 1.1, &format!("{} ({})", t.metric, t.unit));
    let mut chart = Chart::new(&t.title(), x, y);
    let points: Vec<Option<(f64, f64)>> = t
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| drawable(p.value).map(|v| (i as f64, v)))
        .collect();
    let stroke = Stroke {
        colour: COLOUR,
        width: 2.0,
        dash: None,
        opacity: 1.0,
    };
    chart.line(&points, stroke, &t.metric);
    for (i, p) in t.points.iter().enumerate() {
        if let Some(v) = drawable(p.value) {
            let title = format!(
                "run {} · {} · {} {} {}",
                p.run,
                p.started_at,
                t.metric,
                value_text(v),
                t.unit
            );
            chart.linked_marker(i as f64, v, COLOUR, &title, &format!("#run-{}", p.run));
        }
    }
    if n == 0 {
        chart.notice("no runs of this name");
    } else if points.iter().all(Option::is_none) {
        chart.notice("no run has this value");
    }
    figure(
        &t.title(),
        "",
        &chart.finish(),
        "Each point is a run, at its value of the metric; a gap is a run without it (no such \
         step, or no responses). Hover a point for its run, click it for the run's figures.",
    )
}

/// Every run in a table, each row a target of its point's link.
fn write_runs(out: &mut String, t: &Trend) -> fmt::Result {
    write!(
        out,
        "<h2>Runs</h2>\n<table class=\"trend\"><thead><tr><th>run</th><th>started</th>\
         <th>{} ({})</th><th>requests</th><th>errors</th><th>p50 ms</th><th>p99 ms</th>\
         <th>labels</th><th>results file</th></tr></thead><tbody>\n",
        esc(&t.metric),
        esc(&t.unit)
    )?;
    for p in &t.points {
        let labels: Vec<String> = p.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        writeln!(
            out,
            "<tr id=\"run-{id}\"><th>{id}</th><td>{}</td><td class=\"value\">{}</td><td>{}</td>\
             <td>{}</td><td>{:.3}</td><td>{:.3}</td><td class=\"text\">{}</td>\
             <td class=\"text\">{}</td></tr>",
            esc(&p.started_at),
            p.value.map_or("–".into(), value_text),
            p.requests,
            p.errors,
            p.p50_ms,
            p.p99_ms,
            esc(&labels.join(", ")),
            esc(p.results_path.as_deref().unwrap_or("–")),
            id = p.run,
        )?;
    }
    out.push_str("</tbody></table>\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::trend::TrendPoint;

    #[test]
    fn every_run_has_a_linked_point_and_a_row_and_hostile_names_are_escaped() {
        let points = (1..=3)
            .map(|run| TrendPoint {
                run,
                started_at: format!("2026-11-0{run}T10:00:00Z"),
                value: (run != 2).then_some(run as f64 * 10.0),
                requests: 10,
                errors: 0,
                p50_ms: 1.0,
                p99_ms: 2.0,
                labels: BTreeMap::from([("env".into(), "<ci>".into())]),
                results_path: Some("/tmp/a\"b.jsonl".into()),
            })
            .collect();
        let t = Trend {
            name: "<script>".into(),
            metric: "p99".into(),
            step: None,
            unit: "ms".into(),
            points,
        };
        let html = render_trend_html(&t);
        assert_eq!(html.matches("<a href=\"#run-").count(), 2);
        assert!(html.contains("<a href=\"#run-3\"><circle"));
        assert_eq!(html.matches("<tr id=\"run-").count(), 3);
        assert!(html.contains("<td class=\"value\">30.000</td>"));
        assert!(!html.contains("<script>") && !html.contains("<ci>"));
        assert!(!html.contains("NaN"));
        let empty = render_trend_html(&Trend {
            points: vec![],
            ..t
        });
        assert!(empty.contains("no runs of this name"));
    }
}
