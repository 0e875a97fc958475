//! What the history keeps of one run, made from the run read back from its results files.

use std::collections::BTreeMap;

use belier_results::{Run, ThresholdOutcome};
use belier_stats::Series;
use serde::{Deserialize, Serialize};

/// One run as the history keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The name runs are grouped and compared by (`--name`, the plan's name, or the method,
    /// host and path of the URL).
    pub name: String,
    /// Start of the run, RFC 3339 UTC.
    pub started_at: String,
    /// belier's version that made the run.
    pub belier_version: String,
    /// Name of the machine the run was made on, when the system said.
    pub host: Option<String>,
    /// Labels given with the run (`--label key=value`, the git commit and branch).
    pub labels: BTreeMap<String, String>,
    /// The run's settings: the run information of its results file's header, as JSON.
    pub settings: serde_json::Value,
    /// Requests that finished (responses and errors).
    pub requests: u64,
    /// Responses with a status below 400.
    pub succeeded: u64,
    /// Requests that failed without a complete response.
    pub errors: u64,
    /// Time the run's records cover, seconds.
    pub elapsed_s: f64,
    /// Latency measured from when each request was meant to be sent.
    pub latency: Percentiles,
    /// Latency measured from when each request was actually sent.
    pub uncorrected: Percentiles,
    /// Per-step, per-target and per-scenario rows.
    pub rows: Vec<TableRow>,
    /// The per-interval series.
    pub intervals: Intervals,
    /// The plan's thresholds and how the run fared against each.
    pub thresholds: Vec<ThresholdOutcome>,
    /// A capacity search's answers, as its capacity document gives them; absent for other runs.
    pub capacity: Option<serde_json::Value>,
    /// The results file the run was read from, as given.
    pub results_path: Option<String>,
}

/// Latency percentiles of a histogram, microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Median.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p999_us: u64,
    /// Largest value.
    pub max_us: u64,
    /// Mean.
    pub mean_us: f64,
}

/// What a [`TableRow`] is a row of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowKind {
    /// A plan's request step.
    Step,
    /// A targets run's method and URL.
    Target,
    /// A plan's scenario (no latency of its own: its percentiles are zero).
    Scenario,
    /// A capacity search's step, named by its number, kind and level (its p90 and largest
    /// latency are not measured: zero).
    CapacityStep,
}

/// One row of a run's per-step, per-target or per-scenario table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableRow {
    /// What the row is a row of.
    pub kind: RowKind,
    /// The step's or scenario's name, or the target's method and URL.
    pub name: String,
    /// Requests the row counted.
    pub requests: u64,
    /// Requests of the row that failed.
    pub failures: u64,
    /// The row's latency.
    pub latency: Percentiles,
}

/// The per-interval series in columns: the values of interval `i` are at index `i` of each.
/// Columns of numbers cost a fraction of a list of objects in JSON.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Intervals {
    /// Start of each interval from the start of the run, seconds.
    pub offset_s: Vec<f64>,
    /// Length of each interval, seconds.
    pub width_s: Vec<f64>,
    /// Requests that finished in each interval.
    pub requests: Vec<u64>,
    /// Responses with a status below 400 in each interval.
    pub succeeded: Vec<u64>,
    /// Errors in each interval.
    pub errors: Vec<u64>,
    /// Median latency of each interval, microseconds.
    pub p50_us: Vec<u64>,
    /// 90th percentile latency of each interval, microseconds.
    pub p90_us: Vec<u64>,
    /// 99th percentile latency of each interval, microseconds.
    pub p99_us: Vec<u64>,
    /// Largest latency of each interval, microseconds.
    pub max_us: Vec<u64>,
}

impl Percentiles {
    /// The percentiles of `h`; all zeros for an empty histogram.
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            p50_us: h.value_at_quantile(0.50),
            p90_us: h.value_at_quantile(0.90),
            p99_us: h.value_at_quantile(0.99),
            p999_us: h.value_at_quantile(0.999),
            max_us: h.max(),
            mean_us: h.mean(),
        }
    }
}

