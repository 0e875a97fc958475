//! Flags of the subcommands that read results files: `belier report` and `belier compare`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::parse_duration;

/// Options of `belier report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Results files ('-' for standard input).
    #[arg(value_name = "FILE", default_value = "-")]
    pub files: Vec<PathBuf>,
    /// Output type.
    #[arg(long = "type", value_name = "TYPE", value_enum, default_value_t = ReportType::Text)]
    pub kind: ReportType,
    /// Only intervals starting at or after this time into the run (e.g. skip a warm-up: 30s).
    #[arg(long = "from", value_name = "D", value_parser = parse_duration)]
    pub from: Option<Duration>,
    /// Only intervals starting before this time into the run.
    #[arg(long = "to", value_name = "D", value_parser = parse_duration)]
    pub to: Option<Duration>,
    /// Write to this file instead of standard output.
    #[arg(long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Judge this plan's thresholds on the results (the shards of a split run merged: no
    /// shard judges them on its own share); exit 4 if one fails.
    #[arg(long = "thresholds-from", value_name = "PLAN")]
    pub thresholds_from: Option<PathBuf>,
}

/// Options of `belier compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Results file of the baseline run.
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// Results file of the run to judge.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// Conditions that fail the comparison (exit 3), comma-separated:
    /// relative ('p99>+10%', 'rate<-5%') or absolute on the new run ('errors>0.5%',
    /// 'p99>250ms'); on streamed messages too ('ttft p99>500ms', 'itl p99>+10%'), which
    /// fail when the new run recorded none.
    #[arg(long = "fail-if", value_name = "EXPR")]
    pub fail_if: Option<String>,
    /// Judge the --fail-if conditions on the runs' per-interval values too: a relative one
    /// then holds only when its change is also significant at this level (Mann–Whitney U
    /// test), each shown with its change, interval and p-value (text output only).
    #[arg(long = "significance", value_name = "ALPHA", requires = "fail_if")]
    pub significance: Option<f64>,
    /// Output format.
    #[arg(long = "output", value_name = "FORMAT", value_enum, default_value_t = CompareFormat::Text)]
    pub output: CompareFormat,
    /// Only intervals starting at or after this time into each run.
    #[arg(long = "from", value_name = "D", value_parser = parse_duration)]
    pub from: Option<Duration>,
    /// Only intervals starting before this time into each run.
    #[arg(long = "to", value_name = "D", value_parser = parse_duration)]
    pub to: Option<Duration>,
}

/// Output types of `belier report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportType {
    /// Human-readable text.
    Text,
    /// JSON: one report, or an array of reports for several runs.
    Json,
    /// The per-interval series, one row per run and interval (Locust's stats history).
    Csv,
    /// Per-step statistics, one row per step of a plan and an `Aggregated` row per run
    /// (Locust's stats table).
    CsvStats,
    /// A summary table with one column per run.
    Markdown,
    /// An HdrHistogram interval log of the latency histograms.
    Hdr,
    /// A self-contained HTML page with charts.
    Html,
    /// JUnit XML: a test suite per run, a test case per threshold (or one for the run);
    /// schema: crates/report/schema/junit.xsd.
    Junit,
}

/// Output formats of `belier compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// Human-readable text.
    Text,
    /// JSON: the deltas and the failed conditions.
    Json,
    /// JUnit XML: a test case per --fail-if condition (schema:
    /// crates/report/schema/junit.xsd).
    Junit,
}
