use std::sync::Arc;
use std::time::Duration;

use crate::connection::tunnel::Tunnel;
use crate::control::Ceiling;
use crate::load::Load;
use crate::profile::Profile;
use crate::shard::Shard;
use crate::tls::TlsOptions;
use crate::user::{Origin, Users};

/// Default number of concurrent connections.
pub const DEFAULT_CONNECTIONS: usize = 50;
/// Default per-request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default run length when neither a request count nor a duration is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// How long requests still in flight get to finish once a run stops (deadline or stop request).
pub const DEFAULT_GRACE: Duration = Duration::from_secs(1);
/// Default cap on connections in the open-loop model.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
/// Default number of concurrent streams one HTTP/2 connection carries (Nighthawk's
/// `max_concurrent_streams`; also the least a server should allow, RFC 9113 §6.5.2).
pub const DEFAULT_MAX_STREAMS: usize = 100;
/// Interval of the recorded series.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// Open loop: shortest time between two wake-ups of a worker's dispatcher. Arrivals due closer
/// together than this leave together, each up to this late (the lag is measured and counted
/// in the latency); at most one wake-up per slack is what keeps a high rate affordable.
pub const DEFAULT_TIMER_SLACK: Duration = Duration::from_micros(250);

/// The `Accept-Encoding` value that asks for every coding [`Config::compressed`] decodes.
pub const ACCEPT_ENCODING: &str = "gzip, br, deflate, zstd";

/// The request every connection sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestSpec {
    /// Method, e.g. `GET`.
    pub method: String,
    /// Host name (or address literal) to resolve and connect to.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Origin-form request target: path and query, starting with `/`.
    pub path_and_query: String,
    /// Extra header lines, in order. A `Host` or `User-Agent` given here replaces belier's own.
    pub headers: Vec<(String, String)>,
    /// Request body; `Content-Length` is added when it is not empty.
    pub body: Vec<u8>,
}

/// How a streaming gRPC call's request messages go ([`Config::grpc_stream`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrpcStream {
    /// Request messages each call sends: the request body's framed messages in turn (cycled)
    /// until this many went, the last one ending the stream. 1 for a call whose client sends
    /// one message (server streaming): the body's first message, with the request's head.
    pub messages: u32,
    /// Between one request message and the next (the first goes with the request's head).
    pub interval: Duration,
}

/// When a run stops: whichever of the bounds comes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopWhen {
    /// Total requests to issue across all connections.
    pub requests: Option<u64>,
    /// Wall-clock length of the run.
    pub duration: Option<Duration>,
    /// Scripted users: total iterations to complete across all workers (each worker takes
    /// an even share). Ignored without [`Config::users`].
    pub iterations: Option<u64>,
}

