//! A trend: one metric of the runs of one name, run after run, as text (a sparkline and a
//! table), JSON and HTML ([`render_trend_html`](crate::render_trend_html)). It reads runs as
//! the history kept them, handed over as plain values.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

/// One metric over runs, oldest first.
#[derive(Clone, Debug, Serialize)]
pub struct Trend {
    /// The runs' name.
    pub name: String,
    /// The metric followed (`p99`, `rate`, `capacity` …).
    pub metric: String,
    /// The step, target or scenario it is taken from; the whole run when `None`.
    pub step: Option<String>,
    /// The metric's unit (`ms`, `/s`, `%`, or a capacity search's level).
    pub unit: String,
    /// One point per run.
    pub points: Vec<TrendPoint>,
}

/// One run in a trend.
#[derive(Clone, Debug, Serialize)]
pub struct TrendPoint {
    /// The run's id in the history.
    pub run: i64,
    /// Start of the run, RFC 3339 UTC.
    pub started_at: String,
    /// The metric's value; `None` when the run does not have it (no such step, no responses).
    pub value: Option<f64>,
    /// Requests that finished.
    pub requests: u64,
    /// Requests that failed.
    pub errors: u64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th percentile latency, ms.
    pub p99_ms: f64,
    /// The run's labels.
    pub labels: BTreeMap<String, String>,
    /// The run's results file, when known.
    pub results_path: Option<String>,
}

impl Trend {
    /// What the trend shows, in words: `p99 (ms) of 'svc'` or `p99 (ms) of step 'login' of
    /// 'checkout'`.
    pub fn title(&self) -> String {
        let of_step = self
            .step
            .as_deref()
            .map(|s| format!(" of step '{s}'"))
            .unwrap_or_default();
        format!(
            "{} ({}){of_step} of '{}'",
            self.metric, self.unit, self.name
        )
    }

    /// The values present, in run order.
    pub fn values(&self) -> Vec<f64> {
        self.points.iter().filter_map(|p| p.value).collect()
    }
}

/// Block characters from lowest to highest, for the sparkline.
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// A sparkline of `values` (`·` for a run without a value), scaled from their lowest to their
/// highest; flat when they are all equal.
pub fn sparkline(values: &[Option<f64>]) -> String {
    let present = values.iter().flatten().copied();
    let lo = present.clone().fold(f64::INFINITY, f64::min);
    let hi = present.fold(f64::NEG_INFINITY, f64::max);
    values
        .iter()
        .map(|v| match v {
            None => '·',
            Some(v) if hi > lo => {
                let at = ((v - lo) / (hi - lo) * (BARS.len() - 1) as f64).round() as usize;
                BARS[at.min(BARS.len() - 1)]
            }
            Some(_) => BARS[BARS.len() / 2],
        })
        .collect()
}

/// A value as a trend shows it: three decimals below 100, one above.
pub(crate) fn figure(v: f64) -> String {
    match v.abs() < 100.0 {
        true => format!("{v:.3}"),
        false => format!("{v:.1}"),
    }
}

/// The trend as text: the title, a sparkline with the lowest, median and highest values,
/// then a line per run with its change from the run before.
pub fn render_trend_text(t: &Trend) -> String {
    let mut out = format!("{}, {} runs\n", t.title(), t.points.len());
    let values: Vec<Option<f64>> = t.points.iter().map(|p| p.value).collect();
    let mut sorted = t.values();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        out += "no run has this value\n";
    } else {
        let _ = writeln!(
            out,
            "{}  lowest {}, median {}, highest {}",
            sparkline(&values),
            figure(sorted[0]),
            figure(sorted[sorted.len() / 2]),
            figure(sorted[sorted.len() - 1])
        );
    }
    out += "run\tstarted\tvalue\tchange\tlabels\n";
    let mut before: Option<f64> = None;
    for p in &t.points {
        let value = p.value.map_or("-".into(), figure);
        let change = match (before, p.value) {
            (Some(b), Some(v)) if b != 0.0 => format!("{:+.1} %", (v - b) / b * 100.0),
            _ => "-".into(),
        };
        let labels: Vec<String> = p.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(
            out,
            "{}\t{}\t{value}\t{change}\t{}",
            p.run,
            p.started_at,
            labels.join(",")
        );
        before = p.value.or(before);
    }
    out
}

/// The trend as JSON: the title's parts and every point.
pub fn render_trend_json(t: &Trend) -> String {
    // Plain data: serialising it cannot fail.
    serde_json::to_string_pretty(t).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(run: i64, value: Option<f64>) -> TrendPoint {
        TrendPoint {
            run,
            started_at: format!("2026-11-0{run}T10:00:00Z"),
            value,
            requests: 100,
            errors: 0,
            p50_ms: 1.0,
            p99_ms: value.unwrap_or(0.0),
            labels: BTreeMap::from([("commit".into(), format!("c{run}"))]),
            results_path: None,
        }
    }

    #[test]
    fn the_sparkline_spans_lowest_to_highest_and_marks_missing_runs() {
        let s = sparkline(&[Some(10.0), Some(20.0), None, Some(15.0)]);
        assert_eq!(s, "▁█·▅");
        assert_eq!(sparkline(&[Some(3.0), Some(3.0)]), "▅▅");
        assert_eq!(sparkline(&[]), "");
    }

    #[test]
    fn the_text_gives_each_run_its_value_and_change() {
        let t = Trend {
            name: "svc".into(),
            metric: "p99".into(),
            step: Some("login".into()),
            unit: "ms".into(),
            points: vec![point(1, Some(20.0)), point(2, None), point(3, Some(25.0))],
        };
        let text = render_trend_text(&t);
        assert!(
            text.starts_with("p99 (ms) of step 'login' of 'svc', 3 runs\n▁·█  lowest 20.000"),
            "{text}"
        );
        assert!(
            text.contains("\n2\t2026-11-02T10:00:00Z\t-\t-\tcommit=c2\n"),
            "{text}"
        );
        // The change is from the last run that had a value.
        assert!(
            text.contains("\n3\t2026-11-03T10:00:00Z\t25.000\t+25.0 %\tcommit=c3\n"),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(&render_trend_json(&t)).unwrap();
        assert_eq!(json["points"][2]["value"], 25.0);
        assert!(json["points"][1]["value"].is_null());
    }
}
