//! The state a worker's tasks share: its recorder, its budgets, the open loop's queue and idle
//! connections, its HTTP/2 groups and its counts of what is open and in flight, all in `Cell`s
//! and `RefCell`s (one thread, no atomic operation per request).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::time::Instant;

use belier_stats::{Recorder, Sample};
use tokio::sync::Notify;

use crate::connection::{Connection, Failure, OpenConnections, Progress, Response};
use crate::http2::Group;
use crate::link::Link;
use crate::plan::{Plan, Share};
use crate::steered::Steered;
use crate::timer::thread_wakeups;
use crate::trace_context::Sampler;
use crate::{Event, TracedRequest, TracedStep};

/// Samples per batch handed over; batches also go at every interval and at the end.
const SAMPLE_BATCH: usize = 4096;

/// State the tasks of one worker share, in three parts: what it sends next
/// ([`Schedule`]), what it sends on ([`Connections`]) and what it recorded ([`Recording`]);
/// beside them, the requests under way, which all three meet.
pub(crate) struct Local {
    /// The worker's number.
    pub(crate) id: usize,
    /// Requests a connection has taken up and not finished.
    pub(crate) active: Cell<u64>,
    /// Scripted users: of `active`, how many per step, so that requests abandoned when the
    /// run stops are counted under their steps as well.
    pub(crate) active_steps: RefCell<Vec<u64>>,
    /// Whether the last response recorded was timed by the kernel's receive stamps: while it
    /// is, the open loop's dispatcher may sleep through answers (see `worker::dispatch`).
    pub(crate) stamped: Cell<bool>,
    pub(crate) schedule: Schedule,
    pub(crate) connections: Connections,
    pub(crate) recording: Recording,
    /// Buffers for the server timing headers of requests in flight (see
    /// `Config::server_timing`).
    pub(crate) timing: crate::server_timing::Buffers,
    /// Which requests carry a trace context, and their ids (see `Config::trace_sample`).
    pub(crate) sampler: Sampler,
}

/// What a worker sends next, and until when: its budgets, the open loop's due arrivals and
/// the tasks waiting for one, the load as steered, and whether the run stops.
pub(crate) struct Schedule {
    /// Closed loop: requests left to issue; `u64::MAX` means unlimited.
    pub(crate) budget: Cell<u64>,
    /// Scripted users in a closed loop: iterations left to start; `u64::MAX`: unlimited.
    pub(crate) iterations: Cell<u64>,
    /// Open loop with scripted users: users that stopped for the rest of the run (they keep
    /// their place among the `max_connections` users).
    pub(crate) stopped: Cell<usize>,
    pub(crate) stopping: Cell<bool>,
    /// Open loop: due arrivals no connection has taken yet, by intended start.
    pub(crate) queue: RefCell<VecDeque<Due>>,
    /// Open loop: connections waiting for an arrival.
    pub(crate) idle: Cell<usize>,
    /// Open loop over plain HTTP/1.1: idle connections the dispatcher may send on itself
    /// (these are not counted in `idle`).
    pub(crate) parked: RefCell<Vec<Rc<Parked>>>,
    /// Open loop, thread sleeps (see `worker::dispatch`): parked connections the dispatcher
    /// wrote a request on whose tasks it wakes after its next sleep, to read the answer that
    /// came meanwhile rather than try before it has.
    pub(crate) sent: RefCell<Vec<Rc<Parked>>>,
    pub(crate) wake: Notify,
    pub(crate) arrivals_done: Cell<bool>,
    /// The load as steered so far, and the wake-ups of those who follow it.
    pub(crate) steer: Steered,
}

