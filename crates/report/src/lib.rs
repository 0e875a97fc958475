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
//! [`render_capacity_html`] draws a capacity search's steps the same way.
#![deny(missing_docs)]

mod changes;
pub mod compare;
mod csv;
mod custom;
mod format;
mod hdrlog;
mod html;
mod json;
mod junit;
mod markdown;
pub mod results;
mod scenarios;
mod shard;
mod steps;
mod summary;
mod text;
mod verdict;
mod wording;

#[cfg(test)]
mod seeded;

use std::time::Duration;

use belier_stats::{Recorder, Series};
use serde::{Deserialize, Serialize};

pub use changes::{Change, ChangeKind};
pub use csv::{render_csv, render_csv_stats};
pub use hdrlog::render_hdr_log;
pub use html::{render_capacity_html, render_html, HtmlRun};
pub use json::{render_json, SCHEMA, SCHEMA_VERSION};
pub use junit::render_junit;
pub use markdown::render_markdown;
pub use scenarios::ScenarioFigures;
pub use shard::ShardInfo;
pub use text::render_text;
pub use verdict::{
    lag_limit_us, verdict, Verdict, CPU_LIMIT, DEFAULT_TIMER_SLACK_US, LAG_LIMIT_US, RATE_TOLERANCE,
};

/// How the results were obtained: everything needed to read them or repeat the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// belier's version.
    pub belier_version: String,
    /// Target URL as given.
    pub url: String,
    /// Address the connections went to.
    pub address: String,
    /// HTTP method.
    pub method: String,
    /// Concurrent connections.
    pub connections: usize,
    /// Worker threads.
    pub threads: usize,
    /// Whether connections were reused.
    pub keepalive: bool,
    /// HTTP version spoken: `HTTP/1.1` or `HTTP/2` (results files from before HTTP/2 lack it).
    #[serde(default = "http1")]
    pub protocol: String,
    /// Request budget, if one was set.
    pub requests: Option<u64>,
    /// Duration bound in seconds, if one was set.
    pub duration_s: Option<f64>,
    /// Open loop: how long the schedule of arrivals lasted, seconds (the duration bound, the
    /// end of the stages, or where the budget's last arrival is due to end, whichever came
    /// first). Absent from results files written before it was recorded, and when none bound
    /// the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_s: Option<f64>,
    /// Per-request timeout in seconds.
    pub timeout_s: f64,
    /// Logical cores of the machine belier ran on (merged shards: the most of any shard's
    /// host; each shard's is in `shard_hosts`).
    pub host_cores: usize,
    /// Name of the machine belier ran on (absent from results files written before it was
    /// recorded, and where the system does not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_name: Option<String>,
    /// Merged shards: each shard's host, in the order its file was given; empty for a single
    /// run. Shards may share a machine: their cores are not added up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shard_hosts: Vec<ShardHost>,
    /// A distributed run (`--workers`, `--spawn`): each worker's clock as its coordinator
    /// measured it before the start, in shard order; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<WorkerClock>,
    /// Start of the run, RFC 3339 UTC.
    pub started_at: String,
    /// Load model: `closed` (fixed or ramping connections) or `open` (arrival rate).
    pub model: Model,
    /// Open loop: the rate the run starts at, requests per second.
    pub rate: Option<f64>,
    /// Stages of the load: rates (open loop) or connections (closed loop).
    pub stages: Vec<StageInfo>,
    /// Closed loop: connections were started evenly over this many seconds, then held.
    pub ramp_up_s: Option<f64>,
    /// Open loop: `even` or `poisson`.
    pub arrivals: Option<String>,
    /// Open loop, Poisson arrivals: the seed that repeats the schedule.
    pub seed: Option<u64>,
    /// Open loop: the connection cap.
    pub max_connections: Option<usize>,
    /// Open loop: the in-flight cap beyond which arrivals are dropped.
    pub max_in_flight: Option<u64>,
    /// Open loop: shortest time between two wake-ups of a worker, microseconds (absent from
    /// results files written before it could be set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_slack_us: Option<u64>,
    /// Number of belier processes (shards) whose results were merged; 1 for a single run.
    #[serde(default = "one")]
    pub shards: usize,
    /// A run split with `--shard I/N`: which of its shards these results hold. Each shard's
    /// file records its own share of the load (connections, rate, budgets), so merged files
    /// add up to the whole run's. Absent for a run that was not split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// The plan file the run followed, as given (runs of scripted users).
    #[serde(default)]
    pub plan: Option<String>,
    /// Scripted users: most virtual users at once (the closed loop's peak level, the open
    /// loop's cap on users). `None` for runs of a single request.
    #[serde(default)]
    pub virtual_users: Option<u64>,
    /// Scripted users in a closed loop: each user starts an iteration at most this often,
    /// seconds.
    #[serde(default)]
    pub pacing_s: Option<f64>,
    /// Names of the plan's request steps, by step number (the per-step table's rows).
    #[serde(default)]
    pub steps: Vec<String>,
    /// Names of the plan's checks, by check number.
    #[serde(default)]
    pub checks: Vec<String>,
    /// The custom metrics of the plan's scripts (counters and trends), by metric number.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<belier_stats::CustomMetric>,
    /// A targets run (`--targets`): the method and URL of each statistics row, by step
    /// number; the per-step table is then the per-target table. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetInfo>,
}