impl Intervals {
    /// The series' points in columns.
    pub fn of(series: &Series) -> Intervals {
        let mut columns = Intervals::default();
        for p in series.points() {
            columns.offset_s.push(p.offset.as_secs_f64());
            columns.width_s.push(p.width.as_secs_f64());
            columns.requests.push(p.requests);
            columns.succeeded.push(p.succeeded);
            columns.errors.push(p.errors);
            columns.p50_us.push(p.p50_us);
            columns.p90_us.push(p.p90_us);
            columns.p99_us.push(p.p99_us);
            columns.max_us.push(p.max_us);
        }
        columns
    }

    /// Number of intervals.
    pub fn len(&self) -> usize {
        self.offset_s.len()
    }

    /// Whether the series has no interval.
    pub fn is_empty(&self) -> bool {
        self.offset_s.is_empty()
    }
}

impl RunRecord {
    /// The record of `run`, read back from its results files, stored under `name` with
    /// `labels`. The capacity answers and the results file's path are left for the caller to
    /// set.
    pub fn from_run(run: &Run, name: &str, labels: BTreeMap<String, String>) -> RunRecord {
        let info = &run.header.run;
        let totals = &run.totals;
        RunRecord {
            name: name.to_string(),
            started_at: info.started_at.clone(),
            belier_version: info.belier_version.clone(),
            host: info.host_name.clone(),
            labels,
            // RunInfo is plain data: serialising it cannot fail.
            settings: serde_json::to_value(info).unwrap_or(serde_json::Value::Null),
            requests: totals.requests(),
            succeeded: totals.succeeded(),
            errors: totals.errors(),
            elapsed_s: run.elapsed.as_secs_f64(),
            latency: Percentiles::of(totals.latency_us()),
            uncorrected: Percentiles::of(totals.uncorrected_us()),
            rows: rows(run),
            intervals: Intervals::of(&run.series),
            thresholds: run
                .end
                .as_ref()
                .map(|e| e.thresholds.clone())
                .unwrap_or_default(),
            capacity: None,
            results_path: None,
        }
    }
}

/// What a capacity search was, for [`RunRecord::from_capacity`]: besides its outcome, the
/// run facts a results file would hold.
pub struct CapacitySearch<'a> {
    /// The search's outcome, as `belier capacity --save` writes it.
    pub outcome: &'a belier_capacity::Outcome,
    /// Start of the search, RFC 3339 UTC.
    pub started_at: String,
    /// belier's version.
    pub belier_version: &'a str,
    /// The machine's name, when the system said.
    pub host: Option<String>,
}

