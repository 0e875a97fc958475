//! A plan whose scenarios have loads of their own runs one executor per load, at the same
//! time: each executor's figures (requests, rate, failures, latency percentiles) beside the
//! run's totals, computed once when the run ends and kept in the results file's end line.

use std::time::Duration;

use belier_stats::{value_at_percentile, Recorder};
use serde::{Deserialize, Serialize};

use crate::stored::StoredRecorder;

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

    /// Share of its requests that failed, 0..=1.
    pub fn failure_ratio(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.failures as f64 / self.requests as f64
        }
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

fn per_second(count: u64, elapsed: Duration) -> f64 {
    if elapsed.is_zero() {
        0.0
    } else {
        count as f64 / elapsed.as_secs_f64()
    }
}
