//! The open loop's dispatcher: it makes each arrival due on its schedule and sends it on an
//! idle connection, hands it to an idle connection task, opens a connection for it, or
//! queues it (its latency counting) when every connection the worker may open is busy. It
//! also opens connections ahead of the schedule, so the first arrivals do not wait for them.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::task::{connection, Source};
use crate::arrivals::Arrivals;
use crate::local::{Due, Local};
use crate::plan::{Plan, Share};
use crate::timer::Timer;
use crate::user::Users;
use crate::vu;

/// Open loop (no scripted users): the least time a run starts ahead of its first arrival, for the
/// connections opened ahead of the schedule ([`PREOPEN_WINDOW`]) to be ready.
const OPEN_LOOP_LEAD: Duration = Duration::from_millis(20);

/// Open loop: on top of [`OPEN_LOOP_LEAD`], time allowed per connection a worker
/// opens ahead of its schedule. A loopback connect cost belier 50–60 µs of CPU on a 2-core VM
/// (the handshake runs in the connecting call, and wakes the server); with a fixed 20 ms, a
/// 70,000/s run was still opening its 700 connections when the first arrivals came due, and
/// those opened a hundred more (up to the cap) while the first ones were late by 20–30 ms.
const LEAD_PER_CONNECTION: Duration = Duration::from_micros(80);

/// The same over TLS: a handshake cost belier about 150 µs of CPU per connection against
/// nginx on the same VM (P-256, TLS 1.3).
const LEAD_PER_TLS_CONNECTION: Duration = Duration::from_micros(250);

/// Open loop: a worker that reached an arrival more than this beyond the timer slack after it
/// was due, within the last [`BEHIND_WINDOW`], opens no connection for an arrival that finds
/// none idle (unless it has none at all): the arrival waits for the next free one, and its
/// wait is belier's own lateness. Such a worker is behind on its own work, not short of
/// connections: the answers that would free connections are waiting for it to read them,
/// and every connect (a TLS handshake all the more) would put it further behind. Over TLS at
/// 15,000/s on one core, a start that fell behind opened 8,400 connections in 2 s, which held
/// the worker at 99 % and drew 2,435 closes from nginx at its connection limit, where 150
/// connections carry the rate.
const BEHIND: Duration = Duration::from_millis(1);

/// See [`BEHIND`]. A worker that is behind reaches some arrivals on time (those it gets to
/// between bursts of work), so one on-time arrival does not show it has caught up.
const BEHIND_WINDOW: Duration = Duration::from_millis(10);

/// The most time a run starts ahead of its first arrival.
const MAX_LEAD: Duration = Duration::from_secs(1);

/// Open loop timed by the kernel's receive stamps (HTTP/1.1 and HTTP/2, TLS or not, HTTP/3): the
/// longest wait for the next arrival that the worker sleeps through on a thread timer
/// ([`Timer::block_until`]) rather than in the runtime, so that it wakes once per arrival
/// instead of once more per answer (the runtime's epoll set holds every socket,
/// edge-triggered for reading whether or not a task waits on it, so any wait there ends with
/// the next answer). A request written on an idle plain connection leaves its task asleep
/// ([`crate::local::Schedule::sent`]); after the sleep those tasks read the answers that came
/// meanwhile, their times the kernel's, then the due arrivals go out on the connections they
/// freed. Over TLS and HTTP/2 the tasks (and an HTTP/2 connection's own task) wait in the
/// runtime as usual, which polls their sockets only after the sleep: tokio-rustls and the
/// HTTP/2 wire take the stamp of the read that brought the bytes, an HTTP/3 connection's
/// socket that of the last datagram it read. Longer waits (slow rates)
/// wait in the runtime: an answer left unread holds its connection, and everything else on
/// the thread (timeouts, the interval's hand-over, a stop) waits out a thread sleep.
/// bench/wakeups measures it at 2,000/s (bench/README.md).
const QUIET_WAIT_MAX: Duration = Duration::from_millis(5);

/// Open loop: a worker opens, ahead of its schedule, as many connections as arrivals it
/// starts with in this window (at least one, at most its cap; with HTTP/2, stream slots,
/// and the connections that carry them). Opening them on
/// demand instead made the first arrivals of a fast run wait for connects and each other
/// (at 50,000/s the first quarter second's lag p99 was 2.4–3.2 ms, against 0.3 ms after
/// it), and a stall of the server had belier open connections while it was reading the
/// answers that came back together: at 60,000–80,000/s, belier's own lag p99 was 0.6–1.6
/// ms with a 1 ms window and 0.3–0.7 ms with this one (three runs each).
const PREOPEN_WINDOW: Duration = Duration::from_millis(10);

