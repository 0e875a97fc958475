//! The capacity search: the highest request rate a service sustains while its SLOs hold, and
//! how it behaves past that rate.
//!
//! Everything here is pure. [`Search`] plans steady-state steps (a constant rate, a warm-up
//! that is not judged, a judged window) and takes each step's verdict: it grows the rate until
//! a step fails, bisects between the last pass and the first failure down to a precision,
//! confirms the answer with longer steps, and then plans the overload steps past it and a
//! recovery step below it. [`Slos`] judges a step's [`StepFigures`] against the SLOs (an
//! errors SLO always among them); [`drain`] decides
//! from probes when the server has served what a step left queued;
//! [`overload::classify`] names the behaviour past capacity. Running a step (an open loop at
//! the planned rate) and measuring it is the caller's job, so the whole search is tested
//! against simulated servers without a socket.
#![deny(missing_docs)]

/// The JSON schema of `belier capacity --output json`.
pub const SCHEMA: &str = include_str!("../schema/capacity.schema.json");

mod dimension;
pub mod drain;
mod outcome;
pub mod overload;
mod search;
mod slo;

pub use dimension::{number, Dimension};
pub use outcome::{kind_name, recovery, Outcome, Overload, Step, StepTiming, HOST_CPU_SATURATED};
pub use search::{
    Answer, LimitedBy, Search, SearchSettings, SettingsError, StepKind, StepPlan, DRAIN,
    VOIDED_STEPS,
};
pub use slo::{PromSlo, SloError, Slos, StepFigures, Verdict, DEFAULT_SLO};