/// Everything the engine needs to run a test.
#[derive(Clone)]
pub struct Config {
    /// The request to send.
    pub request: RequestSpec,
    /// The load model and its shape.
    pub load: Load,
    /// Worker threads; connections and arrivals are spread evenly across them.
    pub threads: usize,
    /// When to stop.
    pub stop: StopWhen,
    /// Reuse connections (HTTP/1.1 keep-alive); otherwise one connection per request.
    /// HTTP/2 connections are always reused: their streams share them.
    pub keepalive: bool,
    /// HTTP/1.1 keep-alive: a request of an idempotent method that went on a reused
    /// connection the server closed as the request crossed the close (no response byte, the
    /// connection idle for a while before) is sent once more on a new connection, and counted
    /// as re-sent ([`belier_stats::Recorder::resent`]). A server that closes idle connections
    /// (nginx's `keepalive_timeout`, Apache's and Node's 5 s) races the next request on them;
    /// the request never reached it. `false` counts such requests as errors.
    pub resend: bool,
    /// `--compressed`: decode each response body in its `Content-Encoding` (gzip, deflate,
    /// br, zstd) and count its decoded bytes ([`belier_stats::Recorder::bytes_decoded`]); a
    /// body that does not decode is a [`belier_stats::ErrorKind::BodyDecode`]. The request's
    /// `Accept-Encoding` header is the caller's to add.
    pub compressed: bool,
    /// Take each response's first-byte and completion times from the kernel's receive
    /// stamps (`SO_TIMESTAMPNS`, read with the data) where the socket gives them: HTTP/1.1
    /// and HTTP/2 over TCP, TLS included (the stamp of the read that completed the TLS
    /// record; for an HTTP/2 stream, of the reads that brought its HEADERS and its
    /// END_STREAM frames; for HTTP/3, the last datagram its connection's socket read when the
    /// response's head or end came; Linux stamps no Unix stream socket's reads). Latency then
    /// stays exact however late the worker reads. `false` (or a socket without stamps) takes
    /// them when the read returns. [`belier_stats::Recorder::kernel_stamped`] counts the
    /// responses timed so.
    pub kernel_stamps: bool,
    /// `--server-timing`, `--server-time-header`: read the server's own time from this header
    /// of each complete response and record it beside the latency
    /// ([`belier_stats::Recorder::server_times`]). `None` (the default) reads no such header.
    pub server_timing: Option<crate::ServerTimingHeader>,
    /// Cut each response body into messages as it streams (Server-Sent Events, the chunks
    /// reads bring, an LLM API's token chunks) and record them as a streaming gRPC call's
    /// are: their count, the first one's time from when the request was due, the gaps
    /// between them. `None` (the default) reads bodies whole.
    pub stream: Option<crate::BodyStream>,
    /// `--sse-reconnect`: with `stream` SSE in a closed loop over HTTP/1.1, each connection
    /// slot is one `EventSource`: once its stream ends (closed cleanly or failed), its next
    /// request is a reconnection, sent after the stream's reconnection time (its last
    /// `retry:`, else this delay) with `Last-Event-ID` when the stream set one. A response
    /// that is not a 200 with `Content-Type: text/event-stream` stops it: the slot's next
    /// request is a new stream, at once and without an id. `None` (the default): every
    /// request is a new stream.
    pub sse_reconnect: Option<Duration>,
    /// Per-request timeout, connect included.
    pub timeout: Duration,
    /// Time requests still in flight get to finish once the run stops.
    pub grace: Duration,
    /// Interval at which workers hand over what they recorded.
    pub interval: Duration,
    /// Begin the run's schedule at this instant rather than as soon as it can: the workers of
    /// a distributed run start their engines ahead of the instant they agreed on, so that none
    /// of them spends its start-up (threads, resolution, connections opened ahead) after it.
    /// Arrivals and users wait for it; a run that cannot be ready by then begins when ready.
    pub start_at: Option<std::time::Instant>,
    /// TLS settings; `Some` for https.
    pub tls: Option<TlsOptions>,
    /// Connect here instead of resolving the host (the Host header and TLS name stay the
    /// URL's), like curl's --connect-to.
    pub connect_to: Option<std::net::SocketAddr>,
    /// The URL's host's addresses, given rather than resolved (`--resolve` with several); each
    /// new connection takes one by [`Config::dns_policy`]. [`Config::connect_to`] goes first.
    pub addresses: Vec<std::net::SocketAddr>,
    /// Which of a name's addresses each new connection uses: the URL's host's and every other
    /// host's of the run.
    pub dns_policy: crate::DnsPolicy,
    /// Ask this DNS server for hosts' addresses rather than the system's resolver.
    pub dns_server: Option<std::net::SocketAddr>,
    /// Look the hosts up again this often while the run goes; new connections follow a
    /// changed answer. `None`: once, at the start.
    pub dns_ttl: Option<std::time::Duration>,
    /// Connect to this Unix domain socket instead of over TCP (curl's --unix-socket); the
    /// URL still gives the `Host` header, the path and the scheme (https: TLS over the
    /// socket, the server name the URL's). Takes precedence over [`Config::connect_to`]; a
    /// socket serves one host, so it does not go with [`Config::origins`].
    pub unix_socket: Option<std::path::PathBuf>,
    /// The local (source) addresses TCP connections are bound to, taken in turn (see
    /// [`crate::source`]); empty: the kernel picks the source, as usual.
    pub local_addresses: Vec<std::net::IpAddr>,
    /// Speak HTTP/2: over TLS offered with ALPN `h2` (a server that picks anything else
    /// fails every request as `tls_protocol`), over plain TCP with prior knowledge (h2c).
    pub http2: bool,
    /// Speak HTTP/3 over QUIC (an `https` target: TLS 1.3 with ALPN `h3`), streams multiplexed
    /// on shared connections as with [`Config::http2`] (`max_streams` each).
    pub http3: bool,
    /// HTTP/3: send a connection's first requests as 0-RTT early data when an earlier
    /// connection left a session ticket that allows it (RFC 9001 §4.6), counting whether the
    /// server accepted it. Replayable: for safe methods only (the caller checks).
    pub quic_0rtt: bool,
    /// The request is a gRPC call (its body a framed message, its headers gRPC's; needs
    /// [`Config::http2`]): its response's trailers are read and the call's status recorded as
    /// its outcome ([`belier_stats::Outcome::Grpc`]), and a call the timeout cuts short is
    /// `DEADLINE_EXCEEDED`, as a gRPC client's deadline is.
    pub grpc: bool,
    /// A gRPC call that streams ([`Config::grpc`]): its response messages are counted and
    /// timed ([`belier_stats::Messages`]), and a client stream's request messages sent in
    /// turn. `None`: a unary call (or no gRPC).
    pub grpc_stream: Option<GrpcStream>,
    /// A WebSocket run: each request is one socket's life (upgrade, messages, close), its
    /// messages recorded as a streaming call's ([`crate::WebSocket`]). Over HTTP/1.1 only.
    /// [`Config::timeout`] then bounds each socket's connect, TLS and upgrade, not its life.
    pub websocket: Option<crate::WebSocket>,
    /// Connections held open beside the load, counted apart from it ([`crate::Hold`]).
    /// HTTP/1.1 only, with the run's own request (no scripted users, no WebSocket).
    pub hold: Option<Hold>,
    /// HTTP/2: how many concurrent requests share one connection. The load's concurrency is
    /// unchanged: a closed loop of `C` connections becomes `C` concurrent requests (users) on
    /// `ceil(C / max_streams)` connections, and the open loop opens a new connection only when
    /// every stream of the worker's existing ones is busy, up to its `max_connections`.
    /// Scripted users ([`Config::users`]) are stream slots the same way, and the load's level
    /// and `max_connections` count users: `N` users share `ceil(N / max_streams)` connections.
    pub max_streams: usize,
    /// Also hand over every sample, in batches ([`crate::Event::Samples`]), for a raw
    /// per-request stream. Off by default: it costs a copy per request.
    pub keep_samples: bool,
    /// `--trace-sample`: the share of requests (`0.0..=1.0`) sent with a new W3C
    /// `traceparent` (a new trace, the request its span, the sampled flag set); a scripted
    /// user's iteration is drawn as a whole, one trace with a span per request. Their
    /// samples carry the ids ([`belier_stats::Sample::trace`]), which the slowest requests'
    /// exemplars keep. 0 (the default) adds no header. A request that has a `traceparent`
    /// header of its own is sent with that one, untraced.
    pub trace_sample: f64,
    /// Also hand over the sampled requests, in batches ([`crate::Event::Traced`]), for
    /// exporting their spans.
    pub keep_traced: bool,
    /// Open loop: shortest time between two wake-ups of a worker's dispatcher
    /// ([`DEFAULT_TIMER_SLACK`]). Larger values trade scheduling lag (measured, and counted in
    /// the latency) for fewer wake-ups, which is most of the CPU an open loop costs at low rates.
    pub timer_slack: Duration,
    /// Scripted virtual users instead of the one [`Config::request`] (whose host, port and
    /// TLS settings still say where to connect). The load's level then counts users:
    /// `Load::Closed`'s profile is the number of users over time, `Load::Open`'s rate is the
    /// rate at which iterations start, each on an idle user, with up to `max_connections`
    /// users (over HTTP/2 too, where they share one connection per `max_streams`).
    pub users: Option<Arc<dyn Users>>,
    /// Scripted users in a closed loop: each user starts an iteration at most this often
    /// (one that runs longer is followed at once by the next). `None`: back to back.
    pub pacing: Option<Duration>,
    /// Scripted users: other hosts their requests may go to, [`crate::user::Outgoing::origin`]
    /// `i` being `origins[i - 1]`. Each is resolved once at the start, spoken to over TLS or
    /// not as it says (whatever the run's own host speaks), and gets a connection of its own
    /// from every user that sends to it: a pool per host. HTTP/1.1 only.
    pub origins: Vec<Origin>,
    /// https through an HTTP proxy: connections go to [`Config::connect_to`] (the proxy),
    /// open a tunnel to each host with `CONNECT`, then the TLS session through it.
    pub tunnel: Option<Tunnel>,
    /// The part of the run this process runs when the run is split across several
    /// ([`Shard`]); [`Shard::WHOLE`] otherwise. The load, stop bounds and caps stay the whole
    /// run's: the engine takes this shard's arrivals, connections and shares of them.
    pub shard: Shard,
    /// The highest level steering may set ([`crate::Control::set_level`] refuses more); `None`:
    /// any level. Whoever builds the configuration knows what the run could have started with.
    pub ceiling: Option<Ceiling>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Written out because `dyn Users` has no Debug: users show as their step names.
        f.debug_struct("Config")
            .field("request", &self.request)
            .field("load", &self.load)
            .field("threads", &self.threads)
            .field("stop", &self.stop)
            .field("keepalive", &self.keepalive)
            .field("resend", &self.resend)
            .field("compressed", &self.compressed)
            .field("kernel_stamps", &self.kernel_stamps)
            .field("server_timing", &self.server_timing)
            .field("stream", &self.stream)
            .field("sse_reconnect", &self.sse_reconnect)
            .field("timeout", &self.timeout)
            .field("grace", &self.grace)
            .field("interval", &self.interval)
            .field("tls", &self.tls)
            .field("connect_to", &self.connect_to)
            .field("addresses", &self.addresses)
            .field("dns_policy", &self.dns_policy)
            .field("dns_server", &self.dns_server)
            .field("dns_ttl", &self.dns_ttl)
            .field("unix_socket", &self.unix_socket)
            .field("http2", &self.http2)
            .field("http3", &self.http3)
            .field("quic_0rtt", &self.quic_0rtt)
            .field("grpc", &self.grpc)
            .field("grpc_stream", &self.grpc_stream)
            .field("websocket", &self.websocket)
            .field("max_streams", &self.max_streams)
            .field("keep_samples", &self.keep_samples)
            .field("trace_sample", &self.trace_sample)
            .field("keep_traced", &self.keep_traced)
            .field("timer_slack", &self.timer_slack)
            .field("users", &self.users.as_ref().map(|u| u.steps()))
            .field("pacing", &self.pacing)
            .field("origins", &self.origins)
            .field("tunnel", &self.tunnel.as_ref().map(|_| "CONNECT"))
            .field("shard", &self.shard)
            .field("ceiling", &self.ceiling)
            .finish()
    }
}

