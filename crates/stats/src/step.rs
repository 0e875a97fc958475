//! Per-step and per-check statistics of runs with scripted users.
//!
//! A plan names its request steps and its checks; the engine records each request under its
//! step's row (indexed by the step's number, so memory grows with the plan, never with the
//! run) and each evaluated check under its own counter. Runs without users keep both empty.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

use crate::row::{Row, RowCounts};
use crate::sample::{Outcome, Sample};

/// What one request step recorded: its counters and the latency of its complete responses,
/// microseconds from the intended start.
pub type StepRow = Row<StepCounts>;

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

impl RowCounts for StepCounts {
    const KIND: &'static str = "step";

    fn merge(&mut self, other: &StepCounts) {
        self.requests += other.requests;
        self.failures += other.failures;
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
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
        if !matches!(sample.outcome, Outcome::Error(_)) {
            self.record_value_us(sample.latency_us());
        }
    }
}

impl AddAssign<&CheckCounts> for CheckCounts {
    fn add_assign(&mut self, other: &CheckCounts) {
        self.passed += other.passed;
        self.failed += other.failed;
    }
}
