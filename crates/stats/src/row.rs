//! Rows of scripted users' statistics: counters and a histogram of microseconds, one row per
//! request step (its latency) and per custom metric (a trend's values), recorded per worker
//! and merged with `+=`. The recorder keeps one row per step or metric number, so memory grows
//! with the plan, never with the run.

use std::ops::AddAssign;

use hdrhistogram::Histogram;

use crate::histogram::{new_histogram, HISTOGRAM_SIGFIG};
use crate::latency::LatencySummary;
use crate::restore::RestoreError;

/// What a row counts besides its histogram, and how two workers' counts add up.
pub trait RowCounts: Copy + Default {
    /// What the row is, for errors: `step` or `metric`.
    const KIND: &'static str;

    /// Adds `other`'s counts to these.
    fn merge(&mut self, other: &Self);
}

/// Counters and a histogram of microseconds, with the precision of the run's latency
/// histogram: a request step's row ([`StepRow`](crate::StepRow)) or a custom metric's
/// ([`MetricRow`](crate::MetricRow)).
#[derive(Clone, Debug)]
pub struct Row<C> {
    /// The row's counters.
    pub counts: C,
    /// A step's latencies, from the intended start; a trend's values (empty for a counter).
    values_us: Histogram<u64>,
}

impl<C: RowCounts> Default for Row<C> {
    fn default() -> Self {
        Row {
            counts: C::default(),
            values_us: new_histogram(HISTOGRAM_SIGFIG),
        }
    }
}

impl<C: RowCounts> Row<C> {
    /// The histogram: a step's latencies (complete responses), a trend's values (empty for a
    /// counter).
    pub fn values_us(&self) -> &Histogram<u64> {
        &self.values_us
    }

    /// Summary statistics of the histogram.
    pub fn summary(&self) -> LatencySummary {
        LatencySummary::of(&self.values_us)
    }

    /// Puts one value in the histogram (the caller counts it).
    pub(crate) fn record_value_us(&mut self, us: u64) {
        self.values_us.saturating_record(us);
    }

    /// A row with these counts and an empty histogram (results files: the histogram comes
    /// apart).
    pub(crate) fn from_counts(counts: C) -> Self {
        Row {
            counts,
            ..Row::default()
        }
    }

    /// Adds stored values (their count is in the stored counts already).
    pub(crate) fn add_values(&mut self, h: &Histogram<u64>) -> Result<(), RestoreError> {
        self.values_us
            .add(h)
            .map_err(|e| RestoreError(format!("{} histogram does not fit: {e:?}", C::KIND)))
    }

    /// Empties the row, keeping the histogram's allocation.
    pub(crate) fn reset(&mut self) {
        self.counts = C::default();
        self.values_us.reset();
    }
}

impl<C: RowCounts> AddAssign<&Row<C>> for Row<C> {
    fn add_assign(&mut self, other: &Row<C>) {
        self.counts.merge(&other.counts);
        self.values_us
            .add(&other.values_us)
            .expect("rows share histogram bounds");
    }
}

/// Adds `theirs` into `mine` element by element, growing `mine` to the longer length.
pub(crate) fn add_rows<T: Default + Clone + for<'a> AddAssign<&'a T>>(
    mine: &mut Vec<T>,
    theirs: &[T],
) {
    if mine.len() < theirs.len() {
        mine.resize(theirs.len(), T::default());
    }
    for (m, t) in mine.iter_mut().zip(theirs) {
        *m += t;
    }
}

/// The row at `index`, growing `rows` with empty rows up to it.
pub(crate) fn row_mut<T: Default>(rows: &mut Vec<T>, index: usize) -> &mut T {
    if rows.len() <= index {
        rows.resize_with(index + 1, T::default);
    }
    &mut rows[index]
}
