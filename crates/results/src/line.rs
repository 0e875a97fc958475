//! The lines of a results file as they are written and read: the header, one line per record,
//! a line per change, the end line; and the layout's format name and versions.

use std::time::Duration;

use belier_stats::Gauges;
use serde::{Deserialize, Serialize};

use crate::change::Change;
use crate::info::{HostUsage, RunInfo, TargetInfo, ThresholdOutcome};
use crate::scenarios::ScenarioFigures;
use crate::stored::StoredRecorder;

/// Value of the header's `format` field.
pub const FORMAT: &str = "belier-results";
/// Version of the file layout this build writes. Version 2 added each record's `offset_s` and
/// `width_s` (records may span several intervals); version 1 files still read.
pub const VERSION: u32 = 2;
/// Oldest layout version this build reads.
///
/// Change lines came after version 2 was defined. They are a line of their own that a run
/// without changes never writes, so the version stays 2: every file such a run writes is
/// exactly what it was, and files without change lines read as runs that were not steered.
pub const OLDEST_VERSION: u32 = 1;

/// The first line of a results file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// Layout version, [`VERSION`].
    pub version: u32,
    /// Run name: files with the same name are shards of one run and merge.
    pub name: String,
    /// Interval length, seconds.
    pub interval_s: f64,
    /// How the results were obtained.
    pub run: RunInfo,
}

/// The last line of a complete results file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct End {
    /// Length of the run, seconds.
    pub elapsed_s: f64,
    /// The run was stopped early by the user.
    pub interrupted: bool,
    /// Warnings the report showed.
    pub warnings: Vec<String>,
    /// What belier used of its machine.
    pub host: Option<HostUsage>,
    /// A plan's thresholds as judged at the end of the run, in the plan's order. Came after
    /// version 2 was defined: absent from older files and from runs without thresholds, which
    /// read as none (the version stays 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdOutcome>,
    /// The per-target rows of a run whose targets were read as it went (`--targets -`), and
    /// their statistics rows' names: known only at its end, so the header's are empty and a
    /// report takes these. Absent otherwise, and from older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetInfo>,
    /// See [`End::targets`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<String>,
    /// A plan whose scenarios had loads of their own: each executor's figures. Came after
    /// version 2 was defined: absent from older files and runs of one load (the version
    /// stays 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<ScenarioFigures>,
    /// What each executor of `scenarios` recorded, in their order: what merges shards' (or
    /// workers') per-scenario figures exactly. Absent where `scenarios` is, and from files
    /// written before it was (the version stays 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenario_totals: Vec<StoredRecorder>,
}

// One line is read or written at a time and never stored in bulk, so the header's size
// (the largest variant, one per file) costs nothing worth an indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Line {
    Header(Header),
    Interval(IntervalLine),
    Change(Change),
    End(End),
}

/// One record: what was recorded over one interval or, in a coarsened stretch of a long run,
/// over several (see [`Coarsening`]).
#[derive(Serialize, Deserialize)]
pub(crate) struct IntervalLine {
    /// First interval the record covers.
    pub(crate) index: u64,
    /// Start of the record from the start of the run, seconds: `index` × the interval.
    /// Absent in version 1 files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) offset_s: Option<f64>,
    /// Length of the record, seconds: a whole number of intervals. Absent in version 1
    /// files, whose records are all one interval long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) width_s: Option<f64>,
    pub(crate) in_flight: u64,
    pub(crate) cpu: f64,
    #[serde(default)]
    pub(crate) connections_peak: u64,
    /// Held connections open at the record's end (`--hold`); absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) held: u64,
    /// What was recorded: counters and histograms, inline in the record's object.
    #[serde(flatten)]
    pub(crate) stored: StoredRecorder,
}

impl IntervalLine {
    /// A record of `recorder`, as stored, over its place in the run.
    pub(crate) fn new(
        place: [u64; 2],
        interval: Duration,
        gauges: Gauges,
        stored: StoredRecorder,
    ) -> Self {
        let [start, width] = place;
        IntervalLine {
            index: start,
            offset_s: Some(interval.as_secs_f64() * start as f64),
            width_s: Some(interval.as_secs_f64() * width as f64),
            in_flight: gauges.in_flight,
            cpu: gauges.cpu,
            connections_peak: gauges.connections_peak,
            held: gauges.held,
            stored,
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
