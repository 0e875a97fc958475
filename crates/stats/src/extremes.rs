//! The exact smallest and largest value of each histogram.
//!
//! An HDR histogram keeps values to 3 significant digits: near 20 ms its buckets are 16 µs wide,
//! and the smallest value it reports is its bucket's lower edge, below every value recorded.
//! Beside each histogram the recorder keeps the true extremes, which cost two comparisons per
//! value, merge exactly, and are stored in results files, so that a report's min and max are
//! values that were measured and its percentiles never lie outside them.

use serde::{Deserialize, Serialize};

use crate::histogram::Metric;

/// Smallest and largest value of one metric; `min > max` while empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Range {
    /// Smallest value recorded.
    pub min: u64,
    /// Largest value recorded.
    pub max: u64,
}

impl Range {
    const EMPTY: Range = Range {
        min: u64::MAX,
        max: 0,
    };

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.min > self.max
    }

    #[inline]
    fn note(&mut self, value: u64) {
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    fn widen(&mut self, other: Range) {
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

/// The [`Range`] of every metric of a recorder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Extremes([Range; Metric::ALL.len()]);

impl Default for Extremes {
    fn default() -> Self {
        Extremes([Range::EMPTY; Metric::ALL.len()])
    }
}

impl Extremes {
    /// Notes `value` of `metric`.
    #[inline]
    pub(crate) fn note(&mut self, metric: Metric, value: u64) {
        self.0[metric as usize].note(value);
    }

    /// The range of `metric`, `None` when nothing was noted.
    pub(crate) fn of(&self, metric: Metric) -> Option<Range> {
        Some(self.0[metric as usize]).filter(|r| !r.is_empty())
    }

    /// Widens `metric`'s range to cover `range` (a stored one, or what a histogram restored
    /// without one can tell).
    pub(crate) fn widen(&mut self, metric: Metric, range: Range) {
        self.0[metric as usize].widen(range);
    }

    /// Adds another recorder's extremes.
    pub(crate) fn merge(&mut self, other: &Extremes) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            mine.widen(theirs);
        }
    }

    /// The non-empty ranges by metric name, for storing.
    pub(crate) fn stored(&self) -> std::collections::BTreeMap<String, Range> {
        Metric::ALL
            .iter()
            .filter_map(|&m| Some((m.name().to_string(), self.of(m)?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_note_merge_and_stay_empty_until_noted() {
        let mut a = Extremes::default();
        assert_eq!(a.of(Metric::Ttfb), None);
        a.note(Metric::Ttfb, 20_313);
        a.note(Metric::Ttfb, 20_999);
        a.note(Metric::Ttfb, 20_500);
        assert_eq!(
            a.of(Metric::Ttfb),
            Some(Range {
                min: 20_313,
                max: 20_999
            })
        );
        let mut b = Extremes::default();
        b.note(Metric::Ttfb, 7);
        b.note(Metric::Connect, 40);
        a.merge(&b);
        assert_eq!(
            a.of(Metric::Ttfb),
            Some(Range {
                min: 7,
                max: 20_999
            })
        );
        assert_eq!(a.of(Metric::Connect), Some(Range { min: 40, max: 40 }));
        assert_eq!(a.of(Metric::Tls), None);
        assert_eq!(a.stored().len(), 2);
    }
}
