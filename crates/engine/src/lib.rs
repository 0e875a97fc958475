//! belier's load engine.
//!
//! [`start`] turns a [`Config`] into a running test: one thread per worker, each with a
//! single-threaded tokio runtime that owns its connections and its [`Recorder`]. The caller
//! receives [`Event`]s (one recorder per worker per interval, then one `Finished` per worker),
//! may steer the run through its [`Control`] (rate or connections, pause, resume) and may
//! [`Run::stop`] it at any time; the engine itself prints nothing and knows nothing of command
//! lines or report formats.
//!
//! HTTP/1.1 is spoken directly over tokio's `TcpStream` with `httparse` for the response head:
//! the engine needs only to write prebuilt request bytes and find where each response ends,
//! and doing that in place keeps the per-request cost at the level of wrk (the benchmark in
//! `bench/` measures it against wrk, and against hyper's client in `bench/hyper`).
//!
//! HTTP/2 ([`Config::http2`]) goes through the `h2` crate instead: framing, HPACK and flow
//! control are too much to redo, and a stream costs far less than the connection it shares.
//! The connection loop is the same; each of its tasks drives a stream slot rather than a
//! connection (see the `http2` module).
//!
//! With [`Config::users`] the run drives scripted virtual users ([`user`]) instead of one
//! prebuilt request: each user is a task on its worker with its own HTTP/1.1 connection (with
//! HTTP/2, a stream slot on a connection up to `max_streams` users share), sending the requests
//! its [`user::User`] asks for, pausing without holding a thread, and recording each request
//! in the totals and under its step (see the `vu` module).
#![deny(missing_docs)]

mod addresses;
pub mod alt_svc;
mod arrivals;
mod body;
mod config;
mod connection;
mod control;
mod decode;
mod endpoint;
mod event;
mod hold;
pub mod host;
mod http1;
mod http2;
mod http3;
mod link;
mod load;
mod local;
mod lookup;
mod parallel;
mod parsed_response;
mod plan;
mod probe;
mod profile;
mod reconnection;
mod refresh;
pub mod request;
mod sending;
mod server_timing;
mod shard;
pub mod source;
mod steered;
mod step;
mod streamed;
mod timer;
mod tls;
mod together;
mod trace_context;
pub mod user;
mod user_socket;
mod vu;
mod websocket;
mod worker;

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

