//! The server's own account of its time, read from each complete response (`--server-timing`
//! reads the W3C `Server-Timing` header, `--server-time-header NAME` a single-figure header such
//! as `X-Response-Time: 12.3ms`): a histogram of each metric's `dur` by metric name, and per
//! response the server's time and the time outside it (belier's latency minus the server's time:
//! the network, queues in front of the server, belier's own wait for a connection).
//!
//! **The server's time** of one response is the duration of its metric named `total` when it
//! sends one, else the largest duration among its metrics. Not their sum: metrics may nest (an
//! `app` that contains its `db`), and the W3C header says nothing of how they relate, so the
//! largest one is the most any of them claims and the least that is certainly the server's.
//! A single-figure header's figure is the server's time.
//!
//! **Bounded**: a run keeps at most [`MOST_SERVER_METRICS`] metric names (the first seen, per
//! worker and when merging); figures of further names are counted as dropped, as are names
//! that are not UTF-8 or longer than [`LONGEST_METRIC_NAME`] bytes. A response whose header
//! was there but gave no readable duration is counted as malformed; one without the header as
//! missing. Memory is the histograms of those names, whatever the server sends.

use std::collections::BTreeMap;

use belier_vocabulary::server_timing::{for_each_metric, response_time_ms};
use serde::{Deserialize, Serialize};

use crate::restore::RestoreError;
use crate::row::{Row, RowCounts};

/// Most metric names one run keeps (each is a histogram of some 180 KiB).
pub const MOST_SERVER_METRICS: usize = 16;
/// Longest metric name kept, in bytes; a longer one's figures are counted as dropped.
pub const LONGEST_METRIC_NAME: usize = 64;
/// The metric whose duration, when a response sends it, is the server's time.
pub const TOTAL_METRIC: &str = "total";

/// Which response header carries the server's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimingHeader<'a> {
    /// `Server-Timing`: a list of metrics, each with its own `dur`.
    ServerTiming,
    /// A header of one figure (`X-Response-Time: 12.3ms`), named so (its one metric's name).
    Figure(&'a str),
}

/// A histogram of server-reported microseconds and how many figures it holds.
pub type FigureRow = Row<FigureCounts>;

/// How many figures a [`FigureRow`] holds, in a form that stores and restores exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FigureCounts {
    /// Figures recorded.
    pub figures: u64,
}

impl RowCounts for FigureCounts {
    const KIND: &'static str = "server timing";

    fn merge(&mut self, other: &FigureCounts) {
        self.figures += other.figures;
    }
}

/// What became of the complete responses of a run that read the server's time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimingCounts {
    /// Responses whose header gave the server's time (each has a figure in
    /// [`ServerTimes::server`] and [`ServerTimes::outside`]).
    pub timed: u64,
    /// Responses without the header.
    pub missing: u64,
    /// Responses whose header was there but gave no duration belier could read.
    pub malformed: u64,
    /// Metric figures left out: their name came after the run's [`MOST_SERVER_METRICS`]
    /// names, or was not UTF-8, or was longer than [`LONGEST_METRIC_NAME`] bytes.
    pub dropped: u64,
    /// Timed responses whose server's time was longer than belier's latency (the server's
    /// clock and belier's disagree; the time outside counts 0 for them).
    pub above_latency: u64,
}

impl TimingCounts {
    fn add(&mut self, other: &TimingCounts) {
        self.timed += other.timed;
        self.missing += other.missing;
        self.malformed += other.malformed;
        self.dropped += other.dropped;
        self.above_latency += other.above_latency;
    }

    /// Each count, for bounding stored ones.
    pub(crate) fn all(&self) -> [u64; 5] {
        [
            self.timed,
            self.missing,
            self.malformed,
            self.dropped,
            self.above_latency,
        ]
    }
}

/// The server's times of a run's responses, as their headers said them.
#[derive(Clone, Debug, Default)]
pub struct ServerTimes {
    /// What became of the responses.
    pub counts: TimingCounts,
    /// Each metric's durations (microseconds), by name.
    pub metrics: BTreeMap<String, FigureRow>,
    /// Each timed response's server's time (see the module's rule), microseconds.
    pub server: FigureRow,
    /// Each timed response's latency minus its server's time, microseconds.
    pub outside: FigureRow,
}

impl ServerTimes {
    /// Records one complete response: `value` is its header's value (several headers joined
    /// by commas), `None` when it had none; `latency_us` its latency from the intended start.
    pub(crate) fn record(
        &mut self,
        header: TimingHeader<'_>,
        value: Option<&[u8]>,
        latency_us: u64,
    ) {
        let Some(value) = value else {
            self.counts.missing += 1;
            return;
        };
        let server_ms = match header {
            TimingHeader::ServerTiming => self.record_metrics(value),
            TimingHeader::Figure(name) => {
                let figure = response_time_ms(value);
                if let Some(ms) = figure {
                    self.record_metric(name.as_bytes(), ms);
                }
                figure
            }
        };
        let Some(server_ms) = server_ms else {
            self.counts.malformed += 1;
            return;
        };
        let server_us = micros(server_ms);
        self.counts.timed += 1;
        self.counts.above_latency += u64::from(server_us > latency_us);
        self.server.record_figure_us(server_us);
        self.outside
            .record_figure_us(latency_us.saturating_sub(server_us));
    }

