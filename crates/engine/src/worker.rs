//! A worker: one thread with its own single-threaded runtime, connections and recorder.
//!
//! Nothing is shared between workers while requests run: each owns its share of the
//! connections, arrivals and request budget, records into its own
//! [`Recorder`](belier_stats::Recorder), and hands the recorder over once per interval.
//! Within a worker, tasks share state through `Rc`/`Cell`, which costs no atomic operation
//! per request.
//!
//! One connection loop serves both load models; only where its next request comes from
//! differs ([`task::Source`]): the closed loop takes one as soon as the previous finished
//! (while its connection is active in the ramp and the budget lasts), the open loop takes the
//! next due arrival from a dispatcher that runs on schedule ([`mod@dispatch`]). Over plain
//! HTTP/1.1 the dispatcher writes the request on an idle connection itself
//! ([`Parked`](crate::local::Parked)) and the connection's task reads the answer; otherwise
//! it queues the arrival for an idle task, or for a new connection. Every task, scripted
//! users' too, sends its requests with the one request step ([`crate::step`]).

use std::future::{pending, Future};
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use belier_stats::{ErrorKind, Gauges};
use tokio::sync::watch;
use tokio::task::{JoinSet, LocalSet};

use crate::arrivals::Arrivals;
use crate::load::Load;
use crate::local::Local;
use crate::plan::{Plan, Share};
use crate::Event;

mod closed;
mod dispatch;
mod intervals;
mod steer;
mod task;

use closed::{closed, closed_owner};
use dispatch::dispatch;
pub(crate) use dispatch::{open_loop_lead, preopen_count};
use intervals::hand_over_intervals;

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
    stop: watch::Receiver<bool>,
    steering: watch::Receiver<crate::control::Steering>,
    events: Sender<Event>,
) {
    let local = Rc::new(Local::new(&plan, &share, events.clone()));
    let follower = tokio::task::spawn_local(steer::follow(
        Rc::clone(&local),
        Arc::clone(&plan),
        local.schedule.steer.profile.borrow().clone(),
        steering,
    ));
    let ticker = tokio::task::spawn_local(hand_over_intervals(
        Rc::clone(&local),
        Arc::clone(&plan),
        share.id,
        events.clone(),
    ));
    // Held connections live beside the load, apart from its tasks: the load's end ends them.
    let mut held = JoinSet::new();
    let opening = crate::hold::opening();
    for _ in 0..share.held {
        let keep = crate::hold::keep(Rc::clone(&local), Arc::clone(&plan), Rc::clone(&opening));
        held.spawn_local(keep);
    }
    let mut tasks = JoinSet::new();
    let dispatcher = start_load(&local, &plan, share, &mut tasks);
    run_until_end(&local, &plan, dispatcher, &mut tasks, stop).await;
    // No new requests from here on; those on the wire get the grace period to finish.
    local.schedule.stopping.set(true);
    local.schedule.wake_all();
    let _ = tokio::time::timeout(plan.grace, until(|| local.active.get() == 0)).await;
    tasks.abort_all();
    held.abort_all();
    ticker.abort();
    follower.abort();
    // QUIC connections are told they end, as a TCP close tells the server (else the server
    // holds them until its idle timeout); their drivers send the CONNECTION_CLOSE in the
    // moment this gives them, and count their ends as belier's.
    if local.connections.close_quic() {
        tokio::time::sleep(QUIC_CLOSE_SENT).await;
    }
    hand_over_the_rest(&local, &plan, share, &events);
}

/// How long a worker's end waits for its QUIC connections' drivers to send their
/// CONNECTION_CLOSE: a turn of the runtime is enough, this bounds it.
const QUIC_CLOSE_SENT: Duration = Duration::from_millis(2);

/// Starts the worker's share of the load: a closed loop's connection tasks (spawned on
/// `tasks`), or the open loop's dispatcher, returned for the caller to run.
fn start_load(
    local: &Rc<Local>,
    plan: &Arc<Plan>,
    share: Share,
    tasks: &mut JoinSet<()>,
) -> Option<impl Future<Output = ()>> {
    match &plan.load {
        Load::Closed { connections } => {
            for index in 0..connections.peak().ceil() as u64 {
                if closed_owner(plan, index) == Some(share.id) {
                    tasks.spawn_local(closed(Rc::clone(local), Arc::clone(plan), index));
                }
            }
            None
        }
        Load::Open { rate, spacing, .. } => {
            let arrivals = Arrivals::striped(
                rate.clone(),
                *spacing,
                plan.deadline.map(|d| d - plan.start),
                // With scripted users an arrival is an iteration.
                if plan.users.is_some() {
                    plan.iterations
                } else {
                    plan.requests
                },
                plan.shard.stripe(share.id as u64, plan.workers as u64),
            );
            Some(dispatch(
                Rc::clone(local),
                Arc::clone(plan),
                arrivals,
                share,
            ))
        }
    }
}

