//! One request step, the same for every kind of worker task (a connection of the closed or
//! open loop, a scripted user): send one request on the task's link (HTTP/1.1 or HTTP/2),
//! await its response under the timeout, time its phases, record the sample, and account for
//! a connection the server ended before letting go of the link. What chooses the next request
//! is the caller's; nothing here differs between a flag run and a plan but the request itself.

use std::pin::Pin;
use std::time::{Duration, Instant};

use belier_stats::{ErrorKind, Outcome, Sample, Trace};
use tokio::time::Sleep;

use crate::connection::{exchange_http1, Cause, Failure, Http1Request, Progress, Response};
use crate::http2::{Target, Template};
use crate::link::Link;
use crate::local::{Found, Local};
use crate::plan::Plan;
use crate::request::InvalidRequest;
use crate::user::Outgoing;

/// One request as the step sends it.
pub(crate) struct Request<'a> {
    /// When it was meant to start.
    pub intended: Instant,
    /// Open loop: when its arrival started to wait for a connection (`Some(None)`: it waited
    /// for none, and was ready when taken up). `None` in a closed loop.
    pub waiting_since: Option<Option<Instant>>,
    /// Taken up by the dispatcher on a parked connection: when, and how many of its bytes it
    /// wrote there; the dispatcher counted it active. `None`: taken up now, by the step.
    pub taken: Option<(Instant, usize)>,
    pub timeout: Duration,
    /// HTTP/1.1: the encoded request.
    pub bytes: &'a [u8],
    /// HTTP/2: where the request's head comes from.
    pub head: Head<'a>,
    /// HTTP/1.1: whether it is a `HEAD` request (its response has no body).
    pub head_request: bool,
    /// HTTP/1.1 and HTTP/3: whether it may go again on a new connection after the server
    /// closed the idle one under it (see [`exchange_http1`] and the `http3` module).
    pub resend: bool,
    /// Which of the run's hosts it goes to (see [`Outgoing::origin`]); 0 for the run's own.
    pub origin: usize,
    /// A host the users found during the run, as the worker resolved it (`None` for the
    /// run's own hosts).
    pub found: Option<Found>,
    /// A scripted user's request the encoder refused ([`crate::request::rules`]): it fails
    /// without a byte of it sent.
    pub refused: Option<&'a InvalidRequest>,
    /// Its trace context, when it is sampled: HTTP/1.1 `bytes` carry its header already;
    /// an HTTP/2 head gets it here.
    pub trace: Option<Trace>,
}

/// Where an HTTP/2 request's head comes from.
pub(crate) enum Head<'a> {
    /// The run's single request, built once ([`crate::plan::Http2::request`]).
    Run,
    /// A scripted user's request, its head built for this request.
    Outgoing(&'a Outgoing),
}

