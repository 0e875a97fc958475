//! A scripted virtual user: one task on its worker's `LocalSet` that asks its [`User`] what to
//! do, sends the user's requests on its link (over HTTP/1.1 its own connection, over HTTP/2 a
//! stream slot on a connection its group shares, as the single-request loop's tasks have),
//! sleeps through its pauses and records every request both in the run's totals and under its
//! step's row.
//!
//! A pausing user is a parked task with a timer: no thread, no busy connection. Its memory is
//! the task itself, the user's state and three reusable buffers (request bytes, response head,
//! kept body), which is what lets ten thousand users run on one machine.

use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use tokio::time::Sleep;

use crate::link::Link;
use crate::load::Load;
use crate::local::{next_arrival, Local};
use crate::parallel;
use crate::plan::Plan;
use crate::sending::{exchange, Ended, Lane};
use crate::user::{Action, Outgoing, Reply, SocketAction, SocketOp, Tally, User, Users, Verdict};
use crate::user_socket::{self, UserSocket};

/// A kept body buffer larger than this is given back after the request, so that one large
/// response does not make a user hold a megabyte for the rest of the run.
const KEPT_BODY_RETAINED: usize = 64 * 1024;

/// How an iteration ended.
enum End {
    /// The user ended it ([`Action::EndIteration`]).
    Completed,
    /// The user is finished for the run ([`Action::Stop`]).
    Stopped,
    /// The run is over for this user: it stops, ramped down for good, or a budget is spent.
    Halted,
}

/// What a virtual user task owns besides its [`User`].
struct Vu {
    link: Link,
    /// Whether the link's own connection (HTTP/1.1) is counted among the worker's open ones.
    counted: bool,
    /// Links to the run's other hosts (`Outgoing::origin` 1, 2, ...), each with its `counted`;
    /// made as the user first sends to each.
    others: Vec<(Link, bool)>,
    request: Vec<u8>,
    head: Vec<u8>,
    body: Vec<u8>,
    /// The request timeout, re-armed for each request: cheaper than a new timer each time.
    timer: Pin<Box<Sleep>>,
    /// The trace of the iteration under way, when it is sampled (see `Config::trace_sample`).
    trace: Option<belier_stats::TraceId>,
    /// The connections to each host (by `Outgoing::origin`) a parallel group uses beside the
    /// one above, each with its `counted`.
    extra: Vec<Vec<(Link, bool)>>,
    /// Most connections to one host ([`Users::connections_per_host`]).
    per_host: usize,
    /// Close the connections at the end of every iteration
    /// ([`Users::connection_per_iteration`]).
    per_iteration: bool,
    /// The user's WebSocket, while a plan's `ws:` steps hold one open.
    socket: Option<Box<UserSocket>>,
}

/// Closed loop: user `index` (numbered across workers) runs iterations back to back, or one
/// per pacing interval, while the load's level is above `index`.
pub(crate) async fn closed(
    local: Rc<Local>,
    plan: Arc<Plan>,
    users: Arc<dyn Users>,
    index: u64,
    link: Link,
) {
    let mut vu = Vu::new(&plan, users.as_ref(), link);
    // Made when the user first becomes active: a ramp's later users cost nothing before.
    let mut user: Option<Box<dyn User>> = None;
    // Only a ramp or a steering can make a user inactive between two actions; a constant
    // level need not be checked at every request.
    let ramps =
        matches!(&plan.load, Load::Closed { connections } if !connections.stages().is_empty());
    loop {
        if !vu.wait_active(&local, &plan, index).await || !local.schedule.claim_iteration() {
            break;
        }
        let started = Instant::now();
        let user = user.get_or_insert_with(|| users.user(index));
        match vu
            .iteration(
                &local,
                &plan,
                user.as_mut(),
                None,
                (ramps || local.schedule.steer.epoch.get() > 0).then_some(index),
            )
            .await
        {
            End::Completed => {}
            End::Stopped | End::Halted => break,
        }
        if let Some(pacing) = plan.pacing {
            // An iteration longer than the pacing is followed at once by the next.
            tokio::time::sleep_until((started + pacing).into()).await;
        }
    }
    vu.close(&local);
}

