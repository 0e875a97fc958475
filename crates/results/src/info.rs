//! How a run was made and what it was judged on: the run information a results file's header
//! keeps (and every report shows), the generator's use of its host, the plan's threshold
//! outcomes.

use serde::{Deserialize, Serialize};

use crate::shard::ShardInfo;

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

impl HostUsage {
    /// Several generators' use of their machines as one (shards merged, a coordinator's
    /// workers): the highest peaks against the tightest limits.
    pub fn merged(a: Option<HostUsage>, b: Option<HostUsage>) -> Option<HostUsage> {
        match (a, b) {
            (Some(p), Some(q)) => Some(HostUsage {
                open_fds_peak: p.open_fds_peak.max(q.open_fds_peak),
                fd_limit: p.fd_limit.min(q.fd_limit),
                ephemeral_ports_peak: p.ephemeral_ports_peak.max(q.ephemeral_ports_peak),
                ephemeral_ports_total: p.ephemeral_ports_total.min(q.ephemeral_ports_total),
            }),
            (p, q) => p.or(q),
        }
    }
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
