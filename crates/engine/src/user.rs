//! Scripted virtual users: the engine's side of multi-step scenarios.
//!
//! A plan (the `belier-scenario` crate) becomes a [`Users`] factory, which the engine asks for
//! one [`User`] per virtual user, on the worker thread that runs it. A user is a synchronous
//! state machine: the engine asks it what to do next ([`User::next`]: send a request, pause, end
//! the iteration, stop) and tells it how each request ended ([`User::reply`] or
//! [`User::failed`]). The engine owns everything that touches time and sockets: the user's
//! connection, pauses, pacing, timing, and recording under the step's statistics row. The
//! user owns everything that touches content: templates, variables, cookies, extraction and
//! checks. Users therefore do no I/O and can be table-tested without a server.

use std::time::Duration;

use crate::tls::TlsOptions;

pub use crate::body::MAX_KEPT_BODY_BYTES;
pub use belier_stats::{CustomMetric, ErrorKind, MetricKind};

/// Connections a user opens to one host for a parallel group unless told otherwise: six,
/// as browsers do.
pub const DEFAULT_CONNECTIONS_PER_HOST: usize = 6;

/// One of a run's other hosts ([`Config::origins`](crate::Config::origins)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// Host name or address literal (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// `Some` to speak TLS to it with these settings (the certificate checked under its own
    /// name); `None` for plain HTTP.
    pub tls: Option<TlsOptions>,
}

/// One request a user wants sent to the run's target (or another of its hosts): on the user's
/// own connection to that host over HTTP/1.1, as a stream on a shared connection over HTTP/2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// Statistics row: an index into [`Users::steps`].
    pub step: usize,
    /// Where it goes: 0 for the run's own host ([`crate::Config::request`]'s), `i` for
    /// [`crate::Config::origins`]`[i - 1]`, and past those a host the users found
    /// ([`Users::origin`]).
    pub origin: usize,
    /// Method, e.g. `GET`.
    pub method: String,
    /// Origin-form request target: path and query, starting with `/`.
    pub path_and_query: String,
    /// Header lines, in order. `Host` and `User-Agent` given here replace belier's own;
    /// `Content-Length` is added for a non-empty body. Over HTTP/2, `Host` becomes the
    /// `:authority` and connection-specific headers (`Connection`, `Keep-Alive`,
    /// `Transfer-Encoding`, ...) are left out, as HTTP/2 forbids them.
    pub headers: Vec<(String, String)>,
    /// Request body.
    pub body: Vec<u8>,
    /// Keep the response body (up to [`MAX_KEPT_BODY_BYTES`]) for [`User::reply`]; without it
    /// the reply's body is empty and the engine only counts the bytes.
    pub keep_body: bool,
    /// Timeout of this request, connect included, instead of the run's.
    pub timeout: Option<Duration>,
    /// Cut the response body into messages in this mode (a plan step's `stream:`), as
    /// [`crate::Config::stream`] does for every request of a run; `None`: read it whole.
    pub stream: Option<crate::BodyStream>,
}

/// A complete response, as [`User::reply`] sees it.
#[derive(Clone, Copy, Debug)]
pub struct Reply<'a> {
    /// Status code.
    pub status: u16,
    /// The raw response head: status line and header lines, each ending in CRLF. Over HTTP/2
    /// the head is written out in the same form: `HTTP/2 200`, then `name: value` lines (names
    /// in lower case, as HTTP/2 sends them).
    pub head: &'a [u8],
    /// The body, de-chunked, when [`Outgoing::keep_body`] asked for it.
    pub body: &'a [u8],
    /// Whether the body was longer than [`MAX_KEPT_BODY_BYTES`] and cut there.
    pub body_truncated: bool,
    /// From when the request was due to start to its last byte (the recorded latency).
    pub latency: Duration,
    /// A gRPC call's status code (from its trailers, or its headers when it has none, else
    /// its HTTP status): `Some` for a request sent over HTTP/2 whose `content-type` is
    /// `application/grpc` (or `application/grpc+…`), which the engine reads as a gRPC call.
    pub grpc: Option<u8>,
}