/// Open loop: user number `vu` runs one iteration per due arrival it takes from the worker's
/// queue, until arrivals end or it stops.
pub(crate) async fn open(
    local: Rc<Local>,
    plan: Arc<Plan>,
    users: Arc<dyn Users>,
    vu: u64,
    link: Link,
) {
    let mut state = Vu::new(&plan, users.as_ref(), link);
    let mut user = users.user(vu);
    while let Some(due) = next_arrival(&local).await {
        match state
            .iteration(&local, &plan, user.as_mut(), Some(due.intended), None)
            .await
        {
            End::Completed => {}
            End::Stopped => {
                local.schedule.stopped.set(local.schedule.stopped.get() + 1);
                break;
            }
            End::Halted => break,
        }
    }
    state.close(&local);
    local
        .connections
        .tasks
        .set(local.connections.tasks.get() - 1);
}

/// Ends an iteration the run does not let go on. An open loop's arrival whose first request
/// was not sent yet counts as dropped: due, never sent (like those still queued at the end).
fn halted(local: &Local, arrival: Option<Instant>) -> End {
    if arrival.is_some() {
        local.recording.recorder.borrow_mut().record_dropped();
    }
    End::Halted
}

impl Vu {
    fn new(plan: &Plan, users: &dyn Users, link: Link) -> Vu {
        Vu {
            extra: Vec::new(),
            per_host: users.connections_per_host().max(1),
            per_iteration: users.connection_per_iteration(),
            link,
            counted: false,
            others: Vec::new(),
            request: Vec::new(),
            head: Vec::new(),
            body: Vec::new(),
            timer: Box::pin(tokio::time::sleep(plan.timeout)),
            trace: None,
            socket: None,
        }
    }

    fn close(&mut self, local: &Local) {
        self.link.release();
        local.connections.track_open(false, &mut self.counted);
        for (link, counted) in self
            .others
            .iter_mut()
            .chain(self.extra.iter_mut().flatten())
        {
            link.release();
            local.connections.track_open(false, counted);
        }
    }

    /// Waits while a closed loop's ramp has this user inactive (it closes its connection
    /// meanwhile). False when the user will not be active again or the run stops.
    async fn wait_active(&mut self, local: &Local, plan: &Plan, index: u64) -> bool {
        loop {
            if local.schedule.stopping.get() {
                return false;
            }
            let now = Instant::now();
            if plan.deadline.is_some_and(|d| now >= d) {
                return false;
            }
            if !matches!(plan.load, Load::Closed { .. }) {
                return true;
            }
            match local.schedule.steer.inactive_until(index, now - plan.start) {
                None => return true,
                Some(wake) => {
                    // Ramped down, not yet up, or paused: until its time, or a steering.
                    self.close(local);
                    local.schedule.steer.until_active(plan.start, wake).await;
                }
            }
        }
    }

    /// Whether the user may take its next action: the run is not stopping and, in a ramp
    /// (`ramp` is the user's index), the user is active; a user that ramps down finishes its
    /// current request or pause, then parks here until it is active again.
    async fn may_go_on(&mut self, local: &Local, plan: &Plan, ramp: Option<u64>) -> bool {
        if local.schedule.stopping.get() {
            return false;
        }
        match ramp {
            Some(index) => self.wait_active(local, plan, index).await,
            None => true,
        }
    }

    /// Runs the user until its iteration ends. `arrival` is the open loop's scheduled start,
    /// from which the iteration's first request is timed; `ramp` is the closed loop's user
    /// index, whose activity is checked between actions.
    async fn iteration(
        &mut self,
        local: &Local,
        plan: &Plan,
        user: &mut dyn User,
        arrival: Option<Instant>,
        ramp: Option<u64>,
    ) -> End {
        let end = self.actions(local, plan, user, arrival, ramp).await;
        // A socket lives no longer than the iteration that opened it.
        user_socket::end(local, &mut self.socket).await;
        end
    }