    /// Records each metric of a `Server-Timing` value; returns the server's time, if any
    /// metric had a duration.
    fn record_metrics(&mut self, value: &[u8]) -> Option<f64> {
        let mut total = None;
        let mut largest: Option<f64> = None;
        for_each_metric(value, |metric| {
            let Some(ms) = metric.duration_ms else { return };
            self.record_metric(metric.name, ms);
            if total.is_none() && metric.name.eq_ignore_ascii_case(TOTAL_METRIC.as_bytes()) {
                total = Some(ms);
            }
            largest = Some(largest.map_or(ms, |l| l.max(ms)));
        });
        total.or(largest)
    }

    /// Puts `ms` in the row of metric `name`, making the row if the run has room for it.
    fn record_metric(&mut self, name: &[u8], ms: f64) {
        let name = match std::str::from_utf8(name) {
            Ok(name) if name.len() <= LONGEST_METRIC_NAME => name,
            _ => {
                self.counts.dropped += 1;
                return;
            }
        };
        let room = self.metrics.len() < MOST_SERVER_METRICS;
        // Looked up by `&str` first: a name met before costs no allocation.
        let row = match self.metrics.get_mut(name) {
            Some(row) => row,
            None if room => self.metrics.entry(name.to_string()).or_default(),
            None => {
                self.counts.dropped += 1;
                return;
            }
        };
        row.record_figure_us(micros(ms));
    }

    /// Adds `other`'s figures, metric by metric; a metric this run has no room for is counted
    /// as dropped.
    pub(crate) fn add(&mut self, other: &ServerTimes) {
        self.counts.add(&other.counts);
        self.server += &other.server;
        self.outside += &other.outside;
        for (name, row) in &other.metrics {
            let room = self.metrics.len() < MOST_SERVER_METRICS;
            match self.metrics.get_mut(name) {
                Some(mine) => *mine += row,
                None if room => {
                    self.metrics.insert(name.clone(), row.clone());
                }
                None => self.counts.dropped += row.counts.figures,
            }
        }
    }

    /// Empties the rows, keeping them (and their histograms) for the next interval.
    pub(crate) fn reset(&mut self) {
        self.counts = TimingCounts::default();
        self.server.reset();
        self.outside.reset();
        self.metrics.values_mut().for_each(FigureRow::reset);
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.counts == TimingCounts::default()
            && self.metrics.values().all(|r| r.counts.figures == 0)
    }

    /// Checks stored metric names against the bounds a run keeps.
    pub(crate) fn check_names<'a>(
        names: impl ExactSizeIterator<Item = &'a String>,
    ) -> Result<(), RestoreError> {
        let count = names.len();
        if count > MOST_SERVER_METRICS {
            return Err(RestoreError(format!(
                "{count} server timing metrics, more than the {MOST_SERVER_METRICS} belier keeps"
            )));
        }
        for name in names {
            if name.is_empty() || name.len() > LONGEST_METRIC_NAME {
                return Err(RestoreError(format!(
                    "server timing metric name '{name}' is empty or longer than \
                     {LONGEST_METRIC_NAME} bytes"
                )));
            }
        }
        Ok(())
    }
}

/// The counts of a run's server times, as results files store them (the histograms are stored
/// apart, see [`crate::Recorder::add_server_timing_histogram`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredTiming {
    /// What became of the responses.
    pub counts: TimingCounts,
    /// Each metric's number of figures, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, u64>,
}

/// Which of a run's server time histograms a stored one is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimingHistogram<'a> {
    /// The server's time of each timed response.
    Server,
    /// The time outside the server.
    Outside,
    /// The metric of this name.
    Metric(&'a str),
}

impl ServerTimes {
    /// The counts, for storing.
    pub(crate) fn stored(&self) -> StoredTiming {
        StoredTiming {
            counts: self.counts,
            metrics: self
                .metrics
                .iter()
                .map(|(name, row)| (name.clone(), row.counts.figures))
                .collect(),
        }
    }

    /// Rows from stored counts, their histograms empty until added
    /// ([`ServerTimes::add_values`]).
    pub(crate) fn restored(stored: &StoredTiming) -> Result<ServerTimes, RestoreError> {
        ServerTimes::check_names(stored.metrics.keys())?;
        let figures = |figures| FigureRow::from_counts(FigureCounts { figures });
        Ok(ServerTimes {
            counts: stored.counts,
            metrics: stored
                .metrics
                .iter()
                .map(|(name, &n)| (name.clone(), figures(n)))
                .collect(),
            server: figures(stored.counts.timed),
            outside: figures(stored.counts.timed),
        })
    }

