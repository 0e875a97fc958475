//! What the accept loop, every connection and the [`Server`](crate::Server) handle share: the
//! defaults and their prebuilt response heads, the counters, the recorded requests and the
//! handler pool.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::behaviour::Behaviour;
use crate::counts::{Counters, Counts};
use crate::handlers::{Handlers, Pool};
use crate::response::{self, ConnectionHeader};

/// A request as the server saw it, kept when [`crate::Config::record_requests`] is non-zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeenRequest {
    /// Method, as sent.
    pub method: String,
    /// Request target, as sent: usually path and query.
    pub target: String,
    /// Headers in order, values decoded lossily as UTF-8.
    pub headers: Vec<(String, String)>,
    /// The (de-chunked) body, truncated to [`RECORDED_BODY_BYTES`](crate::RECORDED_BODY_BYTES).
    pub body: Vec<u8>,
    /// The protocol it came in: `HTTP/1.1`, `HTTP/1.0`, `HTTP/2` or `HTTP/3`.
    pub version: &'static str,
    /// Which connection it came on: the n-th accepted connection is `n`, starting at 1, so the
    /// latest connection's number equals [`Counts::connections`].
    pub connection: u64,
    /// When its head had been parsed.
    pub arrived: Instant,
}

impl SeenRequest {
    /// An HTTP/2 or HTTP/3 request as it arrived on connection `connection`, its body not
    /// read yet.
    pub(crate) fn of_parts(
        head: &http::request::Parts,
        target: &str,
        connection: u64,
        version: &'static str,
    ) -> SeenRequest {
        SeenRequest {
            method: head.method.as_str().to_owned(),
            target: target.to_owned(),
            headers: head
                .headers
                .iter()
                .map(|(n, v)| {
                    let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
                    (n.as_str().to_owned(), value)
                })
                .collect(),
            body: Vec::new(),
            connection,
            version,
            arrived: Instant::now(),
        }
    }

    /// The value of the first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// State shared by the accept loop, every connection and the [`Server`] handle.
pub(crate) struct Shared {
    pub(crate) defaults: Behaviour,
    /// Response heads for the defaults, built once because the default path is the hot one.
    pub(crate) default_head: Vec<u8>,
    pub(crate) default_head_close: Vec<u8>,
    pub(crate) counters: Counters,
    pub(crate) recorder: Option<Recorder>,
    pub(crate) pool: Option<Pool>,
    /// Plain connections that open with the HTTP/2 preface are served over HTTP/2.
    pub(crate) h2c: bool,
    /// The `Alt-Svc` value HTTP/2 responses carry when the server also speaks HTTP/3
    /// (`h3=":PORT"; ma=86400`), so that clients find it (RFC 7838).
    pub(crate) alt_svc: Option<http::HeaderValue>,
}

pub(crate) struct Recorder {
    capacity: usize,
    pub(crate) ring: Mutex<VecDeque<SeenRequest>>,
    /// Each connection's peer, by connection number (from 1).
    pub(crate) peers: Mutex<Vec<SocketAddr>>,
}

impl Shared {
    pub(crate) fn new(
        defaults: Behaviour,
        record_requests: usize,
        handlers: Option<Handlers>,
    ) -> Self {
        let framing = response::framing(&defaults, false);
        let mut default_head = Vec::new();
        response::write_head(
            &mut default_head,
            defaults.status,
            framing,
            ConnectionHeader::Omit,
        );
        let mut default_head_close = Vec::new();
        response::write_head(
            &mut default_head_close,
            defaults.status,
            framing,
            ConnectionHeader::Close,
        );
        Shared {
            defaults,
            default_head,
            default_head_close,
            counters: Counters::default(),
            recorder: (record_requests > 0).then(|| Recorder {
                capacity: record_requests,
                ring: Mutex::new(VecDeque::with_capacity(record_requests)),
                peers: Mutex::new(Vec::new()),
            }),
            pool: handlers.map(Pool::new),
            h2c: false,
            alt_svc: None,
        }
    }

    /// What a request for `target` gets: the defaults, overridden by its query string.
    pub(crate) fn behaviour_of(&self, target: &str) -> Result<Behaviour, crate::KnobError> {
        let mut behaviour = self.defaults.clone();
        if let Some((_, query)) = target.split_once('?') {
            behaviour.apply_query(query)?;
        }
        Ok(behaviour)
    }

    pub(crate) fn counts(&self) -> Counts {
        let c = &self.counters;
        Counts {
            requests: c.requests.load(Relaxed),
            connections: c.connections.load(Relaxed),
            responses: c.responses.load(Relaxed),
            body_bytes_received: c.body_bytes_received.load(Relaxed),
            tls_handshakes: c.tls_handshakes.load(Relaxed),
            tls_failures: c.tls_failures.load(Relaxed),
            grpc_messages_received: c.grpc_messages_received.load(Relaxed),
            grpc_messages_sent: c.grpc_messages_sent.load(Relaxed),
        }
    }

    /// The body of `/metrics`.
    pub(crate) fn metrics(&self) -> String {
        crate::handlers::metrics(
            &self.counts(),
            self.counters.open.load(Relaxed),
            self.pool.as_ref().map(Pool::stats).as_ref(),
            process_cpu(),
        )
    }

    /// Counts a piece of a request's body, and keeps it in `seen` when recording, up to
    /// `kept` bytes in all ([`crate::RECORDED_BODY_BYTES`]).
    pub(crate) fn body_piece(&self, seen: Option<&mut SeenRequest>, data: &[u8], kept: usize) {
        self.counters
            .body_bytes_received
            .fetch_add(data.len() as u64, Relaxed);
        if let Some(seen) = seen {
            let room = kept.saturating_sub(seen.body.len());
            seen.body.extend_from_slice(&data[..data.len().min(room)]);
        }
    }

    pub(crate) fn record(&self, seen: SeenRequest) {
        if let Some(recorder) = &self.recorder {
            // A panic elsewhere cannot leave the ring inconsistent, so poisoning is ignored.
            let mut ring = recorder.ring.lock().unwrap_or_else(PoisonError::into_inner);
            if ring.len() == recorder.capacity {
                ring.pop_front();
            }
            ring.push_back(seen);
        }
    }
}

/// CPU time the whole process has used, user and system.
#[cfg(target_os = "linux")]
fn process_cpu() -> Option<Duration> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Some(Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
}

#[cfg(not(target_os = "linux"))]
fn process_cpu() -> Option<Duration> {
    None
}
