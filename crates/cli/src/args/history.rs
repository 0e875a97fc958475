//! Flags of the run history: `--history` and `--label` on runs, and `belier history`'s
//! subcommands.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

/// Keeping a run in the history: shared by flag runs, plan runs and capacity searches.
#[derive(Debug, Args)]
pub struct KeepArgs {
    /// At the end of the run, keep it in the run history: DB is an SQLite file, or a
    /// PostgreSQL database's URL (postgres://USER:PASSWORD@HOST/DATABASE, a team's shared
    /// store) [default: $BELIER_HISTORY, else $XDG_DATA_HOME/belier/history.db, else
    /// ~/.local/share/belier/history.db]. Give DB with '=' (--history=ci.db). Setting
    /// BELIER_HISTORY keeps every run there without the flag. The run is read back from its
    /// results file (--save; without it, one is kept beside the database).
    #[arg(long = "history", value_name = "DB", num_args = 0..=1, require_equals = true, default_missing_value = "", help_heading = "History")]
    pub history: Option<String>,

    /// A label kept with the run in the history (repeatable), e.g. --label env=staging; in a
    /// git repository, 'commit' and 'branch' are added unless given.
    #[arg(long = "label", value_name = "KEY=VALUE", help_heading = "History")]
    pub labels: Vec<String>,
}

/// Options of `belier history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// What to do with the history.
    #[command(subcommand)]
    pub command: HistoryCommand,
    /// The history database: an SQLite file or a postgres:// URL [default: $BELIER_HISTORY,
    /// else $XDG_DATA_HOME/belier/history.db, else ~/.local/share/belier/history.db]
    #[arg(long = "db", value_name = "DB", global = true)]
    pub db: Option<String>,
}

/// Subcommands of `belier history`.
#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// List the runs kept, oldest first: id, name, start, requests, errors, p99, labels.
    List(ListArgs),
    /// Show one run as kept: its figures, rows, thresholds and labels.
    Show(ShowArgs),
    /// Keep finished runs from their results files (files of one run name are its shards).
    Import(HistoryImportArgs),
    /// Print every run kept (or those of --name) as JSON Lines, one run a line.
    Export(ExportArgs),
    /// Judge the latest run of NAME against earlier runs; exit 3 when a --fail-if condition
    /// holds and its change is significant.
    Check(HistoryCheckArgs),
    /// Set or show the baseline run of a name (what 'check --against baseline' compares to).
    Baseline(BaselineArgs),
    /// Follow one metric of NAME's runs, run after run: text (a sparkline and a line per run),
    /// JSON, or a self-contained HTML chart whose points link to their runs.
    Trend(TrendArgs),
}

/// Options of `belier history trend`.
#[derive(Debug, Args)]
pub struct TrendArgs {
    /// The runs' name.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The metric: rate, throughput, p50, p90, p99, p99.9, max, errors (latencies in ms, rates
    /// per second, errors in % of requests), or capacity (a capacity search's answer).
    #[arg(long = "metric", value_name = "METRIC", default_value = "p99")]
    pub metric: String,
    /// Take the metric from this step, target or scenario (as 'history show' names it) rather
    /// than from the whole run.
    #[arg(long = "step", value_name = "STEP")]
    pub step: Option<String>,
    /// Only the last N runs.
    #[arg(long = "last", value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub last: u32,
    /// Output format.
    #[arg(long = "output", value_name = "FORMAT", value_enum, default_value_t = TrendFormat::Text)]
    pub output: TrendFormat,
}

/// Output formats of `belier history trend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TrendFormat {
    /// A sparkline and a line per run.
    Text,
    /// Every point as JSON.
    Json,
    /// A self-contained HTML page with the chart and the runs.
    Html,
}

/// Options of `belier history list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only the runs of this name.
    #[arg(long = "name", value_name = "NAME")]
    pub name: Option<String>,
}

/// Options of `belier history show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The run's id, as `list` shows it.
    #[arg(value_name = "RUN")]
    pub run: i64,
    /// Output format.
    #[arg(long = "output", value_name = "FORMAT", value_enum, default_value_t = ShowFormat::Text)]
    pub output: ShowFormat,
}

/// Output formats of `belier history show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    /// Human-readable text.
    Text,
    /// The run's record as JSON.
    Json,
}

/// Options of `belier history import`.
#[derive(Debug, Args)]
pub struct HistoryImportArgs {
    /// Results files.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// The name the runs are kept under [default: the plan's file name, else the request's
    /// method, host and path].
    #[arg(long = "name", value_name = "NAME")]
    pub name: Option<String>,
    /// A label kept with each run (repeatable).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
}

/// Options of `belier history export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Only the runs of this name.
    #[arg(long = "name", value_name = "NAME")]
    pub name: Option<String>,
}

/// Options of `belier history check`.
#[derive(Debug, Args)]
pub struct HistoryCheckArgs {
    /// The runs' name.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// What the latest run is compared to: 'baseline' (set with 'history baseline set'),
    /// 'last' (the run before it) or 'median-of-N' (the median of the N runs before it).
    #[arg(long = "against", value_name = "WHAT", default_value = "median-of-5")]
    pub against: String,
    /// Conditions that fail the check (exit 3), comma-separated, as 'belier compare' reads
    /// them: 'p99>+5%', 'rate<-10%', 'errors>1%'. A relative condition fails only when the
    /// change is also significant (see --significance).
    #[arg(long = "fail-if", value_name = "EXPR")]
    pub fail_if: String,
    /// Significance level: a change counts when the Mann–Whitney U test over the runs'
    /// per-interval values gives a p-value below it.
    #[arg(long = "significance", value_name = "ALPHA", default_value_t = 0.05)]
    pub significance: f64,
    /// Judge this run (an id) instead of the latest of NAME.
    #[arg(long = "run", value_name = "RUN")]
    pub run: Option<i64>,
}

/// Options of `belier history baseline`.
#[derive(Debug, Args)]
pub struct BaselineArgs {
    /// Set or show.
    #[command(subcommand)]
    pub command: BaselineCommand,
}

/// Subcommands of `belier history baseline`.
#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Make RUN the baseline of its name.
    Set {
        /// The run's id.
        #[arg(value_name = "RUN")]
        run: i64,
    },
    /// Show the baseline run of NAME.
    Show {
        /// The runs' name.
        #[arg(value_name = "NAME")]
        name: String,
    },
}