/// One row of a targets run's per-target table: a distinct method and URL.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// Method, e.g. `GET`.
    pub method: String,
    /// The URL, without credentials.
    pub url: String,
}

/// One worker of a distributed run, as its coordinator measured its clock (NTP-style, the
/// exchange with the shortest round trip kept).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerClock {
    /// The worker's address, as the coordinator reached it.
    pub address: String,
    /// Its shard, `I/N`.
    pub shard: String,
    /// Its clock minus the coordinator's, milliseconds.
    pub offset_ms: f64,
    /// The round trip of the exchange the offset came from, milliseconds.
    pub rtt_ms: f64,
    /// How far its start may lie from the agreed instant by this measurement: half the round
    /// trip, milliseconds.
    pub start_skew_ms: f64,
}

impl WorkerClock {
    /// `worker 1/2 at 127.0.0.1:4100: clock offset +0.012 ms, round trip 0.210 ms, start within 0.105 ms`.
    pub fn describe(&self) -> String {
        format!(
            "worker {} at {}: clock offset {:+.3} ms, round trip {:.3} ms, start within {:.3} ms",
            self.shard, self.address, self.offset_ms, self.rtt_ms, self.start_skew_ms
        )
    }
}

/// The machine one shard of a merged run ran on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardHost {
    /// Its name, when the shard's file recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its logical cores.
    pub cores: usize,
}

impl ShardHost {
    /// `name (N cores)`, or `a N-core host` when the name is unknown.
    pub fn describe(&self) -> String {
        match &self.name {
            Some(name) => format!("{name} ({} cores)", self.cores),
            None => format!("a {}-core host", self.cores),
        }
    }
}

fn http1() -> String {
    "HTTP/1.1".into()
}

fn one() -> usize {
    1
}

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

/// Load model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Model {
    /// Each connection sends its next request when the previous one finished.
    Closed,
    /// Requests are sent on a schedule, whatever the responses do.
    Open,
}

/// One stage of a load profile.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageInfo {
    /// Length of the ramp, seconds.
    pub duration_s: f64,
    /// Level reached at its end.
    pub target: f64,
}

/// What the generator used of its machine, to tell when it was the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostUsage {
    /// Most file descriptors belier had open at once (sampled every second).
    pub open_fds_peak: u64,
    /// The open-file limit in force.
    pub fd_limit: u64,
    /// Most TCP sockets in the ephemeral port range at once, host-wide; while the host holds
    /// fewer TCP sockets than half the range, an upper bound (the host's TCP socket count).
    pub ephemeral_ports_peak: Option<u64>,
    /// Size of the ephemeral port range.
    pub ephemeral_ports_total: Option<u64>,
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

/// One threshold of a plan and how the run fared against it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThresholdOutcome {
    /// The threshold as written, e.g. `p99 < 200ms` or `login: error_rate < 1%`.
    pub expression: String,
    /// Whether the run met it.
    pub passed: bool,
    /// The value the run reached, formatted with its unit, e.g. `182.4 ms`.
    pub actual: String,
    /// A threshold with `abort: true` that failed while the run went: when it stopped the
    /// run, and its value then. Absent otherwise (and from files written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_run: Option<ThresholdStop>,
}

/// When a threshold stopped the run it failed in, and its value then.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThresholdStop {
    /// From the start of the run to the judgement that stopped it, milliseconds.
    pub at_ms: u64,
    /// The value it had then, e.g. `p99 = 412.0 ms`.
    pub actual: String,
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

    use super::{Report, RunInfo};

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
        RunInfo {
            belier_version: "0.1.0".into(),
            url: "http://127.0.0.1:8080/".into(),
            address: "127.0.0.1:8080".into(),
            method: "GET".into(),
            connections: 10,
            threads: 2,
            keepalive: true,
            protocol: "HTTP/1.1".into(),
            requests: Some(1000),
            duration_s: None,
            schedule_s: None,
            timeout_s: 30.0,
            host_cores: 2,
            host_name: None,
            shard_hosts: Vec::new(),
            workers: Vec::new(),
            started_at: "2026-11-22T10:00:00Z".into(),
            model: super::Model::Closed,
            rate: None,
            stages: vec![],
            ramp_up_s: None,
            arrivals: None,
            seed: None,
            max_connections: None,
            max_in_flight: None,
            timer_slack_us: None,
            shards: 1,
            shard: None,
            plan: None,
            virtual_users: None,
            pacing_s: None,
            steps: vec![],
            checks: vec![],
            metrics: vec![],
            targets: vec![],
        }
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
                    intended: t,
                    dispatched: t,
                    ready: None,
                    connected: None,
                    handshaken: None,
                    sent: t,
                    first_byte: None,
                    done: t + Duration::from_micros(100 + n * 7),
                    outcome,
                    bytes_in: 100,
                    bytes_out: 50,
                });
                if let Outcome::Error(kind) = outcome {
                    r.note_error_example(kind, || "Connection reset by peer (os error 104)".into());
                }
            }
            r.record_connection();
            c.add(0, interval, &r, Gauges::default());
        }
        c.finish_worker(0, Duration::from_millis(1_500));
        c.finish()
    }
}