impl RunRecord {
    /// The record of a capacity search: its answers (the capacity document), a row per step,
    /// the requests and errors of every step's judged window summed, and the latency of the
    /// step that set the answer (the last that passed at the answer's level), if one did. A
    /// search has no per-interval series.
    pub fn from_capacity(
        search: &CapacitySearch<'_>,
        name: &str,
        labels: BTreeMap<String, String>,
    ) -> RunRecord {
        let o = search.outcome;
        let us = |ms: Option<f64>| ms.map_or(0, |v| (v * 1000.0).round().max(0.0) as u64);
        let failed =
            |s: &belier_capacity::Step| (s.requests as f64 * s.failed_share()).round() as u64;
        let rows: Vec<TableRow> = o
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| TableRow {
                kind: RowKind::CapacityStep,
                name: format!(
                    "step {} {} {}",
                    i + 1,
                    belier_capacity::kind_name(s.kind),
                    o.dimension.level(s.target_rate)
                ),
                requests: s.requests,
                failures: failed(s),
                latency: Percentiles {
                    p50_us: us(s.p50_ms),
                    p99_us: us(s.p99_ms),
                    p999_us: us(s.p999_ms),
                    ..Percentiles::default()
                },
            })
            .collect();
        let answer = o.max_rate.and_then(|level| {
            o.steps
                .iter()
                .rposition(|s| s.pass == Some(true) && s.target_rate == level)
        });
        let requests = o.steps.iter().map(|s| s.requests).sum();
        let errors: u64 = o.steps.iter().map(failed).sum();
        RunRecord {
            name: name.to_string(),
            started_at: search.started_at.clone(),
            belier_version: search.belier_version.to_string(),
            host: search.host.clone(),
            labels,
            settings: serde_json::json!({
                "url": o.url,
                "dimension": o.dimension,
                "slos": o.slos,
            }),
            requests,
            succeeded: requests - errors,
            errors,
            elapsed_s: o.elapsed_s,
            latency: answer.map(|i| rows[i].latency).unwrap_or_default(),
            uncorrected: Percentiles::default(),
            rows,
            intervals: Intervals::default(),
            thresholds: Vec::new(),
            // A capacity document is plain data: serialising it cannot fail.
            capacity: serde_json::from_str(&o.to_json()).ok(),
            results_path: None,
        }
    }

    /// The capacity search's outcome in its document (`{"capacity": {…}, "schema_version"}`).
    fn search(&self) -> Option<&serde_json::Value> {
        self.capacity.as_ref()?.get("capacity")
    }

    /// Whether the run is a capacity search.
    pub fn is_capacity(&self) -> bool {
        self.capacity.is_some()
    }

    /// The unit of the capacity search's levels (`req/s`, `connections` …), when the run is
    /// one.
    pub fn capacity_unit(&self) -> Option<&'static str> {
        let dimension = self.search()?.get("dimension")?.clone();
        let dimension: belier_capacity::Dimension = serde_json::from_value(dimension).ok()?;
        Some(dimension.unit())
    }
}

/// The metrics a run's figures and per-interval values are given for ([`RunRecord::figure`],
/// [`RunRecord::interval_values`]): latencies in ms, rates in requests per second, errors as
/// the percentage of requests that did not succeed.
pub const METRICS: [&str; 7] = ["rate", "throughput", "p50", "p90", "p99", "max", "errors"];

impl RunRecord {
    /// The whole run's value of `metric` (one of [`METRICS`]).
    pub fn figure(&self, metric: &str) -> Option<f64> {
        let ms = |us: u64| us as f64 / 1000.0;
        let per_s = |n: u64| match self.elapsed_s > 0.0 {
            true => n as f64 / self.elapsed_s,
            false => 0.0,
        };
        Some(match metric {
            "rate" => per_s(self.requests),
            "throughput" => per_s(self.succeeded),
            "p50" => ms(self.latency.p50_us),
            "p90" => ms(self.latency.p90_us),
            "p99" => ms(self.latency.p99_us),
            "max" => ms(self.latency.max_us),
            "errors" => error_percent(self.requests, self.succeeded),
            _ => return None,
        })
    }

    /// The value of `metric` (one of [`METRICS`]) in each interval (see
    /// [`Intervals::values`]).
    pub fn interval_values(&self, metric: &str) -> Option<Vec<f64>> {
        self.intervals.values(metric)
    }
}

impl Intervals {
    /// The value of `metric` (one of [`METRICS`]) in each interval; latencies only of the
    /// intervals that had responses, rates only of intervals of some length.
    pub fn values(&self, metric: &str) -> Option<Vec<f64>> {
        let c = self;
        let per_s = |n: &[u64]| -> Vec<f64> {
            n.iter()
                .zip(&c.width_s)
                .filter(|(_, w)| **w > 0.0)
                .map(|(n, w)| *n as f64 / w)
                .collect()
        };
        let ms = |v: &[u64]| -> Vec<f64> {
            v.iter()
                .zip(&c.requests)
                .zip(&c.errors)
                .filter(|((_, r), e)| *r > *e)
                .map(|((v, _), _)| *v as f64 / 1000.0)
                .collect()
        };
        Some(match metric {
            "rate" => per_s(&c.requests),
            "throughput" => per_s(&c.succeeded),
            "p50" => ms(&c.p50_us),
            "p90" => ms(&c.p90_us),
            "p99" => ms(&c.p99_us),
            "max" => ms(&c.max_us),
            "errors" => c
                .requests
                .iter()
                .zip(&c.succeeded)
                .filter(|(r, _)| **r > 0)
                .map(|(r, s)| error_percent(*r, *s))
                .collect(),
            _ => return None,
        })
    }
}

