//! Where a run's intervals come from: the engine in this process ([`crate::local`]) or a
//! coordinator over workers ([`crate::coordinated`]), behind one [`Source`].

use std::time::Duration;

use belier_engine::Control;
use belier_results::Change;
use belier_stats::Collector;

use crate::watcher::{Seen, Stop};

/// How often the session wakes, when the source sends nothing, to tick the watchers (redraw
/// the progress, check the signals), unless the source asks for less ([`Source::wait`]).
pub const POLL: Duration = Duration::from_millis(100);

/// What the source says after a poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// The run goes on (something came, or nothing did within the wait).
    Going,
    /// The run cannot go on as it is and asks to stop (a worker lost).
    Stop(Stop),
    /// The run is over: everything recorded was handed over.
    Ended,
}

/// A source of settled intervals and a control handle.
pub trait Source {
    /// Waits up to `wait` for what the run sends next, adds it to `collector` and shows it
    /// to `seen` (before it is added).
    fn next(
        &mut self,
        wait: Duration,
        collector: &mut Collector,
        seen: &mut dyn FnMut(Seen<'_>),
    ) -> Flow;

    /// Longest wait for the source at each poll: the watchers tick at least this often.
    fn wait(&self) -> Duration {
        POLL
    }

    /// How many lanes the collector merges (workers).
    fn workers(&self) -> usize;

    /// How long each interval is.
    fn interval(&self) -> Duration;

    /// How many loads run together (each part's totals are kept apart; 0 for one load).
    fn parts(&self) -> usize {
        0
    }

    /// The handle that steers the run (and the live views with it).
    fn control(&self) -> Control;

    /// Time since the start.
    fn elapsed(&self) -> Duration;

    /// Stops the load; what was sent is still answered and recorded.
    fn stop(&mut self);

    /// Whether the run was asked to stop through its handle (a coordinated run's handle is
    /// its own, not an engine's).
    fn stop_requested(&self) -> bool {
        false
    }

    /// Passes on a change made through the handle (a local engine took it already).
    fn steer(&mut self, _change: &Change) -> Result<(), String> {
        Ok(())
    }

    /// The load is over: waits for what is left of it; a crash is a warning.
    fn finish(&mut self, _warnings: &mut Vec<String>) {}

    /// How long the run took, once `collector` has settled everything.
    fn elapsed_at_end(&self, collector: &Collector) -> Duration;
}