impl Config {
    /// Most connections the run (this shard of it) may hold open at once: the load's, or
    /// with HTTP/2 one per `max_streams` users (a closed loop's, or scripted users in an open
    /// loop).
    pub fn max_connections(&self) -> usize {
        let most = self.shard.share(self.load.max_connections() as u64) as usize;
        let users = matches!(self.load, Load::Closed { .. }) || self.users.is_some();
        if (self.http2 || self.http3) && users {
            most.div_ceil(self.max_streams.max(1))
        } else {
            most
        }
    }

    /// When the load's schedule ends, if anything bounds it: the duration, the end of the
    /// stages, or in an open loop the slot of the last arrival its budget allows (requests,
    /// or iterations with scripted users): 500 requests at 1,000/s are a schedule of 0.5 s.
    pub fn schedule_end(&self) -> Option<Duration> {
        let budget = match &self.load {
            Load::Open { rate, .. } => {
                let arrivals = if self.users.is_some() {
                    self.stop.iterations
                } else {
                    self.stop.requests
                };
                // Arrival k is due where the profile's cumulative count reaches k, so n of
                // them fill the schedule up to where it reaches n (never, past its end).
                arrivals.and_then(|n| rate.time_of_cumulative(n as f64))
            }
            Load::Closed { .. } => None,
        };
        [self.stop.duration, self.load.end(), budget]
            .into_iter()
            .flatten()
            .min()
    }

