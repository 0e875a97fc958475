//! Raw command-line flags, as clap parses them. Nothing here is validated beyond its type:
//! `settings` turns these into a configuration or a precise error.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod cluster;
mod files;
mod servers;
mod tools;
pub use cluster::{ClusterArgs, Loss, WorkerArgs, TOKEN_ENV};
pub use files::{CompareArgs, CompareFormat, ReportArgs, ReportType};
pub use servers::{DemoArgs, TargetArgs, WebArgs};
pub use tools::{CompletionsArgs, ProbeArgs, ProbeFormat};

const EXIT_CODES: &str = "\
Exit codes:
  0    the run completed (failed requests are results, shown in the report)
  1    belier could not run (name resolution, output file, crashed worker)
  2    invalid input (flag, URL, header, body file, connection limit, results file)
  3    belier compare: a --fail-if condition held
  4    belier run: a threshold of the plan failed, or stopped the run (the report shows which)
  5    belier capacity: no rate met the SLOs, not even the start rate
  130  interrupted by Ctrl-C (the report is still printed)";

/// An HTTP load tester that measures honestly and never loses its statistics.
#[derive(Debug, Parser)]
#[command(
    name = "belier",
    version,
    args_conflicts_with_subcommands = true,
    after_help = EXIT_CODES,
)]
pub struct Cli {
    /// A subcommand; without one, belier load-tests URL.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Load-test options.
    #[command(flatten)]
    pub load: LoadArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run belier's built-in target server (for demos, calibration and fault injection).
    Target(TargetArgs),
    /// Start the built-in target on loopback, load it for a few seconds and print the report.
    Demo(DemoArgs),
    /// Report on results files: files with the same run name merge, others are shown side by
    /// side.
    Report(ReportArgs),
    /// Compare two runs' results files metric by metric, failing on regressions (exit 3).
    Compare(CompareArgs),
    /// Send one request on a new connection and show its phases, TLS session, status and
    /// response head (curl's --write-out use case).
    Probe(ProbeArgs),
    /// Print a shell completion script for belier, generated from its flags (bash: `belier
    /// completions bash > ~/.local/share/bash-completion/completions/belier`).
    Completions(CompletionsArgs),
    /// Print belier's man page (roff), generated from its flags (`belier man > belier.1`).
    Man,
    /// Run a plan file: weighted scenarios of virtual users with steps, pauses, extraction,
    /// checks, data and thresholds (exit 4 when a threshold fails, or one with `abort: true`
    /// fails while the run goes and stops it).
    Run(Box<RunArgs>),
    /// Validate a plan file without sending anything and print the plan as belier reads it
    /// (thresholds that stop the run when they fail: from when they are judged).
    Check(CheckArgs),
    /// A web console without a run (Locust's model): start runs from a form or a plan file of
    /// the working directory, watch and steer them, keep their reports and results.
    Web(WebArgs),
    /// Find the highest rate that meets SLOs (--slo p99<50ms …) with steady open-loop steps,
    /// then how the service behaves past it and whether it recovers (exit 5 when no rate did).
    Capacity(Box<crate::capacity::CapacityArgs>),
    /// Make a plan from a HAR recording (`import har FILE`) or a curl command
    /// (`import curl 'curl …'`).
    Import(crate::import::ImportArgs),
    /// Wait for a coordinator's runs (`belier URL … --workers HOST:PORT`), one at a time,
    /// sending each run's share of the load and streaming its results back.
    Worker(WorkerArgs),
    /// Record a plan: an HTTP proxy (HTTPS through CONNECT with belier's CA) that forwards
    /// your client's requests and writes them as a plan as they go.
    Record(crate::record::RecordArgs),
    /// Place a distributed run on Kubernetes: `render` its manifests, `run` them with kubectl.
    K8s(crate::k8s::K8sArgs),
}

