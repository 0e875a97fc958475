//! A run's settings with every value decided: the engine's configuration, where the report
//! and results go, and a targets run's users. Made only through [`super::Draft::finish`].

use std::path::PathBuf;
use std::sync::Arc;

use belier_engine::Config;
use belier_results::TargetInfo;
use belier_scenario::targets::TargetUsers;

use crate::args::Format;

/// A load test, ready to run: every value decided (see [`Draft::finish`]).
#[derive(Debug)]
pub struct Settings {
    /// What the engine runs.
    pub engine: Config,
    /// The URL as the user gave it.
    pub url: String,
    /// Where the report and the results go.
    pub output: Output,
    /// Raw per-request CSV file.
    pub raw: Option<PathBuf>,
    /// The plan file the run follows (`belier run PLAN`), as given.
    pub plan: Option<PathBuf>,
    /// The soft open-file limit in force, which the connections fit.
    pub fd_limit: u64,
    /// A targets run's targets (`--targets`).
    pub targets: Option<TargetsRun>,
    /// Why the run speaks HTTP/2 when `--http3=auto` asked for HTTP/3 (see
    /// [`crate::load::http3_auto`]): among the report's warnings.
    pub protocol_note: Option<String>,
}

/// Where a run's report and results go, validated.
#[derive(Debug)]
pub struct Output {
    /// Report format.
    pub format: Format,
    /// Report file, if not standard output.
    pub out: Option<PathBuf>,
    /// Results file, `-` for standard output.
    pub save: Option<PathBuf>,
    /// Run name for the results file.
    pub name: String,
    /// Where the run is kept at its end (`--history`), if it is.
    pub keep: Option<crate::history::Keep>,
    /// HTML report file.
    pub html: Option<PathBuf>,
    /// JUnit XML report file.
    pub junit: Option<PathBuf>,
    /// Live dashboard instead of the progress line.
    pub tui: bool,
    /// The Prometheus exporter, if asked for.
    pub metrics: Option<crate::metrics::Listen>,
    /// Where the metrics are sent (`--metrics-out`).
    pub metrics_out: Vec<belier_outputs::Spec>,
    /// Where the traced requests' spans are sent (`--traces-out`).
    pub traces_out: Option<belier_outputs::traces::TracesSpec>,
    /// The web console, if asked for (`--web`), or the one of `belier web` the run reports to.
    pub web: Option<crate::web::Web>,
}

/// What a targets run adds to a flag run's settings.
pub struct TargetsRun {
    /// The users the engine drives.
    pub users: Arc<TargetUsers>,
}

impl std::fmt::Debug for TargetsRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.users.fmt(f)
    }
}

impl TargetsRun {
    /// The per-target rows so far, and the names of their statistics rows, `METHOD URL`.
    pub fn rows_and_names(&self) -> (Vec<TargetInfo>, Vec<String>) {
        let rows = self.rows();
        let names = rows
            .iter()
            // The row of a stream's targets past its cap has no method.
            .map(|t| format!("{} {}", t.method, t.url).trim_start().to_string())
            .collect();
        (rows, names)
    }

    /// The per-target rows so far (a stream's grow while it runs).
    pub fn rows(&self) -> Vec<TargetInfo> {
        self.users
            .rows()
            .into_iter()
            .map(|(method, url)| TargetInfo { method, url })
            .collect()
    }
}
