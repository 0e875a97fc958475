//! A plan whose scenarios have loads of their own runs one executor per load, at the same
//! time: each executor's figures (requests, rate, failures, latency percentiles) beside the
//! run's totals, computed once when the run ends and kept in the results file's end line.

use std::time::Duration;

use belier_stats::{value_at_percentile, Recorder};
use serde::{Deserialize, Serialize};

use crate::results::StoredRecorder;
use crate::{per_second, ratio};

/// One executor's figures: a scenario with a load of its own, or the plan's shared load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioFigures {
    /// The scenario's name (the shared load: its scenarios' names joined by ` + `).
    pub name: String,
    /// Its load, in words (`closed loop, 10 users, duration: 5s`).
    pub load: String,
    /// Requests it sent, whatever their outcome.
    pub requests: u64,
    /// Of which failed (a plan's failed steps: no response, a bad status, a failed check).
    pub failures: u64,
    /// Iterations its users completed.
    pub iterations: u64,
    /// Open loop: iterations that were due (arrivals); `None` in a closed loop.
    pub arrivals: Option<u64>,
    /// Open loop: of those, the ones its users could not start (dropped); `None` in a closed
    /// loop, and in files written before it was recorded. The verdict judges each executor's
    /// rate on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<u64>,
    /// Requests per second over the run.
    pub rate: f64,
    /// Latency percentiles of its responses, µs: p50, p90, p99 (`None` without responses).
    pub p50_us: Option<u64>,
    /// See `p50_us`.
    pub p90_us: Option<u64>,
    /// See `p50_us`.
    pub p99_us: Option<u64>,
}

impl ScenarioFigures {
    /// The figures of what an executor recorded (`totals`) over a run of `elapsed`.
    pub fn of(
        name: &str,
        load: &str,
        open_loop: bool,
        totals: &Recorder,
        elapsed: Duration,
    ) -> ScenarioFigures {
        let latency = totals.latency_us();
        let at = |p: f64| (!latency.is_empty()).then(|| value_at_percentile(latency, p));
        ScenarioFigures {
            name: name.to_string(),
            load: load.to_string(),
            requests: totals.requests(),
            failures: totals.steps().iter().map(|s| s.counts.failures).sum(),
            iterations: totals.iterations(),
            arrivals: open_loop.then(|| totals.scheduled()),
            dropped: open_loop.then(|| totals.dropped()),
            rate: per_second(totals.requests(), elapsed),
            p50_us: at(50.0),
            p90_us: at(90.0),
            p99_us: at(99.0),
        }
    }

    /// Requests, failures, fail % (two decimals), rate, p50, p90 and p99 as `show` formats
    /// microseconds (`none` without responses), for every format's table.
    pub(crate) fn cells(&self, show: impl Fn(u64) -> String, none: &str) -> [String; 7] {
        let latency = |us: Option<u64>| us.map_or(none.to_string(), &show);
        [
            crate::format::thousands(self.requests),
            crate::format::thousands(self.failures),
            format!("{:.2}", self.failure_ratio() * 100.0),
            crate::format::rate(self.rate),
            latency(self.p50_us),
            latency(self.p90_us),
            latency(self.p99_us),
        ]
    }

    /// Share of its requests that failed, 0..=1.
    pub fn failure_ratio(&self) -> f64 {
        ratio(self.failures, self.requests).unwrap_or(0.0)
    }
}