    /// Takes the user's actions until its iteration ends (see [`Vu::iteration`]).
    async fn actions(
        &mut self,
        local: &Local,
        plan: &Plan,
        user: &mut dyn User,
        mut arrival: Option<Instant>,
        ramp: Option<u64>,
    ) -> End {
        // A traced iteration is one trace, each of its requests a span.
        self.trace = local.sampler.draw_trace();
        loop {
            // The run's end (or a ramp) is checked before each request or pause, not before
            // asking the user: an iteration whose last request finished as the run stopped
            // still ends, and counts.
            let action = user.next();
            drain(local, user);
            match action {
                Action::Send(outgoing) => {
                    if !self.may_go_on(local, plan, ramp).await || !local.schedule.claim() {
                        return halted(local, arrival);
                    }
                    // Closed loop (and later requests): due when the user asked for it.
                    let intended = arrival.take().unwrap_or_else(Instant::now);
                    self.send(local, plan, user, &outgoing, intended).await;
                }
                Action::Parallel { step, requests } => {
                    if !self.may_go_on(local, plan, ramp).await || !local.schedule.claim() {
                        return halted(local, arrival);
                    }
                    // The group counts as one of the run's requests against its budget (its
                    // requests as many in the totals): it was claimed as one.
                    arrival.take();
                    if requests.is_empty() {
                        // Every request's hook refused it: the user counted them failed.
                        continue;
                    }
                    self.parallel(local, plan, user, step, &requests).await;
                }
                Action::Socket(action) => {
                    let opens = matches!(action.op, SocketOp::Open { .. });
                    // An open is one of the run's requests, against its budget.
                    if !self.may_go_on(local, plan, ramp).await
                        || (opens && !local.schedule.claim())
                    {
                        return halted(local, arrival);
                    }
                    let intended = arrival.take().unwrap_or_else(Instant::now);
                    self.socket_action(local, plan, user, &action, intended)
                        .await;
                }
                Action::Pause(pause) => {
                    if !self.may_go_on(local, plan, ramp).await {
                        return halted(local, arrival);
                    }
                    tokio::time::sleep(pause).await;
                }
                Action::EndIteration => {
                    local.recording.recorder.borrow_mut().record_iteration();
                    if self.per_iteration {
                        // A new visitor each iteration: new connections, full handshakes.
                        self.close(local);
                    }
                    return End::Completed;
                }
                Action::Stop => return End::Stopped,
            }
        }
    }

    /// Sends one request, records it, and tells the user how it ended.
    async fn send(
        &mut self,
        local: &Local,
        plan: &Plan,
        user: &mut dyn User,
        outgoing: &Outgoing,
        intended: Instant,
    ) {
        let (link, counted) = link_to(
            &mut self.link,
            &mut self.counted,
            &mut self.others,
            outgoing.origin,
        );
        let mut lane = Lane {
            link,
            counted,
            request: &mut self.request,
            head: &mut self.head,
            body: &mut self.body,
            timer: self.timer.as_mut(),
        };
        let ended = exchange(local, plan, &mut lane, outgoing, intended, self.trace).await;
        conclude(local, user, outgoing, &ended, &self.head, &self.body);
        if self.body.capacity() > KEPT_BODY_RETAINED {
            self.body = Vec::new();
        }
        if self.head.capacity() > KEPT_BODY_RETAINED {
            self.head = Vec::new();
        }
    }

    /// Performs an action on the user's WebSocket, records it under its step's row and tells
    /// the user how it ended.
    async fn socket_action(
        &mut self,
        local: &Local,
        plan: &Plan,
        user: &mut dyn User,
        action: &SocketAction,
        intended: Instant,
    ) {
        let acted = user_socket::act(local, plan, &mut self.socket, user, action, intended).await;
        let latency = acted.sample.done.saturating_duration_since(intended);
        let verdict = match &acted.result {
            Ok((status, message)) => {
                let reply = Reply {
                    status: *status,
                    head: &acted.head,
                    body: message,
                    body_truncated: false,
                    latency,
                    grpc: None,
                };
                reply_to(local, user, &reply)
            }
            Err(kind) => user.failed(*kind),
        };
        drain(local, user);
        local.recording.recorder.borrow_mut().record_step(
            action.step,
            &acted.sample,
            verdict.failed,
        );
    }

    /// Sends a parallel group's requests at once, each host's over up to `per_host` of the
    /// user's connections to it (over HTTP/2, every request a stream on the user's
    /// connection), then tells the user how each ended, in order, and records the group under
    /// row `step`.
    async fn parallel(
        &mut self,
        local: &Local,
        plan: &Plan,
        user: &mut dyn User,
        step: usize,
        requests: &[Outgoing],
    ) {
        let http2 = self.link.is_multiplexed();
        let placed = parallel::place(requests, if http2 { usize::MAX } else { self.per_host });
        let mut lanes: Vec<parallel::Lane> = placed
            .lanes
            .iter()
            .map(|&(origin, lane)| parallel::Lane::new(plan, self.take(origin, lane)))
            .collect();
        let started = Instant::now();
        let ended = parallel::run(
            local, plan, &mut lanes, &placed, requests, started, self.trace,
        )
        .await;
        let mut verdicts = Vec::with_capacity(requests.len());
        for (outgoing, (ended, head, body)) in requests.iter().zip(&ended) {
            verdicts.push(conclude(local, user, outgoing, ended, head, body));
        }
        let group = parallel::group_sample(started, &ended, &verdicts);
        let failed = verdicts.iter().any(|v| v.failed);
        local
            .recording
            .recorder
            .borrow_mut()
            .record_step(step, &group, failed);
        for (&(origin, lane), taken) in placed.lanes.iter().zip(lanes) {
            self.put(origin, lane, taken.into_link());
        }
    }

