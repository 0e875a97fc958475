//! Where a run's report and recorded results go, and what watches it live (the progress
//! line or dashboard, the Prometheus exporter and outputs, the web console): the flags flag
//! runs and plan runs share.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{parse_duration, parse_duration_or_zero, Format, KeepArgs};

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
    /// connections, in-flight, target rate (named in the book: reference/metrics.md). Figures
    /// are those of the settled intervals, updated once per interval. An address off the
    /// loopback needs --metrics-token.
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

    /// Send each traced request (--trace-sample) as a span to an OpenTelemetry receiver:
    /// otlp=http://H:4318 (OTLP/HTTP, to /v1/traces). A client span per request with a child
    /// per phase (connect, tls, ttfb, transfer), batched by a thread of its own; spans the
    /// receiver did not take are counted in the report's warnings.
    #[arg(
        long = "traces-out",
        value_name = "otlp=URL",
        value_parser = parse_traces_out,
        requires = "trace_sample",
        help_heading = "Tracing"
    )]
    pub traces_out: Option<belier_outputs::traces::TracesSpec>,
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

    /// Keeping the run in the history.
    #[command(flatten)]
    pub keep: KeepArgs,
}

/// `otlp=URL` of `--traces-out`.
fn parse_traces_out(text: &str) -> Result<belier_outputs::traces::TracesSpec, String> {
    text.parse()
        .map_err(|e: belier_outputs::traces::TracesError| e.to_string())
}
