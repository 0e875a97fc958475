//! A run over several workers as a run's [`Source`]: the coordinator's records merged
//! interval by interval into one run, its workers' headers into one run's information, their
//! ends and losses kept for the report. The run is steered through a handle of this process
//! ([`Control::detached`]); each change is sent to every worker as the whole run's level.

use std::time::{Duration, Instant};

use belier_cluster::coordinator::{Coordinator, Event};
use belier_cluster::protocol::Steering;
use belier_engine::Control;
use belier_results::{merge_info, End, Header};
use belier_results::{Change, RunInfo};
use belier_stats::{Collector, Recorder};

use crate::source::{Flow, Source};
use crate::watcher::{Seen, Stop};

/// Most intervals of a coarsened record whose gauges are filled in (a worker's record may
/// claim any width; past this many the series is coarse anyway).
const MOST_FILLED: u64 = 64;

/// Longest wait for a worker's line before the live views' changes are passed on: a change
/// reaches the workers within about this long of being made.
const STEER_POLL: Duration = Duration::from_millis(10);

/// A coordinated run, started: its workers' events until each has ended or was lost.
pub struct Coordinated {
    coordinator: Coordinator,
    workers: Vec<String>,
    started: Instant,
    control: Control,
    interval: Duration,
    /// A lost worker stops the others ([`Stop::Broken`]).
    stop_on_loss: bool,
    /// The run's information as this process sees it, should no worker send a header; its
    /// `workers` (their clocks as measured here) go into the merged information too.
    fallback: RunInfo,
    info: Option<RunInfo>,
    headers: usize,
    /// Per worker: over (ended or lost).
    over: Vec<bool>,
    ends: Vec<End>,
    lost: Vec<String>,
    /// A worker's end says it was interrupted.
    interrupted: bool,
}

impl Coordinated {
    /// Follows `coordinator`, started at `started`, over `workers` (their addresses);
    /// `fallback` is the run's information as known here.
    pub fn new(
        coordinator: Coordinator,
        workers: Vec<String>,
        started: Instant,
        control: Control,
        interval: Duration,
        fallback: RunInfo,
    ) -> Coordinated {
        Coordinated {
            coordinator,
            over: vec![false; workers.len()],
            workers,
            started,
            control,
            interval,
            stop_on_loss: false,
            fallback,
            info: None,
            headers: 0,
            ends: Vec::new(),
            lost: Vec::new(),
            interrupted: false,
        }
    }

    /// A lost worker stops the run (`--on-worker-loss stop`).
    pub fn stopping_on_loss(self, stop: bool) -> Coordinated {
        Coordinated {
            stop_on_loss: stop,
            ..self
        }
    }

    /// The merged run's information (as known here, if no worker sent its header).
    pub fn info(&self) -> &RunInfo {
        self.info.as_ref().unwrap_or(&self.fallback)
    }

    /// The workers' end lines, in the order they came.
    pub fn ends(&self) -> &[End] {
        &self.ends
    }

    /// The workers lost, each with why (for the report's warnings).
    pub fn lost(&self) -> &[String] {
        &self.lost
    }

    /// Whether a worker's end said its run was interrupted.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }

    fn header(&mut self, header: Header, seen: &mut dyn FnMut(Seen<'_>)) {
        match &mut self.info {
            Some(info) => merge_info(info, &header.run),
            None => self.info = Some(header.run),
        }
        self.headers += 1;
        if let Some(info) = &mut self.info {
            info.workers.clone_from(&self.fallback.workers);
            // The merged run is the whole run, not the first worker's shard: its workers
            // (and any lost) are listed on their own.
            info.shard = None;
            if self.headers == self.workers.len() {
                seen(Seen::Info(info));
            }
        }
    }

    fn ended(&mut self, worker: usize, end: Option<End>, collector: &mut Collector) {
        let elapsed = end
            .as_ref()
            .map_or(Duration::ZERO, |e| Duration::from_secs_f64(e.elapsed_s));
        collector.finish_worker(worker, elapsed);
        self.over[worker] = true;
        if let Some(e) = end {
            self.interrupted |= e.interrupted;
            self.ends.push(e);
        }
    }

    fn lose(&mut self, worker: usize, why: &str, collector: &mut Collector) -> Duration {
        let at = self.started.elapsed();
        collector.finish_worker(worker, at);
        self.over[worker] = true;
        let share = format!("1/{}", self.workers.len());
        self.lost.push(format!(
            "incomplete: worker {} ({}) was lost at {:.1} s ({why}); its share of the load ({share}) is missing from then on",
            worker + 1,
            self.workers[worker],
            at.as_secs_f64()
        ));
        at
    }
}

impl Source for Coordinated {
    fn next(
        &mut self,
        wait: Duration,
        collector: &mut Collector,
        seen: &mut dyn FnMut(Seen<'_>),
    ) -> Flow {
        // Over once the poll after the last worker's end has been ticked.
        if self.over.iter().all(|&o| o) {
            return Flow::Ended;
        }
        match self.coordinator.next_event(wait) {
            Some(Event::Header { header, .. }) => self.header(*header, seen),
            Some(Event::Record { worker, record }) => {
                seen(Seen::Recorded {
                    worker,
                    part: 0,
                    index: record.index,
                    recorder: &record.recorder,
                });
                collector.add(worker, record.index, &record.recorder, record.gauges);
                // A record the worker's writer coarsened covers several intervals: its gauges
                // (the peaks over them, the fewest held) stand for each of the others too, or
                // those intervals would sum fewer workers' gauges than the run has.
                let covered = record.intervals.clamp(1, MOST_FILLED);
                for later in record.index + 1..record.index + covered {
                    collector.add(worker, later, &Recorder::new(), record.gauges);
                }
            }
            Some(Event::Ended { worker, end }) => self.ended(worker, end, collector),
            Some(Event::Lost { worker, why }) => {
                let at = self.lose(worker, &why, collector);
                seen(Seen::Lost {
                    worker,
                    address: &self.workers[worker],
                    why: &why,
                    at,
                });
                if self.stop_on_loss {
                    return Flow::Stop(Stop::Broken);
                }
            }
            None => {}
        }
        Flow::Going
    }

    fn wait(&self) -> Duration {
        STEER_POLL
    }

    fn workers(&self) -> usize {
        self.workers.len()
    }

    fn interval(&self) -> Duration {
        self.interval
    }

    fn control(&self) -> Control {
        self.control.clone()
    }

    fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    fn stop(&mut self) {
        self.coordinator.abort();
    }

    fn stop_requested(&self) -> bool {
        self.control.stop_requested()
    }

    fn steer(&mut self, change: &Change) -> Result<(), String> {
        self.coordinator
            .steer(Steering {
                level: change.level,
            })
            .map_err(|e| e.to_string())
    }

    fn elapsed_at_end(&self, collector: &Collector) -> Duration {
        self.ends
            .iter()
            .map(|e| Duration::from_secs_f64(e.elapsed_s))
            .max()
            .unwrap_or(collector.elapsed())
    }
}
