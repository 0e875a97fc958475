//! Custom metrics: counters and trends that plan scripts keep (`counter("signed", 1)`,
//! `trend("queue_ms", 12.5)`), recorded per worker like the steps' rows and merged with `+=`.
//! A plan names them and says their kind; the recorder keeps one row per metric number, so
//! memory grows with the plan, never with the run.

use std::ops::AddAssign;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::histogram::{new_histogram, HISTOGRAM_SIGFIG};
use crate::latency::LatencySummary;
use crate::restore::RestoreError;

/// What a custom metric counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    /// A running total (`counter(name, n)` adds `n`).
    Counter,
    /// A distribution of durations (`trend(name, ms)`), summarised like latencies.
    Trend,
}

impl MetricKind {
    /// Its name in plans and reports: `counter` or `trend`.
    pub fn name(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Trend => "trend",
        }
    }
}

/// A custom metric's name and kind, as a plan declares it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomMetric {
    /// Its name, as scripts and thresholds write it.
    pub name: String,
    /// Counter or trend.
    pub kind: MetricKind,
}

/// What one custom metric recorded.
#[derive(Clone, Debug)]
pub struct MetricRow {
    /// A counter's total, or how many values a trend took.
    pub count: u64,
    /// A trend's values, microseconds, with the precision of the run's latency histogram
    /// (empty for a counter).
    values_us: Histogram<u64>,
}

impl Default for MetricRow {
    fn default() -> Self {
        MetricRow {
            count: 0,
            values_us: new_histogram(HISTOGRAM_SIGFIG),
        }
    }
}

impl MetricRow {
    /// A counter grows by `n`.
    pub fn add(&mut self, n: u64) {
        self.count = self.count.saturating_add(n);
    }

    /// A trend takes one value.
    pub fn record_us(&mut self, us: u64) {
        self.count += 1;
        self.values_us.saturating_record(us);
    }

    /// A trend's values (empty for a counter).
    pub fn values_us(&self) -> &Histogram<u64> {
        &self.values_us
    }

    /// Summary statistics of a trend's values.
    pub fn summary(&self) -> LatencySummary {
        LatencySummary::of(&self.values_us)
    }

    /// A row with this count and no values (results files: the values come apart).
    pub(crate) fn from_count(count: u64) -> MetricRow {
        MetricRow {
            count,
            ..MetricRow::default()
        }
    }

    /// Adds stored trend values (their count is in the stored count already).
    pub(crate) fn add_values(&mut self, h: &Histogram<u64>) -> Result<(), RestoreError> {
        self.values_us
            .add(h)
            .map_err(|e| RestoreError(format!("metric histogram does not fit: {e:?}")))
    }

    pub(crate) fn reset(&mut self) {
        self.count = 0;
        self.values_us.reset();
    }
}

impl AddAssign<&MetricRow> for MetricRow {
    fn add_assign(&mut self, other: &MetricRow) {
        self.count = self.count.saturating_add(other.count);
        self.values_us
            .add(&other.values_us)
            .expect("metric rows share histogram bounds");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_merge_counts_and_values() {
        let mut a = MetricRow::default();
        a.add(3);
        let mut b = MetricRow::default();
        b.add(4);
        a += &b;
        assert_eq!(a.count, 7);
        assert!(a.values_us().is_empty());

        let mut t = MetricRow::default();
        t.record_us(1_000);
        let mut u = MetricRow::default();
        u.record_us(9_000);
        u.record_us(5_000);
        t += &u;
        assert_eq!(t.count, 3);
        assert_eq!(t.values_us().len(), 3);
        assert_eq!(t.values_us().max(), u.values_us().max());
        t.reset();
        assert_eq!(t.count, 0);
        assert!(t.values_us().is_empty());
    }
}