    /// Takes connection `lane` to host `origin` out of the user's keeping for a parallel
    /// group: lane 0 is the one single requests use. Over HTTP/2, a handle on the user's
    /// shared connection.
    fn take(&mut self, origin: usize, lane: usize) -> (Link, bool) {
        if let Some(shared) = self.link.share() {
            return (shared, false);
        }
        let (link, counted) = self.slot(origin, lane);
        (
            std::mem::replace(link, Link::Http1(None)),
            std::mem::take(counted),
        )
    }

    /// Gives back what [`Vu::take`] took.
    fn put(&mut self, origin: usize, lane: usize, taken: (Link, bool)) {
        if self.link.is_multiplexed() {
            return;
        }
        let (link, counted) = self.slot(origin, lane);
        (*link, *counted) = taken;
    }

    fn slot(&mut self, origin: usize, lane: usize) -> (&mut Link, &mut bool) {
        match lane.checked_sub(1) {
            None => link_to(&mut self.link, &mut self.counted, &mut self.others, origin),
            Some(extra) => {
                if self.extra.len() <= origin {
                    self.extra.resize_with(origin + 1, Vec::new);
                }
                let pool = &mut self.extra[origin];
                if pool.len() <= extra {
                    pool.resize_with(extra + 1, || (Link::Http1(None), false));
                }
                let (link, counted) = &mut pool[extra];
                (link, counted)
            }
        }
    }
}

/// Tells the user how its request ended and records it under its step's row.
fn conclude(
    local: &Local,
    user: &mut dyn User,
    outgoing: &Outgoing,
    ended: &Ended,
    head: &[u8],
    body: &[u8],
) -> Verdict {
    let latency = ended
        .sample
        .done
        .saturating_duration_since(ended.sample.intended);
    let verdict = match &ended.result {
        Ok(response) => {
            let reply = Reply {
                status: response.status,
                head,
                body: if outgoing.keep_body { body } else { &[] },
                body_truncated: ended.body_truncated,
                latency,
                grpc: response.grpc,
            };
            reply_to(local, user, &reply)
        }
        Err(failure) => user.failed(failure.kind),
    };
    drain(local, user);
    local
        .recording
        .recorder
        .borrow_mut()
        .record_step(outgoing.step, &ended.sample, verdict.failed);
    verdict
}

/// The user's link to the host `origin` names, and whether its connection is counted open.
/// Another host's requests go on the user's link to that host (HTTP/1.1 only: the engine
/// refuses other hosts with HTTP/2).
#[inline]
fn link_to<'a>(
    link: &'a mut Link,
    counted: &'a mut bool,
    others: &'a mut Vec<(Link, bool)>,
    origin: usize,
) -> (&'a mut Link, &'a mut bool) {
    match origin.checked_sub(1) {
        None => (link, counted),
        Some(i) => {
            if others.len() <= i {
                others.resize_with(i + 1, || (Link::Http1(None), false));
            }
            let (link, counted) = &mut others[i];
            (link, counted)
        }
    }
}

/// Hands the user its response, counting each check it evaluates.
#[inline]
fn reply_to(local: &Local, user: &mut dyn User, reply: &Reply<'_>) -> Verdict {
    let mut tally = |check: usize, passed: bool| {
        local
            .recording
            .recorder
            .borrow_mut()
            .record_check(check, passed);
    };
    user.reply(reply, &mut tally)
}

/// Records what the user counted besides a reply's checks.
fn drain(local: &Local, user: &mut dyn User) {
    user.drain(&mut |tally| {
        let mut recorder = local.recording.recorder.borrow_mut();
        match tally {
            Tally::Check { check, passed } => recorder.record_check(check, passed),
            Tally::Count { metric, n } => recorder.record_count(metric, n),
            Tally::Value { metric, us } => recorder.record_value(metric, us),
        }
    });
}
