//! What follows a run: a [`Watcher`] is handed the run's start, what its source saw, each
//! settled interval, each change made to it, a tick at every poll (where it may ask the run
//! to stop) and its end. Progress, dashboard, web console, exporter, outputs, results file,
//! raw file, threshold watch: each is one watcher, and none knows of the others.

use std::time::Duration;

use belier_engine::Control;
use belier_results::{Change, RunInfo};
use belier_stats::{Collector, Recorder, Sample, Settled};

/// Why a run stops before its own end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Someone asked (a key, the web console's button, a signal): the run is interrupted.
    Asked,
    /// A watcher judged that the run should end (a plan's threshold failed): what was sent
    /// is answered, and the run is not interrupted.
    Judged,
    /// The run cannot go on whole (a worker was lost, and the run stops on a loss).
    Broken,
}

/// The run has started.
pub struct Begin<'a> {
    /// Its steering handle.
    pub control: &'a Control,
    /// What is known of it now.
    pub info: &'a RunInfo,
}

/// Something the run's source saw, as it saw it (before it was merged into intervals).
pub enum Seen<'a> {
    /// Every sample of a batch `worker` finished (a local run keeping samples).
    Samples {
        /// Worker number.
        worker: usize,
        /// The samples, in completion order.
        samples: &'a [Sample],
    },
    /// The traced requests of a batch `worker` finished (a local run exporting spans).
    Traced {
        /// Worker number.
        worker: usize,
        /// The requests, in completion order.
        requests: &'a [belier_engine::TracedRequest],
    },
    /// What `worker` (of the run's `part`) recorded during interval `index`.
    Recorded {
        /// Worker number.
        worker: usize,
        /// The part of a run of several loads started together (0 for one load).
        part: usize,
        /// Interval number.
        index: u64,
        /// What was recorded.
        recorder: &'a Recorder,
    },
    /// Every worker's header is in: the run's information, merged (a coordinated run).
    Info(&'a RunInfo),
    /// A worker of a coordinated run was lost `at` this far into the run.
    Lost {
        /// Worker number.
        worker: usize,
        /// Its address.
        address: &'a str,
        /// Why.
        why: &'a str,
        /// When, from the start.
        at: Duration,
    },
    /// A change made to the run could not be passed on to every worker.
    Unsteered {
        /// Why.
        why: &'a str,
    },
}

/// The run as it stands at one poll.
pub struct Now<'a> {
    /// Time since the start.
    pub elapsed: Duration,
    /// Its intervals so far.
    pub collector: &'a Collector,
    /// A run of several loads: what each part recorded so far (empty for one load).
    pub parts: &'a [Recorder],
    /// Why the run is already stopping, if it is.
    pub stopping: Option<Stop>,
}

/// One consumer of a run. Every method has a default that does nothing, so a watcher says
/// only what it does; `warnings` gather what the report should say went wrong.
pub trait Watcher {
    /// The run started.
    fn begin(&mut self, _run: &Begin<'_>) {}

    /// The source saw something (before the intervals merge it).
    fn seen(&mut self, _seen: &Seen<'_>, _warnings: &mut Vec<String>) {}

    /// Intervals settled (every worker has sent them), in order; `collector` holds the run
    /// so far, them included.
    fn interval(
        &mut self,
        _settled: &[Settled],
        _collector: &Collector,
        _warnings: &mut Vec<String>,
    ) {
    }

    /// A change was made to the run through its handle.
    fn change(&mut self, _change: &Change, _warnings: &mut Vec<String>) {}

    /// One poll of the run: draw, read, judge. `Some` asks the run to stop, and says why;
    /// the session decides ([`crate::session`]).
    fn tick(&mut self, _now: &Now<'_>) -> Option<Stop> {
        None
    }

    /// The load is over (the last intervals are not handed out yet): live views close.
    fn stopped(&mut self, _warnings: &mut Vec<String>) {}

    /// Every interval and change has been handed out; `collector` holds the whole run.
    fn end(&mut self, _collector: &Collector, _warnings: &mut Vec<String>) {}
}
