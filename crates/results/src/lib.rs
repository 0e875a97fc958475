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
//! The crate is split by role: the record model ([`RunInfo`], [`Header`], [`End`], [`Change`],
//! [`StoredRecorder`]), [`ResultsWriter`] writes a file, [`Reader`] reads one record at a time,
//! and [`read_run`] merges the shards of a run into its totals and series. Rendering them is
//! belier-report's job.

#![deny(missing_docs)]

mod change;
mod coarsening;
mod histogram;
mod info;
mod line;
mod reader;
mod run;
mod scenarios;
mod shard;
mod stored;
mod writer;

pub use change::{Change, ChangeKind};
pub use coarsening::{Coarsening, BUDGET_BYTES_PER_HOUR, FULL_RESOLUTION};
pub use info::{
    HostUsage, Model, RunInfo, ShardHost, StageInfo, TargetInfo, ThresholdOutcome, ThresholdStop,
    WorkerClock,
};
pub use line::{End, Header, FORMAT, OLDEST_VERSION, VERSION};
pub use reader::{Reader, Record, ResultsError, MOST_LINE_BYTES};
pub use run::{merge_info, read_run, LoggedInterval, Run};
pub use scenarios::ScenarioFigures;
pub use shard::ShardInfo;
pub use stored::StoredRecorder;
pub use writer::ResultsWriter;

#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;

#[cfg(test)]
mod tests;