impl<'a> Reply<'a> {
    /// The header fields of the head, in order, names as the server wrote them and values
    /// without surrounding whitespace.
    pub fn headers(&self) -> impl Iterator<Item = (&'a str, &'a [u8])> + 'a {
        let head: &'a [u8] = self.head;
        head.split(|&b| b == b'\n').skip(1).filter_map(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let colon = line.iter().position(|&b| b == b':')?;
            let name = std::str::from_utf8(&line[..colon]).ok()?.trim();
            if name.is_empty() {
                return None;
            }
            Some((name, line[colon + 1..].trim_ascii()))
        })
    }

    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }
}

/// What a user wants to do now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send this request and report its end through [`User::reply`] or [`User::failed`].
    Send(Outgoing),
    /// Send these requests at once (a plan's `parallel:` group), over up to
    /// [`Users::connections_per_host`] connections to each host (over HTTP/2, as concurrent
    /// streams on the user's connection), each recorded under its own step's row and the
    /// group under row `step`: from the group's start to its slowest request's end. Once all
    /// have ended, the engine reports each one's end through [`User::reply`] or
    /// [`User::failed`], in the order given.
    Parallel {
        /// The group's statistics row (an index into [`Users::steps`]).
        step: usize,
        /// The group's requests.
        requests: Vec<Outgoing>,
    },
    /// Act on the user's WebSocket (a plan's `ws:` step): open it, send a message, wait for
    /// messages, ping, close. Its end is reported through [`User::reply`] (status 101, the
    /// upgrade's answer as the head and the last message awaited as the body) or
    /// [`User::failed`], and recorded under its step's row; the socket's whole life counts
    /// once in the run's totals, as a `belier ws` socket does, when it ends.
    Socket(SocketAction),
    /// Wait this long (think time). A pausing user costs no thread and no connection activity.
    Pause(Duration),
    /// The iteration is complete. In a closed loop the next [`User::next`] call starts the next
    /// iteration (after the pacing interval, if one is set); in an open loop the user waits
    /// for the next due arrival.
    EndIteration,
    /// This user is finished for the rest of the run (its data ran out, or a failed step had
    /// `abort_on_fail` and the plan says to stop).
    Stop,
}

/// One action on a user's WebSocket ([`Action::Socket`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocketAction {
    /// Statistics row: an index into [`Users::steps`].
    pub step: usize,
    /// The host an [`SocketOp::Open`] connects to, as [`Outgoing::origin`] counts them.
    pub origin: usize,
    /// How long it may take (an open's connect, TLS and upgrade; a send's or a receive's wait
    /// for its messages; a ping's for its pong) instead of the run's request timeout.
    pub timeout: Option<Duration>,
    /// What it does.
    pub op: SocketOp,
}

/// What a [`SocketAction`] does. A user holds one socket at a time; the engine closes it
/// (code 1000) at the end of the iteration that opened it, if no [`SocketOp::Close`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SocketOp {
    /// Opens the user's socket (closing normally one it still holds): the HTTP/1.1 upgrade
    /// of this path, with these headers and offering these subprotocols.
    Open {
        /// Origin-form target: path and query, starting with `/`.
        path_and_query: String,
        /// Header lines besides the upgrade's own.
        headers: Vec<(String, String)>,
        /// Offered in `Sec-WebSocket-Protocol`, in order.
        subprotocols: Vec<String>,
        /// Offer permessage-deflate (RFC 7692), as `belier ws --deflate` does.
        deflate: bool,
    },
    /// Sends a message, then waits for `awaited` messages the user awaits ([`User::awaits`]);
    /// 0: only sends.
    Send {
        /// The payload.
        message: Vec<u8>,
        /// A binary message rather than a text one.
        binary: bool,
        /// Messages to wait for.
        awaited: u64,
    },
    /// Waits for `awaited` messages the user awaits.
    Receive {
        /// Messages to wait for (at least 1).
        awaited: u64,
    },
    /// Sends a ping with this payload (at most 125 bytes) and waits for its pong.
    Ping(Vec<u8>),
    /// Closes the socket with this code and reason, and waits a moment for the server's close.
    Close {
        /// The close code (1000: normal).
        code: u16,
        /// The reason, at most 123 bytes.
        reason: String,
    },
}

/// What a user concluded from how its request ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// The step failed: no response, an unexpected status, or a failed check. Counted in the
    /// step's row of the statistics.
    pub failed: bool,
}

