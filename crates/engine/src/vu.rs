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

use crate::connection::Progress;
use crate::link::Link;
use crate::load::Load;
use crate::local::{next_arrival, Found, Local};
use crate::plan::Plan;
use crate::request::{encode_outgoing, is_head, is_idempotent, InvalidRequest};
use crate::step;
use crate::user::{Action, Outgoing, Reply, Tally, User, Users, Verdict};

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
    let mut vu = Vu::new(&plan, link);
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
    let mut state = Vu::new(&plan, link);
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
    fn new(plan: &Plan, link: Link) -> Vu {
        Vu {
            link,
            counted: false,
            others: Vec::new(),
            request: Vec::new(),
            head: Vec::new(),
            body: Vec::new(),
            timer: Box::pin(tokio::time::sleep(plan.timeout)),
        }
    }

    fn close(&mut self, local: &Local) {
        self.link.release();
        local.connections.track_open(false, &mut self.counted);
        for (link, counted) in &mut self.others {
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
        mut arrival: Option<Instant>,
        ramp: Option<u64>,
    ) -> End {
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
                Action::Pause(pause) => {
                    if !self.may_go_on(local, plan, ramp).await {
                        return halted(local, arrival);
                    }
                    tokio::time::sleep(pause).await;
                }
                Action::EndIteration => {
                    local.recording.recorder.borrow_mut().record_iteration();
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
        let http1 = matches!(self.link, Link::Http1(_));
        let found = plan
            .is_found(outgoing.origin)
            .then(|| local.connections.found(plan, outgoing.origin));
        // HTTP/2 builds (and checks) the head in the exchange.
        let refused = if http1 {
            self.encode(plan, outgoing, found.as_ref())
        } else {
            None
        };
        self.head.clear();
        self.body.clear();
        let mut progress = Progress {
            head: Some(std::mem::take(&mut self.head)),
            body: outgoing.keep_body.then(|| std::mem::take(&mut self.body)),
            ..Progress::default()
        };
        if let Some(mode) = outgoing.stream {
            progress.split_body_as(mode);
        }
        let request = step::Request {
            intended,
            // An open loop hands an iteration only to a user that is free (or new): none
            // waits for a connection, so the whole lag is belier's own.
            waiting_since: matches!(plan.load, Load::Open { .. }).then_some(None),
            taken: None,
            timeout: outgoing.timeout.unwrap_or(plan.timeout),
            bytes: &self.request,
            head: step::Head::Outgoing(outgoing),
            head_request: http1 && is_head(&outgoing.method),
            resend: http1 && plan.resend && plan.keepalive && is_idempotent(&outgoing.method),
            origin: outgoing.origin,
            found,
            refused: refused.as_ref(),
        };
        step_active(local, outgoing.step, true);
        let (link, counted) = link_to(
            &mut self.link,
            &mut self.counted,
            &mut self.others,
            outgoing.origin,
        );
        let (result, sample) = step::send(
            local,
            plan,
            link,
            counted,
            self.timer.as_mut(),
            &request,
            &mut progress,
        )
        .await;
        step_active(local, outgoing.step, false);
        self.head = progress.head.take().unwrap_or_default();
        if let Some(body) = progress.body.take() {
            self.body = body;
        }
        let latency = sample.done.saturating_duration_since(intended);
        let verdict = match &result {
            Ok(response) => {
                let body = if outgoing.keep_body {
                    &self.body[..]
                } else {
                    &[]
                };
                let reply = Reply {
                    status: response.status,
                    head: &self.head,
                    body,
                    body_truncated: progress.body_truncated,
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
            .record_step(outgoing.step, &sample, verdict.failed);
        if self.body.capacity() > KEPT_BODY_RETAINED {
            self.body = Vec::new();
        }
        if self.head.capacity() > KEPT_BODY_RETAINED {
            self.head = Vec::new();
        }
    }

    /// Encodes an HTTP/1.1 request into the user's buffer, with the Host header of the host it
    /// goes to; the encoder's refusal if it must not be sent.
    #[inline]
    fn encode(
        &mut self,
        plan: &Plan,
        outgoing: &Outgoing,
        found: Option<&Found>,
    ) -> Option<InvalidRequest> {
        let host = match found {
            None => plan.dest(outgoing.origin).2,
            Some(Ok(dest)) => &dest.host_header,
            // Not sent: the exchange fails first.
            Some(Err(_)) => "",
        };
        encode_outgoing(&mut self.request, outgoing, host, plan.keepalive).err()
    }
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

/// Counts a request of `step` in flight (`started`) or no longer.
fn step_active(local: &Local, step: usize, started: bool) {
    let mut active = local.active_steps.borrow_mut();
    if active.len() <= step {
        active.resize(step + 1, 0);
    }
    if started {
        active[step] += 1;
    } else {
        active[step] -= 1;
    }
}