/// Options of `belier run PLAN`: the plan says what to do; these flags override it.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan file (YAML; its format is in crates/scenario/PLAN.md).
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,

    /// Run length, instead of the plan's `load.duration`.
    #[arg(short = 'z', long = "duration", value_name = "D", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Total iterations across all users, instead of the plan's `load.iterations`.
    #[arg(short = 'i', long = "iterations", value_name = "N")]
    pub iterations: Option<u64>,

    /// Run N virtual users in a closed loop, instead of the plan's load (its pacing stays).
    #[arg(short = 'u', long = "vus", value_name = "N", conflicts_with = "rate")]
    pub vus: Option<u64>,

    /// Start R iterations per second (open loop), instead of the plan's load.
    #[arg(long = "rate", value_name = "R")]
    pub rate: Option<f64>,

    /// Extra header on every request, 'Name: value' (repeatable); replaces the plan's own
    /// header of that name.
    #[arg(short = 'H', long = "header", value_name = "'NAME: VALUE'")]
    pub headers: Vec<String>,

    /// Set plan variable NAME to VALUE instead of the plan's `variables` value (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,

    /// https: do not verify the server's certificate, whatever the plan says.
    #[arg(long = "insecure", short = 'k')]
    pub insecure: bool,

    /// Ask for compressed answers and decode them, as the plan's `compressed: true` does.
    #[arg(long = "compressed")]
    pub compressed: bool,

    /// Connect to ADDR instead of resolving the plan's host (Host header and TLS name stay).
    #[arg(long = "connect-to", value_name = "ADDR")]
    pub connect_to: Option<std::net::SocketAddr>,

    /// Count a request as an error when the server closed its idle keep-alive connection as the
    /// request crossed the close, instead of sending it once more on a new connection.
    #[arg(long = "no-resend")]
    pub no_resend: bool,

    /// https: let connections resume earlier TLS sessions; without it every connection pays a
    /// full handshake.
    #[arg(long = "tls-resume")]
    pub tls_resume: bool,

    /// Run only shard I of N (numbered from 1, e.g. 1/4 … 4/4) of this test split across N
    /// processes or machines: together they send exactly what one machine would, and
    /// `belier report` of their results files merges them into its report.
    #[arg(long = "shard", value_name = "I/N")]
    pub shard: Option<belier_engine::Shard>,

    /// Worker threads [default: number of cores]
    #[arg(short = 't', long = "threads", value_name = "N")]
    pub threads: Option<usize>,

    /// Report and results.
    #[command(flatten)]
    pub results: OutputArgs,

    /// Over several workers.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// Options of `belier check PLAN`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The plan file.
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,

    /// Set plan variable NAME to VALUE instead of the plan's `variables` value (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
}