/// Open loop (no scripted users): the connection tasks a worker starts ahead of its schedule
/// (HTTP/1.1 connections, or HTTP/2 stream slots), given the rate the profile starts at (all
/// workers together) and the tasks the worker may start.
pub(crate) fn preopen_count(start_rate: f64, workers: usize, max_connections: usize) -> usize {
    let per_worker = start_rate / workers.max(1) as f64;
    let wanted = (per_worker * PREOPEN_WINDOW.as_secs_f64()).ceil() as usize;
    wanted.max(1).min(max_connections)
}

/// How far ahead of its first arrival a run starts when its busiest worker opens `preopen`
/// connections (over TLS if `tls`) ahead of the schedule.
pub(crate) fn open_loop_lead(preopen: usize, tls: bool) -> Duration {
    let each = if tls {
        LEAD_PER_TLS_CONNECTION
    } else {
        LEAD_PER_CONNECTION
    };
    (OPEN_LOOP_LEAD + each * preopen.min(u32::MAX as usize) as u32).min(MAX_LEAD)
}

/// Open loop: makes each arrival due on time and sends it on a parked connection, or hands it
/// to an idle connection task, or opens a new one when none is idle and the cap allows, or
/// leaves it queued (its latency counting).
pub(super) async fn dispatch(local: Rc<Local>, plan: Arc<Plan>, arrivals: Arrivals, share: Share) {
    // Stream slots (HTTP/2) or connections the worker may fill. With scripted users the cap
    // counts users, as a closed loop's level does (a plan's `max_vus`): over HTTP/2 they fill
    // the streams of ⌈cap / max_streams⌉ connections.
    let slots = match (&plan.http2, &plan.users) {
        (Some(http2), None) => share.max_connections.saturating_mul(http2.max_streams),
        _ => share.max_connections,
    };
    preopen(&local, &plan, share).await;
    let mut pacing = Pacing::new(&plan);
    let mut behind = Behind::default();
    let mut arrivals = arrivals;
    let mut followed = 0;
    loop {
        // Steered since the last arrival: the schedule from here on follows the new profile
        // (the arrivals taken so far are its past, unchanged).
        if local.schedule.steer.epoch.get() != followed {
            followed = local.schedule.steer.epoch.get();
            arrivals.steer(local.schedule.steer.profile.borrow().clone());
        }
        let Some(offset) = arrivals.next() else {
            if local.schedule.steer.paused.get() && !local.schedule.stopping.get() {
                // Paused: the schedule goes on when the run is resumed (or the run ends).
                local.schedule.wake_sent();
                local.schedule.steer.dispatcher.notified().await;
                continue;
            }
            break;
        };
        let due = plan.start + offset;
        if plan.deadline.is_some_and(|d| due >= d) {
            break;
        }
        if pacing.wait_for(&local, &plan, due, followed).await {
            // This arrival's time may have moved: take it again under the new profile.
            arrivals.take_back();
            continue;
        }
        if local.schedule.stopping.get() {
            break;
        }
        // One clock reading per arrival serves both the lateness check and, on a parked
        // connection, the moment the request was taken up.
        let reached = Instant::now();
        let behind_schedule = behind.at(reached, due, plan.timer_slack);
        if let Some(users) = &plan.users {
            if !dispatch_iteration(&local, &plan, users, due, slots, share, behind_schedule) {
                break;
            }
            continue;
        }
        if !admit(&local, share) {
            continue;
        }
        if !pacing.send_on_parked(&local, &plan, due, reached).await {
            pacing.handed = true;
            queue_arrival(&local, &plan, due, slots, behind_schedule);
        }
    }
    local.schedule.arrivals_done.set(true);
    local.schedule.wake_all();
}

/// Opens the worker's share of connections ahead of the schedule and waits for them (a
/// connect failure counts as done): arrivals due while they connect would each open one more.
/// Not past the lead a second time, though: a server that answers connects that slowly is
/// measured by the arrivals, late.
async fn preopen(local: &Rc<Local>, plan: &Arc<Plan>, share: Share) {
    local.connections.preopening.set(share.preopen);
    for _ in 0..share.preopen {
        spawn_open(local, plan, Source::Preopened);
    }
    if share.preopen > 0 {
        let limit = plan.start + plan.lead;
        let preopened = async {
            while local.connections.preopening.get() > 0 {
                local.connections.preopened.notified().await;
            }
        };
        let _ = tokio::time::timeout_at(limit.into(), preopened).await;
    }
}

