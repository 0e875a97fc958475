//! A worker: one thread with its own single-threaded runtime, connections and recorder.
//!
//! Nothing is shared between workers while requests run: each owns its share of the
//! connections and of the request budget, records into its own [`Recorder`], and hands the
//! recorder over once per interval. Within a worker, connection tasks share state through
//! `Rc`/`Cell`, which costs no atomic operation per request.

use std::cell::{Cell, RefCell};
use std::future::pending;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use belier_stats::{ErrorKind, Outcome, Recorder, Sample};
use tokio::sync::watch;
use tokio::task::{JoinSet, LocalSet};

use crate::connection::{Connection, Failure, Phase, Progress, Response};
use crate::Event;

/// What every worker of a run shares, read-only.
pub(crate) struct Plan {
    pub addr: SocketAddr,
    pub request: Vec<u8>,
    pub head_request: bool,
    pub keepalive: bool,
    pub timeout: Duration,
    pub grace: Duration,
    pub interval: Duration,
    pub start: Instant,
    pub deadline: Option<Instant>,
}

/// One worker's share of the load.
pub(crate) struct Share {
    pub id: usize,
    pub connections: usize,
    /// Requests this worker may issue (`None`: until the deadline or a stop).
    pub requests: Option<u64>,
}

/// State the connection tasks of one worker share.
struct Local {
    recorder: RefCell<Recorder>,
    /// Requests left to issue; `u64::MAX` means unlimited.
    budget: Cell<u64>,
    in_flight: Cell<u64>,
    stopping: Cell<bool>,
}

impl Local {
    fn claim(&self) -> bool {
        match self.budget.get() {
            0 => false,
            u64::MAX => true,
            n => {
                self.budget.set(n - 1);
                true
            }
        }
    }
}

/// Runs one worker to completion on the calling thread.
pub(crate) fn run(
    runtime: tokio::runtime::Runtime,
    plan: Arc<Plan>,
    share: Share,
    stop: watch::Receiver<bool>,
    events: Sender<Event>,
) {
    let local_set = LocalSet::new();
    local_set.block_on(&runtime, drive(plan, share, stop, events));
}

async fn drive(
    plan: Arc<Plan>,
    share: Share,
    mut stop: watch::Receiver<bool>,
    events: Sender<Event>,
) {
    let local = Rc::new(Local {
        recorder: RefCell::new(Recorder::new()),
        budget: Cell::new(share.requests.unwrap_or(u64::MAX)),
        in_flight: Cell::new(0),
        stopping: Cell::new(false),
    });
    let mut connections = JoinSet::new();
    for _ in 0..share.connections {
        connections.spawn_local(connection(Rc::clone(&local), Arc::clone(&plan)));
    }
    let ticker = tokio::task::spawn_local(hand_over_intervals(
        Rc::clone(&local),
        Arc::clone(&plan),
        share.id,
        events.clone(),
    ));

    let deadline = async {
        match plan.deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => pending().await,
        }
    };
    tokio::select! {
        _ = join_all(&mut connections) => {}
        _ = deadline => {}
        _ = stop.wait_for(|&stop| stop) => {}
    }
    // No new requests from here on; those in flight get the grace period to finish.
    local.stopping.set(true);
    let _ = tokio::time::timeout(plan.grace, join_all(&mut connections)).await;
    connections.abort_all();
    ticker.abort();

    let mut recorder = local.recorder.borrow_mut();
    recorder.record_errors(ErrorKind::Cancelled, local.in_flight.get());
    let elapsed = plan.start.elapsed();
    let index = interval_index(elapsed, plan.interval);
    // The receiver only disappears if the caller dropped the run; nothing to report to then.
    let _ = events.send(Event::Recorded {
        worker: share.id,
        index,
        recorder: Box::new(std::mem::take(&mut *recorder)),
    });
    let _ = events.send(Event::Finished {
        worker: share.id,
        elapsed,
    });
}

async fn join_all(set: &mut JoinSet<()>) {
    while set.join_next().await.is_some() {}
}

/// Hands the recorder over at every interval boundary, aligned on the run's start so that
/// all workers' interval `k` covers the same span of time.
async fn hand_over_intervals(
    local: Rc<Local>,
    plan: Arc<Plan>,
    worker: usize,
    events: Sender<Event>,
) {
    let first = plan.start + plan.interval;
    let mut ticks = tokio::time::interval_at(first.into(), plan.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let at = ticks.tick().await.into_std();
        let index = interval_index(at - plan.start, plan.interval).saturating_sub(1);
        let recorder = {
            let mut r = local.recorder.borrow_mut();
            let snapshot = r.clone();
            r.reset();
            snapshot
        };
        if events
            .send(Event::Recorded {
                worker,
                index,
                recorder: Box::new(recorder),
            })
            .is_err()
        {
            return;
        }
    }
}

fn interval_index(elapsed: Duration, interval: Duration) -> u64 {
    (elapsed.as_nanos() / interval.as_nanos()) as u64
}

/// One connection's closed loop: send, wait for the response, record, repeat.
async fn connection(local: Rc<Local>, plan: Arc<Plan>) {
    let mut conn: Option<Connection> = None;
    // One timer per connection, re-armed per request: cheaper than a new timer each time.
    let timer = tokio::time::sleep(plan.timeout);
    tokio::pin!(timer);
    loop {
        if local.stopping.get() {
            return;
        }
        let intended = Instant::now();
        if plan.deadline.is_some_and(|d| intended >= d) || !local.claim() {
            return;
        }
        local.in_flight.set(local.in_flight.get() + 1);
        timer.as_mut().reset((intended + plan.timeout).into());
        let mut progress = Progress::default();
        let result = tokio::select! {
            biased;
            r = attempt(&mut conn, &plan, &mut progress) => r,
            _ = &mut timer => Err(Failure::timeout(progress.phase)),
        };
        let done = Instant::now();
        local.in_flight.set(local.in_flight.get() - 1);

        let outcome = match &result {
            Ok(r) => Outcome::Response { status: r.status },
            Err(f) => Outcome::Error(f.kind),
        };
        let sample = Sample {
            intended,
            sent: progress.sent.unwrap_or(done),
            first_byte: progress.first_byte,
            done,
            outcome,
            bytes_in: progress.bytes_in,
            bytes_out: progress.bytes_out,
        };
        {
            let mut recorder = local.recorder.borrow_mut();
            recorder.record(&sample);
            if progress.connected {
                recorder.record_connection();
            }
            if let Err(f) = &result {
                recorder.note_error_example(f.kind, || f.cause.to_string());
            }
        }
        let reuse = plan.keepalive && matches!(result, Ok(Response { reusable: true, .. }));
        if !reuse {
            conn = None;
        }
    }
}

async fn attempt(
    slot: &mut Option<Connection>,
    plan: &Plan,
    p: &mut Progress,
) -> Result<Response, Failure> {
    let conn = match slot {
        Some(conn) => conn,
        None => {
            p.phase = Phase::Connecting;
            let conn = Connection::open(plan.addr).await?;
            p.connected = true;
            slot.insert(conn)
        }
    };
    p.phase = Phase::Exchanging;
    p.sent = Some(Instant::now());
    conn.exchange(&plan.request, plan.head_request, p).await
}
