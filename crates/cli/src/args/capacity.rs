//! The flags of `belier capacity`: what to request (or a plan), the search's own flags, and
//! the groups of a load test each step takes (open-loop arrivals, threads and re-sends,
//! HTTP/2), their help worded for a search.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{parse_duration, parse_duration_or_zero, KeepArgs};
use super::{
    GrpcCallArgs, HoldArgs, Http2Args, OpenLoopArgs, RequestArgs, SendingArgs, VarArgs,
    NO_RESEND_BRIEF,
};

/// What `--dimension` searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DimensionArg {
    /// Requests per second, an open loop (a plan's iterations per second).
    Rate,
    /// Concurrent connections, a closed loop: each sends its next request when the last is
    /// answered.
    Connections,
    /// New connections per second, one request each (over https, a full TLS handshake each).
    ConnectionRate,
    /// Connections held open beside a load at a fixed --rate: the most the server keeps while
    /// that load still meets the SLOs (a URL, over HTTP/1.1).
    HeldConnections,
}

/// Report formats of `belier capacity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CapacityFormat {
    /// Human-readable text.
    Text,
    /// JSON (schema: crates/capacity/schema/capacity.schema.json).
    Json,
    /// A self-contained HTML page with the latency and goodput charts.
    Html,
}

/// Options of `belier capacity URL`.
#[derive(Debug, Args)]
#[command(
    mut_arg("vars", |a| {
        a.help(
            "With a plan: set plan variable NAME to VALUE instead of the plan's `variables` value \
             (repeatable), as on `belier run`",
        )
    }),
    mut_arg("arrivals", |a| a.help("Arrival spacing of every step").value_name("SPACING")),
    mut_arg("seed", |a| a.help("Seed of Poisson arrivals").requires("arrivals")),
    mut_arg("max_connections", |a| a.help("Connections a step may open at most")),
    mut_arg("max_in_flight", |a| {
        a.help(
            "Arrivals due while this many requests are in flight are dropped (the generator then \
             did not hold the step's rate, and the search says so)",
        )
    }),
    mut_arg("no_resend", |a| a.help(NO_RESEND_BRIEF)),
    mut_arg("http2", |a| a.help("Speak HTTP/2 (ALPN h2 over https, prior knowledge over http)")),
    mut_arg("max_streams", |a| {
        a.help("HTTP/2: concurrent requests (streams) per connection [default: 100]")
    }),
    // Refused (see `commands::capacity::target`): each step is a new run of new clients.
    mut_arg("sse_reconnect", |a| a.hide(true)),
)]
pub struct CapacityArgs {
    /// What to request, and how; instead of a URL, a plan file (its scripted users, searching
    /// their iterations per second).
    #[command(flatten)]
    pub request: RequestArgs,

    /// With a plan: its variables.
    #[command(flatten)]
    pub vars: VarArgs,

    /// Refused with its reason: a search cannot be split into shards.
    #[arg(long = "shard", value_name = "I/N", hide = true)]
    pub shard: Option<String>,