/// Counts an arrival as scheduled; false if it is dropped instead, with as many requests in
/// flight as the run allows (counted, never sent).
#[inline]
fn admit(local: &Local, share: Share) -> bool {
    let mut recorder = local.recording.recorder.borrow_mut();
    recorder.record_scheduled();
    if share
        .max_in_flight
        .is_some_and(|cap| local.in_flight() >= cap)
    {
        recorder.record_dropped();
        return false;
    }
    true
}

/// Queues an arrival that found no idle connection, and wakes an idle task for it or opens a
/// connection when the worker may.
#[inline]
fn queue_arrival(
    local: &Rc<Local>,
    plan: &Arc<Plan>,
    due: Instant,
    slots: usize,
    behind_schedule: bool,
) {
    let at_hand = local.schedule.idle.get() > 0 || local.connections.tasks.get() < slots;
    local.schedule.queue.borrow_mut().push_back(Due {
        waiting_since: (!at_hand).then(Instant::now),
        ..Due::at(due)
    });
    if local.schedule.idle.get() > 0 {
        // The dispatcher claims the idle connection, so a burst of due arrivals wakes
        // one connection each instead of piling onto the first.
        local.schedule.idle.set(local.schedule.idle.get() - 1);
        local.schedule.wake.notify_one();
    } else if !behind_schedule {
        // One for this arrival, and one more for an arrival queued while the worker was
        // behind, if any is left: that backlog goes to new connections at the pace of
        // the arrivals rather than waiting for the server to free one. Not all of it at
        // once: over TLS at 30,000/s that put the worker behind again, by turns (466
        // connections and own lag p99 2–10 ms, against 300 and 0.3–0.6 ms).
        open_for_queue(local, plan, slots, 2);
    } else if local.connections.tasks.get() == 0 {
        // Behind with no connection at all: nothing else would take the queue.
        open_for_queue(local, plan, slots, 1);
    }
}

/// How the dispatcher sleeps between arrivals, and what it left the connection tasks to do
/// when it last woke.
struct Pacing {
    timer: Timer,
    /// Answers timed by the kernel (see [`QUIET_WAIT_MAX`]): stamps on, to a network address.
    stamps: bool,
    /// Whether a task has an arrival to send that it has not taken up yet.
    handed: bool,
    /// Whether answers may have come while the thread slept that no task has read yet.
    unread: bool,
    last_wake: Instant,
}

impl Pacing {
    fn new(plan: &Plan) -> Pacing {
        Pacing {
            timer: Timer::new(),
            stamps: plan.kernel_stamps && plan.users.is_none() && plan.addr.is_tcp(),
            handed: false,
            unread: false,
            last_wake: Instant::now(),
        }
    }

    /// Waits until `due`, if it is ahead; true if the run was steered meanwhile (away from
    /// the steering epoch `followed`).
    ///
    /// At most one wake-up per timer slack: arrivals due in between leave together at the
    /// next wake. Each sleep and wake of the worker costs far more than the request it sends
    /// (a blocking epoll_wait, a context switch, on a VM often a halt and resume); the price
    /// is up to the slack of scheduling lag, which is measured and reported.
    #[inline]
    async fn wait_for(&mut self, local: &Local, plan: &Plan, due: Instant, followed: u64) -> bool {
        let now = Instant::now();
        if due <= now {
            return false;
        }
        let wake = due.max(self.last_wake + plan.timer_slack);
        let mut quiet = self.stamps && wake <= now + QUIET_WAIT_MAX && local.stamped.get();
        if quiet && std::mem::take(&mut self.handed) {
            // The tasks given an arrival (from the queue over TLS or HTTP/2, whose
            // connections are not parked) take it up and send it before the thread sleeps.
            tokio::task::yield_now().await;
        }
        quiet = quiet
            && local.schedule.queue.borrow().is_empty()
            && local.connections.starting.get() == 0
            && !hand_over_due(local, plan, now, wake);
        let steered = if quiet {
            if self.timer.block_until(wake) {
                // The tasks of the requests sent before the sleep read their answers,
                // which came meanwhile, before the due arrivals go out (on the connections
                // they free, idle for a moment only).
                local.schedule.wake_sent();
                tokio::task::yield_now().await;
                self.unread = local.active.get() > 0;
                local.schedule.steer.epoch.get() != followed
            } else {
                local.schedule.wake_sent();
                timed_wait(local, &mut self.timer, wake).await
            }
        } else {
            local.schedule.wake_sent();
            timed_wait(local, &mut self.timer, wake).await
        };
        if !steered {
            self.last_wake = Instant::now();
        }
        steered
    }

