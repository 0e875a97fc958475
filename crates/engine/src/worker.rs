//! A worker: one thread with its own single-threaded runtime, connections and recorder.
//!
//! Nothing is shared between workers while requests run: each owns its share of the
//! connections, arrivals and request budget, records into its own [`Recorder`], and hands the
//! recorder over once per interval. Within a worker, tasks share state through `Rc`/`Cell`,
//! which costs no atomic operation per request.
//!
//! One connection loop serves both load models; only where its next request comes from
//! differs ([`Source`]): the closed loop takes one as soon as the previous finished (while its
//! connection is active in the ramp and the budget lasts), the open loop takes the next due
//! arrival from a dispatcher that runs on schedule ([`mod@dispatch`]). Over plain HTTP/1.1
//! the dispatcher writes the request on an idle connection itself ([`Parked`]) and the
//! connection's task reads the answer; otherwise it queues the arrival for an idle task, or for
//! a new connection.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::pending;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use belier_stats::{ErrorKind, Gauges, Recorder};
use tokio::sync::{watch, Notify};
use tokio::task::{JoinSet, LocalSet};

use crate::connection::{Connection, OpenConnections, Progress};
use crate::http2::{Group, Target};
use crate::step;
use crate::user::Users;
use crate::{Arrivals, Event, Load};

mod closed;
mod dispatch;
mod intervals;
mod local;
mod steer;

use closed::{closed, closed_owner, spawn_closed};
use dispatch::{dispatch, Due, Parked};
pub(crate) use dispatch::{next_arrival, open_loop_lead, preopen_count};
use intervals::hand_over_intervals;
pub(crate) use local::Local;
use local::{record_connect, SAMPLE_BATCH};
pub(crate) use steer::{until_active, Steered};

/// What every worker of a run shares, read-only.
pub(crate) struct Plan {
    pub addr: SocketAddr,
    pub tls: Option<crate::tls::Tls>,
    pub request: Vec<u8>,
    pub head_request: bool,
    pub keepalive: bool,
    /// Re-send once a request the server closed an idle connection under (see
    /// `Config::resend`); scripted users' requests only when their method is idempotent.
    pub resend: bool,
    /// Whether the run's single request has an idempotent method.
    pub idempotent: bool,
    pub timeout: Duration,
    pub grace: Duration,
    pub interval: Duration,
    pub start: Instant,
    /// How long before `start` the run began (time to open connections ahead of it).
    pub lead: Duration,
    pub deadline: Option<Instant>,
    /// Open loop: where the schedule of arrivals ends (see `Config::schedule_end`). The run
    /// lasts until then even when its last arrival was answered earlier: a run of 1/s for
    /// 3.5 s lasts 3.5 s, not until its fourth answer at 3 s.
    pub schedule_end: Option<Instant>,
    pub load: Load,
    pub workers: usize,
    /// Request budget across all workers.
    pub requests: Option<u64>,
    /// Hand every sample over in batches.
    pub keep_samples: bool,
    /// Open loop: shortest time between two dispatcher wake-ups.
    pub timer_slack: Duration,
    /// `Some` to speak HTTP/2.
    pub http2: Option<Http2>,
    /// Scripted users, when the run has them.
    pub users: Option<Arc<dyn Users>>,
    /// Scripted users in a closed loop: least time between the starts of a user's iterations.
    pub pacing: Option<Duration>,
    /// Iteration budget across all workers (scripted users).
    pub iterations: Option<u64>,
    /// The `Host` header scripted users' requests carry unless they give their own.
    pub host_header: String,
}

/// What HTTP/2 runs add to the plan.
pub(crate) struct Http2 {
    /// The single request of a run without scripted users (these build theirs per request).
    pub request: crate::http2::Template,
    /// Stream slots per connection.
    pub max_streams: usize,
}

/// One worker's share of the load.
#[derive(Clone, Copy)]
pub(crate) struct Share {
    pub id: usize,
    /// Closed loop: requests this worker may issue (`None`: until the deadline or a stop).
    pub requests: Option<u64>,
    /// Open loop: connections this worker may open.
    pub max_connections: usize,
    /// Open loop: in-flight cap of this worker.
    pub max_in_flight: Option<u64>,
    /// Open loop: connection tasks (HTTP/2: stream slots) to start ahead of the schedule, each
    /// opening its connection (HTTP/2: the first slot of each connection).
    pub preopen: usize,
    /// Scripted users in a closed loop: iterations this worker may start.
    pub iterations: Option<u64>,
}