/// The metrics a trend follows over runs ([`RunRecord::trend_value`]): those of [`METRICS`],
/// the 99.9th percentile, and a capacity search's answer.
pub const TREND_METRICS: [&str; 9] = [
    "rate",
    "throughput",
    "p50",
    "p90",
    "p99",
    "p99.9",
    "max",
    "errors",
    "capacity",
];

/// The unit a trend of `metric` is given in: `ms`, `/s`, `%`, or the capacity search's own
/// (its level: requests or iterations per second, connections, connections per second).
pub fn trend_unit(metric: &str) -> &'static str {
    match metric {
        "rate" | "throughput" => "/s",
        "errors" => "%",
        "capacity" => "level",
        _ => "ms",
    }
}

impl RunRecord {
    /// The value of `metric` (one of [`TREND_METRICS`]) for the whole run, or for its row
    /// named `row` (a step, target or scenario); `None` when the run has no such row, no
    /// latency there, or (for `capacity`) was not a capacity search or found none.
    pub fn trend_value(&self, metric: &str, row: Option<&str>) -> Option<f64> {
        if metric == "capacity" {
            return match row {
                Some(_) => None,
                None => self.search()?.get("max_rate")?.as_f64(),
            };
        }
        let Some(row) = row else {
            return match metric {
                "p99.9" => Some(self.latency.p999_us as f64 / 1000.0),
                _ => self.figure(metric),
            };
        };
        let row = self.rows.iter().find(|r| r.name == row)?;
        let per_s = |n: u64| (self.elapsed_s > 0.0).then(|| n as f64 / self.elapsed_s);
        let ms = |us: u64| (row.kind != RowKind::Scenario).then_some(us as f64 / 1000.0);
        match metric {
            "rate" => per_s(row.requests),
            "throughput" => per_s(row.requests.saturating_sub(row.failures)),
            "errors" => Some(match row.requests {
                0 => 0.0,
                n => row.failures as f64 * 100.0 / n as f64,
            }),
            "p50" => ms(row.latency.p50_us),
            "p90" => ms(row.latency.p90_us),
            "p99" => ms(row.latency.p99_us),
            "p99.9" => ms(row.latency.p999_us),
            "max" => ms(row.latency.max_us),
            _ => None,
        }
    }
}

/// The percentage of `requests` that did not succeed; 0 without requests.
fn error_percent(requests: u64, succeeded: u64) -> f64 {
    match requests {
        0 => 0.0,
        _ => requests.saturating_sub(succeeded) as f64 * 100.0 / requests as f64,
    }
}

/// The per-step (or per-target) rows, named as the reports name them, then the scenarios.
fn rows(run: &Run) -> Vec<TableRow> {
    let info = &run.header.run;
    let targets = !info.targets.is_empty();
    let mut rows: Vec<TableRow> = run
        .totals
        .steps()
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let name = if targets {
                info.targets
                    .get(i)
                    .map(|t| format!("{} {}", t.method, t.url))
            } else {
                info.steps.get(i).cloned()
            };
            TableRow {
                kind: if targets {
                    RowKind::Target
                } else {
                    RowKind::Step
                },
                name: name.unwrap_or_else(|| format!("step {}", i + 1)),
                requests: row.counts.requests,
                failures: row.counts.failures,
                latency: Percentiles::of(row.values_us()),
            }
        })
        .collect();
    let scenarios = run.end.iter().flat_map(|e| e.scenarios.iter());
    rows.extend(scenarios.map(|s| TableRow {
        kind: RowKind::Scenario,
        name: s.name.clone(),
        requests: s.requests,
        failures: s.failures,
        latency: Percentiles::default(),
    }));
    rows
}
