//! Raw command-line flags, as clap parses them. Nothing here is validated beyond its type:
//! `settings` turns these into a configuration or a precise error.

use clap::{Parser, Subcommand};

mod capacity;
mod cluster;
mod files;
mod grpc;
mod history;
mod import;
mod k8s;
mod load;
mod output;
mod plan;
mod record;
mod request;
mod servers;
mod targets_file;
mod tools;
mod values;
mod ws;
pub use capacity::{CapacityArgs, CapacityFormat, DimensionArg};
pub use cluster::{ClusterArgs, Loss, WorkerArgs, TOKEN_ENV};
pub use files::{CompareArgs, CompareFormat, ReportArgs, ReportType};
pub use grpc::{GrpcArgs, GrpcCallArgs};
pub use history::{
    BaselineArgs, BaselineCommand, ExportArgs, HistoryArgs, HistoryCheckArgs, HistoryCommand,
    HistoryImportArgs, KeepArgs, ListArgs, ShowArgs, ShowFormat, TrendArgs, TrendFormat,
};
pub use import::{CurlArgs, HarArgs, ImportArgs, ImportCommand};
pub use k8s::{K8sArgs, K8sCommand, PlaceArgs, WaitArgs};
pub use load::{
    HoldArgs, HoldModeArg, Http2Args, Http3Mode, LoadArgs, OpenLoopArgs, PaceArgs, SendingArgs,
    ShardArgs, NO_RESEND_BRIEF,
};
pub use output::OutputArgs;
pub use plan::{CheckArgs, RunArgs, VarArgs};
pub use record::RecordArgs;
pub use request::{EveryRequestArgs, RequestArgs};
pub use servers::{DemoArgs, TargetArgs, WebArgs};
pub use targets_file::{FormatArg, OrderArg, TargetsArgs};
pub use tools::{CompletionsArgs, ProbeArgs, ProbeFormat};
#[cfg(test)]
pub use values::LONGEST;
pub use values::{parse_duration, parse_duration_or_zero, ArrivalsArg, Format, OnOff};
pub use ws::{WsArgs, WsMessageArgs};

const EXIT_CODES: &str = "\
Exit codes:
  0    the run completed (failed requests are results, shown in the report)
  1    belier could not run (name resolution, output file, crashed worker)
  2    invalid input (flag, URL, header, body file, connection limit, results file)
  3    belier compare, belier history check: a --fail-if condition held
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
    /// Run belier's built-in target server (for demos, calibration and fault injection), HTTP
    /// and gRPC.
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
    Probe(Box<ProbeArgs>),
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
    Capacity(Box<CapacityArgs>),
    /// Make a plan from a HAR recording (`import har FILE`) or a curl command
    /// (`import curl 'curl …'`).
    Import(ImportArgs),
    /// Wait for a coordinator's runs (`belier URL … --workers HOST:PORT`), one at a time,
    /// sending each run's share of the load and streaming its results back.
    Worker(WorkerArgs),
    /// Record a plan: an HTTP proxy (HTTPS through CONNECT with belier's CA) that forwards
    /// your client's requests and writes them as a plan as they go.
    Record(RecordArgs),
    /// Load-test one gRPC method (unary or streaming): `belier grpc HOST:PORT --call
    /// package.Service/Method --proto FILE -d JSON`, each call's status code counted (non-OK
    /// ones as failed calls), and a stream's messages; the schema from --proto or --protoset,
    /// else asked of the server (server reflection).
    Grpc(Box<GrpcArgs>),
    /// Load-test a WebSocket endpoint: `belier ws ws://HOST/PATH -c 200 --messages 100
    /// --message TEXT`, each socket's upgrade timed, its messages' round trips (from their
    /// intended send with --message-rate), counts and bytes each way, closes other than
    /// normal counted as failed sockets.
    Ws(Box<WsArgs>),
    /// Place a distributed run on Kubernetes: `render` its manifests, `run` them with kubectl.
    K8s(K8sArgs),
    /// The run history (runs kept with --history): list, show, import, export, and check the
    /// latest run of a name against earlier ones for significant regressions (exit 3).
    History(HistoryArgs),
}

#[cfg(test)]
mod tests;

/// The flags of a load test that only an HTTP request follows: hidden from `belier grpc` and
/// `belier ws`, which refuse them when given.
const HTTP_ONLY: [&str; 18] = [
    "http2",
    "http3",
    "quic_0rtt",
    "method",
    "compressed",
    "no_keepalive",
    "proxy",
    "targets",
    "format",
    "order",
    "cookies",
    "follow",
    "stream",
    "sse_reconnect",
    "llm",
    "hold_connections",
    "hold_mode",
    "hold_interval",
];

/// Hides `a` if it is one of [`HTTP_ONLY`].
fn hide_http_only(a: clap::Arg) -> clap::Arg {
    match HTTP_ONLY.contains(&a.get_id().as_str()) {
        true => a.hide(true),
        false => a,
    }
}
