//! belier's reports.
//!
//! A [`Report`] is built from recorded results only (the merged [`Recorder`], the [`Series`]
//! and the [`RunInfo`] saying how they were obtained) and rendered as text, Markdown, JSON,
//! JUnit XML or HTML. Its figures (rates, shares, latency summaries, the verdict, the step
//! tables) are worked out once into a summary that every format renders, so they read the same
//! in each.
//! The JSON shape is described by `schema/report.schema.json`, which tests validate output
//! against.
//! The HTML page ([`render_html`]) compares one or more runs and needs no network to open;
//! [`render_capacity_html`] draws a capacity search's steps the same way, and
//! [`render_capacity_text`] lists them as text.
#![deny(missing_docs)]

mod capacity;
mod changes;
pub mod compare;
mod csv;
mod custom;
mod exemplars;
mod format;
pub mod gate;
mod hdrlog;
mod held;
mod html;
mod json;
mod junit;
mod markdown;
mod messages;
mod open_loop;
mod quic;
mod routes;
mod scenarios;
mod server_timing;
mod steps;
mod summary;
mod text;
mod trend;
mod verdict;
mod wording;

#[cfg(test)]
mod seeded;

use std::time::Duration;

use belier_results::{
    Change, ChangeKind, HostUsage, Model, RunInfo, ScenarioFigures, StageInfo, ThresholdOutcome,
};
use belier_stats::{Recorder, Series};

pub use capacity::render_capacity_text;
pub use csv::{render_csv, render_csv_stats};
pub use hdrlog::render_hdr_log;
pub use html::render_trend_html;
pub use html::{render_capacity_html, render_html, HtmlRun};
pub use json::{render_json, SCHEMA, SCHEMA_VERSION};
pub use junit::render_junit;
pub use markdown::render_markdown;
pub use text::render_text;
pub use trend::{render_trend_json, render_trend_text, sparkline, Trend, TrendPoint};
pub use verdict::{
    lag_limit_us, verdict, Verdict, CPU_LIMIT, DEFAULT_TIMER_SLACK_US, LAG_LIMIT_US, RATE_TOLERANCE,
};

/// The mean over `[from, from + span)` seconds of a rate that starts at `start` and moves
/// linearly to each stage's target over its duration, then holds.
fn mean_rate(start: f64, stages: &[StageInfo], from: f64, span: f64) -> f64 {
    // Arrivals due by `t`: the integral of the rate from 0 to `t`.
    let cumulative = |t: f64| {
        let (mut level, mut at, mut sum) = (start, 0.0, 0.0);
        for stage in stages {
            // A results file may say anything: a stage of negative or NaN length has none
            // (clamping to a negative bound panics).
            let length = stage.duration_s.max(0.0);
            let take = (t - at).clamp(0.0, length);
            if length > 0.0 {
                let reached = level + (stage.target - level) * take / length;
                sum += (level + reached) / 2.0 * take;
            }
            if take < length {
                return sum;
            }
            at += length;
            level = stage.target;
        }
        sum + level * (t - at).max(0.0)
    };
    (cumulative(from + span) - cumulative(from)) / span
}

/// Everything a report shows.
#[derive(Debug)]
pub struct Report<'a> {
    /// How the results were obtained.
    pub info: &'a RunInfo,
    /// Everything recorded, merged.
    pub totals: &'a Recorder,
    /// Per-interval points.
    pub series: &'a Series,
    /// Wall-clock length of the run.
    pub elapsed: Duration,
    /// The run was stopped early by the user.
    pub interrupted: bool,
    /// Things the reader must know to trust the numbers (e.g. a worker crashed).
    pub warnings: Vec<String>,
    /// What belier used of its machine, when it was measured.
    pub host: Option<HostUsage>,
    /// The plan's thresholds and whether each held (filled by the caller that evaluated
    /// them; empty otherwise).
    pub thresholds: Vec<ThresholdOutcome>,
    /// Changes made to the run while it ran, in time order (empty when it was not steered).
    pub changes: Vec<Change>,
    /// A plan whose scenarios had loads of their own: each executor's figures, in the plan's
    /// order (empty for a run of one load).
    pub scenarios: Vec<ScenarioFigures>,
}

/// A report with the name of its run, for renderers that show several runs side by side.
#[derive(Clone, Copy, Debug)]
pub struct NamedReport<'a> {
    /// The run's name (e.g. `baseline`), as given by the user.
    pub name: &'a str,
    /// The run's results.
    pub report: &'a Report<'a>,
}

