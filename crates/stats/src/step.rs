//! Per-step and per-check statistics of runs with scripted users.
//!
//! A plan names its request steps and its checks; the engine records each request under its
//! step's row (indexed by the step's number, so memory grows with the plan, never with the
//! run) and each evaluated check under its own counter. Runs without users keep both empty.

use std::ops::AddAssign;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::histogram::{new_histogram, HISTOGRAM_SIGFIG};
use crate::latency::LatencySummary;
use crate::restore::RestoreError;
use crate::sample::{Outcome, Sample};

/// What one request step recorded.
#[derive(Clone, Debug)]
pub struct StepRow {
    /// Counters of the step.
    pub counts: StepCounts,
    /// Latency of the step's complete responses, microseconds from the intended start, with
    /// the precision of the run's main latency histogram.
    latency_us: Histogram<u64>,
}

/// A step's counters, in a form that stores and restores exactly (results files).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepCounts {
    /// Requests sent by the step, whatever their outcome.
    pub requests: u64,
    /// Requests the user judged failed (no response, unexpected status, failed check).
    pub failures: u64,
    /// Wire bytes read.
    #[serde(default)]
    pub bytes_in: u64,
    /// Wire bytes written.
    #[serde(default)]
    pub bytes_out: u64,
}

/// How often one check passed and failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckCounts {
    /// Evaluations that passed.
    pub passed: u64,
    /// Evaluations that failed.
    pub failed: u64,
}

impl Default for StepRow {
    fn default() -> Self {
        StepRow {
            counts: StepCounts::default(),
            latency_us: new_histogram(HISTOGRAM_SIGFIG),
        }
    }
}

impl StepRow {
    /// Records one request of the step; `failed` is the user's verdict.
    pub fn record(&mut self, sample: &Sample, failed: bool) {
        self.counts.requests += 1;
        self.counts.failures += u64::from(failed);
        self.counts.bytes_in += sample.bytes_in;
        self.counts.bytes_out += sample.bytes_out;
        // Like the run's latency: only complete responses, or failures would distort it.
        if let Outcome::Response { .. } = sample.outcome {
            self.latency_us.saturating_record(sample.latency_us());
        }
    }

    /// The latency histogram (complete responses).
    pub fn latency_us(&self) -> &Histogram<u64> {
        &self.latency_us
    }

    /// Summary statistics of the latency histogram.
    pub fn latency_summary(&self) -> LatencySummary {
        LatencySummary::of(&self.latency_us)
    }

    /// A row with these counters and an empty histogram.
    pub(crate) fn from_counts(counts: StepCounts) -> StepRow {
        StepRow {
            counts,
            ..StepRow::default()
        }
    }

    /// Adds stored latency values.
    pub(crate) fn add_latency(&mut self, h: &Histogram<u64>) -> Result<(), RestoreError> {
        self.latency_us
            .add(h)
            .map_err(|e| RestoreError(format!("step histogram does not fit: {e:?}")))
    }

    pub(crate) fn reset(&mut self) {
        self.counts = StepCounts::default();
        self.latency_us.reset();
    }
}

impl AddAssign<&StepRow> for StepRow {
    fn add_assign(&mut self, other: &StepRow) {
        self.counts.requests += other.counts.requests;
        self.counts.failures += other.counts.failures;
        self.counts.bytes_in += other.counts.bytes_in;
        self.counts.bytes_out += other.counts.bytes_out;
        self.latency_us
            .add(&other.latency_us)
            .expect("step rows share histogram bounds");
    }
}

impl AddAssign<&CheckCounts> for CheckCounts {
    fn add_assign(&mut self, other: &CheckCounts) {
        self.passed += other.passed;
        self.failed += other.failed;
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
