//! The worker's listener: HTTP/2 with prior knowledge only, as its coordinator speaks it.
//! A connection that does not open with HTTP/2's preface (an HTTP/1.1 request, as a browser
//! or `curl` sends by default) is answered 505 and closed. Each connection has a number, so
//! that a run is started by the connection that prepared it and freed when that one closes;
//! HTTP/2 pings find a coordinator that vanished without closing (its machine gone).

use std::time::Duration;

use axum::extract::Extension;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use std::sync::Arc;

use crate::protocol::Refusal;

/// What every HTTP/2 connection begins with (RFC 9113, section 3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// How long a new connection may take to send the preface.
const PREFACE_WAIT: Duration = Duration::from_secs(5);
/// How often `quit` is asked.
const POLL: Duration = Duration::from_millis(100);
/// A ping after this long without a frame; no answer within twice as long closes the
/// connection (and so stops its run).
const KEEP_ALIVE: Duration = Duration::from_secs(5);
/// How long the connections have, once the worker quits, to take their runs' last lines.
const LINGER: Duration = Duration::from_secs(2);
/// Requests at once on one connection: a coordinator sends a handful.
const MAX_STREAMS: u32 = 16;

/// The number of the HTTP/2 connection a request came on, added to every request it carries.
#[derive(Clone, Copy)]
pub(super) struct Connection(pub(super) u64);

/// What the listener tells the worker behind it. The listener knows connections, not runs:
/// the worker decides what a closed connection or the end of serving means for its run.
pub(super) trait Served: Send + Sync + 'static {
    /// Serving ends: the run in progress, if any, stops.
    fn stop_run(&self);
    /// Connection `id` closed.
    fn closed(&self, id: u64);
}

/// Accepts connections until `quit`; then stops the run and gives the connections
/// [`LINGER`] to finish.
pub(super) async fn serve(
    listener: std::net::TcpListener,
    app: Router,
    worker: Arc<impl Served>,
    quit: impl Fn() -> bool,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let mut connections = tokio::task::JoinSet::new();
    let mut poll = tokio::time::interval(POLL);
    let mut next = 0u64;
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => {
                    next += 1;
                    let (app, worker) = (app.clone(), Arc::clone(&worker));
                    connections.spawn(connection(tcp, next, app, worker));
                }
                // Out of file descriptors, say: the next accept may do better.
                Err(_) => tokio::time::sleep(POLL).await,
            },
            _ = poll.tick() => if quit() { break },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    worker.stop_run();
    let drained = async { while connections.join_next().await.is_some() {} };
    let _ = tokio::time::timeout(LINGER, drained).await;
    Ok(())
}

/// Serves one connection if it speaks HTTP/2.
async fn connection(mut tcp: TcpStream, id: u64, app: Router, worker: Arc<impl Served>) {
    let _ = tcp.set_nodelay(true);
    match preface(&tcp).await {
        Some(true) => {}
        Some(false) => return refuse_http1(&mut tcp).await,
        None => return,
    }
    let service = TowerToHyperService::new(app.layer(Extension(Connection(id))));
    let served = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .keep_alive_interval(KEEP_ALIVE)
        .keep_alive_timeout(KEEP_ALIVE * 2)
        .max_concurrent_streams(MAX_STREAMS)
        .serve_connection(TokioIo::new(tcp), service)
        .await;
    drop(served);
    worker.closed(id);
}

/// Whether the connection opens with HTTP/2's preface; `None` if it closed or stayed silent.
async fn preface(tcp: &TcpStream) -> Option<bool> {
    let deadline = tokio::time::Instant::now() + PREFACE_WAIT;
    let mut buf = [0u8; PREFACE.len()];
    loop {
        let n = match tokio::time::timeout_at(deadline, tcp.peek(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => n,
            _ => return None,
        };
        if buf[..n] != PREFACE[..n] {
            return Some(false);
        }
        if n == PREFACE.len() {
            return Some(true);
        }
        // The preface came in pieces: peek again once more may have come.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Answers anything but HTTP/2 with HTTP/1.1's 505 and closes.
async fn refuse_http1(tcp: &mut TcpStream) {
    let body = serde_json::to_vec(&Refusal {
        error: "a worker speaks HTTP/2 (prior knowledge) to its coordinator only".into(),
    })
    .expect("a refusal serialises");
    let head = format!(
        "HTTP/1.1 505 HTTP Version Not Supported\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let mut scratch = [0u8; 4096];
    let _ = tcp.read(&mut scratch).await;
    let _ = tcp.write_all(head.as_bytes()).await;
    let _ = tcp.write_all(&body).await;
    let _ = tcp.shutdown().await;
    // Read what the client still sends, briefly, so that closing does not reset the
    // connection before it reads the answer.
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        while matches!(tcp.read(&mut scratch).await, Ok(n) if n > 0) {}
    })
    .await;
}