/// Where a connection's next request comes from.
#[derive(Clone, Copy)]
enum Source {
    /// Closed loop; `index` is the connection's number across all workers, which decides
    /// when a ramp activates it.
    Closed { index: u64 },
    /// Open loop: arrivals from the dispatcher (the worker's queue, or given to it while
    /// parked).
    Open,
    /// Open loop, a connection opened ahead of the schedule; then like `Open`.
    Preopened,
}

/// Runs one worker to completion on the calling thread.
pub(crate) fn run(
    runtime: tokio::runtime::Runtime,
    plan: Arc<Plan>,
    share: Share,
    stop: watch::Receiver<bool>,
    steering: watch::Receiver<crate::control::Steering>,
    events: Sender<Event>,
) {
    let local_set = LocalSet::new();
    local_set.block_on(&runtime, drive(plan, share, stop, steering, events));
}

async fn drive(
    plan: Arc<Plan>,
    share: Share,
    mut stop: watch::Receiver<bool>,
    steering: watch::Receiver<crate::control::Steering>,
    events: Sender<Event>,
) {
    let local = Rc::new(Local {
        recorder: RefCell::new(Recorder::new()),
        open: Rc::new(OpenConnections::default()),
        budget: Cell::new(share.requests.unwrap_or(u64::MAX)),
        iterations: Cell::new(share.iterations.unwrap_or(u64::MAX)),
        stopped: Cell::new(0),
        active: Cell::new(0),
        active_steps: RefCell::new(Vec::new()),
        stopping: Cell::new(false),
        queue: RefCell::new(VecDeque::new()),
        idle: Cell::new(0),
        parked: RefCell::new(Vec::new()),
        wake: Notify::new(),
        preopening: Cell::new(0),
        preopened: Notify::new(),
        arrivals_done: Cell::new(false),
        connections: Cell::new(0),
        spawned: Cell::new(0),
        starting: Cell::new(0),
        handed_over: Cell::new(0),
        groups: RefCell::new(Vec::new()),
        samples: plan
            .keep_samples
            .then(|| RefCell::new(Vec::with_capacity(SAMPLE_BATCH))),
        events: events.clone(),
        id: share.id,
        steer: Steered::new(&plan.load),
    });
    let follower = tokio::task::spawn_local(steer::follow(
        Rc::clone(&local),
        Arc::clone(&plan),
        local.steer.profile.borrow().clone(),
        steering,
    ));
    let ticker = tokio::task::spawn_local(hand_over_intervals(
        Rc::clone(&local),
        Arc::clone(&plan),
        share.id,
        events.clone(),
    ));

    let mut tasks = JoinSet::new();
    let mut dispatcher = None;
    match &plan.load {
        Load::Closed { connections } => {
            for index in 0..connections.peak().ceil() as u64 {
                if closed_owner(&plan, index) == share.id {
                    tasks.spawn_local(closed(Rc::clone(&local), Arc::clone(&plan), index));
                }
            }
        }
        Load::Open { rate, spacing, .. } => {
            let arrivals = Arrivals::new(
                rate.clone(),
                *spacing,
                plan.deadline.map(|d| d - plan.start),
                // With scripted users an arrival is an iteration.
                if plan.users.is_some() {
                    plan.iterations
                } else {
                    plan.requests
                },
                share.id,
                plan.workers,
            );
            dispatcher = Some(dispatch(
                Rc::clone(&local),
                Arc::clone(&plan),
                arrivals,
                share,
            ));
        }
    }

    // The dispatcher runs in this root future rather than as a task: the worker's `LocalSet`
    // polls its root future between every few dozen tasks, so a due arrival is not kept
    // waiting behind every connection task that has an answer to read (1–3 ms after a
    // server stall at 60,000/s, when they run first).
    let finished = async {
        if let Some(dispatcher) = dispatcher {
            dispatcher.await;
        }
        while tasks.join_next().await.is_some() {}
        // Closed loop: the connections a steering started.
        until(|| local.steer.extra_tasks.get() == 0).await;
        // Open loop: the dispatcher is done; wait for the requests it handed out (and, with
        // scripted users, for the iterations under way, pauses included).
        let users = plan.users.is_some();
        until(|| local.in_flight() == 0 && !(users && local.connections.get() > 0)).await;
        if let Some(end) = plan.schedule_end {
            tokio::time::sleep_until(end.into()).await;
        }
    };
    let deadline = async {
        match plan.deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => pending().await,
        }
    };
    tokio::select! {
        _ = finished => {}
        _ = deadline => {}
        _ = stop.wait_for(|&stop| stop) => {}
    }
    // No new requests from here on; those on the wire get the grace period to finish.
    local.stopping.set(true);
    local.wake_all();
    let _ = tokio::time::timeout(plan.grace, until(|| local.active.get() == 0)).await;
    tasks.abort_all();
    ticker.abort();
    follower.abort();

    local.flush_samples();
    let mut recorder = local.recorder.borrow_mut();
    recorder.record_errors(ErrorKind::Cancelled, local.active.get());
    for (step, &n) in local.active_steps.borrow().iter().enumerate() {
        if n > 0 {
            recorder.record_step_errors(step, n);
        }
    }
    // Arrivals still queued were never sent: they count as dropped, not as errors.
    for _ in local.queue.borrow_mut().drain(..) {
        recorder.record_dropped();
    }
    // HTTP/2 connections the server ended: closed already, or sent a GOAWAY and still
    // finishing (the run's end closes them before they would report it).
    let going_away = local
        .groups
        .borrow()
        .iter()
        .filter(|g| g.going_away())
        .count() as u64;
    for _ in 0..local.open.take_server_ended() + going_away {
        recorder.record_server_close();
    }
    let elapsed = plan.start.elapsed();
    // What is left belongs from the first interval not handed over yet. Not the interval the
    // run ended in: when the run ends on an interval boundary (a duration bound does) and the
    // ticker had no turn before it was stopped, the last whole interval's data would read as
    // a sliver of a few milliseconds after it, at a thousand times its rate, and the interval
    // itself as missing.
    let index = local.handed_over.get();
    // The receiver only disappears if the caller dropped the run; nothing to report to then.
    let _ = events.send(Event::Recorded {
        worker: share.id,
        index,
        recorder: Box::new(std::mem::take(&mut *recorder)),
        gauges: Gauges {
            connections_peak: local.open.peak(),
            ..Gauges::default()
        },
    });
    let _ = events.send(Event::Finished {
        worker: share.id,
        elapsed,
    });
}

