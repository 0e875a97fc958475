//! One request of a scripted user, sent on a lane (the link it goes on, its buffers and its
//! timer): encoded, sent and awaited through the step every worker task uses, and counted in
//! flight under its step. The user's single requests and its parallel groups both go here.

use std::pin::Pin;
use std::time::Instant;

use belier_stats::{Sample, Trace, TraceId};
use tokio::time::Sleep;

use crate::connection::{Failure, Progress, Response};
use crate::link::Link;
use crate::load::Load;
use crate::local::{Found, Local};
use crate::plan::Plan;
use crate::request::{encode_outgoing, is_head, is_idempotent, InvalidRequest, Parts};
use crate::step;
use crate::trace_context::TRACEPARENT;
use crate::user::Outgoing;

/// What one request in flight uses: the link it goes on and whether that link's connection
/// is counted open, the buffers of its bytes, its response head and kept body, and its timer.
pub(crate) struct Lane<'a> {
    pub link: &'a mut Link,
    pub counted: &'a mut bool,
    pub request: &'a mut Vec<u8>,
    pub head: &'a mut Vec<u8>,
    pub body: &'a mut Vec<u8>,
    pub timer: Pin<&'a mut Sleep>,
}

/// How a request ended: its result, its sample, and whether its kept body was cut.
pub(crate) struct Ended {
    pub result: Result<Response, Failure>,
    pub sample: Sample,
    pub body_truncated: bool,
}

/// Sends one request of a user on `lane` and waits for its end; its head and kept body are
/// left in the lane's buffers.
pub(crate) async fn exchange(
    local: &Local,
    plan: &Plan,
    lane: &mut Lane<'_>,
    outgoing: &Outgoing,
    intended: Instant,
    trace_id: Option<TraceId>,
) -> Ended {
    let http1 = matches!(lane.link, Link::Http1(_));
    // Each request of a traced iteration is a span of its trace, unless it carries a
    // trace context of its own.
    let trace = trace_id
        .filter(|_| !Parts::of_outgoing(outgoing).has(TRACEPARENT))
        .map(|id| local.sampler.span(id));
    let found = plan
        .is_found(outgoing.origin)
        .then(|| local.connections.found(plan, outgoing.origin));
    // HTTP/2 builds (and checks) the head in the exchange.
    let refused = if http1 {
        encode(lane.request, plan, outgoing, found.as_ref(), trace.as_ref())
    } else {
        None
    };
    lane.head.clear();
    lane.body.clear();
    let mut progress = Progress {
        head: Some(std::mem::take(lane.head)),
        body: outgoing.keep_body.then(|| std::mem::take(lane.body)),
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
        bytes: lane.request,
        head: step::Head::Outgoing(outgoing),
        head_request: http1 && is_head(&outgoing.method),
        resend: http1 && plan.resend && plan.keepalive && is_idempotent(&outgoing.method),
        origin: outgoing.origin,
        found,
        refused: refused.as_ref(),
        trace,
    };
    step_active(local, outgoing.step, true);
    let (result, sample) = step::send(
        local,
        plan,
        lane.link,
        lane.counted,
        lane.timer.as_mut(),
        &request,
        &mut progress,
    )
    .await;
    step_active(local, outgoing.step, false);
    *lane.head = progress.head.take().unwrap_or_default();
    if let Some(body) = progress.body.take() {
        *lane.body = body;
    }
    Ended {
        result,
        sample,
        body_truncated: progress.body_truncated,
    }
}

/// Encodes an HTTP/1.1 request into `buffer`, with the Host header of the host it goes to;
/// the encoder's refusal if it must not be sent.
#[inline]
fn encode(
    buffer: &mut Vec<u8>,
    plan: &Plan,
    outgoing: &Outgoing,
    found: Option<&Found>,
    trace: Option<&Trace>,
) -> Option<InvalidRequest> {
    let host = match found {
        None => plan.dest(outgoing.origin).2,
        Some(Ok(dest)) => &dest.host_header,
        // Not sent: the exchange fails first.
        Some(Err(_)) => "",
    };
    encode_outgoing(buffer, outgoing, host, plan.keepalive, trace).err()
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