/// What a worker sends on: its open connections, its HTTP/2 groups, and the open loop's
/// connection tasks.
pub(crate) struct Connections {
    /// Connections open now, the most at once since the last interval, and the HTTP/2 ones
    /// the server ended.
    pub(crate) open: Rc<OpenConnections>,
    /// HTTP/2: the worker's connection groups, each shared by up to `max_streams` slots.
    pub(crate) groups: RefCell<Vec<Rc<Group>>>,
    /// HTTP/3: the worker's connection groups, as HTTP/2's.
    pub(crate) groups3: RefCell<Vec<Rc<crate::http3::Group>>>,
    /// HTTP/3: QUIC's figures the groups' connections counted and no interval took yet.
    pub(crate) quic: Rc<crate::http3::Tally>,
    /// Open loop: connection tasks alive (stream slots with HTTP/2; scripted users).
    pub(crate) tasks: Cell<usize>,
    /// Open loop: connection tasks ever started; with HTTP/2 it numbers the stream slots.
    pub(crate) spawned: Cell<usize>,
    /// Open loop: connection tasks started for a queued arrival that have not run yet (each
    /// will take one from the queue, or wait idle if it is empty by then).
    pub(crate) starting: Cell<usize>,
    /// Open loop: connections opened ahead of the schedule still connecting, and the
    /// dispatcher's wake-up once none is.
    pub(crate) preopening: Cell<usize>,
    pub(crate) preopened: Notify,
    /// Hosts the users found during the run, as this worker resolved them (by
    /// `Outgoing::origin` past the run's own), or why they are unreachable.
    pub(crate) found: RefCell<Vec<Option<Found>>>,
    /// Held connections open now (see `crate::hold`), apart from the load's.
    pub(crate) held: Cell<u64>,
}

/// A found host, resolved once per worker.
pub(crate) type Found = Result<Rc<crate::plan::Dest>, std::io::ErrorKind>;

/// What a worker recorded and has not handed over yet.
pub(crate) struct Recording {
    pub(crate) recorder: RefCell<Recorder>,
    /// Samples not yet handed over (raw stream), when kept.
    pub(crate) samples: Option<RefCell<Vec<Sample>>>,
    /// Traced requests not yet handed over, when kept (see `Config::keep_traced`).
    pub(crate) traced: Option<RefCell<Vec<TracedRequest>>>,
    /// The first interval whose recordings have not been handed over yet.
    pub(crate) handed_over: Cell<u64>,
    pub(crate) events: Sender<Event>,
    /// The worker thread's wake-ups when they were last recorded (or when it started).
    wakeups_seen: Cell<u64>,
}

impl Local {
    /// A worker's state before its first task runs.
    pub(crate) fn new(plan: &Plan, share: &Share, events: Sender<Event>) -> Local {
        Local {
            id: share.id,
            active: Cell::new(0),
            active_steps: RefCell::new(Vec::new()),
            stamped: Cell::new(false),
            schedule: Schedule {
                budget: Cell::new(share.requests.unwrap_or(u64::MAX)),
                iterations: Cell::new(share.iterations.unwrap_or(u64::MAX)),
                stopped: Cell::new(0),
                stopping: Cell::new(false),
                queue: RefCell::new(VecDeque::new()),
                idle: Cell::new(0),
                parked: RefCell::new(Vec::new()),
                sent: RefCell::new(Vec::new()),
                wake: Notify::new(),
                arrivals_done: Cell::new(false),
                steer: Steered::new(&plan.load),
            },
            connections: Connections {
                open: Rc::new(OpenConnections::default()),
                groups: RefCell::new(Vec::new()),
                groups3: RefCell::new(Vec::new()),
                quic: Rc::default(),
                tasks: Cell::new(0),
                spawned: Cell::new(0),
                starting: Cell::new(0),
                preopening: Cell::new(0),
                preopened: Notify::new(),
                found: RefCell::new(Vec::new()),
                held: Cell::new(0),
            },
            recording: Recording {
                recorder: RefCell::new(Recorder::new()),
                samples: plan
                    .keep_samples
                    .then(|| RefCell::new(Vec::with_capacity(SAMPLE_BATCH))),
                traced: plan.keep_traced.then(|| RefCell::new(Vec::new())),
                handed_over: Cell::new(0),
                events,
                wakeups_seen: Cell::new(thread_wakeups()),
            },
            timing: crate::server_timing::Buffers::default(),
            sampler: Sampler::new(plan.trace_sample),
        }
    }

