//! Results files: everything a run recorded, interval by interval, written as the run goes and
//! read back later to report, merge, compare or plot.
//!
//! The file is JSON Lines. The first line is the header (`{"header": …}`: format, version,
//! run name, interval, and the run information); then one `{"interval": …}` line per record,
//! flushed as soon as the record is complete, so a process killed with SIGKILL loses at most
//! the record in progress; last, an `{"end": …}` line (which keeps a plan's threshold outcomes). A run steered while it ran (its level
//! set, paused, resumed) has one `{"change": …}` line per change among the records, written and
//! flushed as it is made: when (`at_s`), what (`rate`, `connections`, `users`, `pause`,
//! `resume`), the level from then on and the level before (`level`, `from`). Each record carries its first interval
//! (`index`), its start and length (`offset_s`, `width_s`), its counters and its latency,
//! uncorrected-latency and lag histograms in HdrHistogram's V2 compressed encoding, base64
//! (the form HdrHistogram interval logs use), so every value survives: merging files gives
//! exactly the percentiles one recorder would have given.
//!
//! A record covers one interval, except in long costly runs: past the first minute, when a
//! record costs more bytes than [`BUDGET_BYTES_PER_HOUR`] allows for its span, records
//! double in width, on a grid aligned with the start of the run ([`Coarsening`] holds the
//! rule). Totals and whole-run percentiles stay exact; only the series gets coarser.
//!
//! The module is split by role: [`ResultsWriter`] writes a file, [`Reader`] reads one record
//! at a time, and [`read_run`] merges the shards of a run into its totals and series.

use std::io;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use belier_stats::{Counters, Gauges, Metric, Recorder};
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::{Change, HostUsage, RunInfo, TargetInfo, ThresholdOutcome};

mod coarsening;
mod histogram;
mod reader;
mod run;
mod stored;
mod writer;
pub use coarsening::{Coarsening, BUDGET_BYTES_PER_HOUR, FULL_RESOLUTION};
pub use reader::{Reader, Record, MOST_LINE_BYTES};
pub use run::{merge_info, read_run, LoggedInterval, Run};
pub use stored::StoredRecorder;
pub use writer::ResultsWriter;

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
    pub scenarios: Vec<crate::ScenarioFigures>,
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
enum Line {
    Header(Header),
    Interval(IntervalLine),
    Change(Change),
    End(End),
}

/// One record: what was recorded over one interval or, in a coarsened stretch of a long run,
/// over several (see [`Coarsening`]).
#[derive(Serialize, Deserialize)]
struct IntervalLine {
    /// First interval the record covers.
    index: u64,
    /// Start of the record from the start of the run, seconds: `index` × the interval.
    /// Absent in version 1 files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    offset_s: Option<f64>,
    /// Length of the record, seconds: a whole number of intervals. Absent in version 1
    /// files, whose records are all one interval long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    width_s: Option<f64>,
    in_flight: u64,
    cpu: f64,
    #[serde(default)]
    connections_peak: u64,
    // What follows is a `StoredRecorder`'s, field for field. Not `#[serde(flatten)]`: a
    // flattened map reads its integer keys (the status codes) as text and fails.
    counters: Counters,
    latency: String,
    uncorrected: String,
    lag: String,
    /// Connection and response phases (connect, tls, ttfb, transfer), when not empty.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    phases: std::collections::BTreeMap<String, String>,
    /// Scripted users: each step's latency histogram, by step number (the steps' counters,
    /// the checks and the iterations are in `counters`). Absent for single-request runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    steps_latency: Vec<String>,
    /// Scripted users: each custom metric's histogram of values (a trend's; a counter's is
    /// empty), by metric number (their counts are in `counters`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    metrics_values: Vec<String>,
}

/// Histograms written under `phases`, only when they hold values. (belier's own open-loop
/// lateness came after version 2 was defined: it is an optional entry of this map, so files
/// without it still read, as a run that did not record it.)
const PHASES: [Metric; 5] = [
    Metric::Connect,
    Metric::Tls,
    Metric::Ttfb,
    Metric::Transfer,
    Metric::Dispatch,
];

impl IntervalLine {
    /// A record of `recorder`, as stored, over its place in the run.
    fn new(place: [u64; 2], interval: Duration, gauges: Gauges, stored: StoredRecorder) -> Self {
        let [start, width] = place;
        IntervalLine {
            index: start,
            offset_s: Some(interval.as_secs_f64() * start as f64),
            width_s: Some(interval.as_secs_f64() * width as f64),
            in_flight: gauges.in_flight,
            cpu: gauges.cpu,
            connections_peak: gauges.connections_peak,
            counters: stored.counters,
            latency: stored.latency,
            uncorrected: stored.uncorrected,
            lag: stored.lag,
            phases: stored.phases,
            steps_latency: stored.steps_latency,
            metrics_values: stored.metrics_values,
        }
    }

    /// The record's recorder, as stored, taken out of the record.
    fn take_stored(&mut self) -> StoredRecorder {
        StoredRecorder {
            counters: std::mem::take(&mut self.counters),
            latency: std::mem::take(&mut self.latency),
            uncorrected: std::mem::take(&mut self.uncorrected),
            lag: std::mem::take(&mut self.lag),
            phases: std::mem::take(&mut self.phases),
            steps_latency: std::mem::take(&mut self.steps_latency),
            metrics_values: std::mem::take(&mut self.metrics_values),
        }
    }
}

/// Encodes histograms (V2 compressed, base64), reusing its buffers.
#[derive(Default)]
struct Encoder {
    serializer: V2DeflateSerializer,
    buf: Vec<u8>,
}

impl Encoder {
    /// Every step's latency histogram, by step number, encoded like the others.
    fn encode_steps(&mut self, r: &Recorder) -> io::Result<Vec<String>> {
        r.steps()
            .iter()
            .map(|row| self.encode(row.latency_us()))
            .collect()
    }

    /// Every custom metric's histogram of values, by metric number.
    fn encode_metrics(&mut self, r: &Recorder) -> io::Result<Vec<String>> {
        r.metrics()
            .iter()
            .map(|row| self.encode(row.values_us()))
            .collect()
    }

    fn encode(&mut self, h: &Histogram<u64>) -> io::Result<String> {
        self.buf.clear();
        self.serializer
            .serialize(h, &mut self.buf)
            .map_err(|e| io::Error::other(format!("cannot encode a histogram: {e:?}")))?;
        Ok(BASE64.encode(&self.buf))
    }
}

/// Gauges of consecutive intervals of one writer as one record: the peaks, as the live
/// series keeps them when it merges points.
fn over_time(a: Gauges, b: Gauges) -> Gauges {
    Gauges {
        in_flight: a.in_flight.max(b.in_flight),
        cpu: a.cpu.max(b.cpu),
        connections_peak: a.connections_peak.max(b.connections_peak),
    }
}

/// `n` intervals, exactly (no floating point, so shards agree on every boundary).
fn intervals_to_time(interval: Duration, n: u64) -> Duration {
    let nanos = interval.as_nanos().saturating_mul(u128::from(n));
    let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX);
    Duration::new(secs, (nanos % 1_000_000_000) as u32)
}

/// Why a results file cannot be read; the message names the source and line.
#[derive(Debug)]
pub struct ResultsError(pub String);

impl std::fmt::Display for ResultsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ResultsError {}

#[cfg(test)]
mod tests;