pub use addresses::DnsPolicy;
pub use arrivals::{Arrivals, Spacing};
pub use belier_stats::Recorder;
pub use config::{
    Config, GrpcStream, Hold, HoldMode, RequestSpec, StopWhen, ACCEPT_ENCODING,
    DEFAULT_CONNECTIONS, DEFAULT_DURATION, DEFAULT_GRACE, DEFAULT_INTERVAL,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_STREAMS, DEFAULT_TIMEOUT, DEFAULT_TIMER_SLACK,
    DEFAULT_TRICKLE_INTERVAL,
};
pub use connection::tunnel::Tunnel;
pub use control::{Ceiling, Control, ControlError, Knob, Steer};
pub use endpoint::Endpoint;
pub use event::{Event, TracedRequest, TracedStep};
pub use http2::TemplateError;
pub use http3::Http3Error;
pub use load::Load;
pub use probe::{probe, Phases, Probe};
pub use profile::{Profile, Stage};
pub use server_timing::ServerTimingHeader;
pub use shard::{Shard, ShardError, Stripe};
pub use streamed::{BodyStream, MAX_EVENT_BYTES};
pub use tls::{TlsOptions, TlsSetupError};
pub use together::start_together;
use tokio::sync::watch;
pub use user::Origin;
pub use websocket::{
    Frames, Matching, WebSocket, ID_PLACEHOLDER, MOST_MESSAGE_BYTES as MOST_WS_MESSAGE_BYTES,
};

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The QUIC client of an HTTP/3 run could not be set up.
    #[error(transparent)]
    Http3(#[from] Http3Error),
    /// The target host name could not be resolved.
    #[error("cannot resolve {host}: {source}")]
    Resolve {
        /// The host name.
        host: String,
        /// The resolver's error.
        source: std::io::Error,
    },
    /// The host name resolved to no address.
    #[error("{0} resolved to no address")]
    NoAddress(String),
    /// The configuration is unusable.
    #[error("invalid configuration: {0}")]
    Invalid(&'static str),
    /// The TLS settings cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
    /// The request cannot be expressed in HTTP/2.
    #[error(transparent)]
    Http2(#[from] TemplateError),
    /// The request breaks the rules of what may go on the wire ([`request::rules`]): a CR or
    /// LF in a header, a `Content-Length` that is not the body's length, ….
    #[error("the request cannot be sent: {0}")]
    Request(#[from] request::InvalidRequest),
    /// A worker thread or its runtime could not be created.
    #[error("cannot start worker: {0}")]
    Worker(std::io::Error),
    /// A source address cannot be bound to (the host does not have it).
    #[error("cannot bind a connection to the local address {addr}: {why}")]
    LocalAddress {
        /// The address.
        addr: std::net::IpAddr,
        /// Why not: the host has no such address (`EADDRNOTAVAIL`), most often.
        why: std::io::Error,
    },
}

/// What [`Run::next_event`] found.
#[derive(Debug)]
pub enum Next {
    /// An event.
    Event(Event),
    /// Nothing within the wait.
    Idle,
    /// Every worker has gone; no more events will come.
    Ended,
}

/// A running load test.
pub struct Run {
    events: Receiver<Event>,
    stop: Arc<watch::Sender<bool>>,
    control: Control,
    threads: Vec<JoinHandle<()>>,
    addr: Endpoint,
    dns: Duration,
    started_at: SystemTime,
    started: Instant,
    /// Runs started together ([`start_together`]): each load's first worker number; empty
    /// for a run of one load.
    part_starts: Vec<usize>,
}

/// Resolves the target and starts the workers. Returns once every worker thread runs.
pub fn start(config: &Config) -> Result<Run, StartError> {
    let ready = prepare(config)?;
    let (stop, _) = watch::channel(false);
    let stop = Arc::new(stop);
    // A run started ahead of an agreed instant (`Config::start_at`) begins its schedule there.
    let now = Instant::now();
    let start = config
        .start_at
        .map_or(now + ready.lead, |at| at.max(now + ready.lead));
    let started_at = SystemTime::now() + (start - now);
    let (addr, dns) = (ready.addr.clone(), ready.dns);
    let part = launch(config, ready, start, &stop)?;
    Ok(Run {
        events: part.events,
        stop,
        control: part.control,
        threads: part.threads,
        addr,
        dns,
        started_at,
        started: start,
        part_starts: Vec::new(),
    })
}

/// Everything a run needs before its start instant is set: the target resolved, TLS set up,
/// the work split, the runtimes built (so that a failure is reported before any request).
struct Ready {
    addr: Endpoint,
    dns: Duration,
    tls: Option<tls::Tls>,
    others: Vec<plan::Dest>,
    http2: Option<plan::Http2>,
    http3: Option<http3::Client>,
    threads: usize,
    runtimes: Vec<tokio::runtime::Runtime>,
    open_connections: Vec<u64>,
    in_flight: Option<Vec<u64>>,
    preopen: Vec<usize>,
    /// How long before its schedule starts the run opens its connections.
    lead: Duration,
}

fn prepare(config: &Config) -> Result<Ready, StartError> {
    check(config)?;
    let shard = config.shard;
    let spec = &config.request;
    // Before anything is resolved or opened: a request that must not be sent ends the run here.
    request::Parts::of_spec(spec).check(&request::host_header(&spec.host, spec.port))?;
    let dns_started = Instant::now();
    let addr = resolve(config)?;
    let dns = dns_started.elapsed();
    let tls = target_tls(config)?;
    let others = other_hosts(config)?;
    let http2 = if config.http2 || config.http3 {
        Some(plan::Http2 {
            request: http2::Template::new(spec, tls.is_some(), config.grpc)?
                .streaming(config.grpc_stream)?,
            max_streams: config.max_streams,
        })
    } else {
        None
    };

    let http3 = match (config.http3, &tls) {
        (false, _) => None,
        (true, Some(tls)) => Some(http3::Client::new(tls, config.quic_0rtt)?),
        (true, None) => {
            return Err(StartError::Invalid(
                "HTTP/3 goes over QUIC, which is always TLS: an https:// URL",
            ))
        }
    };
    // A closed loop over HTTP/2 needs a connection per `max_streams` users: no more workers
    // than that, or a worker would have no connection of its own.
    let threads = config.threads.min(config.max_connections());
    // Runtimes are built here so a failure is reported before any request is sent.
    let runtimes = (0..threads)
        .map(|_| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(StartError::Worker)
        })
        .collect::<Result<Vec<_>, _>>()?;

    let (open_connections, in_flight) = match &config.load {
        Load::Open {
            max_connections,
            max_in_flight,
            ..
        } => (
            split(shard.share(*max_connections as u64), threads),
            max_in_flight.map(|cap| split(shard.share(cap), threads)),
        ),
        Load::Closed { .. } => (vec![0; threads], None),
    };
    let streams = http2.as_ref().map_or(1, |h| h.max_streams.max(1));
    let (preopen, lead) = preopening(config, &open_connections, streams, tls.is_some());
    Ok(Ready {
        addr,
        dns,
        tls,
        others,
        http2,
        http3,
        threads,
        runtimes,
        open_connections,
        in_flight,
        preopen,
        lead,
    })
}

/// Refuses a configuration no run can follow.
fn check(config: &Config) -> Result<(), StartError> {
    let max_connections = config.load.max_connections();
    if max_connections == 0 || config.threads == 0 {
        return Err(StartError::Invalid(
            "connections and threads must be at least 1",
        ));
    }
    if config.max_connections() == 0 {
        return Err(StartError::Invalid(
            "this shard gets no connection: split the run into at most as many shards as it has connections",
        ));
    }
    if config.interval.is_zero() {
        return Err(StartError::Invalid("interval must be positive"));
    }
    check_http3(config)?;
    if config.http2 && config.max_streams == 0 {
        return Err(StartError::Invalid("max_streams must be at least 1"));
    }
    if config.grpc && (!config.http2 || config.users.is_some()) {
        return Err(StartError::Invalid(
            "a gRPC call goes over HTTP/2, as the run's one request (not a scripted user's)",
        ));
    }
    if config
        .grpc_stream
        .is_some_and(|s| !config.grpc || s.messages == 0)
    {
        return Err(StartError::Invalid(
            "a streaming gRPC call is a gRPC call, and sends at least one message",
        ));
    }
    if config.http2 && !config.origins.is_empty() {
        return Err(StartError::Invalid(
            "several hosts in one run need HTTP/1.1 (HTTP/2 shares one connection per host)",
        ));
    }
    if config.hold.is_some_and(|h| h.connections > 0)
        && (config.http2 || config.users.is_some() || config.websocket.is_some())
    {
        return Err(StartError::Invalid(
            "held connections speak HTTP/1.1 with the run's one request: not with HTTP/2, scripted users or WebSocket",
        ));
    }
    if config.sse_reconnect.is_some()
        && (config.stream != Some(BodyStream::Sse)
            || !matches!(config.load, Load::Closed { .. })
            || config.http2
            || config.http3
            || config.users.is_some()
            || config.websocket.is_some())
    {
        return Err(StartError::Invalid(
            "SSE reconnection needs SSE streams in a closed loop of the run's one request over HTTP/1.1",
        ));
    }
    if config.unix_socket.is_some() && !config.origins.is_empty() {
        return Err(StartError::Invalid(
            "a Unix socket serves one host: several hosts in one run need TCP",
        ));
    }
    Ok(())
}

/// Refuses what an HTTP/3 run does not do (yet): each named.
fn check_http3(config: &Config) -> Result<(), StartError> {
    if !config.http3 {
        return match config.quic_0rtt {
            true => Err(StartError::Invalid("0-RTT is QUIC's: it needs HTTP/3")),
            false => Ok(()),
        };
    }
    let refused = [
        (config.http2, "HTTP/3 or HTTP/2, not both"),
        (config.max_streams == 0, "max_streams must be at least 1"),
        (
            config.websocket.is_some(),
            "WebSocket goes over HTTP/1.1, not HTTP/3",
        ),
        (config.grpc, "gRPC goes over HTTP/2, not HTTP/3"),
        (
            config.unix_socket.is_some(),
            "HTTP/3 goes over UDP, not a Unix socket",
        ),
        (
            config.tunnel.is_some(),
            "HTTP/3 does not go through an HTTP proxy",
        ),
        (!config.origins.is_empty(), "HTTP/3 runs go to one host"),
        (
            config.hold.is_some_and(|h| h.connections > 0),
            "held connections speak HTTP/1.1",
        ),
        (
            config.sse_reconnect.is_some(),
            "SSE reconnection reconnects HTTP/1.1 connections, not HTTP/3's",
        ),
    ];
    match refused.iter().find(|(refused, _)| *refused) {
        Some((_, why)) => Err(StartError::Invalid(why)),
        None => Ok(()),
    }
}

/// TLS to the target, if it speaks TLS: through the proxy's tunnel when there is one.
fn target_tls(config: &Config) -> Result<Option<tls::Tls>, StartError> {
    let spec = &config.request;
    let tls = config
        .tls
        .as_ref()
        .map(|options| {
            if config.http2 {
                // HTTP/2 or nothing: offering http/1.1 too would let the server pick it.
                let mut options = options.clone();
                options.alpn = vec![b"h2".to_vec()];
                tls::Tls::new(&options, &spec.host)
            } else {
                tls::Tls::new(options, &spec.host)
            }
        })
        .transpose()?
        .map(|t| match &config.tunnel {
            Some(tunnel) => t.through(tunnel, &spec.host, spec.port),
            None => t,
        });
    Ok(tls)
}

/// The run's other hosts (scripted users' requests may go to them), resolved, with their TLS.
fn other_hosts(config: &Config) -> Result<Vec<plan::Dest>, StartError> {
    config
        .origins
        .iter()
        .map(|Origin { host, port, tls }| {
            Ok(plan::Dest {
                addr: host_endpoint(config, host, *port)?,
                tls: tls
                    .as_ref()
                    .map(|options| {
                        tls::Tls::new(options, host).map(|t| match &config.tunnel {
                            Some(tunnel) => t.through(tunnel, host, *port),
                            None => t,
                        })
                    })
                    .transpose()?,
                host_header: request::host_header(host, *port),
            })
        })
        .collect()
}

/// The connection tasks each worker opens ahead of its schedule, and how far ahead of its
/// first arrival the run starts for them. An open loop of plain requests opens connections
/// ahead of its schedule and starts the schedule a moment from now, once they are open.
/// Counted in connection tasks: with HTTP/2 those are stream slots, `streams` to a connection.
fn preopening(
    config: &Config,
    open_connections: &[u64],
    streams: usize,
    tls: bool,
) -> (Vec<usize>, Duration) {
    let threads = open_connections.len();
    let preopen: Vec<usize> = match (&config.load, &config.users) {
        // A WebSocket session opens its own connection: none is opened ahead for it.
        (Load::Open { rate, .. }, None) if config.websocket.is_none() => open_connections
            .iter()
            .map(|&cap| {
                let slots = (cap as usize).saturating_mul(streams);
                let start_rate = rate.level_at(Duration::ZERO) / config.shard.count() as f64;
                worker::preopen_count(start_rate, threads, slots)
            })
            .collect(),
        _ => vec![0; threads],
    };
    let lead = match preopen.iter().max() {
        Some(&n) if n > 0 => worker::open_loop_lead(n.div_ceil(streams), tls),
        _ => Duration::ZERO,
    };
    (preopen, lead)
}

/// The workers of one load, started.
struct Part {
    events: Receiver<Event>,
    control: Control,
    threads: Vec<JoinHandle<()>>,
}

/// Starts the workers of `config`, made `ready`, on a schedule that starts at `start`; they
/// stop when `stop` says so.
fn launch(
    config: &Config,
    mut ready: Ready,
    start: Instant,
    stop: &Arc<watch::Sender<bool>>,
) -> Result<Part, StartError> {
    let plan = Arc::new(plan_of(config, &mut ready, start)?);
    let (events_tx, events) = mpsc::channel();
    let (steering, steering_rx) = watch::channel(control::Steering::default());
    let control = Control::new(&config.load, start, Arc::new(steering), Arc::clone(stop))
        .limited(config.ceiling.clone());
    let threads = spawn_workers(config, ready, &plan, stop, steering_rx, events_tx)?;
    Ok(Part {
        events,
        control,
        threads,
    })
}

/// The share of requests traced: none of a run's own request that carries a `traceparent`
/// of its own, nor of a WebSocket run (whose upgrade requests are not the run's request).
fn trace_sample(config: &Config) -> f64 {
    let own = request::Parts::of_spec(&config.request).has(trace_context::TRACEPARENT);
    match own || config.websocket.is_some() {
        true => 0.0,
        false => config.trace_sample.clamp(0.0, 1.0),
    }
}

/// What every worker of the load shares, taking the target's connection settings from `ready`.
fn plan_of(config: &Config, ready: &mut Ready, start: Instant) -> Result<plan::Plan, StartError> {
    let spec = &config.request;
    // The run ends at the first of: the duration bound, the end of the load profile.
    let end = match (config.stop.duration, config.load.end()) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Ok(plan::Plan {
        addr: ready.addr.clone(),
        tls: ready.tls.take(),
        request: request::encode(spec, config.keepalive)?,
        head_request: request::is_head(&spec.method),
        keepalive: config.keepalive,
        compressed: config.compressed,
        kernel_stamps: config.kernel_stamps,
        server_timing: config.server_timing.clone().map(std::sync::Arc::new),
        dns_policy: config.dns_policy,
        dns_server: config.dns_server,
        body_stream: config.stream,
        sse_reconnect: config.sse_reconnect,
        resend: config.resend,
        idempotent: request::is_idempotent(&spec.method),
        timeout: config.timeout,
        grace: config.grace,
        interval: config.interval,
        start,
        lead: ready.lead,
        deadline: end.map(|d| start + d),
        schedule_end: match config.load {
            Load::Open { .. } => config.schedule_end().map(|d| start + d),
            Load::Closed { .. } => None,
        },
        load: config.load.clone(),
        workers: ready.threads,
        requests: config.stop.requests,
        keep_samples: config.keep_samples,
        trace_sample: trace_sample(config),
        keep_traced: config.keep_traced && trace_sample(config) > 0.0,
        timer_slack: config.timer_slack,
        http2: ready.http2.take(),
        http3: ready.http3.take(),
        users: config.users.clone(),
        pacing: config.pacing,
        iterations: config.stop.iterations,
        host_header: request::host_header(&spec.host, spec.port),
        others: std::mem::take(&mut ready.others),
        shard: config.shard,
        sources: sources(config)?,
        websocket: websocket_sessions(config)?,
        holding: config
            .hold
            .map(|hold| {
                Ok::<_, StartError>(plan::Holding {
                    hold,
                    request: request::encode(spec, true)?,
                })
            })
            .transpose()?,
    })
}

/// A WebSocket run's sessions, its handshake request built from the run's request.
fn websocket_sessions(config: &Config) -> Result<Option<websocket::Sessions>, StartError> {
    let Some(ws) = &config.websocket else {
        return Ok(None);
    };
    if config.http2 || config.users.is_some() {
        return Err(StartError::Invalid(
            "a WebSocket run speaks HTTP/1.1 and has no scripted users",
        ));
    }
    let spec = &config.request;
    let host = request::host_header(&spec.host, spec.port);
    let scheme = if config.tls.is_some() { "wss" } else { "ws" };
    let uri = format!("{scheme}://{host}{}", spec.path_and_query);
    websocket::Sessions::new(ws.clone(), &uri, &host, &spec.headers)
        .map(Some)
        .map_err(StartError::Invalid)
}

/// Starts one thread per worker, each on its runtime with its share of the budgets; if one
/// cannot start, the others are told to stop.
fn spawn_workers(
    config: &Config,
    ready: Ready,
    plan: &Arc<plan::Plan>,
    stop: &Arc<watch::Sender<bool>>,
    steering_rx: watch::Receiver<control::Steering>,
    events_tx: mpsc::Sender<Event>,
) -> Result<Vec<JoinHandle<()>>, StartError> {
    let Ready {
        threads,
        runtimes,
        open_connections,
        in_flight,
        preopen,
        ..
    } = ready;
    let shard = config.shard;
    // Closed loop: this shard's share of the budgets, split among its workers.
    let iterations = config
        .stop
        .iterations
        .map(|n| split(shard.share(n), threads));
    let requests = config.stop.requests.map(|n| split(shard.share(n), threads));
    let held = config.hold.map_or(vec![0; threads], |h| {
        split(shard.share(h.connections), threads)
    });
    let stop_rx = stop.subscribe();
    let mut handles = Vec::with_capacity(threads);
    for (id, runtime) in runtimes.into_iter().enumerate() {
        let share = plan::Share {
            id,
            requests: requests.as_ref().map(|r| r[id]),
            max_connections: open_connections[id] as usize,
            // A worker's share of the cap is at least one, or it could never send.
            max_in_flight: in_flight.as_ref().map(|c| c[id].max(1)),
            preopen: preopen[id],
            iterations: iterations.as_ref().map(|c| c[id]),
            held: held[id],
        };
        let (plan, stop_rx, events_tx) = (Arc::clone(plan), stop_rx.clone(), events_tx.clone());
        let steering_rx = steering_rx.clone();
        let handle = std::thread::Builder::new()
            .name(format!("belier-worker-{id}"))
            .spawn(move || worker::run(runtime, plan, share, stop_rx, steering_rx, events_tx));
        match handle {
            Ok(h) => handles.push(h),
            Err(e) => {
                let _ = stop.send(true);
                return Err(StartError::Worker(e));
            }
        }
    }
    Ok(handles)
}

impl Run {
    /// Number of workers; [`Event`]s name workers `0..workers()`.
    pub fn workers(&self) -> usize {
        match self.part_starts.len() {
            // One event thread per load runs beside its workers.
            0 => self.threads.len(),
            n => self.threads.len() - n,
        }
    }

    /// Loads started together ([`start_together`]); 1 for a run of one load.
    pub fn parts(&self) -> usize {
        self.part_starts.len().max(1)
    }

    /// The load (by its index in [`start_together`]'s list) worker `worker` belongs to; 0 for
    /// a run of one load.
    pub fn part_of(&self, worker: usize) -> usize {
        self.part_starts
            .iter()
            .rposition(|&first| first <= worker)
            .unwrap_or(0)
    }

    /// How long resolving the host took (once, at the start; zero with `connect_to`).
    pub fn dns(&self) -> Duration {
        self.dns
    }

    /// Where connections go: the address, or the Unix domain socket.
    pub fn addr(&self) -> &Endpoint {
        &self.addr
    }

    /// The instant the run started; sample instants are relative to it.
    pub fn start_instant(&self) -> Instant {
        self.started
    }

    /// Wall-clock time the run started.
    pub fn started_at(&self) -> SystemTime {
        self.started_at
    }

    /// Time since the run started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Asks every worker to stop sending. Requests in flight get the grace period to finish;
    /// the rest are counted as cancelled. Workers then report and end.
    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }

    /// A handle that steers the run while it goes: its rate or number of connections (or
    /// users), pause, resume, stop. Clones of it can go to other threads.
    pub fn control(&self) -> Control {
        self.control.clone()
    }

    /// Waits up to `wait` for the next event.
    pub fn next_event(&self, wait: Duration) -> Next {
        match self.events.recv_timeout(wait) {
            Ok(e) => Next::Event(e),
            Err(RecvTimeoutError::Timeout) => Next::Idle,
            Err(RecvTimeoutError::Disconnected) => Next::Ended,
        }
    }

    /// Waits for every worker thread; returns how many ended by panicking. Call after
    /// [`Next::Ended`].
    pub fn join(self) -> usize {
        self.threads
            .into_iter()
            .map(JoinHandle::join)
            .filter(Result::is_err)
            .count()
    }
}

/// The source addresses of `config`, each checked to be one this host can bind to; this
/// shard's connections start at its share of them, so that workers spread over all.
fn sources(config: &Config) -> Result<Option<source::Sources>, StartError> {
    let addrs = &config.local_addresses;
    if addrs.is_empty() {
        return Ok(None);
    }
    source::check_bindable(addrs).map_err(|(addr, why)| StartError::LocalAddress { addr, why })?;
    let (index, count) = (config.shard.index(), config.shard.count().max(1));
    let start = (index * addrs.len() as u64 / count) as usize;
    Ok(Some(source::Sources::new(addrs.clone(), start)))
}

/// Where to connect: the Unix domain socket, `connect_to`, the addresses given, or every
/// address of the host.
fn resolve(config: &Config) -> Result<Endpoint, StartError> {
    let spec = &config.request;
    if let Some(path) = &config.unix_socket {
        return Ok(Endpoint::Unix(path.clone()));
    }
    if let Some(addr) = config.connect_to {
        return Ok(Endpoint::Tcp(addr));
    }
    if !config.addresses.is_empty() {
        return Ok(Endpoint::of_addresses(
            config.addresses.clone(),
            config.dns_policy,
            config.shard,
        ));
    }
    host_endpoint(config, &spec.host, spec.port)
}

/// Every address of `host`, looked up as the run says (`Config::dns_server`), and again every
/// `Config::dns_ttl` while the run goes.
fn host_endpoint(config: &Config, host: &str, port: u16) -> Result<Endpoint, StartError> {
    let lookup = lookup::Lookup {
        server: config.dns_server,
    };
    let list = lookup.addresses(host, port).map_err(|e| match e {
        lookup::Failed::Resolve(source) => StartError::Resolve {
            host: host.to_string(),
            source,
        },
        lookup::Failed::NoAddress => StartError::NoAddress(host.to_string()),
    })?;
    match config.dns_ttl {
        None => Ok(Endpoint::of_addresses(
            list,
            config.dns_policy,
            config.shard,
        )),
        Some(every) => {
            let addresses =
                Arc::new(addresses::Addresses::new(list, config.dns_policy).striped(config.shard));
            refresh::follow(&addresses, lookup, host, port, every);
            Ok(Endpoint::Addresses(addresses))
        }
    }
}

/// Splits `total` into `parts` shares that differ by at most one, larger shares first.
pub fn split(total: u64, parts: usize) -> Vec<u64> {
    let parts_u = parts as u64;
    (0..parts_u)
        .map(|i| total / parts_u + u64::from(i < total % parts_u))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_even_and_exact() {
        assert_eq!(split(10, 3), [4, 3, 3]);
        assert_eq!(split(2, 4), [1, 1, 0, 0]);
        assert_eq!(split(0, 2), [0, 0]);
        for total in [1u64, 7, 1000, 1001] {
            for parts in 1..9 {
                let s = split(total, parts);
                assert_eq!(s.iter().sum::<u64>(), total);
                assert!(s.iter().max().unwrap() - s.iter().min().unwrap() <= 1);
            }
        }
    }
}
