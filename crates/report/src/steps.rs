//! The rows of the per-step and per-check tables (Locust's statistics table), computed once
//! from the recorded results for every renderer.

use belier_stats::{value_at_percentile, StepRow};
use hdrhistogram::Histogram;

use crate::format::{rate, thousands};
use crate::{per_second, ratio, Report};

/// Percentiles of the per-step table, in order.
pub(crate) const STEP_PERCENTILES: [f64; 3] = [50.0, 90.0, 99.0];

/// One request step's row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StepLine {
    pub name: String,
    pub requests: u64,
    pub failures: u64,
    /// Share of requests that failed, 0..=1 (0 when nothing was sent).
    pub failure_ratio: f64,
    /// Requests per second over the run.
    pub rate: f64,
    /// Latency of complete responses, microseconds: count, min, then [`STEP_PERCENTILES`],
    /// then max (all 0 without responses).
    pub responses: u64,
    pub min_us: u64,
    pub percentiles_us: [u64; 3],
    pub max_us: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

impl StepLine {
    /// Min, p50, p90, p99 and max, each as `show` formats microseconds, or `none` for a step
    /// without responses: it has no latency to show, not a latency of zero.
    pub(crate) fn latency_cells(&self, show: impl Fn(u64) -> String, none: &str) -> [String; 5] {
        let [p50, p90, p99] = self.percentiles_us;
        [self.min_us, p50, p90, p99, self.max_us].map(|us| {
            if self.responses == 0 {
                none.to_string()
            } else {
                show(us)
            }
        })
    }

    /// The figures of the row after its name, as every format shows them: requests, failures,
    /// fail % (two decimals, no sign), rate, then [`StepLine::latency_cells`]. Each renderer
    /// adds its own units and separators.
    pub(crate) fn cells(&self, show: impl Fn(u64) -> String, none: &str) -> [String; 9] {
        let [min, p50, p90, p99, max] = self.latency_cells(show, none);
        [
            thousands(self.requests),
            thousands(self.failures),
            format!("{:.2}", self.failure_ratio * 100.0),
            rate(self.rate),
            min,
            p50,
            p90,
            p99,
            max,
        ]
    }
}

/// One check's row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CheckLine {
    pub name: String,
    pub passed: u64,
    pub failed: u64,
    /// Share of evaluations that passed, 0..=1; `None` when the check was never evaluated
    /// (a run that ended before any user reached it).
    pub pass_ratio: Option<f64>,
}

/// The per-step table's title and the name of its first column: a targets run's rows are
/// its targets.
pub(crate) fn table_names(has_targets: bool) -> (&'static str, &'static str) {
    if has_targets {
        ("Targets", "target")
    } else {
        ("Steps", "name")
    }
}

/// Whether the run had scripted users, and so step and check tables to show.
pub(crate) fn has_steps(r: &Report) -> bool {
    !r.info.steps.is_empty() || !r.totals.steps().is_empty()
}

/// Min, [`STEP_PERCENTILES`] and max of `h`, microseconds (all 0 when it is empty).
pub(crate) fn spread(h: &Histogram<u64>) -> (u64, [u64; 3], u64) {
    if h.is_empty() {
        return (0, [0; 3], 0);
    }
    (
        h.min(),
        STEP_PERCENTILES.map(|p| value_at_percentile(h, p)),
        h.max(),
    )
}

/// One row per step the plan names, plus any recorded beyond the names (named by number).
pub(crate) fn step_lines(r: &Report) -> Vec<StepLine> {
    let recorded = r.totals.steps();
    let empty = StepRow::default();
    (0..r.info.steps.len().max(recorded.len()))
        .map(|i| {
            let row = recorded.get(i).unwrap_or(&empty);
            let h = row.values_us();
            let (min_us, percentiles_us, max_us) = spread(h);
            StepLine {
                name: name(&r.info.steps, i, "step"),
                requests: row.counts.requests,
                failures: row.counts.failures,
                failure_ratio: ratio(row.counts.failures, row.counts.requests).unwrap_or(0.0),
                rate: per_second(row.counts.requests, r.elapsed),
                responses: h.len(),
                min_us,
                percentiles_us,
                max_us,
                bytes_in: row.counts.bytes_in,
                bytes_out: row.counts.bytes_out,
            }
        })
        .collect()
}

/// One row per check the plan names, plus any recorded beyond the names.
pub(crate) fn check_lines(r: &Report) -> Vec<CheckLine> {
    let recorded = r.totals.checks();
    (0..r.info.checks.len().max(recorded.len()))
        .map(|i| {
            let c = recorded.get(i).copied().unwrap_or_default();
            CheckLine {
                name: name(&r.info.checks, i, "check"),
                passed: c.passed,
                failed: c.failed,
                pass_ratio: ratio(c.passed, c.passed + c.failed),
            }
        })
        .collect()
}

fn name(names: &[String], i: usize, what: &str) -> String {
    names
        .get(i)
        .cloned()
        .unwrap_or_else(|| format!("{what} {i}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded;

    #[test]
    fn rows_follow_the_names_and_add_up() {
        let run = seeded::with_steps();
        let report = run.report();
        let steps = step_lines(&report);
        assert_eq!(
            steps.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["login", "browse", "checkout"]
        );
        // Every request is under some step; the unused step has an all-zero row.
        assert_eq!(
            steps.iter().map(|s| s.requests).sum::<u64>(),
            run.totals.requests()
        );
        assert_eq!(steps[2].requests, 0);
        assert_eq!(steps[2].failure_ratio, 0.0);
        assert!(steps[0].min_us <= steps[0].percentiles_us[0]);
        assert!(steps[0].percentiles_us[2] <= steps[0].max_us);
        let checks = check_lines(&report);
        assert_eq!(checks.len(), 2);
        assert!(checks
            .iter()
            .all(|c| c.pass_ratio.is_some_and(|r| (0.0..=1.0).contains(&r))));
    }
}