/// Options of a load test.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// What to request.
    #[command(flatten)]
    pub request: RequestArgs,

    /// Many requests from a targets file.
    #[command(flatten)]
    pub targets: crate::targets::TargetsArgs,

    /// Total requests to send. With --duration too, the run stops at whichever comes first.
    /// With neither, the run lasts 10 s.
    #[arg(short = 'n', long = "requests", value_name = "N")]
    pub requests: Option<u64>,

    /// How long to run, e.g. 30s, 2m, 1h30m (a bare number is seconds).
    #[arg(short = 'z', long = "duration", value_name = "D", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Concurrent connections, each sending its next request as soon as the previous one ends
    /// (closed loop).
    #[arg(short = 'c', long = "connections", value_name = "N", default_value_t = belier_engine::DEFAULT_CONNECTIONS, conflicts_with = "rate")]
    pub connections: usize,

    /// Open loop: send R requests per second (fractions allowed) on schedule, whatever the
    /// responses do; latency counts from each request's scheduled time. With --stages, the
    /// rate the first stage starts from.
    #[arg(long = "rate", value_name = "R", help_heading = "Open loop")]
    pub rate: Option<f64>,

    /// Load stages 'DURATION:LEVEL,...', each ramping linearly to LEVEL over DURATION; the run
    /// ends with the last stage. With --rate the levels are request rates (k6's
    /// ramping-arrival-rate), without it numbers of connections starting from 0 (users
    /// ramping up and down). Example: 30s:500,1m:500,10s:0
    #[arg(long = "stages", value_name = "STAGES", conflicts_with = "connections")]
    pub stages: Option<String>,

    /// Closed loop: start the connections evenly over D (JMeter's ramp-up), then hold them.
    #[arg(long = "ramp-up", value_name = "D", value_parser = parse_duration, conflicts_with_all = ["rate", "stages"])]
    pub ramp_up: Option<Duration>,

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

    /// Open loop: shortest time between two wake-ups of a worker. Arrivals due closer together
    /// leave together, up to D late (the lag is measured and counted in the latency); fewer
    /// wake-ups cost less CPU, from 0 (every arrival on time) to 10ms [default: 250us]
    #[arg(long = "timer-slack", value_name = "D", value_parser = parse_duration_or_zero, help_heading = "Open loop")]
    pub timer_slack: Option<Duration>,

    /// Time each response's first byte and completion by the kernel's receive stamps, so
    /// latency is exact however late belier reads (HTTP/1.1 and HTTP/2 over TCP, TLS included;
    /// elsewhere, and with off, by when the read returns) [default: on]
    #[arg(long = "kernel-stamps", value_name = "on|off")]
    pub kernel_stamps: Option<OnOff>,

    /// Worker threads [default: number of cores]
    #[arg(short = 't', long = "threads", value_name = "N")]
    pub threads: Option<usize>,

    /// Open a new connection for every request (sends 'Connection: close'). Over https every
    /// request then pays a full TLS handshake: that is what this mode measures.
    #[arg(long = "no-keepalive")]
    pub no_keepalive: bool,

    /// Count a request as an error when the server closed its idle keep-alive connection as the
    /// request crossed the close (no response byte), instead of sending it once more on a new
    /// connection (idempotent methods only; counted as re-sent in the report).
    #[arg(long = "no-resend")]
    pub no_resend: bool,

    /// Speak HTTP/2: over https offered with ALPN h2 (a server that picks another protocol
    /// fails each request as tls_protocol), over http with prior knowledge (h2c). -c stays the
    /// number of concurrent requests; --max-streams of them share a connection.
    #[arg(long = "http2", help_heading = "HTTP/2")]
    pub http2: bool,

    /// HTTP/2: concurrent requests (streams) per connection, so '-c 100 --max-streams 10'
    /// opens 10 connections of 10 streams each. Open loop: a new connection opens when every
    /// stream of the existing ones is busy, up to --max-connections. [default: 100]
    #[arg(long = "max-streams", value_name = "N", help_heading = "HTTP/2")]
    pub max_streams: Option<usize>,

    /// Run only shard I of N (numbered from 1, e.g. 1/4 … 4/4) of this test split across N
    /// processes or machines: together they send exactly what one machine would, and
    /// `belier report` of their results files merges them into its report.
    #[arg(long = "shard", value_name = "I/N")]
    pub shard: Option<belier_engine::Shard>,

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

