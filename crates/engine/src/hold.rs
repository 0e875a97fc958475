//! Held connections (`Config::hold`): connections a run keeps open beside its load, as a
//! server meets them from real clients that stay connected. Each is idle after one keep-alive
//! exchange, or trickles a request a byte at a time as a slow client does. When the server
//! ends one, another opens in its place, so the number held stays what was asked while the
//! server allows it; what the server did to them is counted apart from the load's requests
//! ([`belier_stats::Held`]).
//!
//! They go through the engine's own connection path (the run's addresses, source addresses,
//! TLS and proxy), each a task on its worker beside the load's.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use belier_stats::ErrorKind;

use crate::config::HoldMode;
use crate::connection::{Connection, Failure, Progress};
use crate::local::Local;
use crate::plan::Plan;

/// What a held connection reads in at a time: a response head and a short body fit.
const HELD_READ_BUFFER: usize = 1024;

/// Most held connections a worker thread has opening at once (connecting, and for idle ones
/// waiting for their answer). A hundred thousand connects at once overflow the server's
/// listen queues (the kernel caps each at `net.core.somaxconn`, 4,096 by default) and the
/// SYNs dropped there come back after the kernel's 1 s, 3 s, 7 s retries: opened a few
/// hundred at a time, they all open sooner, and the load beside them waits less.
const MOST_OPENING: usize = 256;

/// The held connections of one worker thread that may be opening at once.
pub(crate) fn opening() -> Rc<tokio::sync::Semaphore> {
    Rc::new(tokio::sync::Semaphore::new(MOST_OPENING))
}

/// Pause before a held connection opens again after an attempt failed, so that a server
/// refusing them is not hammered by the hold itself.
const RETRY_AFTER: Duration = Duration::from_millis(500);

/// Keeps one held connection open until the run ends (the worker aborts the task): opens it,
/// holds it while the server allows, and opens another when the server ends it.
pub(crate) async fn keep(local: Rc<Local>, plan: Arc<Plan>, opening: Rc<tokio::sync::Semaphore>) {
    let Some(holding) = plan.holding.as_ref() else {
        return;
    };
    while !local.schedule.stopping.get() {
        // Never closed: acquiring fails only if it were.
        let Ok(permit) = opening.acquire().await else {
            return;
        };
        let mut p = Progress {
            sources: plan.sources.clone(),
            ..Progress::default()
        };
        let opened = tokio::time::timeout(
            plan.timeout,
            // A held connection's few responses are small: a hundred thousand of them each
            // with a load connection's 16 KiB buffer (a page of it touched) cost 400 MB.
            Connection::open_reading_in(&plan.addr, plan.tls.as_ref(), &mut p, HELD_READ_BUFFER),
        )
        .await;
        let connection = match opened {
            Ok(Ok(c)) => c,
            Ok(Err(failure)) => {
                drop(permit);
                failed(&local, failure.kind).await;
                continue;
            }
            Err(_) => {
                drop(permit);
                failed(&local, Failure::timeout(p.phase).kind).await;
                continue;
            }
        };
        let ended = match holding.hold.mode {
            HoldMode::Idle => idle(&local, &plan, holding, connection, permit).await,
            HoldMode::Slow => {
                drop(permit);
                slow(&local, &plan, holding, connection).await
            }
        };
        if let Err(kind) = ended {
            failed(&local, kind).await;
        }
    }
}

/// Holds `c` idle after one keep-alive exchange, until the server ends it. `Err`: the
/// exchange failed, and the connection was never held.
async fn idle(
    local: &Local,
    plan: &Plan,
    holding: &crate::plan::Holding,
    mut c: Connection,
    opening: tokio::sync::SemaphorePermit<'_>,
) -> Result<(), ErrorKind> {
    let mut p = Progress::default();
    let exchange = c.exchange(&holding.request, 0, plan.head_request, &mut p);
    match tokio::time::timeout(plan.timeout, exchange).await {
        Ok(Ok(_)) => {}
        Ok(Err(failure)) => return Err(failure.kind),
        Err(_) => return Err(Failure::timeout(p.phase).kind),
    }
    drop(opening);
    let held = Held::opened(local);
    c.ended().await;
    held.closed_by_server();
    Ok(())
}

/// Holds `c` trickling the request, one byte at a time, answer after answer, until the server
/// ends it or fails to answer. The connection counts as held once open: a server that waits
/// for a whole request is holding it.
async fn slow(
    local: &Local,
    plan: &Plan,
    holding: &crate::plan::Holding,
    mut c: Connection,
) -> Result<(), ErrorKind> {
    let held = Held::opened(local);
    let request = &holding.request;
    // Ends the hold with the kind a trickled request failed with (`held` is dropped first).
    loop {
        for i in 0..request.len() {
            tokio::select! {
                _ = c.ended() => {
                    held.closed_by_server();
                    return Ok(());
                }
                _ = tokio::time::sleep(holding.hold.interval) => {}
            }
            if c.write_all(&request[i..=i]).await.is_err() {
                held.closed_by_server();
                return Ok(());
            }
        }
        let mut p = Progress {
            phase: crate::connection::Phase::Exchanging,
            ..Progress::default()
        };
        let answer = c.exchange(request, request.len(), plan.head_request, &mut p);
        match tokio::time::timeout(plan.timeout, answer).await {
            Ok(Ok(_)) => {}
            // The server answered with an end: it closed the connection.
            Ok(Err(f)) if is_end(f.kind) => {
                held.closed_by_server();
                return Ok(());
            }
            Ok(Err(f)) => return Err(f.kind),
            Err(_) => return Err(ErrorKind::Timeout),
        }
    }
}

/// Whether a failure is the server ending the connection rather than failing a request.
fn is_end(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::ClosedBeforeResponse | ErrorKind::ConnectionReset
    )
}

/// Counts a failed attempt and waits before the next.
async fn failed(local: &Local, kind: ErrorKind) {
    local
        .recording
        .recorder
        .borrow_mut()
        .record_held_failed(kind);
    if !local.schedule.stopping.get() {
        tokio::time::sleep(RETRY_AFTER).await;
    }
}

/// One connection held: counted open while it lives (the worker's gauge), closed by the
/// server when it says so, dropped uncounted when the run ends.
struct Held<'a> {
    local: &'a Local,
}

impl<'a> Held<'a> {
    fn opened(local: &'a Local) -> Held<'a> {
        local.recording.recorder.borrow_mut().record_held_opened();
        local.connections.held.set(local.connections.held.get() + 1);
        Held { local }
    }

    fn closed_by_server(&self) {
        self.local
            .recording
            .recorder
            .borrow_mut()
            .record_held_closed();
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let held = &self.local.connections.held;
        held.set(held.get().saturating_sub(1));
    }
}
