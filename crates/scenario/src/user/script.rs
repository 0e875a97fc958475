//! A user running its plan's scripts: `script:` steps, and the hooks around its requests.

use belier_engine::user::{Outgoing, Reply, Tally};

use super::{Local, Shared, State};
use crate::script::{run, Call};

impl Local {
    /// Runs script `index` (a `script:` step, or a hook with its request or response) and
    /// counts it under its check; an error is kept for the report. Returns whether it passed.
    pub(super) fn script(&mut self, shared: &Shared, index: usize, call: Call<'_, '_>) -> bool {
        let program = &shared.program;
        let script = &program.scripts[index];
        let outcome = run(
            script,
            &mut self.vars,
            call,
            &program.metrics,
            &mut self.tallies,
        );
        let passed = outcome.error.is_none();
        if let Some(message) = &outcome.error {
            shared.script_errors.record(script.check, message);
        }
        self.tallies.push(Tally::Check {
            check: script.check,
            passed,
        });
        self.check_results[script.check] = passed;
        if outcome.end_iteration {
            if let State::Running { abort, .. } = &mut self.state {
                *abort = true;
            }
        }
        passed
    }

    /// A `script:` step: a failure counts like a failed request step's (`if: failed`).
    pub(super) fn script_step(&mut self, shared: &Shared, index: usize) {
        let passed = self.script(shared, index, Call::Step);
        self.last_failed = !passed;
    }

    /// The request's `before_request` hook, if it has one: `None` when it failed, and the
    /// request is not sent (the step has failed).
    pub(super) fn before_request(
        &mut self,
        shared: &Shared,
        request: usize,
        mut outgoing: Outgoing,
    ) -> Option<Outgoing> {
        let Some(hook) = shared.program.requests[request].before else {
            return Some(outgoing);
        };
        if self.script(shared, hook, Call::Before(&mut outgoing)) {
            return Some(outgoing);
        }
        self.pending = None;
        self.conclude(shared, request, true);
        None
    }

    /// The request's `after_response` hook, if it has one: whether it failed.
    pub(super) fn after_response(
        &mut self,
        shared: &Shared,
        request: usize,
        reply: &Reply<'_>,
    ) -> bool {
        match shared.program.requests[request].after {
            Some(hook) => !self.script(shared, hook, Call::After(reply)),
            None => false,
        }
    }
}