    /// A configuration with the documented defaults for `request`.
    pub fn new(request: RequestSpec) -> Self {
        Config {
            request,
            load: Load::Closed {
                connections: Profile::constant(DEFAULT_CONNECTIONS as f64),
            },
            threads: 1,
            stop: StopWhen {
                requests: None,
                duration: Some(DEFAULT_DURATION),
                iterations: None,
            },
            keepalive: true,
            resend: true,
            compressed: false,
            kernel_stamps: true,
            server_timing: None,
            local_addresses: Vec::new(),
            hold: None,
            stream: None,
            sse_reconnect: None,
            timeout: DEFAULT_TIMEOUT,
            grace: DEFAULT_GRACE,
            interval: DEFAULT_INTERVAL,
            start_at: None,
            keep_samples: false,
            trace_sample: 0.0,
            keep_traced: false,
            timer_slack: DEFAULT_TIMER_SLACK,
            http2: false,
            http3: false,
            quic_0rtt: false,
            grpc: false,
            grpc_stream: None,
            websocket: None,
            max_streams: DEFAULT_MAX_STREAMS,
            tls: None,
            connect_to: None,
            addresses: Vec::new(),
            dns_policy: crate::DnsPolicy::First,
            dns_server: None,
            dns_ttl: None,
            unix_socket: None,
            users: None,
            pacing: None,
            origins: Vec::new(),
            tunnel: None,
            shard: Shard::WHOLE,
            ceiling: None,
        }
    }
}