    /// Adds the values of the stored histogram `which` to its row.
    pub(crate) fn add_values(
        &mut self,
        which: TimingHistogram<'_>,
        h: &hdrhistogram::Histogram<u64>,
    ) -> Result<(), RestoreError> {
        let row = match which {
            TimingHistogram::Server => &mut self.server,
            TimingHistogram::Outside => &mut self.outside,
            TimingHistogram::Metric(name) => self.metrics.get_mut(name).ok_or_else(|| {
                RestoreError(format!(
                    "server timing metric '{name}' has a histogram but no count"
                ))
            })?,
        };
        row.add_values(h)
    }
}

impl Row<FigureCounts> {
    /// Puts one figure in the histogram and counts it.
    fn record_figure_us(&mut self, us: u64) {
        self.counts.figures += 1;
        self.record_value_us(us);
    }
}

/// Milliseconds as whole microseconds (the parser gives finite figures at or above zero).
fn micros(ms: f64) -> u64 {
    (ms * 1000.0).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(times: &ServerTimes) -> BTreeMap<&str, u64> {
        times
            .metrics
            .iter()
            .map(|(name, row)| (name.as_str(), row.counts.figures))
            .collect()
    }

    /// Whether the row's largest value is `us`, as closely as its histogram tells.
    fn same(row: &FigureRow, us: u64) -> bool {
        row.values_us().equivalent(row.values_us().max(), us)
    }

    #[test]
    fn the_servers_time_is_total_when_sent_else_the_largest_metric() {
        let cases: &[(&str, u64)] = &[
            ("app;dur=12", 12_000),
            ("db;dur=53, app;dur=47.2", 53_000),
            ("db;dur=53, total;dur=60, app;dur=47.2", 60_000),
            ("TOTAL;dur=5, app;dur=9", 5_000),
            ("cache;desc=hit, app;dur=0.25", 250),
        ];
        for (value, server_us) in cases {
            let mut times = ServerTimes::default();
            times.record(TimingHeader::ServerTiming, Some(value.as_bytes()), 100_000);
            assert!(same(&times.server, *server_us), "{value}");
            assert!(same(&times.outside, 100_000 - server_us), "{value}");
            assert_eq!(times.counts.timed, 1);
        }
    }

    #[test]
    fn missing_malformed_and_late_figures_are_counted_apart() {
        let mut times = ServerTimes::default();
        let st = TimingHeader::ServerTiming;
        times.record(st, None, 1_000);
        times.record(st, Some(b"app;dur=abc"), 1_000);
        times.record(st, Some(b"cache;desc=hit"), 1_000);
        times.record(st, Some(b"app;dur=3"), 1_000);
        let c = times.counts;
        assert_eq!(
            (c.timed, c.missing, c.malformed, c.above_latency),
            (1, 1, 2, 1)
        );
        // The server's time above the latency: outside counts 0.
        assert_eq!(times.outside.values_us().max(), 0);
        let figure = TimingHeader::Figure("x-response-time");
        times.record(figure, Some(b"5.2ms"), 10_000);
        times.record(figure, Some(b"soon"), 10_000);
        assert_eq!(times.counts.malformed, 3);
        assert_eq!(figures(&times), [("app", 1), ("x-response-time", 1)].into());
        assert!(same(&times.metrics["x-response-time"], 5_200));
    }

    #[test]
    fn names_are_bounded_and_merging_keeps_the_bound() {
        let mut times = ServerTimes::default();
        let many: Vec<String> = (0..20).map(|i| format!("m{i:02};dur=1")).collect();
        times.record(
            TimingHeader::ServerTiming,
            Some(many.join(",").as_bytes()),
            9_000,
        );
        let long = format!("{};dur=1", "n".repeat(LONGEST_METRIC_NAME + 1));
        times.record(TimingHeader::ServerTiming, Some(long.as_bytes()), 9_000);
        times.record(TimingHeader::ServerTiming, Some(b"\xff;dur=1"), 9_000);
        assert_eq!(times.metrics.len(), MOST_SERVER_METRICS);
        assert_eq!(times.counts.dropped, 4 + 1 + 1);

        let mut other = ServerTimes::default();
        other.record(
            TimingHeader::ServerTiming,
            Some(b"m00;dur=2, late;dur=3"),
            9_000,
        );
        let mut both = times.clone();
        both.add(&other);
        assert_eq!(both.metrics.len(), MOST_SERVER_METRICS);
        assert_eq!(both.metrics["m00"].counts.figures, 2);
        assert_eq!(both.counts.dropped, 6 + 1);
        assert_eq!(both.counts.timed, 4);
        both.reset();
        assert!(both.is_empty());
        assert_eq!(both.metrics.len(), MOST_SERVER_METRICS);
    }
}
