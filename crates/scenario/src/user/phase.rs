//! The one user of a `setup` or `teardown`: what it did, kept for the caller, and its
//! strict rule (every step must pass, 2xx unless it checks the status itself).

use std::sync::Mutex;

use belier_engine::user::Reply;

use belier_plan::program::{Program, Request};

/// What a run of `setup` or `teardown` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhaseOutcome {
    /// Each request sent, in order: `STEP STATUS`, or `STEP: no response (KIND)`.
    pub requests: Vec<String>,
    /// Why the phase failed: its first failed step and what failed there (a check, a status
    /// outside 2xx, no response). Its later steps were not run.
    pub failure: Option<String>,
    /// Whether its steps ran to their end.
    pub finished: bool,
    /// The values of the variables it extracts, by slot.
    pub(super) values: Vec<(usize, String)>,
}

impl PhaseOutcome {
    /// Ran to the end without a failed step.
    pub fn passed(&self) -> bool {
        self.finished && self.failure.is_none()
    }
}

/// A phase's user records here what it did.
#[derive(Debug)]
pub(super) struct PhaseLog {
    pub exports: Vec<usize>,
    pub outcome: Mutex<PhaseOutcome>,
}

impl PhaseLog {
    pub fn with<R>(&self, f: impl FnOnce(&mut PhaseOutcome) -> R) -> R {
        let mut outcome = self.outcome.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut outcome)
    }
}

/// A phase's reply: logged, and judged strictly (a status outside 2xx fails unless the step
/// checks the status itself); the first failure is kept as the phase's: the status when it
/// was wrong, else the first check that failed. Returns whether the step failed.
pub(super) fn phase_reply(
    phase: &PhaseLog,
    program: &Program,
    request: &Request,
    reply: &Reply<'_>,
    failed_check: Option<usize>,
    failed: bool,
) -> bool {
    // A gRPC call's status is its code, by name.
    let (status, expected, ok) = match (&request.grpc, reply.grpc) {
        (Some(_), Some(code)) => {
            let name = belier_grpc::Code::from_number(u32::from(code)).name();
            (name.to_string(), "OK", code == 0)
        }
        (Some(_), None) => (reply.status.to_string(), "OK", false),
        (None, _) => (
            reply.status.to_string(),
            "2xx",
            (200..300).contains(&reply.status),
        ),
    };
    let bad_status = !request.status_checked && !ok;
    phase.with(|o| {
        o.requests.push(format!("{} {status}", request.name));
        if o.failure.is_none() {
            o.failure = if bad_status {
                Some(format!(
                    "{}: status {status} (expected {expected})",
                    request.name
                ))
            } else {
                failed_check.map(|c| format!("check `{}` failed", program.checks[c]))
            };
        }
    });
    failed || bad_status
}
