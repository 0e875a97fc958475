//! The flags of a load test (`belier URL …`), and the groups of them that plan runs
//! (`belier run`) and capacity searches (`belier capacity`) take too: each flag declared once,
//! in the group that says what it is for, flattened wherever it is offered.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{parse_duration, parse_duration_or_zero, ArrivalsArg, OnOff};
use super::{ClusterArgs, OutputArgs, RequestArgs, TargetsArgs};

/// Options of a load test.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// What to request.
    #[command(flatten)]
    pub request: RequestArgs,

    /// Many requests from a targets file.
    #[command(flatten)]
    pub targets: TargetsArgs,

    /// Total requests to send. With --duration too, the run stops at whichever comes first.
    /// With neither, the run lasts 10 s.
    #[arg(short = 'n', long = "requests", value_name = "N")]
    pub requests: Option<u64>,

    /// Length and rate.
    #[command(flatten)]
    pub pace: PaceArgs,

    /// Concurrent connections, each sending its next request as soon as the previous one ends
    /// (closed loop).
    #[arg(short = 'c', long = "connections", value_name = "N", default_value_t = belier_engine::DEFAULT_CONNECTIONS, conflicts_with = "rate")]
    pub connections: usize,

    /// Load stages 'DURATION:LEVEL,...', each ramping linearly to LEVEL over DURATION; the run
    /// ends with the last stage. With --rate the levels are request rates (k6's
    /// ramping-arrival-rate), without it numbers of connections starting from 0 (users
    /// ramping up and down). Example: 30s:500,1m:500,10s:0
    #[arg(long = "stages", value_name = "STAGES", conflicts_with = "connections")]
    pub stages: Option<String>,

    /// Closed loop: start the connections evenly over D (JMeter's ramp-up), then hold them.
    #[arg(long = "ramp-up", value_name = "D", value_parser = parse_duration, conflicts_with_all = ["rate", "stages"])]
    pub ramp_up: Option<Duration>,

    /// Open-loop arrivals.
    #[command(flatten)]
    pub open_loop: OpenLoopArgs,

    /// Open loop: shortest time between two wake-ups of a worker. Arrivals due closer together
    /// leave together, up to D late (the lag is measured and counted in the latency); fewer
    /// wake-ups cost less CPU, from 0 (every arrival on time) to 10ms [default: 250us]
    #[arg(long = "timer-slack", value_name = "D", value_parser = parse_duration_or_zero, help_heading = "Open loop")]
    pub timer_slack: Option<Duration>,

    /// Time each response's first byte and completion by the kernel's receive stamps, so
    /// latency is exact however late belier reads (HTTP/1.1 and HTTP/2 over TCP, TLS included,
    /// and HTTP/3; elsewhere, and with off, by when the read returns) [default: on]
    #[arg(long = "kernel-stamps", value_name = "on|off")]
    pub kernel_stamps: Option<OnOff>,

    /// Threads and re-sends.
    #[command(flatten)]
    pub sending: SendingArgs,

    /// Open a new connection for every request (sends 'Connection: close'). Over https every
    /// request then pays a full TLS handshake: that is what this mode measures.
    #[arg(long = "no-keepalive")]
    pub no_keepalive: bool,

    /// HTTP/2.
    #[command(flatten)]
    pub http2: Http2Args,

    /// Connections held beside the load.
    #[command(flatten)]
    pub hold: HoldArgs,

    /// This process's shard.
    #[command(flatten)]
    pub shard: ShardArgs,

    /// Stream every request to FILE as CSV (intended, dispatched, sent, first-byte and done
    /// times in µs from the start, latency, status, error kind, bytes). Off by default.
    #[arg(long = "raw", value_name = "FILE", help_heading = "Results")]
    pub raw: Option<PathBuf>,

    /// Report and results.
    #[command(flatten)]
    pub results: OutputArgs,

    /// Over several workers.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// How long a run lasts and, in an open loop, how fast it goes: a flag run's, and a plan run's
/// in place of the plan's load.
#[derive(Debug, Args)]
pub struct PaceArgs {
    /// How long to run, e.g. 30s, 2m, 1h30m (a bare number is seconds).
    #[arg(short = 'z', long = "duration", value_name = "D", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Open loop: send R requests per second (fractions allowed) on schedule, whatever the
    /// responses do; latency counts from each request's scheduled time. With --stages, the
    /// rate the first stage starts from.
    #[arg(long = "rate", value_name = "R", help_heading = "Open loop")]
    pub rate: Option<f64>,
}

/// How an open loop's arrivals are spaced and bounded: a flag run's, and each step's of a
/// capacity search.
#[derive(Debug, Args)]
pub struct OpenLoopArgs {
    /// Spacing of open-loop arrivals: even gaps, or exponential gaps (a Poisson process)
    /// [default: even]
    #[arg(
        long = "arrivals",
        value_name = "KIND",
        value_enum,
        help_heading = "Open loop"
    )]
    pub arrivals: Option<ArrivalsArg>,

    /// Seed of the Poisson arrivals, to repeat a run's schedule [default: random, shown in
    /// the report]; also of --order random
    #[arg(long = "seed", value_name = "N", help_heading = "Open loop")]
    pub seed: Option<u64>,

    /// Open loop: most connections to open; beyond it requests queue (their latency counting).
    #[arg(long = "max-connections", value_name = "N", help_heading = "Open loop")]
    pub max_connections: Option<usize>,

    /// Open loop: requests due while N are in flight are dropped (counted, never sent).
    #[arg(long = "max-in-flight", value_name = "N", help_heading = "Open loop")]
    pub max_in_flight: Option<u64>,
}

