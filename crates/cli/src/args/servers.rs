//! Flags of the subcommands that serve rather than load: `belier target`, `belier web` and
//! `belier demo`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::parse_duration;

/// Options of `belier target`.
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: std::net::SocketAddr,
    /// Listen on this Unix domain socket instead of --listen (created, and removed on exit).
    #[arg(long, value_name = "PATH")]
    pub unix_socket: Option<std::path::PathBuf>,
    /// Server threads.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: usize,
    /// Default delay before each response (per request: ?delay=20ms).
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub delay: Option<Duration>,
    /// Default status code (per request: ?status=503).
    #[arg(long, value_name = "CODE")]
    pub status: Option<u16>,
    /// Default body size in bytes (per request: ?size=1024).
    #[arg(long, value_name = "BYTES")]
    pub size: Option<usize>,
    /// Default fault: reset, close-before-headers, close-mid-body, malformed or stall
    /// (per request: ?fault=reset).
    #[arg(long, value_name = "FAULT")]
    pub fault: Option<belier_testserver::Fault>,
    /// Serve HTTPS with a certificate generated at start (a fresh CA and a leaf for the listen
    /// address, 127.0.0.1, ::1 and localhost); prints its SHA-256 fingerprint and the file
    /// holding the CA, for clients' --cacert.
    #[arg(long)]
    pub tls: bool,
    /// Also serve HTTP/3 over QUIC, on the same port's UDP side, with the same certificate
    /// (needs --tls).
    #[arg(long, requires = "tls")]
    pub http3: bool,
    /// Print the .proto of the target's gRPC service (belier.target.Target: Unary,
    /// ServerStream, ClientStream, Bidi) for `belier grpc --proto`, and exit.
    #[arg(long)]
    pub print_proto: bool,
    /// A known capacity: K handlers, each holding a request for --service-time (waiting, not
    /// burning CPU); the capacity is K / service time. Also serves /metrics for Prometheus.
    #[arg(
        long,
        value_name = "K",
        requires = "service_time",
        help_heading = "Known capacity"
    )]
    pub workers: Option<usize>,
    /// How long a handler holds each request (with --workers).
    #[arg(long = "service-time", value_name = "D", value_parser = parse_duration, requires = "workers", help_heading = "Known capacity")]
    pub service_time: Option<Duration>,
    /// Most requests waiting for a handler [default: no limit].
    #[arg(
        long,
        value_name = "Q",
        requires = "workers",
        help_heading = "Known capacity"
    )]
    pub queue: Option<usize>,
    /// Beyond the queue, answer 503 at once instead of closing the connection.
    #[arg(long, requires = "queue", help_heading = "Known capacity")]
    pub shed: bool,
}

/// Options of `belier web`.
#[derive(Debug, Args)]
pub struct WebArgs {
    /// Address to listen on. An address off the loopback needs --token.
    #[arg(long, value_name = "ADDR", default_value = belier_console::DEFAULT_ADDR)]
    pub listen: std::net::SocketAddr,
    /// The console's token (see --web-token; 'generate' makes one; off the loopback, 16
    /// characters at least). Without the flag, BELIER_WEB_TOKEN is read.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Where each run's results file and HTML report are kept, one directory per run.
    #[arg(long = "runs-dir", value_name = "DIR", default_value = "belier-runs")]
    pub runs_dir: PathBuf,
}

/// Options of `belier demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// How long to load the target.
    #[arg(short = 'z', long = "duration", value_name = "D", default_value = "3s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Concurrent connections.
    #[arg(short = 'c', long = "connections", value_name = "N", default_value_t = belier_engine::DEFAULT_CONNECTIONS)]
    pub connections: usize,
    /// Over HTTPS: the target serves a certificate generated at start, which belier trusts
    /// through --cacert.
    #[arg(long)]
    pub tls: bool,
    /// Over HTTP/2: ALPN h2 with --tls, prior knowledge (h2c) without.
    #[arg(long)]
    pub http2: bool,
    /// Over HTTP/3 (QUIC): implies --tls, as QUIC is always TLS 1.3.
    #[arg(long, conflicts_with = "http2")]
    pub http3: bool,
}