/// Connections a run holds beside its load, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hold {
    /// Connections held across the whole run (its shards and workers share them).
    pub connections: u64,
    /// What each does while held.
    pub mode: HoldMode,
    /// Slow mode: the time between two bytes of the trickled request.
    pub interval: Duration,
}

/// What a held connection does while held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HoldMode {
    /// One keep-alive request answered, then nothing until the server ends the connection.
    #[default]
    Idle,
    /// The run's request written a byte at a time, [`Hold::interval`] apart; once it is all
    /// written and answered, the next one starts on the same connection.
    Slow,
}

/// Default time between two bytes of a trickled request: a slow client's pace.
pub const DEFAULT_TRICKLE_INTERVAL: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrivals::Spacing;
    use crate::profile::Stage;

    fn open(rate: Profile, requests: Option<u64>, duration: Option<Duration>) -> Config {
        let mut c = Config::new(RequestSpec {
            method: "GET".into(),
            host: "127.0.0.1".into(),
            port: 1,
            path_and_query: "/".into(),
            headers: vec![],
            body: vec![],
        });
        c.load = Load::Open {
            rate,
            spacing: Spacing::Even,
            max_connections: 10,
            max_in_flight: None,
        };
        c.stop = StopWhen {
            requests,
            duration,
            iterations: None,
        };
        c
    }

    #[test]
    fn the_schedule_ends_at_the_first_bound() {
        let secs = Duration::from_secs_f64;
        let c = open(Profile::constant(1000.0), Some(500), None);
        assert_eq!(c.schedule_end(), Some(secs(0.5)));
        let c = open(Profile::constant(1000.0), Some(500), Some(secs(0.2)));
        assert_eq!(c.schedule_end(), Some(secs(0.2)));
        let c = open(Profile::constant(1000.0), None, None);
        assert_eq!(c.schedule_end(), None);
        // 0 → 100/s over 2 s holds 100 arrivals: a budget of 50 is spent at √2 s, one of 200
        // never (the stages end first).
        let ramp = || {
            Profile::staged(
                0.0,
                vec![Stage {
                    duration: secs(2.0),
                    target: 100.0,
                }],
            )
        };
        let half = open(ramp(), Some(50), None)
            .schedule_end()
            .expect("bounded");
        assert!((half.as_secs_f64() - 2f64.sqrt()).abs() < 1e-6, "{half:?}");
        assert_eq!(
            open(ramp(), Some(200), None).schedule_end(),
            Some(secs(2.0))
        );
        // A closed loop's budget sets no time.
        let mut closed = open(Profile::constant(1000.0), Some(500), Some(secs(3.0)));
        closed.load = Load::Closed {
            connections: Profile::constant(10.0),
        };
        assert_eq!(closed.schedule_end(), Some(secs(3.0)));
    }
}