/// `--no-resend`'s help where a plan run or a capacity search offers it: the flag flag runs
/// declare, worded without the idempotent-methods detail a plan's steps and a search's
/// requests need not be told.
pub const NO_RESEND_BRIEF: &str = "Count a request as an error when the server closed its idle \
     keep-alive connection as the request crossed the close, instead of sending it once more on \
     a new connection";

/// How this process sends: its worker threads, and whether a request that crossed a
/// keep-alive close is sent again. Every run has them: flags, plans, capacity steps.
#[derive(Debug, Args)]
pub struct SendingArgs {
    /// Worker threads [default: number of cores]
    #[arg(short = 't', long = "threads", value_name = "N")]
    pub threads: Option<usize>,

    /// Count a request as an error when the server closed its idle keep-alive connection as the
    /// request crossed the close (no response byte), instead of sending it once more on a new
    /// connection (idempotent methods only; counted as re-sent in the report).
    #[arg(long = "no-resend")]
    pub no_resend: bool,
}

/// Connections held open beside the load, as clients that stay connected hold them: a flag
/// run's, and a capacity search's (whose `held-connections` dimension searches their number).
#[derive(Debug, Args)]
pub struct HoldArgs {
    /// Keep N connections open beside the load, counted apart from it (held, closed by the
    /// server, failed); when the server ends one, another opens in its place. HTTP/1.1.
    #[arg(
        id = "hold_connections",
        long = "hold",
        value_name = "N",
        help_heading = "Held connections"
    )]
    pub hold: Option<u64>,

    /// What a held connection does: idle (one keep-alive request answered, then silence until
    /// the server closes it) or slow (the request written a byte every --hold-interval, as a
    /// slow client sends it, answer after answer)
    #[arg(
        long = "hold-mode",
        value_name = "MODE",
        value_enum,
        default_value_t = HoldModeArg::Idle,
        help_heading = "Held connections"
    )]
    pub hold_mode: HoldModeArg,

    /// Slow mode: time between two bytes of the trickled request
    #[arg(long = "hold-interval", value_name = "D", default_value = "1s", value_parser = parse_duration, help_heading = "Held connections")]
    pub hold_interval: Duration,
}

/// `--hold-mode`: what a held connection does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HoldModeArg {
    /// One keep-alive request answered, then idle until the server closes the connection.
    Idle,
    /// The request trickled a byte at a time.
    Slow,
}

impl From<HoldModeArg> for belier_engine::HoldMode {
    fn from(m: HoldModeArg) -> Self {
        match m {
            HoldModeArg::Idle => belier_engine::HoldMode::Idle,
            HoldModeArg::Slow => belier_engine::HoldMode::Slow,
        }
    }
}

/// HTTP/2 and its streams per connection: a flag run's, and a capacity search's.
#[derive(Debug, Args)]
pub struct Http2Args {
    /// Speak HTTP/2: over https offered with ALPN h2 (a server that picks another protocol
    /// fails each request as tls_protocol), over http with prior knowledge (h2c). -c stays the
    /// number of concurrent requests; --max-streams of them share a connection.
    #[arg(long = "http2", help_heading = "HTTP/2")]
    pub http2: bool,

    /// Speak HTTP/3 over QUIC (an https URL: TLS 1.3, ALPN h3, UDP). -c stays the number of
    /// concurrent requests; --max-streams of them share a connection, as with --http2.
    /// --http3=auto asks the server first (one HEAD request over HTTP/2) and goes over HTTP/3
    /// when its Alt-Svc header offers h3 on its own host, to the port it names; else over
    /// HTTP/2, saying why on stderr and in the report.
    #[arg(
        long = "http3",
        value_name = "auto",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "always",
        help_heading = "HTTP/2",
        conflicts_with = "http2"
    )]
    pub http3: Option<Http3Mode>,

    /// HTTP/3: send a connection's first requests as 0-RTT early data when an earlier
    /// connection of the run left a ticket that allows it, and count whether the server
    /// accepted it (refused early data goes again, counted as re-sent). Early data can be
    /// replayed, so only GET, HEAD and OPTIONS requests may go as it.
    #[arg(long = "quic-0rtt", help_heading = "HTTP/2")]
    pub quic_0rtt: bool,

    /// HTTP/2: concurrent requests (streams) per connection, so '-c 100 --max-streams 10'
    /// opens 10 connections of 10 streams each. Open loop: a new connection opens when every
    /// stream of the existing ones is busy, up to --max-connections. [default: 100]
    #[arg(long = "max-streams", value_name = "N", help_heading = "HTTP/2")]
    pub max_streams: Option<usize>,
}

/// When a run speaks HTTP/3: `--http3` alone, or `--http3=auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Http3Mode {
    /// Always (`--http3`).
    Always,
    /// When the server's Alt-Svc offers h3, else HTTP/2.
    Auto,
}

impl Http2Args {
    /// Whether HTTP/3 is asked for, always or found by `--http3=auto`.
    pub fn http3(&self) -> bool {
        self.http3.is_some()
    }
}

/// A share of a test split across processes or machines: a flag run's or a plan run's.
#[derive(Debug, Args)]
pub struct ShardArgs {
    /// Run only shard I of N (numbered from 1, e.g. 1/4 … 4/4) of this test split across N
    /// processes or machines: together they send exactly what one machine would, and
    /// `belier report` of their results files merges them into its report.
    #[arg(long = "shard", value_name = "I/N")]
    pub shard: Option<belier_engine::Shard>,
}