/// Where the report and the recorded results go: shared by load tests and plan runs.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Report format.
    #[arg(long = "output", value_name = "FORMAT", value_enum, default_value_t = Format::Text)]
    pub output: Format,

    /// Write the report to this file instead of standard output.
    #[arg(long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Save everything recorded to a results file as the run goes, one record per interval
    /// ('-' for standard output, the report then going to standard error). Re-report it with
    /// 'belier report FILE'.
    #[arg(long = "save", value_name = "FILE", help_heading = "Results")]
    pub save: Option<PathBuf>,

    /// Run name in the results file: files with the same name are shards of one run and
    /// merge [default: the results file's name]
    #[arg(long = "name", value_name = "NAME", help_heading = "Results")]
    pub name: Option<String>,

    /// Length of the recorded intervals (the series, results file records).
    #[arg(long = "interval", value_name = "D", default_value = "1s", value_parser = parse_duration, help_heading = "Results")]
    pub interval: Duration,

    /// Also write a self-contained HTML report with charts to FILE at the end.
    #[arg(long = "html", value_name = "FILE", help_heading = "Results")]
    pub html: Option<PathBuf>,

    /// Also write a JUnit XML report to FILE at the end, for CI: each of a plan's thresholds
    /// a test case (a failed one a failure, measured against its limit); without thresholds,
    /// one case that fails if the run was interrupted or belier could not keep up.
    #[arg(long = "junit", value_name = "FILE", help_heading = "Results")]
    pub junit: Option<PathBuf>,

    /// Show a live dashboard instead of the progress line: rate against target, latency
    /// percentiles, status codes and errors, connections, the generator's lag and CPU. Keys:
    /// q stop, p pause/resume, +/- rate or users by 10 %, ? help. The report follows as usual.
    /// Falls back to the progress line when standard error is not a terminal of at least 60×16.
    #[arg(long = "tui")]
    pub tui: bool,

    /// Serve Prometheus metrics at http://ADDR/metrics during the run (pull setups), e.g.
    /// 127.0.0.1:9464: requests by status and error kind, the latency histogram, bytes,
    /// connections, in-flight, target rate (names in README.md). Figures are those of the
    /// settled intervals, updated once per interval. An address off the loopback needs
    /// --metrics-token.
    #[arg(long = "metrics-listen", value_name = "ADDR", help_heading = "Metrics")]
    pub metrics_listen: Option<std::net::SocketAddr>,

    /// Scrapes of --metrics-listen must send 'Authorization: Bearer TOKEN' (else 401).
    /// Required for an address off the loopback, of 16 characters at least ('generate' makes
    /// one, printed at start). Never shown in reports. Without the flag, BELIER_METRICS_TOKEN
    /// is read (it stays out of ps and shell history).
    #[arg(
        long = "metrics-token",
        value_name = "TOKEN",
        requires = "metrics_listen",
        help_heading = "Metrics"
    )]
    pub metrics_token: Option<String>,

    /// After the run, keep serving the final figures for D so a scraper collects them (0:
    /// exit at once; Ctrl-C ends it early) [default: 5s]
    #[arg(long = "metrics-linger", value_name = "D", value_parser = parse_duration_or_zero, requires = "metrics_listen", help_heading = "Metrics")]
    pub metrics_linger: Option<Duration>,

    /// Send the metrics to KIND=URL once per interval (repeatable): prometheus-rw=http://H:9090/api/v1/write,
    /// pushgateway=http://H:9091, influx=http://H:8086/write?db=DB (2.x:
    /// .../api/v2/write?org=O&bucket=B, token in BELIER_INFLUX_TOKEN or as http://:TOKEN@H),
    /// otlp=http://H:4318, statsd=udp://H:8125. Each output has its own thread and queue: a
    /// slow or dead endpoint never slows the run; what it could not take is retried, then
    /// counted in the report's warnings.
    #[arg(
        long = "metrics-out",
        value_name = "KIND=URL",
        help_heading = "Metrics"
    )]
    pub metrics_out: Vec<String>,
    /// Watch and steer the run in a browser: a web console at http://ADDR/ [default:
    /// 127.0.0.1:5665] with live charts, tables and controls (rate or users, pause, resume,
    /// stop), and the report at the end. Give ADDR with '=' (--web=127.0.0.1:8000). An address
    /// off the loopback needs --web-token.
    #[arg(long = "web", value_name = "ADDR", num_args = 0..=1, require_equals = true, default_missing_value = belier_console::DEFAULT_ADDR, help_heading = "Web console")]
    pub web: Option<std::net::SocketAddr>,

    /// The web console's token: the page must be opened once with ?token=TOKEN, API calls
    /// send 'Authorization: Bearer TOKEN' (else 401). 'generate' makes a random one, printed
    /// at start. Required off the loopback, of 16 characters at least. Without the flag,
    /// BELIER_WEB_TOKEN is read.
    #[arg(
        long = "web-token",
        value_name = "TOKEN",
        requires = "web",
        help_heading = "Web console"
    )]
    pub web_token: Option<String>,

    /// After the run, keep the console up for D so its report and results can be fetched
    /// (0: exit at once; Ctrl-C ends it early) [default: 1m]
    #[arg(long = "web-linger", value_name = "D", value_parser = parse_duration_or_zero, requires = "web", help_heading = "Web console")]
    pub web_linger: Option<Duration>,
}

/// What to request and how to reach it: shared by load tests and `belier probe`.
#[derive(Debug, Args)]
pub struct RequestArgs {
    /// Target URL, e.g. http://127.0.0.1:8080/path?query
    #[arg(value_name = "URL")]
    pub url: Option<String>,

