//! The state a worker's tasks share: its recorder, its budgets, the open loop's queue and idle
//! connections, its HTTP/2 groups and its counts of what is open and in flight, all in `Cell`s
//! and `RefCell`s (one thread, no atomic operation per request).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::mpsc::Sender;

use belier_stats::{Recorder, Sample};
use tokio::sync::Notify;

use super::dispatch::{Due, Parked};
use super::{Link, Plan};
use crate::connection::{Failure, OpenConnections, Progress, Response};
use crate::http2::Group;
use crate::Event;

/// Samples per batch handed over; batches also go at every interval and at the end.
pub(super) const SAMPLE_BATCH: usize = 4096;

/// State the tasks of one worker share.
pub(crate) struct Local {
    pub(crate) recorder: RefCell<Recorder>,
    /// Connections open now, the most at once since the last interval, and the HTTP/2 ones
    /// the server ended.
    pub(super) open: Rc<OpenConnections>,
    /// Closed loop: requests left to issue; `u64::MAX` means unlimited.
    pub(super) budget: Cell<u64>,
    /// Scripted users in a closed loop: iterations left to start; `u64::MAX`: unlimited.
    pub(super) iterations: Cell<u64>,
    /// Open loop with scripted users: users that stopped for the rest of the run (they keep
    /// their place among the `max_connections` users).
    pub(crate) stopped: Cell<usize>,
    /// Requests a connection has taken up and not finished.
    pub(crate) active: Cell<u64>,
    /// Scripted users: of `active`, how many per step, so that requests abandoned when the
    /// run stops are counted under their steps as well.
    pub(crate) active_steps: RefCell<Vec<u64>>,
    pub(crate) stopping: Cell<bool>,
    /// Open loop: due arrivals no connection has taken yet, by intended start.
    pub(super) queue: RefCell<VecDeque<Due>>,
    /// Open loop: connections waiting for an arrival.
    pub(super) idle: Cell<usize>,
    /// Open loop over plain HTTP/1.1: idle connections the dispatcher may send on itself
    /// (these are not counted in `idle`).
    pub(super) parked: RefCell<Vec<Rc<Parked>>>,
    pub(super) wake: Notify,
    /// Open loop: connections opened ahead of the schedule still connecting, and the
    /// dispatcher's wake-up once none is.
    pub(super) preopening: Cell<usize>,
    pub(super) preopened: Notify,
    pub(super) arrivals_done: Cell<bool>,
    /// Open loop: connection tasks alive (stream slots with HTTP/2; scripted users).
    pub(crate) connections: Cell<usize>,
    /// Open loop: connection tasks ever started; with HTTP/2 it numbers the stream slots.
    pub(super) spawned: Cell<usize>,
    /// Open loop: connection tasks started for a queued arrival that have not run yet (each
    /// will take one from the queue, or wait idle if it is empty by then).
    pub(super) starting: Cell<usize>,
    /// HTTP/2: the worker's connection groups, each shared by up to `max_streams` slots.
    pub(super) groups: RefCell<Vec<Rc<Group>>>,
    /// The first interval whose recordings have not been handed over yet.
    pub(super) handed_over: Cell<u64>,
    /// Samples not yet handed over (raw stream), when kept.
    pub(super) samples: Option<RefCell<Vec<Sample>>>,
    pub(super) events: Sender<Event>,
    pub(super) id: usize,
    /// The load as steered so far, and the wake-ups of those who follow it.
    pub(crate) steer: super::Steered,
}

impl Local {
    pub(crate) fn claim(&self) -> bool {
        take_one(&self.budget)
    }

    /// Takes one iteration from the worker's budget (scripted users, closed loop).
    pub(crate) fn claim_iteration(&self) -> bool {
        take_one(&self.iterations)
    }

    /// A new task's link (a connection task's or a scripted user's): with HTTP/2 a stream
    /// slot on the worker's connection group `k` (from 0), else a connection of its own.
    pub(crate) fn link(&self, plan: &Plan, k: usize) -> Link {
        if plan.http2.is_none() {
            return Link::Http1(None);
        }
        let mut groups = self.groups.borrow_mut();
        while groups.len() <= k {
            groups.push(Rc::new(Group::new(Rc::clone(&self.open))));
        }
        Link::Http2(Rc::clone(&groups[k]))
    }

    pub(super) fn in_flight(&self) -> u64 {
        self.active.get() + self.queue.borrow().len() as u64
    }

    /// Keeps the open-connection count in step with one task's link: `counted` says whether
    /// that task's connection is counted now.
    pub(crate) fn track_open(&self, link_open: bool, counted: &mut bool) {
        if link_open && !*counted {
            self.open.opened();
        } else if !link_open && *counted {
            self.open.closed(false);
        }
        *counted = link_open;
    }

    /// Records one finished request in the run's totals (and the raw stream, when kept).
    #[inline]
    pub(crate) fn record(
        &self,
        sample: Sample,
        progress: &Progress,
        result: &Result<Response, Failure>,
        tls_session: impl FnOnce() -> Option<String>,
    ) {
        {
            let mut recorder = self.recorder.borrow_mut();
            recorder.record(&sample);
            record_connect(&mut recorder, progress, tls_session);
            if let Err(f) = result {
                recorder.note_error_example(f.kind, || f.cause.to_string());
            }
            if progress.resent {
                recorder.record_resent();
            }
            for _ in 0..progress.idle_closes {
                recorder.record_server_close();
            }
        }
        if let Some(samples) = &self.samples {
            let full = {
                let mut samples = samples.borrow_mut();
                samples.push(sample);
                samples.len() >= SAMPLE_BATCH
            };
            if full {
                self.flush_samples();
            }
        }
    }

    /// Hands the kept samples over.
    pub(super) fn flush_samples(&self) {
        if let Some(samples) = &self.samples {
            let batch =
                std::mem::replace(&mut *samples.borrow_mut(), Vec::with_capacity(SAMPLE_BATCH));
            if !batch.is_empty() {
                let _ = self.events.send(Event::Samples {
                    worker: self.id,
                    samples: batch,
                });
            }
        }
    }
}

/// Counts what opening a connection recorded in `progress`: the connect, the TLS session
/// (from `tls_session`) and whether the handshake resumed one. Requests and connections opened
/// ahead of the schedule count theirs the same way.
#[inline]
pub(super) fn record_connect(
    recorder: &mut Recorder,
    progress: &Progress,
    tls_session: impl FnOnce() -> Option<String>,
) {
    if progress.connected.is_some() {
        recorder.record_connection();
    }
    if progress.handshaken.is_some() {
        recorder.note_tls_session(|| tls_session().unwrap_or_default());
    }
    if progress.resumed {
        recorder.record_tls_resumed();
    }
}

/// Takes one from a budget where `u64::MAX` means unlimited; false once it is spent.
pub(super) fn take_one(budget: &Cell<u64>) -> bool {
    match budget.get() {
        0 => false,
        u64::MAX => true,
        n => {
            budget.set(n - 1);
            true
        }
    }
}