/// Two shards' per-scenario figures (their end lines' `scenarios` and `scenario_totals`) as
/// one run's of length `elapsed`: each executor's totals added up and its figures made again
/// from the sum. None when either shard lacks the totals or names other executors.
pub(crate) fn merge_shards(
    x: (&[ScenarioFigures], &[StoredRecorder]),
    y: (&[ScenarioFigures], &[StoredRecorder]),
    elapsed: Duration,
) -> (Vec<ScenarioFigures>, Vec<StoredRecorder>) {
    let whole = |(figures, totals): (&[ScenarioFigures], &[StoredRecorder])| {
        !figures.is_empty() && figures.len() == totals.len()
    };
    let same = x.0.iter().map(|f| &f.name).eq(y.0.iter().map(|f| &f.name));
    if !(whole(x) && whole(y) && same) {
        return (Vec::new(), Vec::new());
    }
    let mut figures = Vec::new();
    let mut totals = Vec::new();
    for ((f, a), b) in x.0.iter().zip(x.1).zip(y.1) {
        let (Ok(mut sum), Ok(b)) = (a.decode(), b.decode()) else {
            return (Vec::new(), Vec::new());
        };
        sum += &b;
        let Ok(stored) = StoredRecorder::encode(&sum) else {
            return (Vec::new(), Vec::new());
        };
        figures.push(ScenarioFigures::of(
            &f.name,
            &f.load,
            f.arrivals.is_some(),
            &sum,
            elapsed,
        ));
        totals.push(stored);
    }
    (figures, totals)
}

/// The per-scenario table as text (nothing for a run of one load).
pub(crate) fn write_text(out: &mut String, r: &crate::Report) -> std::fmt::Result {
    use std::fmt::Write;

    use crate::format::{column_width, cut, ms, thousands, NAME_COLUMN};
    if r.scenarios.is_empty() {
        return Ok(());
    }
    let names = r.scenarios.iter().map(|s| s.name.as_str());
    let width = column_width(names, NAME_COLUMN, "scenario".len());
    writeln!(
        out,
        "\nScenarios  (each its own load, run at the same time; latency from intended start)"
    )?;
    writeln!(
        out,
        "  {:<width$}{:>10}{:>10}{:>9}{:>10}{:>11}{:>11}{:>11}  load",
        "scenario", "requests", "failures", "fail %", "rate/s", "p50", "p90", "p99"
    )?;
    for s in &r.scenarios {
        let [requests, failures, fail, per_s, p50, p90, p99] = s.cells(ms, "-");
        writeln!(
            out,
            "  {:<width$}{requests:>10}{failures:>10}{fail:>9}{per_s:>10}{p50:>11}{p90:>11}{p99:>11}  {}{}",
            cut(&s.name, NAME_COLUMN),
            s.load,
            s.arrivals
                .map_or(String::new(), |a| format!(" ({} arrivals)", thousands(a))),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::ScenarioFigures;
    use crate::fixtures::{info, report, results};
    use crate::{render_json, render_markdown, render_text, NamedReport};

    #[test]
    fn figures_and_tables_of_each_executor() {
        let (totals, series) = results();
        let f = ScenarioFigures::of(
            "pay | now",
            "open loop",
            true,
            &totals,
            Duration::from_secs(2),
        );
        assert_eq!((f.requests, f.rate), (1000, 500.0));
        assert_eq!(f.arrivals, Some(totals.scheduled()));
        assert!(f.p50_us <= f.p90_us && f.p90_us <= f.p99_us && f.p50_us.is_some());
        let info = info();
        let mut r = report(&info, &totals, &series);
        assert!(!render_text(&r).contains("Scenarios"));
        r.scenarios = vec![f];
        let text = render_text(&r);
        assert!(text.contains("\nScenarios  (each its own load"), "{text}");
        assert!(text.contains("  pay | now     1,000"), "{text}");
        let markdown = render_markdown(&[NamedReport {
            name: "run",
            report: &r,
        }]);
        assert!(
            markdown.contains("| pay \\| now | open loop | 1,000 | 0 | 0.00 | 500.0 |"),
            "{markdown}"
        );
        let html = crate::render_html(&[crate::HtmlRun {
            name: "run".into(),
            report: &r,
        }]);
        assert!(
            html.contains("<tr><th>pay | now</th><td>open loop</td><td>1,000</td>"),
            "{html}"
        );
        let json: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
        assert_eq!(json["scenarios"][0]["requests"], 1000);
    }
}