    pub(crate) fn in_flight(&self) -> u64 {
        self.active.get() + self.schedule.queue.borrow().len() as u64
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
            let mut recorder = self.recording.recorder.borrow_mut();
            recorder.record(&sample);
            record_connect(&mut recorder, progress, tls_session);
            if let Err(f) = result {
                recorder.note_error_example(f.kind, || f.cause.to_string());
            }
            if progress.decoded > 0 {
                recorder.record_decoded(progress.decoded);
            }
            if progress.resent {
                recorder.record_resent();
            }
            if result.is_ok() {
                let stamped = progress.completed.is_some();
                if stamped {
                    recorder.record_kernel_stamped();
                }
                self.stamped.set(stamped);
            }
            for _ in 0..progress.idle_closes {
                recorder.record_server_close();
            }
            match (&progress.stream, &progress.split) {
                // A streamed body's first message is timed from when the request was due,
                // as its latency is: a server that stalls an open loop's streams shows in it.
                (Some(stream), Some(split)) => recorder.record_body_stream(
                    &stream.call(Some(sample.intended)),
                    &stream.body(split, progress.reconnect),
                ),
                // Only a WebSocket matches its replies itself.
                (Some(stream), None) if stream.matched => {
                    recorder.record_socket_messages(&stream.call(progress.sent));
                    recorder.record_sent_round_trips(&stream.round_trips_sent);
                }
                (Some(stream), None) => recorder.record_messages(&stream.call(progress.sent)),
                (None, _) => {}
            }
            if let Some(code) = progress.stream.as_ref().and_then(|s| s.close) {
                recorder.record_close(code);
            }
            if let Some(extension) = progress
                .stream
                .as_ref()
                .and_then(|s| s.extension.as_deref())
            {
                recorder.record_extension(extension);
            }
            if let Some(route) = progress.route {
                recorder.record_route(&sample, route, progress.connected.is_some());
            }
            // Complete responses only: a failed one's header, if it came, timed no answer.
            if let (Some(capture), Ok(_)) = (&progress.timing, result) {
                let header = capture.header.as_recorded();
                recorder.record_server_timing(header, capture.value(), sample.latency_us());
            }
        }
        if let Some(samples) = &self.recording.samples {
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

    /// Keeps a traced request for the hand-over, when the run exports spans.
    pub(crate) fn keep_traced(&self, sample: &Sample, step: impl FnOnce() -> Option<TracedStep>) {
        let Some(traced) = &self.recording.traced else {
            return;
        };
        if sample.trace.is_none() {
            return;
        }
        let full = {
            let mut traced = traced.borrow_mut();
            traced.push(TracedRequest {
                sample: *sample,
                step: step(),
            });
            traced.len() >= SAMPLE_BATCH
        };
        if full {
            self.flush_samples();
        }
    }

    /// Hands the kept samples (and traced requests) over.
    pub(crate) fn flush_samples(&self) {
        if let Some(traced) = &self.recording.traced {
            let requests = std::mem::take(&mut *traced.borrow_mut());
            if !requests.is_empty() {
                let _ = self.recording.events.send(Event::Traced {
                    worker: self.id,
                    requests,
                });
            }
        }
        if let Some(samples) = &self.recording.samples {
            let batch =
                std::mem::replace(&mut *samples.borrow_mut(), Vec::with_capacity(SAMPLE_BATCH));
            if !batch.is_empty() {
                let _ = self.recording.events.send(Event::Samples {
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
pub(crate) fn record_connect(
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
fn take_one(budget: &Cell<u64>) -> bool {
    match budget.get() {
        0 => false,
        u64::MAX => true,
        n => {
            budget.set(n - 1);
            true
        }
    }
}

impl Schedule {
    pub(crate) fn claim(&self) -> bool {
        take_one(&self.budget)
    }

    /// Takes one iteration from the worker's budget (scripted users, closed loop).
    pub(crate) fn claim_iteration(&self) -> bool {
        take_one(&self.iterations)
    }

    /// Wakes every task waiting for an arrival (the arrivals ended, or the run stops), and
    /// those given one that the dispatcher has not woken yet.
    pub(crate) fn wake_all(&self) {
        self.wake.notify_waiters();
        self.wake_sent();
        for parked in self.parked.borrow_mut().drain(..) {
            parked.notify.notify_one();
        }
    }

    /// Wakes the tasks of the connections the dispatcher wrote a request on and left asleep
    /// ([`Schedule::sent`]).
    pub(crate) fn wake_sent(&self) {
        for parked in self.sent.borrow_mut().drain(..) {
            parked.notify.notify_one();
        }
    }
}

impl Recording {
    /// Records in `recorder` the worker thread's wake-ups since the last call (since the
    /// worker started, the first time). Called on the worker's thread.
    pub(crate) fn count_wakeups(&self, recorder: &mut Recorder) {
        let now = thread_wakeups();
        recorder.record_wakeups(now.saturating_sub(self.wakeups_seen.replace(now)));
    }
}

impl Connections {
    /// QUIC's figures since the last call: what the live connections did since they were
    /// last read, and the ended ones' rest; `ending`: the run lets go of the live ones now.
    pub(crate) fn take_quic(&self, ending: bool) -> belier_stats::Quic {
        for group in self.groups3.borrow().iter() {
            group.read_figures(ending);
        }
        self.quic.take()
    }

    /// Closes the QUIC connections still open (see `http3::Group::close`); whether there were
    /// any.
    pub(crate) fn close_quic(&self) -> bool {
        let mut any = false;
        for group in self.groups3.borrow().iter() {
            // Every group's, not only up to the first open one.
            any |= group.close();
        }
        any
    }

    /// Found host `origin` (see [`Plan::is_found`]), resolved the first time.
    pub(crate) fn found(&self, plan: &Plan, origin: usize) -> Found {
        let i = origin - plan.others.len() - 1;
        if let Some(Some(known)) = self.found.borrow().get(i) {
            return known.clone();
        }
        let resolved = plan.find(origin).map(Rc::new);
        let mut found = self.found.borrow_mut();
        if found.len() <= i {
            found.resize(i + 1, None);
        }
        found[i] = Some(resolved.clone());
        resolved
    }

    /// A new task's link (a connection task's or a scripted user's): with HTTP/2 a stream
    /// slot on the worker's connection group `k` (from 0), else a connection of its own.
    pub(crate) fn link(&self, plan: &Plan, k: usize) -> Link {
        let Some(http2) = &plan.http2 else {
            return Link::Http1(None);
        };
        if plan.http3.is_some() {
            let mut groups = self.groups3.borrow_mut();
            while groups.len() <= k {
                let group = crate::http3::Group::new(Rc::clone(&self.open), Rc::clone(&self.quic));
                groups.push(Rc::new(group));
            }
            return Link::Http3(Rc::clone(&groups[k]));
        }
        let mut groups = self.groups.borrow_mut();
        while groups.len() <= k {
            let streaming = http2.request.streams();
            groups.push(Rc::new(Group::new(Rc::clone(&self.open), streaming)));
        }
        Link::Http2(Rc::clone(&groups[k]))
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
}

/// An open-loop arrival the dispatcher handed out.
#[derive(Clone, Copy)]
pub(crate) struct Due {
    /// When it was due to start.
    pub intended: Instant,
    /// When it started to wait for a connection because every one the worker may open was
    /// busy; `None` if one was idle or could be opened.
    pub waiting_since: Option<Instant>,
    /// When the dispatcher gave it to a parked connection, and how many bytes of the request
    /// it wrote there (the connection's task writes the rest). The dispatcher counted it
    /// active.
    pub taken: Option<(Instant, usize)>,
    /// Whether the dispatcher decided its trace context (`Some(None)`: untraced, and maybe
    /// written already); `None`: its task draws.
    pub trace: Option<Option<belier_stats::Trace>>,
}

impl Due {
    /// An arrival due at `intended` that a connection can take up at once.
    pub(crate) fn at(intended: Instant) -> Due {
        Due {
            intended,
            waiting_since: None,
            taken: None,
            trace: None,
        }
    }
}

/// An idle open-loop connection task over plain HTTP/1.1, its connection left here so that
/// the dispatcher can write the next request on it without waiting for the task to run.
#[derive(Default)]
pub(crate) struct Parked {
    pub(crate) conn: RefCell<Option<Connection>>,
    pub(crate) job: Cell<Option<Due>>,
    pub(crate) notify: Notify,
}

/// Open loop: the next due arrival for this task, or `None` once arrivals are over (or the
/// run stops).
pub(crate) async fn next_arrival(local: &Local) -> Option<Due> {
    loop {
        if let Some(due) = local.schedule.queue.borrow_mut().pop_front() {
            return Some(due);
        }
        let schedule = &local.schedule;
        if schedule.arrivals_done.get() || schedule.stopping.get() {
            return None;
        }
        schedule.idle.set(schedule.idle.get() + 1);
        schedule.wake.notified().await;
    }
}
