//! Reusing an HTTP/1.1 keep-alive connection: the check before reuse (has the server closed
//! it while it was idle?) and the one re-send of a request that crossed the server's close.

use std::time::Instant;

use belier_stats::ErrorKind;

use super::{Connection, Failure, Phase, Progress, Response};
use crate::tls::Tls;

/// An HTTP/1.1 connection idle for at least this long is checked before it is reused, and a
/// request the server closed such a connection under may be re-sent. Servers close idle
/// connections after tens of milliseconds at the very least (nginx 75 s by default, Apache and
/// Node 5 s): a connection reused within a millisecond was not idle in their sense, and a
/// failure on it is the server's answer to the request. The check is one system call, which
/// the closed loop, reusing its connections at once, never pays.
pub(crate) const IDLE_CHECK_AFTER: std::time::Duration = std::time::Duration::from_millis(1);

/// The request of an HTTP/1.1 exchange, and how to send it.
pub(crate) struct Http1Request<'a> {
    /// The encoded request.
    pub bytes: &'a [u8],
    /// How many of its bytes are written already (by an open loop's dispatcher, on a parked
    /// connection) and when it was taken up; `(now, 0)` otherwise.
    pub written: (Instant, usize),
    pub head_request: bool,
    /// Whether it may go again on a new connection (see [`exchange_http1`]).
    pub resend: bool,
}

/// Sends `request` on the connection in `slot` and reads its response: opens a connection if
/// there is none, or if the server closed the idle one ([`Connection::closed_while_idle`];
/// counted in `p.idle_closes`).
///
/// When the server closes a reused connection just as the request crosses the close, the
/// check cannot see it coming: the request fails without a response byte, having never been
/// read. Such a request, if `request.resend` allows it (an idempotent method, re-sending on),
/// goes once more on a new connection and `p.resent` says so; its latency still counts from
/// its intended start, the timeout from its dispatch. Only when the connection had been idle
/// for [`IDLE_CHECK_AFTER`]: a server that closes or resets a connection in answer to a
/// request, reused at once in a closed loop or by a scripted user's next step, keeps its
/// failure counted under its own kind, as with a new connection.
pub(crate) async fn exchange_http1(
    slot: &mut Option<Connection>,
    addr: &crate::endpoint::Endpoint,
    tls: Option<&Tls>,
    request: &Http1Request<'_>,
    p: &mut Progress,
) -> Result<Response, Failure> {
    let (taken, written) = request.written;
    // The dispatcher checked before it wrote on the connection.
    if written == 0 && slot.as_mut().is_some_and(|c| c.closed_while_idle(taken)) {
        *slot = None;
        p.idle_closes += 1;
    }
    let idle = slot
        .as_ref()
        .filter(|c| c.reused)
        .map(|c| c.idle_for(taken));
    // On an open connection the request is written as it is taken up (or was, by the
    // dispatcher): its send time is that. A new connection's comes after its handshake.
    let (conn, sent) = match slot {
        Some(conn) => (conn, taken),
        None => (
            slot.insert(Connection::open(addr, tls, p).await?),
            Instant::now(),
        ),
    };
    p.phase = Phase::Exchanging;
    p.sent = Some(sent);
    let mut result = conn
        .exchange(request.bytes, written, request.head_request, p)
        .await;
    if let Err(f) = &result {
        if request.resend && idle.is_some_and(|i| i >= IDLE_CHECK_AFTER) && crossed_close(f, p) {
            *slot = None;
            p.idle_closes += 1;
            p.resent = true;
            let conn = slot.insert(Connection::open(addr, tls, p).await?);
            p.phase = Phase::Exchanging;
            p.sent = Some(Instant::now());
            result = conn
                .exchange(request.bytes, 0, request.head_request, p)
                .await;
        }
    }
    if let (Ok(_), Some(conn)) = (&result, slot.as_mut()) {
        conn.idle_since = Instant::now();
        conn.reused = true;
    }
    result
}

/// Whether a failed exchange looks like a close that crossed the request: the connection
/// closed or was reset before a single response byte came.
fn crossed_close(f: &Failure, p: &Progress) -> bool {
    p.bytes_in == 0
        && matches!(
            f.kind,
            ErrorKind::ClosedBeforeResponse | ErrorKind::ConnectionReset
        )
}