    /// Sends the arrival due at `due`, reached at `reached`, on an idle (parked) plain
    /// connection, now rather than when its task runs; false if none is idle.
    #[inline]
    async fn send_on_parked(
        &mut self,
        local: &Local,
        plan: &Plan,
        due: Instant,
        mut reached: Instant,
    ) -> bool {
        let mut parked = local.schedule.parked.borrow_mut().pop();
        if parked.is_none() && std::mem::take(&mut self.unread) {
            // Every idle connection is taken: the answers that came while the thread slept
            // free theirs, rather than a new connection for this arrival (the tasks the
            // runtime woke for them run at this yield).
            tokio::task::yield_now().await;
            parked = local.schedule.parked.borrow_mut().pop();
            reached = Instant::now();
        }
        let Some(parked) = parked else {
            return false;
        };
        // Unless the server closed it meanwhile: then its task opens a new one.
        let mut conn = parked.conn.borrow_mut();
        if conn.as_mut().is_some_and(|c| c.closed_while_idle(reached)) {
            *conn = None;
            local.recording.recorder.borrow_mut().record_server_close();
        }
        // A sampled arrival goes with its own bytes, which its task writes.
        let trace = local.sampler.draw();
        let written = match trace {
            None => conn.as_mut().map_or(0, |c| c.try_send(&plan.request)),
            Some(_) => 0,
        };
        drop(conn);
        self.handed |= written < plan.request.len();
        parked.job.set(Some(Due {
            taken: Some((reached, written)),
            trace: Some(trace),
            ..Due::at(due)
        }));
        local.active.set(local.active.get() + 1);
        if self.stamps && written == plan.request.len() {
            // Nothing for its task to do until the answer is in: woken after the next
            // sleep, or before any other wait.
            local.schedule.sent.borrow_mut().push(parked);
        } else {
            parked.notify.notify_one();
        }
        true
    }
}

/// Whether the worker owes, or will owe before `wake`, the hand-over of an interval (at each
/// boundary of the run's intervals, by a task that the runtime's timer runs, up to a
/// millisecond after the boundary): it then waits in the runtime rather than in a thread sleep
/// past it, after which arrivals due past the boundary were counted in the interval before
/// (two at 300/s in the rate-change test).
fn hand_over_due(local: &Local, plan: &Plan, now: Instant, wake: Instant) -> bool {
    let interval = plan.interval.as_nanos().max(1);
    let index = |t: Instant| (t.saturating_duration_since(plan.start).as_nanos() / interval) as u64;
    index(wake) != index(now) || local.recording.handed_over.get() < index(now)
}

/// Waits in the runtime until `wake` (woken by the sockets' answers too, which their tasks
/// read at once); true if the run was steered meanwhile.
async fn timed_wait(local: &Local, timer: &mut Timer, wake: Instant) -> bool {
    tokio::select! {
        biased;
        _ = timer.sleep_until(wake) => false,
        _ = local.schedule.steer.dispatcher.notified() => true,
    }
}

/// Whether the worker has been behind its schedule lately (see [`BEHIND`]).
#[derive(Default)]
struct Behind {
    /// When it last reached an arrival late.
    late_at: Option<Instant>,
}

impl Behind {
    /// Notes reaching, at `now`, an arrival due at `due`; true if the worker has been behind
    /// within the last [`BEHIND_WINDOW`].
    fn at(&mut self, now: Instant, due: Instant, slack: Duration) -> bool {
        if now.saturating_duration_since(due) > slack + BEHIND {
            self.late_at = Some(now);
        }
        self.late_at
            .is_some_and(|t| now.saturating_duration_since(t) < BEHIND_WINDOW)
    }
}

/// Open loop: opens up to `most` connections (within `slots`) for queued arrivals that no
/// connection about to start will take.
fn open_for_queue(local: &Rc<Local>, plan: &Arc<Plan>, slots: usize, most: usize) {
    for _ in 0..most {
        if local.connections.tasks.get() >= slots
            || local.connections.starting.get() >= local.schedule.queue.borrow().len()
        {
            break;
        }
        spawn_open(local, plan, Source::Open);
    }
}