impl Report<'_> {
    /// Requests per second issued, whatever their outcome.
    pub fn attempted_rate(&self) -> f64 {
        per_second(self.totals.requests(), self.elapsed)
    }

    /// Successful responses (status below 400) per second.
    pub fn throughput(&self) -> f64 {
        per_second(self.totals.succeeded(), self.elapsed)
    }

    /// Share of requests that succeeded, 0..=1 (1 when nothing was sent).
    pub fn success_ratio(&self) -> f64 {
        ratio(self.totals.succeeded(), self.totals.requests()).unwrap_or(1.0)
    }

    /// Open loop: the target rate, the configured rate's mean over the span the report
    /// covers (its start rate and stages). Arrivals come whole, so their count over a span is
    /// not the rate times it: 1/s for 3.5 s schedules 4 of them (at 0, 1, 2 and 3 s), which
    /// is not a target of 1.14/s. Results without a configured rate: arrivals due per second
    /// of the schedule; nor do the configured rate and stages describe a run whose rate was
    /// changed while it ran (set, paused, resumed): its schedule followed the changes, and
    /// the arrivals it made due are its target.
    pub fn target_rate(&self) -> f64 {
        let span = self.schedule_span().as_secs_f64();
        let from = self
            .series
            .points()
            .first()
            .map_or(0.0, |p| p.offset.as_secs_f64());
        let steered = self.changes.iter().any(|c| {
            matches!(
                c.what,
                ChangeKind::Rate | ChangeKind::Pause | ChangeKind::Resume
            )
        });
        match self.info.rate {
            Some(start) if span > 0.0 && !steered => {
                mean_rate(start, &self.info.stages, from, span)
            }
            _ => per_second(self.totals.scheduled(), self.schedule_span()),
        }
    }

    /// Open loop: arrivals sent per second of the schedule, to set against
    /// [`Report::target_rate`] (see [`Report::sent`]).
    pub fn sent_rate(&self) -> f64 {
        per_second(self.sent(), self.schedule_span())
    }

    /// Open loop: arrivals that went out, the same unit as the scheduled ones: arrivals due
    /// that were not dropped, requests or, with scripted users, the iterations a user took up
    /// (an arrival is an iteration, and an iteration makes any number of requests). Counted
    /// when they go out, not when they end, so that a window of a run whose server queues
    /// (a capacity step's judged window, a re-report with --from) does not read the answers
    /// still owed as arrivals never sent. Requests queued behind busy connections may leave
    /// after the schedule ended; they count as sent, late (their lag says how late).
    pub fn sent(&self) -> u64 {
        self.totals
            .scheduled()
            .saturating_sub(self.totals.dropped())
    }

    /// Whether scripted users ran (a plan), rather than one request over and over.
    pub fn has_users(&self) -> bool {
        self.info.virtual_users.is_some()
    }

    /// Open loop: the time the schedule of arrivals covered. The run lasts longer by the time
    /// spent on the last answers (up to the grace period), which figured into the rates
    /// before: a run still sending queued arrivals for a second after its 1 s schedule read
    /// as half its target rate. A run stopped early covered only its elapsed time.
    pub fn schedule_span(&self) -> Duration {
        let schedule = self
            .info
            .schedule_s
            .or(self.info.duration_s)
            .filter(|s| s.is_finite() && *s > 0.0)
            // Past what a Duration holds (a results file may say anything), the run's own
            // elapsed time is the shorter one.
            .map(|s| Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX));
        schedule.map_or(self.elapsed, |s| s.min(self.elapsed))
    }

    /// Most connections open at once in any interval (an upper bound: workers' peaks add up).
    pub fn connections_peak(&self) -> u64 {
        self.series
            .points()
            .iter()
            .map(|p| p.connections_peak)
            .max()
            .unwrap_or(0)
    }

    /// Whether the load was an arrival rate.
    pub fn is_open_loop(&self) -> bool {
        self.info.model == Model::Open
    }
}

fn per_second(count: u64, elapsed: Duration) -> f64 {
    if elapsed.is_zero() {
        0.0
    } else {
        count as f64 / elapsed.as_secs_f64()
    }
}

fn ratio(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

#[cfg(test)]
pub(crate) mod golden {
    /// Compares `got` with `tests/golden/NAME`; `BELIER_BLESS=1` rewrites the file instead.
    pub fn check(name: &str, got: &str) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(name);
        if std::env::var_os("BELIER_BLESS").is_some() {
            std::fs::write(&path, got).unwrap();
            return;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            got, want,
            "golden {name} differs (BELIER_BLESS=1 rewrites it)\n--- got ---\n{got}"
        );
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod fixtures {
    use std::time::{Duration, Instant};

    use belier_stats::{Collector, ErrorKind, Gauges, Outcome, Recorder, Sample, Series};

    use belier_results::RunInfo;

    use super::Report;

    /// A report on `totals` and `series` over 1.5 s, complete, without warnings, thresholds
    /// or host readings; tests override fields with `Report { .., ..report(..) }`.
    pub fn report<'a>(info: &'a RunInfo, totals: &'a Recorder, series: &'a Series) -> Report<'a> {
        Report {
            scenarios: Vec::new(),
            info,
            totals,
            series,
            elapsed: Duration::from_millis(1_500),
            interrupted: false,
            warnings: vec![],
            thresholds: vec![],
            changes: vec![],
            host: None,
        }
    }

    pub fn info() -> RunInfo {
        belier_results::fixtures::info()
    }

    /// Deterministic results: 1000 requests over two intervals with a few of every kind.
    pub fn results() -> (Recorder, Series) {
        let mut c = Collector::new(1, Duration::from_secs(1));
        let t = Instant::now();
        for interval in 0..2u64 {
            let mut r = Recorder::new();
            for i in 0..500u64 {
                let n = interval * 500 + i;
                let outcome = match n % 100 {
                    0 => Outcome::Error(ErrorKind::ConnectionReset),
                    1 => Outcome::Response { status: 503 },
                    _ => Outcome::Response { status: 200 },
                };
                r.record(&Sample {
                    bytes_in: 100,
                    bytes_out: 50,
                    ..Sample::simulated(t, 0, 100 + n * 7, outcome)
                });
                if let Outcome::Error(kind) = outcome {
                    r.note_error_example(kind, || "Connection reset by peer (os error 104)".into());
                }
            }
            r.record_connection();
            c.add(0, interval, &r, Gauges::default());
        }
        c.finish_worker(0, Duration::from_millis(1_500));
        let (mut totals, series) = c.finish();
        crate::seeded::fixed_dates(&mut totals);
        (totals, series)
    }
}
