//! A run followed from start to end: what its [`Source`] sends goes into one collector, the
//! settled intervals and the changes made to the run go to every [`Watcher`] in order, and at
//! each poll the watchers (and the source) may ask the run to stop. Whether it stops, and why,
//! is decided here and nowhere else ([`Stopping`]).

use std::time::Duration;

use belier_results::{Change, RunInfo};
use belier_stats::{Collector, Recorder, Series};

use crate::changes::Changes;
use crate::source::{Flow, Source};
use crate::watcher::{Begin, Now, Seen, Stop, Watcher};

/// What a run recorded, once it is over.
pub struct Ran {
    /// Everything recorded.
    pub totals: Recorder,
    /// Interval by interval.
    pub series: Series,
    /// How long it took.
    pub elapsed: Duration,
    /// Someone asked it to stop (a key, the console, a signal).
    pub asked: bool,
    /// The first reason it stopped before its own end, if any.
    pub stopped: Option<Stop>,
    /// What went wrong on the way, for the report.
    pub warnings: Vec<String>,
    /// Changes made through its handle, in order.
    pub changes: Vec<Change>,
    /// A run of several loads: what each part recorded (empty for one load).
    pub parts: Vec<Recorder>,
}

/// The stop decision: the reasons given at each poll come in; the first one stops the load,
/// and being asked is remembered even when the run was already stopping for another reason
/// (the user's stop makes the run interrupted).
#[derive(Debug, Default)]
pub struct Stopping {
    first: Option<Stop>,
    asked: bool,
}

impl Stopping {
    /// Takes in the reasons given at one poll, in order; true when the load must be stopped
    /// now (the first reason ever given).
    pub fn decide(&mut self, reasons: impl IntoIterator<Item = Stop>) -> bool {
        let mut stop_now = false;
        for reason in reasons {
            if reason == Stop::Asked {
                self.asked = true;
            }
            if self.first.is_none() {
                self.first = Some(reason);
                stop_now = true;
            }
        }
        stop_now
    }

    /// Why the run is stopping, if it is.
    pub fn reason(&self) -> Option<Stop> {
        self.first
    }

    /// Whether anyone asked the run to stop.
    pub fn asked(&self) -> bool {
        self.asked
    }
}

/// Follows `source` to its end with `watchers` (handed everything in this order); `changes`
/// names the changes made through the run's handle, `info` is what is known of the run at its
/// start and `warnings` what the report says already.
pub fn run(
    source: &mut dyn Source,
    changes: Changes,
    info: &RunInfo,
    warnings: Vec<String>,
    watchers: &mut [&mut dyn Watcher],
) -> Ran {
    let control = source.control();
    let mut collector = Collector::new(source.workers(), source.interval());
    // Every settled interval goes to the watchers at the next poll, and nowhere else.
    collector.keep_settled();
    let mut session = Session {
        collector,
        parts: vec![Recorder::new(); source.parts()],
        warnings,
        stopping: Stopping::default(),
        changes,
    };
    for w in watchers.iter_mut() {
        w.begin(&Begin {
            control: &control,
            info,
        });
    }
    loop {
        let flow = session.poll(source, watchers);
        if flow == Flow::Ended {
            break;
        }
        let made = session.steer(source, &control.history(), watchers);
        session.pass_settled(watchers);
        session.pass_changes(&made, watchers);
        session.tick(source, flow, watchers);
    }
    session.end(source, &control.history(), watchers)
}

/// A run being followed.
struct Session {
    collector: Collector,
    parts: Vec<Recorder>,
    warnings: Vec<String>,
    stopping: Stopping,
    changes: Changes,
}

impl Session {
    /// One wait for the source: what it sent, to the collector and the watchers.
    fn poll(&mut self, source: &mut dyn Source, watchers: &mut [&mut dyn Watcher]) -> Flow {
        let (parts, warnings) = (&mut self.parts, &mut self.warnings);
        let wait = source.wait();
        source.next(wait, &mut self.collector, &mut |seen| {
            if let Seen::Recorded { part, recorder, .. } = &seen {
                if let Some(t) = parts.get_mut(*part) {
                    *t += *recorder;
                }
            }
            for w in watchers.iter_mut() {
                w.seen(&seen, warnings);
            }
        })
    }

    /// Passes on the changes made through the handle since the last poll, and returns them.
    fn steer(
        &mut self,
        source: &mut dyn Source,
        history: &[(Duration, f64)],
        watchers: &mut [&mut dyn Watcher],
    ) -> Vec<Change> {
        let made = self.changes.since(history).to_vec();
        for change in &made {
            if let Err(why) = source.steer(change) {
                for w in watchers.iter_mut() {
                    w.seen(&Seen::Unsteered { why: &why }, &mut self.warnings);
                }
            }
        }
        made
    }

    /// Hands out the intervals settled since the last call.
    fn pass_settled(&mut self, watchers: &mut [&mut dyn Watcher]) {
        let settled = self.collector.drain_settled();
        if settled.is_empty() {
            return;
        }
        for w in watchers.iter_mut() {
            w.interval(&settled, &self.collector, &mut self.warnings);
        }
    }

    fn pass_changes(&mut self, made: &[Change], watchers: &mut [&mut dyn Watcher]) {
        for change in made {
            for w in watchers.iter_mut() {
                w.change(change, &mut self.warnings);
            }
        }
    }

    /// Every watcher's tick, then the decision on their reasons (the source's first).
    fn tick(&mut self, source: &mut dyn Source, flow: Flow, watchers: &mut [&mut dyn Watcher]) {
        let now = Now {
            elapsed: source.elapsed(),
            collector: &self.collector,
            parts: &self.parts,
            stopping: self.stopping.reason(),
        };
        let mut reasons = Vec::new();
        if let Flow::Stop(reason) = flow {
            reasons.push(reason);
        }
        // Every watcher ticks, whatever the others say: each draws or reads its own.
        reasons.extend(watchers.iter_mut().filter_map(|w| w.tick(&now)));
        if source.stop_requested() {
            reasons.push(Stop::Asked);
        }
        if self.stopping.decide(reasons) {
            source.stop();
        }
    }

    /// The load is over: the source finishes, the live views close, the last intervals and
    /// changes go out (a change made now is recorded; the load it would steer is over).
    fn end(
        mut self,
        source: &mut dyn Source,
        history: &[(Duration, f64)],
        watchers: &mut [&mut dyn Watcher],
    ) -> Ran {
        source.finish(&mut self.warnings);
        for w in watchers.iter_mut() {
            w.stopped(&mut self.warnings);
        }
        self.collector.settle_all();
        self.pass_settled(watchers);
        let made = self.changes.since(history).to_vec();
        self.pass_changes(&made, watchers);
        for w in watchers.iter_mut() {
            w.end(&self.collector, &mut self.warnings);
        }
        let elapsed = source.elapsed_at_end(&self.collector);
        let (totals, series) = self.collector.finish();
        Ran {
            totals,
            series,
            elapsed,
            asked: self.stopping.asked(),
            stopped: self.stopping.reason(),
            warnings: self.warnings,
            changes: self.changes.into_vec(),
            parts: self.parts,
        }
    }
}

#[cfg(test)]
mod tests;
