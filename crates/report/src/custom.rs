//! The rows of the custom-metrics table (counters and trends that plan scripts keep),
//! computed once from the recorded results for every renderer.

use belier_stats::{MetricKind, MetricRow};

use crate::format::{rate, thousands};
use crate::steps::spread;
use crate::{per_second, Report};

/// One custom metric's row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MetricLine {
    pub name: String,
    pub kind: MetricKind,
    /// A counter's total, or how many values a trend took.
    pub count: u64,
    /// The count per second over the run.
    pub rate: f64,
    /// A trend's values, microseconds: min, then [`STEP_PERCENTILES`], then max (all 0 for a
    /// counter or a trend without values); see [`crate::steps::STEP_PERCENTILES`].
    pub min_us: u64,
    pub percentiles_us: [u64; 3],
    pub max_us: u64,
}

impl MetricLine {
    /// Kind, count, rate, then min, p50, p90, p99 and max as `show` formats microseconds, or
    /// `none` where there is no value (a counter, an empty trend).
    pub(crate) fn cells(&self, show: impl Fn(u64) -> String, none: &str) -> [String; 8] {
        let [p50, p90, p99] = self.percentiles_us;
        let values = self.kind == MetricKind::Trend && self.count > 0;
        let [min, p50, p90, p99, max] = [self.min_us, p50, p90, p99, self.max_us].map(|us| {
            if values {
                show(us)
            } else {
                none.to_string()
            }
        });
        [
            self.kind.name().to_string(),
            thousands(self.count),
            rate(self.rate),
            min,
            p50,
            p90,
            p99,
            max,
        ]
    }
}

/// One row per metric the plan names, plus any recorded beyond the names (named by number,
/// shown as counters).
pub(crate) fn metric_lines(r: &Report) -> Vec<MetricLine> {
    let recorded = r.totals.metrics();
    let empty = MetricRow::default();
    (0..r.info.metrics.len().max(recorded.len()))
        .map(|i| {
            let row = recorded.get(i).unwrap_or(&empty);
            let (name, kind) = match r.info.metrics.get(i) {
                Some(m) => (m.name.clone(), m.kind),
                None => (format!("metric {i}"), MetricKind::Counter),
            };
            let (min_us, percentiles_us, max_us) = spread(row.values_us());
            MetricLine {
                name,
                kind,
                count: row.counts,
                rate: per_second(row.counts, r.elapsed),
                min_us,
                percentiles_us,
                max_us,
            }
        })
        .collect()
}