/// Sends `request` on `link` and waits for its response, at most its timeout from when it
/// was taken up; records the sample (and the connect, TLS session, re-send and closes it
/// came with), counts a server close of a connection belier meant to keep, and lets go of the
/// connection unless it can carry the next request. `counted` says whether the link's own
/// connection is counted among the worker's open ones; `timer` is the task's, re-armed here.
/// `progress` may carry buffers for the response's head and body. Returns how the request
/// ended and its sample.
pub(crate) async fn send(
    local: &Local,
    plan: &Plan,
    link: &mut Link,
    counted: &mut bool,
    mut timer: Pin<&mut Sleep>,
    request: &Request<'_>,
    progress: &mut Progress,
) -> (Result<Response, Failure>, Sample) {
    prepare(local, plan, progress);
    let reused = link.is_open();
    // An HTTP/1.1 request without a connection opens one in the exchange: it is counted open
    // from the start of its connect, not once the exchange is over. Otherwise a connection
    // that lives for one request (--no-keepalive) is counted only between its response and
    // its close, a moment no other task of the worker can share, and the peak says threads,
    // not connections.
    local
        .connections
        .track_open(reused || matches!(link, Link::Http1(None)), counted);
    // The closed loop's own request is taken up as it comes due: one clock reading for both.
    // (A scripted user's may have waited for its lane in a parallel group since it was due.)
    let (dispatched, written) =
        request
            .taken
            .unwrap_or_else(|| match (request.waiting_since, &request.head) {
                (None, Head::Run) => (request.intended, 0),
                _ => (Instant::now(), 0),
            });
    if request.taken.is_none() {
        local.active.set(local.active.get() + 1);
    }
    timer
        .as_mut()
        .reset((dispatched + time_limit(plan, request)).into());
    let result = tokio::select! {
        biased;
        r = exchange(link, plan, request, (dispatched, written), &mut *progress) => r,
        _ = timer => Err(Failure::timeout(progress.phase)),
    };
    // A response read with kernel stamps completed when its last byte reached the host (see
    // `done` below): the clock is read only for the others.
    let stamped = match (&result, progress.completed) {
        (Ok(_), Some(completed)) => Some(completed),
        _ => None,
    };
    let done = stamped.unwrap_or_else(Instant::now);
    local.active.set(local.active.get() - 1);
    local.connections.track_open(link.is_open(), counted);

    let sample = Sample {
        intended: request.intended,
        dispatched,
        ready: request.waiting_since.map(|w| w.unwrap_or(dispatched)),
        connected: progress.connected,
        handshaken: progress.handshaken,
        sent: progress.sent.unwrap_or(done),
        first_byte: progress.first_byte,
        // A response read with kernel stamps completed when its last byte reached the host.
        // (Never before its first byte: each stamp is converted on its own, through an offset
        // that may be measured again in between.)
        done: match stamped {
            Some(completed) => progress.first_byte.map_or(completed, |f| completed.max(f)),
            None => done,
        },
        outcome: match &result {
            Ok(Response {
                grpc: None, status, ..
            }) => Outcome::Response { status: *status },
            Ok(Response {
                grpc: Some(code), ..
            }) => Outcome::Grpc { code: *code },
            Err(f) => failed(f, plan, request, done >= dispatched + request.timeout),
        },
        bytes_in: progress.bytes_in,
        bytes_out: progress.bytes_out,
        trace: request.trace,
    };
    local.record(sample, progress, &result, || link.tls_session());
    local.keep_traced(&sample, || request.traced_step());
    if let Some(capture) = progress.timing.take() {
        local.timing.give_back(capture);
    }
    let reuse = plan.keepalive && matches!(result, Ok(Response { reusable: true, .. }));
    // A WebSocket session's connection is never kept: its end is the session's.
    let kept = plan.keepalive && plan.websocket.is_none();
    if kept && server_ended(&result, reused, progress) && matches!(link, Link::Http1(_)) {
        local.recording.recorder.borrow_mut().record_server_close();
    }
    if !reuse {
        link.release();
    }
    local.connections.track_open(link.is_open(), counted);
    (result, sample)
}

/// Sets what the exchange reads of the run's settings on `progress`: decoding, stamps, the
/// source addresses, the server timing header's buffer and how a body is cut.
fn prepare(local: &Local, plan: &Plan, progress: &mut Progress) {
    progress.compressed = plan.compressed;
    progress.kernel_stamps = plan.kernel_stamps;
    progress.sources.clone_from(&plan.sources);
    if let Some(header) = &plan.server_timing {
        progress.timing = Some(local.timing.capture(header));
    }
    if let (Some(mode), None) = (plan.body_stream, &progress.split) {
        progress.split_body_as(mode);
    }
}

impl Request<'_> {
    /// A scripted user's request as its traced span names it (`None`: the run's own).
    fn traced_step(&self) -> Option<crate::TracedStep> {
        match self.head {
            Head::Run => None,
            Head::Outgoing(outgoing) => Some(crate::TracedStep {
                step: outgoing.step,
                method: outgoing.method.clone(),
                path_and_query: outgoing.path_and_query.clone(),
                origin: outgoing.origin,
            }),
        }
    }
}

/// The outcome of a request that failed: its error kind, but for a gRPC call (the run's, or a
/// scripted user's) its deadline
/// passing (`DEADLINE_EXCEEDED`), as a gRPC client counts it: the timeout cut it short, or
/// (`past_deadline`) the server reset its stream with CANCEL once the deadline it was sent
/// (`grpc-timeout`) passed on its side too, a race grpc-go's client reads the same way.
fn failed(f: &Failure, plan: &Plan, request: &Request<'_>, past_deadline: bool) -> Outcome {
    let grpc = match request.head {
        Head::Run => plan.http2.as_ref().is_some_and(|h| h.request.is_grpc()),
        // A plan's `grpc:` step (over HTTP/2 only).
        Head::Outgoing(outgoing) => plan.http2.is_some() && crate::http2::is_grpc(outgoing),
    };
    let cancelled = matches!(&f.cause, Cause::Http2(e) if e.reason() == Some(h2::Reason::CANCEL));
    if grpc && (f.kind == ErrorKind::Timeout || (past_deadline && cancelled)) {
        Outcome::Grpc {
            code: belier_grpc::Code::DeadlineExceeded.number(),
        }
    } else {
        Outcome::Error(f.kind)
    }
}

