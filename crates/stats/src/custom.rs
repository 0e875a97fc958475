//! Custom metrics: counters and trends that plan scripts keep (`counter("signed", 1)`,
//! `trend("queue_ms", 12.5)`), recorded per worker like the steps' rows and merged with `+=`.
//! A plan names them and says their kind; the recorder keeps one row per metric number, so
//! memory grows with the plan, never with the run.

use serde::{Deserialize, Serialize};

use crate::row::{Row, RowCounts};

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

/// What one custom metric recorded: its count (a counter's total, or how many values a
/// trend took) and a trend's values, microseconds (empty for a counter).
pub type MetricRow = Row<u64>;

/// A custom metric's count. It saturates: a script may add any number.
impl RowCounts for u64 {
    const KIND: &'static str = "metric";

    fn merge(&mut self, other: &u64) {
        *self = self.saturating_add(*other);
    }
}

impl MetricRow {
    /// A counter grows by `n`.
    pub fn add(&mut self, n: u64) {
        self.counts = self.counts.saturating_add(n);
    }

    /// A trend takes one value.
    pub fn record_us(&mut self, us: u64) {
        self.counts += 1;
        self.record_value_us(us);
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
        assert_eq!(a.counts, 7);
        assert!(a.values_us().is_empty());

        let mut t = MetricRow::default();
        t.record_us(1_000);
        let mut u = MetricRow::default();
        u.record_us(9_000);
        u.record_us(5_000);
        t += &u;
        assert_eq!(t.counts, 3);
        assert_eq!(t.values_us().len(), 3);
        assert_eq!(t.values_us().max(), u.values_us().max());
        t.reset();
        assert_eq!(t.counts, 0);
        assert!(t.values_us().is_empty());
    }
}