/// Resolves once `done` holds, checking every millisecond. Used only at the end of a run.
async fn until(done: impl Fn() -> bool) {
    while !done() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// This connection's next request: its intended start and, in an open loop, its arrival;
/// `None` when it has no more.
async fn next_request(
    local: &Local,
    plan: &Plan,
    source: Source,
    link: &mut Link,
    parked: Option<&Rc<Parked>>,
) -> Option<(Instant, Option<Due>)> {
    match source {
        Source::Closed { index } => loop {
            if local.stopping.get() {
                return None;
            }
            let now = Instant::now();
            if plan.deadline.is_some_and(|d| now >= d) {
                return None;
            }
            if let Some(wake) = local.steer.inactive_until(index, now - plan.start) {
                // Ramped down, not yet up, or paused: a user that leaves closes its
                // connection (HTTP/2: frees its stream slot; the connection stays for the
                // others), and waits for its time or for the run to be steered.
                link.release();
                steer::until_active(local, plan, wake).await;
                continue;
            }
            return local.claim().then_some((now, None));
        },
        Source::Open | Source::Preopened => {
            if let (Some(parked), Link::Http1(slot @ Some(_))) = (parked, &mut *link) {
                if local.queue.borrow().is_empty()
                    && !local.arrivals_done.get()
                    && !local.stopping.get()
                {
                    // Idle with an open connection: leave it where the dispatcher can send
                    // the next request on it, and wait to be given that request.
                    *parked.conn.borrow_mut() = slot.take();
                    local.parked.borrow_mut().push(Rc::clone(parked));
                    parked.notify.notified().await;
                    *slot = parked.conn.borrow_mut().take();
                    if let Some(due) = parked.job.take() {
                        return Some((due.intended, Some(due)));
                    }
                    // Woken without a request: the arrivals ended or the run stops.
                }
            }
            next_arrival(local)
                .await
                .map(|due| (due.intended, Some(due)))
        }
    }
}

/// What a connection task (or a scripted user) sends its requests on.
pub(crate) enum Link {
    /// Its own HTTP/1.1 connection, while one is open.
    Http1(Option<Connection>),
    /// A stream slot on a connection the group's slots share.
    Http2(Rc<Group>),
}

impl Link {
    /// Whether this link holds its own open HTTP/1.1 connection (HTTP/2 connections are
    /// shared by stream slots and not counted here).
    pub(crate) fn is_open(&self) -> bool {
        matches!(self, Link::Http1(Some(_)))
    }

    /// Lets go of the connection (HTTP/1.1) when the task stops sending for a while.
    pub(crate) fn release(&mut self) {
        if let Link::Http1(conn) = self {
            *conn = None;
        }
    }

    pub(crate) fn tls_session(&self) -> Option<String> {
        match self {
            Link::Http1(conn) => conn.as_ref()?.tls_session(),
            Link::Http2(group) => group.tls_session(),
        }
    }
}

/// One connection (HTTP/2: one stream slot): take the next request, send it, wait for the
/// response, record, repeat.
async fn connection(local: Rc<Local>, plan: Arc<Plan>, source: Source, mut link: Link) {
    if let Source::Open = source {
        local.starting.set(local.starting.get() - 1);
    }
    // One timer per connection, re-armed per request: cheaper than a new timer each time.
    let timer = tokio::time::sleep(plan.timeout);
    tokio::pin!(timer);
    let mut counted = false;
    // Open loop over plain HTTP/1.1: while idle, this task parks its connection for the
    // dispatcher to send on (see `Parked`).
    let parked = (!matches!(source, Source::Closed { .. })
        && plan.tls.is_none()
        && plan.http2.is_none()
        && plan.users.is_none())
    .then(|| Rc::new(Parked::default()));
    if let Source::Preopened = source {
        // No request owns this connect: a failure here is not a result (the first request
        // connects again, and counts its own failure); a success counts the connection.
        let mut p = Progress::default();
        let opened = match &mut link {
            Link::Http1(slot @ None) => {
                match Connection::open(plan.addr, plan.tls.as_ref(), &mut p).await {
                    Ok(conn) => {
                        *slot = Some(conn);
                        true
                    }
                    Err(_) => false,
                }
            }
            Link::Http2(group) => {
                // The group's first slot opens its connection; the others find it open.
                let target = Target {
                    addr: plan.addr,
                    tls: plan.tls.as_ref(),
                };
                group.connect(&target, &mut p).await.is_ok() && p.connected.is_some()
            }
            Link::Http1(Some(_)) => false,
        };
        if opened {
            record_connect(&mut local.recorder.borrow_mut(), &p, || link.tls_session());
        }
        local.track_open(link.is_open(), &mut counted);
        local.preopening.set(local.preopening.get() - 1);
        if local.preopening.get() == 0 {
            local.preopened.notify_one();
        }
    }
    while let Some((intended, due)) =
        next_request(&local, &plan, source, &mut link, parked.as_ref()).await
    {
        let request = step::Request {
            intended,
            waiting_since: due.map(|d| d.waiting_since),
            // Taken by the dispatcher on a parked connection: it counted the request active
            // and may have written it already.
            taken: due.and_then(|d| d.taken),
            timeout: plan.timeout,
            bytes: &plan.request,
            head: step::Head::Run,
            head_request: plan.head_request,
            resend: plan.resend && plan.idempotent && plan.keepalive,
        };
        let mut progress = Progress::default();
        let _ = step::send(
            &local,
            &plan,
            &mut link,
            &mut counted,
            timer.as_mut(),
            &request,
            &mut progress,
        )
        .await;
    }
    local.track_open(false, &mut counted);
    if let Source::Open | Source::Preopened = source {
        local.connections.set(local.connections.get() - 1);
    }
}