/// How long `request` may take: its timeout; a WebSocket session lives until its messages or
/// the run end (the timeout bounds its upgrade).
fn time_limit(plan: &Plan, request: &Request<'_>) -> Duration {
    match plan.websocket {
        Some(_) => crate::websocket::SOCKET_LIFE,
        None => request.timeout,
    }
}

/// Whether the server ended a connection belier meant to keep: it asked to close, or closed
/// or reset it under a request (`reused`: the request went on an existing connection).
fn server_ended(result: &Result<Response, Failure>, reused: bool, progress: &Progress) -> bool {
    match result {
        Ok(r) => !r.reusable,
        Err(f) => {
            (reused || progress.connected.is_some())
                && matches!(
                    f.kind,
                    ErrorKind::ClosedBeforeResponse
                        | ErrorKind::ClosedMidBody
                        | ErrorKind::ConnectionReset
                )
        }
    }
}

/// The HTTP/2 (or HTTP/3) head of `request`: the run's, built once, or one built in `built`
/// for a scripted user's request; with its `traceparent` when it is sampled.
fn template<'a>(
    plan: &'a Plan,
    request: &Request<'_>,
    built: &'a mut Option<Template>,
) -> Result<&'a Template, Failure> {
    let run = || {
        &plan
            .http2
            .as_ref()
            .expect("a multiplexed link in an HTTP/2 or HTTP/3 run")
            .request
    };
    let own = match request.head {
        Head::Run => None,
        Head::Outgoing(outgoing) => Some(Template::for_outgoing(
            outgoing,
            &plan.host_header,
            plan.tls.is_some(),
        )?),
    };
    Ok(match (own, &request.trace) {
        (None, None) => run(),
        (None, Some(trace)) => built.insert(run().with_traceparent(trace)),
        (Some(own), None) => built.insert(own),
        (Some(own), Some(trace)) => built.insert(own.with_traceparent(trace)),
    })
}

/// Writes the request on the link and reads its response. HTTP/1.1: opens the connection if
/// needed; `written` is when the request was taken up and how many of its bytes are written
/// already. HTTP/2: sends it on the group's connection, its head built first for a scripted
/// user's request.
async fn exchange(
    link: &mut Link,
    plan: &Plan,
    request: &Request<'_>,
    written: (Instant, usize),
    p: &mut Progress,
) -> Result<Response, Failure> {
    if let Some(refused) = request.refused {
        return Err(refused.clone().into());
    }
    let slot = match link {
        Link::Http1(slot) => slot,
        Link::Http2(group) => {
            let mut built = None;
            let template = template(plan, request, &mut built)?;
            let target = Target {
                addr: &plan.addr,
                tls: plan.tls.as_ref(),
            };
            return group.exchange(&target, template, p).await;
        }
        Link::Http3(group) => {
            let client = plan
                .http3
                .as_ref()
                .expect("an HTTP/3 link in an HTTP/3 run");
            let mut built = None;
            let template = template(plan, request, &mut built)?;
            return group
                .exchange(client, &plan.addr, (template, request.resend), p)
                .await;
        }
    };
    let http1 = Http1Request {
        bytes: request.bytes,
        written,
        head_request: request.head_request,
        resend: request.resend,
    };
    let (addr, tls) = match &request.found {
        None => {
            let (addr, tls, _) = plan.dest(request.origin);
            (addr, tls)
        }
        Some(Ok(dest)) => (&dest.addr, dest.tls.as_ref()),
        Some(Err(kind)) => {
            let e = std::io::Error::new(*kind, "a host found during the run cannot be reached");
            return Err(Failure::io(e, true));
        }
    };
    if let Some(sessions) = &plan.websocket {
        // A socket of its own, closed at the session's end: the slot stays empty.
        return crate::websocket::session(sessions, addr, tls, (plan.timeout, plan.deadline), p)
            .await;
    }
    exchange_http1(slot, addr, tls, &http1, p).await
}