    /// HTTP method.
    #[arg(
        short = 'm',
        long = "method",
        value_name = "METHOD",
        default_value = "GET"
    )]
    pub method: String,

    /// Extra request header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_name = "'NAME: VALUE'")]
    pub headers: Vec<String>,

    /// Request body.
    #[arg(
        short = 'd',
        long = "body",
        value_name = "STRING",
        conflicts_with = "body_file"
    )]
    pub body: Option<String>,

    /// Request body read from a file.
    #[arg(short = 'D', long = "body-file", value_name = "PATH")]
    pub body_file: Option<PathBuf>,

    /// Per-request timeout, connect included.
    #[arg(long = "timeout", value_name = "D", default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,

    /// https: do not verify the server's certificate (self-signed test servers). The
    /// handshake still runs in full, so its cost is measured.
    #[arg(long = "insecure", short = 'k', help_heading = "TLS")]
    pub insecure: bool,

    /// https: trust the CA certificates in this PEM file instead of the system's; a server
    /// certificate found in it byte for byte (the usual self-signed one) is accepted as pinned.
    #[arg(long = "cacert", value_name = "FILE", help_heading = "TLS")]
    pub cacert: Option<PathBuf>,

    /// https: let connections resume earlier TLS sessions (tickets, session ids); without it
    /// every connection pays a full handshake. Resumed handshakes are counted in the report.
    #[arg(long = "tls-resume", help_heading = "TLS")]
    pub tls_resume: bool,

    /// https: client certificate chain (PEM), with --key.
    #[arg(
        long = "cert",
        value_name = "FILE",
        requires = "key",
        help_heading = "TLS"
    )]
    pub cert: Option<PathBuf>,

    /// https: client private key (PEM), with --cert.
    #[arg(
        long = "key",
        value_name = "FILE",
        requires = "cert",
        help_heading = "TLS"
    )]
    pub key: Option<PathBuf>,

    /// https: the TLS server name (SNI, and the certificate's expected name) when it is not
    /// the URL's host.
    #[arg(long = "sni", value_name = "NAME", help_heading = "TLS")]
    pub sni: Option<String>,

    /// Connect to this address instead of resolving the URL's host; the Host header and the
    /// TLS name stay the URL's (curl's --connect-to), e.g. 127.0.0.1:8443.
    #[arg(long = "connect-to", value_name = "ADDR")]
    pub connect_to: Option<std::net::SocketAddr>,
    /// Connect to ADDR for the URL's HOST and PORT instead of resolving it (curl's --resolve),
    /// e.g. api.test:443:127.0.0.1 or api.test:443:[::1]; the Host header and TLS name stay
    /// the URL's.
    #[arg(
        long = "resolve",
        value_name = "HOST:PORT:ADDR",
        conflicts_with = "connect_to"
    )]
    pub resolve: Vec<String>,

    /// Ask for a compressed answer (Accept-Encoding: gzip, br, deflate, zstd) and decode it:
    /// the report gives wire bytes and decoded bytes; a body that fails to decode is an error
    /// of its own (curl's --compressed).
    #[arg(long = "compressed")]
    pub compressed: bool,

    /// Send http:// requests through this HTTP proxy (absolute-form request targets; its
    /// user:pass@ as Proxy-Authorization). Hosts in NO_PROXY are reached directly.
    #[arg(
        long = "proxy",
        value_name = "URL",
        conflicts_with_all = ["connect_to", "resolve"]
    )]
    pub proxy: Option<String>,

    /// Connect to this Unix domain socket instead of over TCP (curl's --unix-socket); the URL
    /// still gives the Host header, the path and the scheme (https: TLS over the socket).
    #[arg(
        long = "unix-socket",
        value_name = "PATH",
        conflicts_with_all = ["connect_to", "resolve", "proxy"]
    )]
    pub unix_socket: Option<PathBuf>,
}

/// A setting turned on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    /// On.
    On,
    /// Off.
    Off,
}

/// Spacing of open-loop arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalsArg {
    /// Evenly spaced: exactly 1/rate apart.
    Even,
    /// Exponential gaps with mean 1/rate.
    Poisson,
}

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human-readable text.
    Text,
    /// JSON (schema: crates/report/schema/report.schema.json).
    Json,
}

/// Parses `30s`, `2m`, `1h30m`, `250ms`, `1.5s`, or a bare number of seconds (the
/// vocabulary's one grammar), longer than zero. Clap names the flag and the value, so the
/// error is the problem alone.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration_or_zero(s)?;
    if d.is_zero() {
        return Err("must be longer than zero".into());
    }
    Ok(d)
}

/// Longest duration accepted, 100 years: a run adds durations to the clock (`Instant +
/// Duration`), which panicked for `-z 1e19` (a valid `Duration`); no run needs more. The
/// parser holds it; the tests name it here.
#[cfg(test)]
pub use belier_vocabulary::duration::LONGEST;

/// As [`parse_duration`], zero included (for settings where zero means "none").
pub fn parse_duration_or_zero(s: &str) -> Result<Duration, String> {
    belier_vocabulary::duration::parse(s).map_err(|e| e.problem)
}

#[cfg(test)]
mod tests;