    /// What the search varies: the request rate, the number of concurrent connections, or
    /// the rate of new connections.
    #[arg(
        long = "dimension",
        value_name = "D",
        value_enum,
        default_value_t = DimensionArg::Rate,
        help_heading = "Search"
    )]
    pub dimension: DimensionArg,

    /// An SLO every judged window must meet (repeatable): p99<50ms, p99.9<200ms, p50<…,
    /// mean<…, max<…, errors<0.1% (requests without a status below 400); on streamed
    /// messages, 'ttft p99<500ms', 'itl p99<50ms', 'ws_rtt p99<20ms'; errors<1% holds beside
    /// them unless an errors SLO is given
    #[arg(long = "slo", value_name = "EXPR", help_heading = "Search")]
    pub slo: Vec<String>,

    /// With --dimension held-connections: the request rate every step sends beside the held
    /// connections, whose SLOs decide how many the server can hold.
    #[arg(long = "rate", value_name = "R", help_heading = "Search")]
    pub rate: Option<f64>,

    /// First level tried: a rate per second, or a number of connections.
    #[arg(
        long = "start-rate",
        value_name = "R",
        default_value_t = 10.0,
        help_heading = "Search"
    )]
    pub start_rate: f64,

    /// Factor between rates while growing, until a step fails.
    #[arg(
        long = "growth",
        value_name = "F",
        default_value_t = 2.0,
        help_heading = "Search"
    )]
    pub growth: f64,

    /// Bisection stops when the failing rate is within this much above the passing one.
    #[arg(long = "precision", value_name = "PCT", default_value = "5%", value_parser = parse_share, help_heading = "Search")]
    pub precision: f64,

    /// Highest level tried.
    #[arg(long = "max-rate", value_name = "R", help_heading = "Search")]
    pub max_rate: Option<f64>,

    /// Start of each step, recorded but not judged.
    #[arg(long = "warmup", value_name = "D", default_value = "5s", value_parser = parse_duration_or_zero, help_heading = "Search")]
    pub warmup: Duration,

    /// Judged part of each step.
    #[arg(long = "window", value_name = "D", default_value = "15s", value_parser = parse_duration, help_heading = "Search")]
    pub window: Duration,

    /// Confirmations of the answer, each a step of --confirm-window.
    #[arg(
        long = "confirm",
        value_name = "N",
        default_value_t = 1,
        help_heading = "Search"
    )]
    pub confirm: u32,

    /// Judged part of a confirmation step.
    #[arg(long = "confirm-window", value_name = "D", default_value = "30s", value_parser = parse_duration, help_heading = "Search")]
    pub confirm_window: Duration,

    /// The whole search's budget; when it runs out, the bracket reached is reported.
    #[arg(long = "max-time", value_name = "D", value_parser = parse_duration, help_heading = "Search")]
    pub max_time: Option<Duration>,

    /// Overload steps past the answer, as multiples of it; then one step at 0.8× to see
    /// whether the service recovers.
    #[arg(
        long = "overload",
        value_name = "LIST",
        default_value = "1.25,1.5,2",
        value_delimiter = ',',
        conflicts_with = "no_overload",
        help_heading = "Search"
    )]
    pub overload: Vec<f64>,

    /// No overload or recovery steps.
    #[arg(long = "no-overload", help_heading = "Search")]
    pub no_overload: bool,

    /// Judged part of an overload or recovery step.
    #[arg(long = "overload-window", value_name = "D", default_value = "10s", value_parser = parse_duration, help_heading = "Search")]
    pub overload_window: Duration,

    /// Prometheus server (http://HOST:PORT) that --slo 'prom:QUERY<VALUE' SLOs are queried
    /// from, at the end of each judged window.
    #[arg(long = "prometheus", value_name = "URL", help_heading = "Search")]
    pub prometheus: Option<String>,

    /// After each step, wait until the server answers probes at its idle latency again (what
    /// the step left queued is served), for at most this long (0s: no wait).
    #[arg(long = "drain", value_name = "D", default_value = "30s", value_parser = parse_duration_or_zero, help_heading = "Search")]
    pub drain: Duration,

    /// Open-loop arrivals of every step.
    #[command(flatten)]
    pub open_loop: OpenLoopArgs,

    /// Threads and re-sends.
    #[command(flatten)]
    pub sending: SendingArgs,

    /// HTTP/2.
    #[command(flatten)]
    pub http2: Http2Args,

    /// Connections held beside every step (with --dimension held-connections, the level is
    /// their number, and --hold is not given).
    #[command(flatten)]
    pub hold: HoldArgs,

    /// Report format.
    #[arg(long = "output", value_name = "FORMAT", value_enum, default_value_t = CapacityFormat::Text)]
    pub output: CapacityFormat,

    /// Also write the HTML report (latency and goodput against the level) to FILE.
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Write the report to FILE instead of standard output.
    #[arg(long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Keep the search in FILE, rewritten after every step (the steps so far survive a crash
    /// or Ctrl-C); `belier report FILE` shows it again.
    #[arg(long = "save", value_name = "FILE")]
    pub save: Option<PathBuf>,

    /// Keeping the search in the run history, with its answers and steps.
    #[command(flatten)]
    pub keep: KeepArgs,

    /// The name the search is kept under in the history [default: 'capacity ' and the URL
    /// or plan searched].
    #[arg(long = "name", value_name = "NAME", help_heading = "History")]
    pub name: Option<String>,

    /// With --call: a gRPC method searched instead of a URL (the positional is HOST:PORT,
    /// -d/-D the message as JSON, -H metadata), as `belier grpc` sends it. Last:
    /// its heading goes on to what follows.
    #[command(flatten)]
    pub grpc: GrpcCallArgs,
}

// `5%` or `0.05`.
use belier_vocabulary::percent::share as parse_share;