/// Open loop: starts one more connection task (an HTTP/2 stream slot). Slots are numbered in
/// the order they start, so with HTTP/2 a new connection is opened only once every stream of
/// the existing ones is busy.
fn spawn_open(local: &Rc<Local>, plan: &Arc<Plan>, source: Source) {
    local
        .connections
        .tasks
        .set(local.connections.tasks.get() + 1);
    if let Source::Open = source {
        local
            .connections
            .starting
            .set(local.connections.starting.get() + 1);
    }
    let per_group = plan.http2.as_ref().map_or(1, |h| h.max_streams);
    let link = local
        .connections
        .link(plan, local.connections.spawned.get() / per_group);
    local
        .connections
        .spawned
        .set(local.connections.spawned.get() + 1);
    tokio::task::spawn_local(connection(Rc::clone(local), Arc::clone(plan), source, link));
}

/// Open loop with scripted users: starts the iteration due at `due` on an idle user, or on a
/// new one while fewer than `slots` exist; drops it when neither can be had. A worker
/// `behind` its schedule starts no new user (each would open a connection, see [`BEHIND`])
/// while it has one: the iteration waits for the next user to finish. False when no more
/// iterations can run (every user stopped, the users are [`Users::finished`], or the request
/// budget is spent).
fn dispatch_iteration(
    local: &Rc<Local>,
    plan: &Arc<Plan>,
    users: &Arc<dyn Users>,
    due: Instant,
    slots: usize,
    share: Share,
    behind: bool,
) -> bool {
    if local.schedule.stopped.get() >= slots || local.schedule.budget.get() == 0 || users.finished()
    {
        return false;
    }
    local.recording.recorder.borrow_mut().record_scheduled();
    let room = local.connections.tasks.get() + local.schedule.stopped.get() < slots;
    if local.schedule.idle.get() > 0 {
        local.schedule.idle.set(local.schedule.idle.get() - 1);
        local.schedule.queue.borrow_mut().push_back(Due::at(due));
        local.schedule.wake.notify_one();
    } else if room && behind && local.connections.tasks.get() > 0 {
        local.schedule.queue.borrow_mut().push_back(Due::at(due));
    } else if room {
        local.schedule.queue.borrow_mut().push_back(Due::at(due));
        local
            .connections
            .tasks
            .set(local.connections.tasks.get() + 1);
        // Users are numbered across workers and shards: worker w's k-th user is the shard's
        // (k·W + w)-th. With HTTP/2 the k-th user is a stream slot of the worker's group
        // k / max_streams, so a new connection opens only once every slot of the existing
        // ones has a user.
        let k = local.connections.spawned.get();
        let vu = plan.shard.global((k * plan.workers + share.id) as u64);
        let per_group = plan.http2.as_ref().map_or(1, |h| h.max_streams);
        let link = local.connections.link(plan, k / per_group);
        local.connections.spawned.set(k + 1);
        tokio::task::spawn_local(vu::open(
            Rc::clone(local),
            Arc::clone(plan),
            Arc::clone(users),
            vu,
            link,
        ));
    } else {
        local.recording.recorder.borrow_mut().record_dropped();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_opened_ahead_cover_the_window_within_the_cap() {
        // 10 ms of a worker's arrivals, rounded up, at least one, at most its cap.
        assert_eq!(preopen_count(70_000.0, 1, 800), 700);
        assert_eq!(preopen_count(70_000.0, 2, 800), 350);
        assert_eq!(preopen_count(70_000.0, 1, 200), 200);
        assert_eq!(preopen_count(150.0, 1, 800), 2);
        assert_eq!(preopen_count(0.5, 4, 800), 1);
        assert_eq!(preopen_count(0.0, 1, 800), 1);
        assert_eq!(preopen_count(1000.0, 1, 0), 0);
    }

    #[test]
    fn the_lead_grows_with_the_connections_to_open_up_to_a_second() {
        assert_eq!(open_loop_lead(1, false), Duration::from_micros(20_080));
        assert_eq!(open_loop_lead(700, false), Duration::from_millis(76));
        assert_eq!(open_loop_lead(100, true), Duration::from_millis(45));
        assert_eq!(open_loop_lead(100_000, false), Duration::from_secs(1));
        assert_eq!(open_loop_lead(usize::MAX, true), Duration::from_secs(1));
    }
}
