//! What a run's workers are given: the plan every worker shares, read-only, and each
//! worker's share of the load.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::endpoint::Endpoint;
use crate::load::Load;
use crate::user::Users;

/// What every worker of a run shares, read-only.
pub(crate) struct Plan {
    pub addr: Endpoint,
    pub tls: Option<crate::tls::Tls>,
    pub request: Vec<u8>,
    pub head_request: bool,
    pub keepalive: bool,
    /// Decode bodies and count their decoded bytes (see `Config::compressed`).
    pub compressed: bool,
    /// Read responses with the kernel's receive stamps (see `Config::kernel_stamps`).
    pub kernel_stamps: bool,
    /// Read the server's own time from this header (see `Config::server_timing`).
    pub server_timing: Option<Arc<crate::ServerTimingHeader>>,
    /// Which of a found host's addresses each new connection uses (`Config::dns_policy`).
    pub dns_policy: crate::DnsPolicy,
    /// The DNS server found hosts are looked up on (`Config::dns_server`).
    pub dns_server: Option<std::net::SocketAddr>,
    /// Cut response bodies into messages (see `Config::stream`).
    pub body_stream: Option<crate::BodyStream>,
    /// Reconnect SSE streams, this delay unless a stream's `retry:` says otherwise (see
    /// `Config::sse_reconnect`).
    pub sse_reconnect: Option<Duration>,
    /// Re-send once a request the server closed an idle connection under (see
    /// `Config::resend`); scripted users' requests only when their method is idempotent.
    pub resend: bool,
    /// Whether the run's single request has an idempotent method.
    pub idempotent: bool,
    pub timeout: Duration,
    pub grace: Duration,
    pub interval: Duration,
    pub start: Instant,
    /// How long before `start` the run began (time to open connections ahead of it).
    pub lead: Duration,
    pub deadline: Option<Instant>,
    /// Open loop: where the schedule of arrivals ends (see `Config::schedule_end`). The run
    /// lasts until then even when its last arrival was answered earlier: a run of 1/s for
    /// 3.5 s lasts 3.5 s, not until its fourth answer at 3 s.
    pub schedule_end: Option<Instant>,
    pub load: Load,
    pub workers: usize,
    /// Request budget across all workers.
    pub requests: Option<u64>,
    /// Hand every sample over in batches.
    pub keep_samples: bool,
    /// The share of requests traced (see `Config::trace_sample`).
    pub trace_sample: f64,
    /// Hand the traced requests over in batches (see `Config::keep_traced`).
    pub keep_traced: bool,
    /// Open loop: shortest time between two dispatcher wake-ups.
    pub timer_slack: Duration,
    /// `Some` to speak HTTP/2.
    pub http2: Option<Http2>,
    /// Scripted users, when the run has them.
    pub users: Option<Arc<dyn Users>>,
    /// Scripted users in a closed loop: least time between the starts of a user's iterations.
    pub pacing: Option<Duration>,
    /// Iteration budget across all workers (scripted users).
    pub iterations: Option<u64>,
    /// The `Host` header scripted users' requests carry unless they give their own.
    pub host_header: String,
    /// Scripted users' other hosts (`Config::origins`), by `Outgoing::origin - 1`.
    pub others: Vec<Dest>,
    /// The part of the run this process runs (`Config::shard`).
    pub shard: crate::Shard,
    /// The source addresses connections are bound to in turn (`Config::local_addresses`).
    pub sources: Option<crate::source::Sources>,
    /// A WebSocket run's sessions (`Config::websocket`): each request is one socket's life.
    pub websocket: Option<crate::websocket::Sessions>,
    /// HTTP/3 (`Config::http3`): the QUIC client its connections share. The run's request
    /// and its streams per connection are in `http2`, as for HTTP/2.
    pub http3: Option<crate::http3::Client>,
    /// Connections held beside the load (`Config::hold`), with their keep-alive request.
    pub holding: Option<Holding>,
}

/// One of a run's other hosts, resolved.
pub(crate) struct Dest {
    pub addr: Endpoint,
    pub tls: Option<crate::tls::Tls>,
    pub host_header: String,
}

impl Plan {
    /// Whether `origin` is a host the users found during the run ([`crate::user::Users::origin`])
    /// rather than one the run started with.
    pub(crate) fn is_found(&self, origin: usize) -> bool {
        origin > self.others.len()
    }

    /// Resolves found host `origin`: its address, TLS settings and `Host` header, or the kind
    /// of I/O error that makes it unreachable.
    pub(crate) fn find(&self, origin: usize) -> Result<Dest, std::io::ErrorKind> {
        let found = self
            .users
            .as_ref()
            .and_then(|u| u.origin(origin))
            .ok_or(std::io::ErrorKind::NotFound)?;
        let list = crate::lookup::Lookup {
            server: self.dns_server,
        }
        .addresses(&found.host, found.port)
        .map_err(|e| e.kind())?;
        let tls = found
            .tls
            .as_ref()
            .map(|options| crate::tls::Tls::new(options, &found.host))
            .transpose()
            .map_err(|_| std::io::ErrorKind::InvalidInput)?;
        Ok(Dest {
            addr: Endpoint::of_addresses(list, self.dns_policy, self.shard),
            tls,
            host_header: crate::request::host_header(&found.host, found.port),
        })
    }

    /// Address, TLS settings and `Host` header of `origin` (see `Outgoing::origin`).
    pub(crate) fn dest(&self, origin: usize) -> (&Endpoint, Option<&crate::tls::Tls>, &str) {
        match origin.checked_sub(1) {
            None => (&self.addr, self.tls.as_ref(), &self.host_header),
            Some(i) => {
                let d = &self.others[i];
                (&d.addr, d.tls.as_ref(), &d.host_header)
            }
        }
    }
}

/// What HTTP/2 runs add to the plan.
pub(crate) struct Http2 {
    /// The single request of a run without scripted users (these build theirs per request).
    pub request: crate::http2::Template,
    /// Stream slots per connection.
    pub max_streams: usize,
}

/// One worker's share of the load.
#[derive(Clone, Copy)]
pub(crate) struct Share {
    pub id: usize,
    /// Closed loop: requests this worker may issue (`None`: until the deadline or a stop).
    pub requests: Option<u64>,
    /// Open loop: connections this worker may open.
    pub max_connections: usize,
    /// Open loop: in-flight cap of this worker.
    pub max_in_flight: Option<u64>,
    /// Open loop: connection tasks (HTTP/2: stream slots) to start ahead of the schedule, each
    /// opening its connection (HTTP/2: the first slot of each connection).
    pub preopen: usize,
    /// Scripted users in a closed loop: iterations this worker may start.
    pub iterations: Option<u64>,
    /// Connections this worker holds beside the load (`Config::hold`).
    pub held: u64,
}

/// What a worker's held connections share: the request they send (always keep-alive) and how
/// they hold.
pub(crate) struct Holding {
    pub hold: crate::Hold,
    pub request: Vec<u8>,
}
