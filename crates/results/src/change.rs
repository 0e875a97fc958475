//! Changes made to a running test (a level set, a pause, a resume), as the results file keeps
//! them.

use serde::{Deserialize, Serialize};

/// One change made to a run while it ran (through the engine's control handle).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// When, seconds from the start of the run.
    pub at_s: f64,
    /// What changed.
    pub what: ChangeKind,
    /// The level held from then on: arrivals per second (open loop), connections or users
    /// (closed loop); 0 after a pause.
    pub level: f64,
    /// The level held just before.
    pub from: f64,
}

/// What a [`Change`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// The open loop's rate (requests or iterations per second) was set.
    Rate,
    /// The closed loop's number of connections was set.
    Connections,
    /// The closed loop's number of scripted users was set.
    Users,
    /// Sending stopped without ending the run (the level went to 0).
    Pause,
    /// Sending went on after a pause, at the level before it or the last one set meanwhile.
    Resume,
}

impl ChangeKind {
    /// The name the results file and the reports use.
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::Rate => "rate",
            ChangeKind::Connections => "connections",
            ChangeKind::Users => "users",
            ChangeKind::Pause => "pause",
            ChangeKind::Resume => "resume",
        }
    }
}
