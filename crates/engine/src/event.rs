//! What a running test reports to its caller, worker by worker.

use std::time::Duration;

use belier_stats::Recorder;

/// What a running test reports to its caller.
#[derive(Debug)]
pub enum Event {
    /// What `worker` recorded during interval `index` (interval `k` covers
    /// `[k·interval, (k+1)·interval)` from the start). A worker may send the same index twice
    /// around its end; the recorders simply add up.
    Recorded {
        /// Worker number, `0..Run::workers()`.
        worker: usize,
        /// Interval number.
        index: u64,
        /// What was recorded.
        recorder: Box<Recorder>,
        /// The worker's readings at the end of the interval.
        gauges: belier_stats::Gauges,
    },
    /// Every sample of a batch of requests `worker` finished (only with
    /// [`crate::Config::keep_samples`]); batches come before the interval that counts them ends.
    Samples {
        /// Worker number.
        worker: usize,
        /// The samples, in completion order.
        samples: Vec<belier_stats::Sample>,
    },
    /// The sampled requests of a batch `worker` finished (only with
    /// [`crate::Config::keep_traced`]), to export their spans.
    Traced {
        /// Worker number.
        worker: usize,
        /// The requests, in completion order.
        requests: Vec<TracedRequest>,
    },
    /// `worker` has stopped; everything it recorded was sent before this.
    Finished {
        /// Worker number.
        worker: usize,
        /// Time from the start of the run to the worker's end.
        elapsed: Duration,
    },
}

/// A request sent with a trace context (see [`crate::Config::trace_sample`]): what its span says.
#[derive(Clone, Debug)]
pub struct TracedRequest {
    /// Its sample: its instants, its outcome, its trace and span ids.
    pub sample: belier_stats::Sample,
    /// A scripted user's request: which step sent it, and what. `None`: the run's own
    /// request ([`crate::Config::request`]).
    pub step: Option<TracedStep>,
}

/// A scripted user's traced request, as its step sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracedStep {
    /// The step's number.
    pub step: usize,
    /// Its method.
    pub method: String,
    /// Its path and query.
    pub path_and_query: String,
    /// Which of the run's hosts it went to (see [`crate::user::Outgoing::origin`]).
    pub origin: usize,
}

impl Event {
    /// Hands the event to `collector`, which merges recorders and tracks finished workers.
    pub fn collect_into(self, collector: &mut belier_stats::Collector) {
        match self {
            Event::Recorded {
                worker,
                index,
                recorder,
                gauges,
            } => collector.add(worker, index, &recorder, gauges),
            Event::Finished { worker, elapsed } => collector.finish_worker(worker, elapsed),
            Event::Samples { .. } | Event::Traced { .. } => {}
        }
    }
}