/// Runs the load until it is done, the deadline passes (and the open loop has taken every
/// arrival due before it) or the run is stopped.
async fn run_until_end(
    local: &Local,
    plan: &Plan,
    dispatcher: Option<impl Future<Output = ()>>,
    tasks: &mut JoinSet<()>,
    mut stop: watch::Receiver<bool>,
) {
    // The dispatcher runs in this root future rather than as a task: the worker's `LocalSet`
    // polls its root future between every few dozen tasks, so a due arrival is not kept
    // waiting behind every connection task that has an answer to read (1–3 ms after a
    // server stall at 60,000/s, when they run first).
    let open_loop = dispatcher.is_some();
    let finished = async {
        if let Some(dispatcher) = dispatcher {
            dispatcher.await;
        }
        while tasks.join_next().await.is_some() {}
        // Closed loop: the connections a steering started.
        until(|| local.schedule.steer.extra_tasks.get() == 0).await;
        // Open loop: the dispatcher is done; wait for the requests it handed out (and, with
        // scripted users, for the iterations under way, pauses included).
        let users = plan.users.is_some();
        until(|| local.in_flight() == 0 && !(users && local.connections.tasks.get() > 0)).await;
        if let Some(end) = plan.schedule_end {
            tokio::time::sleep_until(end.into()).await;
        }
    };
    let deadline = async {
        match plan.deadline {
            Some(d) => {
                tokio::time::sleep_until(d.into()).await;
                // Every arrival due before the deadline is the run's, however late this
                // thread woke (the dispatcher stops at the first due at or after it): on a
                // loaded machine the deadline's timer and the last arrivals' fire in the same
                // wake-up, and ending on the deadline's dropped the arrivals not taken yet,
                // neither sent nor counted (99 of 100 beside one CPU-bound process).
                let schedule = &local.schedule;
                until(|| !open_loop || schedule.arrivals_done.get() || schedule.steer.paused.get())
                    .await;
                // So are the arrivals due before it that no connection had taken yet: they go
                // out late, their lag counted, within the grace period (ending here dropped
                // them: 6 of 20,000 gRPC calls at 2,000/s over two busy HTTP/2 connections).
                let queued = || !schedule.queue.borrow().is_empty() && !schedule.steer.paused.get();
                if open_loop {
                    let _ = tokio::time::timeout(plan.grace, until(|| !queued())).await;
                }
            }
            None => pending().await,
        }
    };
    tokio::select! {
        _ = finished => {}
        _ = deadline => {}
        _ = stop.wait_for(|&stop| stop) => {}
    }
}

/// Counts what the end of the run cut short and hands over the worker's last recorder, then
/// says the worker is done.
fn hand_over_the_rest(local: &Local, plan: &Plan, share: Share, events: &Sender<Event>) {
    local.flush_samples();
    let mut recorder = local.recording.recorder.borrow_mut();
    local.recording.count_wakeups(&mut recorder);
    recorder.record_errors(ErrorKind::Cancelled, local.active.get());
    for (step, &n) in local.active_steps.borrow().iter().enumerate() {
        if n > 0 {
            recorder.record_step_errors(step, n);
        }
    }
    // Arrivals still queued were never sent: they count as dropped, not as errors.
    for _ in local.schedule.queue.borrow_mut().drain(..) {
        recorder.record_dropped();
    }
    // HTTP/2 connections the server ended: closed already, or sent a GOAWAY and still
    // finishing (the run's end closes them before they would report it).
    let going_away = local
        .connections
        .groups
        .borrow()
        .iter()
        .filter(|g| g.going_away())
        .count() as u64;
    for _ in 0..local.connections.open.take_server_ended() + going_away {
        recorder.record_server_close();
    }
    recorder.record_quic(&local.connections.take_quic(true));
    let elapsed = plan.start.elapsed();
    // What is left belongs from the first interval not handed over yet. Not the interval the
    // run ended in: when the run ends on an interval boundary (a duration bound does) and the
    // ticker had no turn before it was stopped, the last whole interval's data would read as
    // a sliver of a few milliseconds after it, at a thousand times its rate, and the interval
    // itself as missing.
    let index = local.recording.handed_over.get();
    // The receiver only disappears if the caller dropped the run; nothing to report to then.
    let _ = events.send(Event::Recorded {
        worker: share.id,
        index,
        recorder: Box::new(std::mem::take(&mut *recorder)),
        gauges: Gauges {
            connections_peak: local.connections.open.peak(),
            held: local.connections.held.get(),
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
