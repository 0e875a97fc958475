//! A plan's `setup` and `teardown`: one user running one iteration, with the run's connection
//! settings, before the load and after it. What they did is told in a line of its own; their
//! requests never enter the users' figures.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use belier_engine::{Load, Next, Profile, StopWhen};
use belier_scenario::{PhaseOutcome, PlanUsers};

use crate::settings::Settings;
use crate::signals::Signals;

/// How often the wait wakes to check for Ctrl-C.
const POLL: Duration = Duration::from_millis(100);

/// A phase that has run.
pub struct Done {
    /// What its user did.
    pub outcome: PhaseOutcome,
    /// How long it took.
    pub elapsed: Duration,
    /// A stop signal cut it short.
    pub interrupted: bool,
}

/// Runs the phase whose one user `users` makes, with the connection settings of `settings`;
/// with `signals`, a stop signal ends it early.
pub fn run(
    settings: &Settings,
    users: &Arc<PlanUsers>,
    signals: Option<&Signals>,
) -> anyhow::Result<Done> {
    let mut config = settings.engine.clone();
    config.users = Some(Arc::clone(users) as _);
    config.load = Load::Closed {
        connections: Profile::constant(1.0),
    };
    config.threads = 1;
    // Every shard of a split run runs setup and teardown itself: its users need setup's values.
    config.shard = belier_engine::Shard::WHOLE;
    config.pacing = None;
    config.keep_samples = false;
    config.stop = StopWhen {
        requests: None,
        duration: None,
        iterations: Some(1),
    };
    let run = belier_engine::start(&config).context("cannot start the plan's setup or teardown")?;
    let mut interrupted = false;
    while !matches!(run.next_event(POLL), Next::Ended) {
        if !interrupted && signals.is_some_and(Signals::stop_requested) {
            run.stop();
            interrupted = true;
        }
    }
    let elapsed = run.elapsed();
    run.join();
    Ok(Done {
        outcome: users.outcome(),
        elapsed,
        interrupted,
    })
}

impl Done {
    /// One line on what the phase `name` did: `setup: 2 requests in 4.1 ms: login 200, me 200`.
    pub fn line(&self, name: &str) -> String {
        let o = &self.outcome;
        let n = o.requests.len();
        let mut line = format!(
            "{name}: {n} request{} in {:.1} ms",
            if n == 1 { "" } else { "s" },
            self.elapsed.as_secs_f64() * 1e3
        );
        if n > 0 {
            line.push_str(": ");
            line.push_str(&o.requests.join(", "));
        }
        match (&o.failure, self.interrupted) {
            (Some(why), _) => line.push_str(&format!("; failed: {why}")),
            (None, true) => line.push_str("; interrupted"),
            (None, false) if !o.finished => line.push_str("; did not finish"),
            (None, false) => line.push_str("; passed"),
        }
        line
    }
}
