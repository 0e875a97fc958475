//! A connection task of the single-request loops (HTTP/2: a stream slot): where its next
//! request comes from ([`Source`]), and the loop that takes it and sends it with the
//! request step ([`crate::step`]).

use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use belier_stats::Trace;

use crate::connection::{Connection, Progress};
use crate::http2::Target;
use crate::link::Link;
use crate::local::{next_arrival, record_connect, Due, Local, Parked};
use crate::plan::Plan;
use crate::reconnection::Session;
use crate::step;

/// Where a connection's next request comes from.
#[derive(Clone, Copy)]
pub(super) enum Source {
    /// Closed loop; `index` is the connection's number across all workers, which decides
    /// when a ramp activates it.
    Closed { index: u64 },
    /// Open loop: arrivals from the dispatcher (the worker's queue, or given to it while
    /// parked).
    Open,
    /// Open loop, a connection opened ahead of the schedule; then like `Open`.
    Preopened,
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
            if local.schedule.stopping.get() {
                return None;
            }
            let mut now = Instant::now();
            if now < plan.start {
                // A run started ahead of its agreed instant ([`crate::Config::start_at`]).
                tokio::time::sleep_until(plan.start.into()).await;
                now = Instant::now();
            }
            if plan.deadline.is_some_and(|d| now >= d) {
                return None;
            }
            if let Some(wake) = local.schedule.steer.inactive_until(index, now - plan.start) {
                // Ramped down, not yet up, or paused: a user that leaves closes its
                // connection (HTTP/2: frees its stream slot; the connection stays for the
                // others), and waits for its time or for the run to be steered.
                link.release();
                local.schedule.steer.until_active(plan.start, wake).await;
                continue;
            }
            return local.schedule.claim().then_some((now, None));
        },
        Source::Open | Source::Preopened => {
            if let (Some(parked), Link::Http1(slot @ Some(_))) = (parked, &mut *link) {
                if local.schedule.queue.borrow().is_empty()
                    && !local.schedule.arrivals_done.get()
                    && !local.schedule.stopping.get()
                {
                    // Idle with an open connection: leave it where the dispatcher can send
                    // the next request on it, and wait to be given that request.
                    *parked.conn.borrow_mut() = slot.take();
                    local.schedule.parked.borrow_mut().push(Rc::clone(parked));
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

/// One connection (HTTP/2: one stream slot): take the next request, send it, wait for the
/// response, record, repeat.
pub(super) async fn connection(local: Rc<Local>, plan: Arc<Plan>, source: Source, mut link: Link) {
    if let Source::Open = source {
        local
            .connections
            .starting
            .set(local.connections.starting.get() - 1);
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
        open_ahead(&local, &plan, &mut link, &mut counted).await;
    }
    // A request that carries a header of its own (a sampled trace's, a reconnection's): its
    // bytes (see `crate::request::added`).
    let mut added = Vec::new();
    let head_end = crate::request::added::head_end(&plan.request);
    // `--sse-reconnect`: this slot's `EventSource` (a closed loop's slot only, as checked).
    let mut session = match source {
        Source::Closed { .. } => plan.sse_reconnect.map(Session::new),
        _ => None,
    };
    loop {
        let mut attempt = match &session {
            Some(session) => Some(session.wait(&local, &plan).await),
            None => None,
        };
        let Some((intended, due)) =
            next_request(&local, &plan, source, &mut link, parked.as_ref()).await
        else {
            break;
        };
        let trace = match due.and_then(|d| d.trace) {
            Some(decided) => decided,
            None => local.sampler.draw(),
        };
        let id_line = match (&session, &mut attempt) {
            (Some(session), Some(attempt)) => {
                session.started(attempt, intended);
                session.header_line(attempt)
            }
            _ => None,
        };
        let run = (&plan.request[..], head_end);
        let bytes = request_bytes(run, &link, &mut added, trace.as_ref(), id_line);
        let request = step::Request {
            intended,
            waiting_since: due.map(|d| d.waiting_since),
            // Taken by the dispatcher on a parked connection: it counted the request active
            // and may have written it already.
            taken: due.and_then(|d| d.taken),
            timeout: plan.timeout,
            bytes,
            head: step::Head::Run,
            head_request: plan.head_request,
            resend: plan.resend && plan.idempotent && plan.keepalive,
            origin: 0,
            found: None,
            // The run's request was checked when the run started.
            refused: None,
            trace,
        };
        let mut progress = Progress {
            reconnect: attempt,
            ..Progress::default()
        };
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
        if let Some(session) = &mut session {
            session.ended(&progress, Instant::now());
        }
    }
    local.connections.track_open(false, &mut counted);
    if let Source::Open | Source::Preopened = source {
        local
            .connections
            .tasks
            .set(local.connections.tasks.get() - 1);
    }
}

/// The bytes of the run's request `run` (its bytes, and where its head's lines end) as this
/// one goes on `link`: as they are, or copied into `added` with the header lines this one
/// carries of its own, its trace context's and its reconnection's `Last-Event-ID` (HTTP/1.1;
/// an HTTP/2 or HTTP/3 head gets its trace context in the step). A request without either is not
/// copied.
fn request_bytes<'a>(
    run: (&'a [u8], usize),
    link: &Link,
    added: &'a mut Vec<u8>,
    trace: Option<&Trace>,
    id_line: Option<&[u8]>,
) -> &'a [u8] {
    let (request, head_end) = run;
    let trace_line = trace.map(crate::trace_context::header_line);
    match (link, &trace_line, id_line) {
        (Link::Http1(_), None, None) | (Link::Http2(_) | Link::Http3(_), ..) => request,
        (Link::Http1(_), trace_line, id_line) => {
            let lines = trace_line
                .as_ref()
                .map(|l| &l[..])
                .into_iter()
                .chain(id_line);
            crate::request::added::with_lines(added, request, head_end, lines);
            added
        }
    }
}

/// Opens a connection ahead of the schedule (`Source::Preopened`) and counts it open.
async fn open_ahead(local: &Local, plan: &Plan, link: &mut Link, counted: &mut bool) {
    // No request owns this connect: a failure here is not a result (the first request
    // connects again, and counts its own failure); a success counts the connection.
    let mut p = Progress {
        kernel_stamps: plan.kernel_stamps,
        sources: plan.sources.clone(),
        ..Progress::default()
    };
    let opened = match link {
        Link::Http1(slot @ None) => {
            match Connection::open(&plan.addr, plan.tls.as_ref(), &mut p).await {
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
                addr: &plan.addr,
                tls: plan.tls.as_ref(),
            };
            group.connect(&target, &mut p).await.is_ok() && p.connected.is_some()
        }
        Link::Http3(group) => {
            let client = plan
                .http3
                .as_ref()
                .expect("an HTTP/3 link in an HTTP/3 run");
            let opened = group.connect(client, &plan.addr, &mut p).await;
            opened.is_ok() && p.connected.is_some()
        }
        Link::Http1(Some(_)) => false,
    };
    if opened {
        record_connect(&mut local.recording.recorder.borrow_mut(), &p, || {
            link.tls_session()
        });
    }
    local.connections.track_open(link.is_open(), counted);
    local
        .connections
        .preopening
        .set(local.connections.preopening.get() - 1);
    if local.connections.preopening.get() == 0 {
        local.connections.preopened.notify_one();
    }
}