/// Something a user counted besides a reply's checks (a script step's, or a script's custom
/// metrics), handed to the engine by [`User::drain`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tally {
    /// One evaluation of check `check` ([`Users::checks`]).
    Check {
        /// Check number.
        check: usize,
        /// Whether it passed.
        passed: bool,
    },
    /// Custom counter `metric` ([`Users::metrics`]) grows by `n`.
    Count {
        /// Metric number.
        metric: usize,
        /// How much it grows.
        n: u64,
    },
    /// Custom trend `metric` ([`Users::metrics`]) takes a value.
    Value {
        /// Metric number.
        metric: usize,
        /// The value, in microseconds.
        us: u64,
    },
}

/// A virtual user: one state machine, driven by one task on one worker thread.
pub trait User {
    /// What to do now. Called at the start, after every pause, and after every
    /// [`User::reply`] or [`User::failed`].
    fn next(&mut self) -> Action;

    /// The request of the last [`Action::Send`] got a complete response. `tally(check, passed)`
    /// counts each check evaluated, `check` indexing [`Users::checks`].
    fn reply(&mut self, reply: &Reply<'_>, tally: &mut dyn FnMut(usize, bool)) -> Verdict;

    /// The request of the last [`Action::Send`] got no complete response; `kind` says why
    /// (it is counted among the run's errors). The step has failed.
    fn failed(&mut self, kind: ErrorKind) -> Verdict;

    /// A message came on the user's socket while a [`SocketOp::Send`] or [`SocketOp::Receive`]
    /// waits: whether it is one of those awaited. Every message counts among the socket's
    /// messages in; only those awaited end the wait.
    fn awaits(&mut self, message: &[u8]) -> bool {
        let _ = message;
        true
    }

    /// Hands over what the user counted since the last call besides a reply's checks (script
    /// steps' checks, custom metrics). The engine calls it after [`User::next`],
    /// [`User::reply`] and [`User::failed`]; users without scripts count nothing here.
    fn drain(&mut self, _record: &mut dyn FnMut(Tally)) {}
}

/// Makes the virtual users of a run; shared by all worker threads.
pub trait Users: Send + Sync {
    /// Names of the statistics rows ([`Outgoing::step`] indexes them), one per request step.
    fn steps(&self) -> &[String];

    /// Names of the checks ([`User::reply`]'s `tally` indexes them).
    fn checks(&self) -> &[String];

    /// The custom metrics scripts count ([`Tally::Count`] and [`Tally::Value`] index them).
    fn metrics(&self) -> &[CustomMetric] {
        &[]
    }

    /// A new user; `vu` numbers the run's users from 0, across workers.
    fn user(&self, vu: u64) -> Box<dyn User>;

    /// A host the users found during the run (where a redirect sent them), which
    /// [`Outgoing::origin`] `index` names past [`crate::Config::origins`]: each worker resolves
    /// it the first time one of its users sends there (the name looked up on the worker's
    /// thread, once), then keeps it. `None`: no such host (its requests fail as unreachable).
    fn origin(&self, index: usize) -> Option<Origin> {
        let _ = index;
        None
    }

    /// Most connections a user opens to one host for an [`Action::Parallel`] group (a plan's
    /// `connections_per_host`); at least 1.
    fn connections_per_host(&self) -> usize {
        DEFAULT_CONNECTIONS_PER_HOST
    }

    /// Whether a user closes its connections at the end of every iteration (a plan's
    /// `connection: per-iteration`: each iteration a new visitor, with new connections and
    /// TLS handshakes); false keeps them from one iteration to the next.
    fn connection_per_iteration(&self) -> bool {
        false
    }

    /// Whether no user will send anything any more: their requests came from a stream that
    /// has ended. An open loop then starts no more iterations (each would make a user that
    /// stops at once); a closed loop's users end by [`Action::Stop`] themselves.
    fn finished(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_headers_walk_the_head() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nSet-Cookie: a=1\r\nset-cookie:  b=2 \r\n\r\n";
        let reply = Reply {
            status: 200,
            head,
            body: b"",
            body_truncated: false,
            latency: Duration::ZERO,
            grpc: None,
        };
        let all: Vec<_> = reply.headers().collect();
        assert_eq!(
            all,
            vec![
                ("Content-Type", &b"application/json"[..]),
                ("Set-Cookie", &b"a=1"[..]),
                ("set-cookie", &b"b=2"[..]),
            ]
        );
        assert_eq!(reply.header("content-type"), Some(&b"application/json"[..]));
        assert_eq!(reply.header("x-missing"), None);
    }
}
