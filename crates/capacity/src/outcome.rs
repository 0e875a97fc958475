//! What a capacity search found, step by step: every step, the answer, and the behaviour past
//! it, with the wording the reports share; as JSON (`crates/report/schema/
//! capacity.schema.json`). belier-report renders it as text and HTML.

use std::collections::BTreeMap;
use std::time::Duration;

use belier_stats::{ErrorKind, Recorder};
use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;
use crate::overload::{Behaviour, OverloadStep, Recovery};
use crate::search::{Answer, LimitedBy, StepKind, StepPlan};
use crate::slo::Verdict;

/// Version of the capacity JSON document.
const SCHEMA_VERSION: u32 = 1;

/// Busy share of the host's CPU over a step from which the step says the host was saturated:
/// belier and a server on the same host then compete for it, and the step measured both.
pub const HOST_CPU_SATURATED: f64 = 0.9;

/// One step as it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// What it was for.
    pub kind: StepKind,
    /// Arrivals per second it was to send.
    pub target_rate: f64,
    /// Arrivals sent per second of its judged window.
    pub achieved_rate: f64,
    /// What the server served: successful responses (status below 400) per second of its
    /// judged window and of the grace after it in which the window's last responses came.
    pub goodput: f64,
    /// Requests in the judged window.
    pub requests: u64,
    /// Latency percentiles of the judged window's responses, ms.
    pub p50_ms: Option<f64>,
    /// 99th percentile, ms.
    pub p99_ms: Option<f64>,
    /// 99.9th percentile, ms.
    pub p999_ms: Option<f64>,
    /// Share of requests without a status below 400.
    pub error_share: f64,
    /// Requests without a response, by error kind.
    pub errors: BTreeMap<String, u64>,
    /// Responses 429 and 503.
    pub rejected: u64,
    /// Whether the SLOs held (`null`: the generator could not drive the step).
    pub pass: Option<bool>,
    /// Why it failed, or why the generator could not drive it.
    pub why: Option<String>,
    /// Requests still unanswered when the step ended and its grace ran out, given up on:
    /// among the failed share, and shown apart from the failures.
    #[serde(default)]
    pub cancelled: u64,
    /// Busy share of the host's CPU over the step, when belier and the server share the host
    /// (`null` otherwise).
    #[serde(default)]
    pub host_cpu: Option<f64>,
    /// Seconds from the step's end until the server answered probes at its idle latency
    /// again, or waited for it in vain (`null`: not probed).
    #[serde(default)]
    pub drain_s: Option<f64>,
    /// Whether the server drained within the longest wait (`null`: not probed).
    #[serde(default)]
    pub drained: Option<bool>,
    /// The server's own account of the step's time (`--server-timing`), when its responses
    /// gave one: how much of the latency was the server's work and how much waited outside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timing: Option<StepTiming>,
}

/// The server's time and the time outside it over a step's judged window (see
/// `belier_stats::ServerTimes`), ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepTiming {
    /// Responses whose header gave the server's time.
    pub timed: u64,
    /// The server's time: p50.
    pub server_p50_ms: f64,
    /// The server's time: p99.
    pub server_p99_ms: f64,
    /// Latency minus the server's time: p50.
    pub outside_p50_ms: f64,
    /// Latency minus the server's time: p99.
    pub outside_p99_ms: f64,
}

impl StepTiming {
    /// The step's figures from what its window recorded, when any response was timed.
    fn of(totals: &Recorder) -> Option<StepTiming> {
        let times = totals.server_times().filter(|t| t.counts.timed > 0)?;
        let ms = |row: &belier_stats::FigureRow, p: f64| {
            belier_stats::value_at_percentile(row.values_us(), p) as f64 / 1000.0
        };
        let (server, outside) = (&times.server, &times.outside);
        Some(StepTiming {
            timed: times.counts.timed,
            server_p50_ms: ms(server, 50.0),
            server_p99_ms: ms(server, 99.0),
            outside_p50_ms: ms(outside, 50.0),
            outside_p99_ms: ms(outside, 99.0),
        })
    }
}

impl Step {
    /// Measures a step from what its judged window (`window` long) recorded, the responses
    /// that came in the `tail` after the step's end (its grace) among them: goodput is served
    /// per second of both, as those responses were served then, not in the window.
    pub fn measure(
        plan: &StepPlan,
        verdict: &Verdict,
        totals: &Recorder,
        window: Duration,
        tail: Duration,
    ) -> Step {
        let secs = window.as_secs_f64().max(f64::MIN_POSITIVE);
        let served_secs = (window + tail).as_secs_f64().max(f64::MIN_POSITIVE);
        let h = totals.latency_us();
        let at = |p: f64| {
            (!h.is_empty()).then(|| belier_stats::value_at_percentile(h, p) as f64 / 1000.0)
        };
        let requests = totals.requests();
        let failed = requests - totals.succeeded();
        let (pass, why) = match verdict {
            Verdict::Pass => (Some(true), None),
            Verdict::Fail(why) => (Some(false), Some(why.clone())),
            Verdict::Generator(why) => (None, Some(why.clone())),
        };
        Step {
            kind: plan.kind,
            target_rate: plan.rate,
            // Arrivals that went out in the window: completions lag behind them when the
            // server queues, and would read as more than was sent.
            achieved_rate: totals.scheduled().saturating_sub(totals.dropped()) as f64 / secs,
            goodput: totals.succeeded() as f64 / served_secs,
            requests,
            p50_ms: at(50.0),
            p99_ms: at(99.0),
            p999_ms: at(99.9),
            error_share: if requests == 0 {
                0.0
            } else {
                failed as f64 / requests as f64
            },
            errors: ErrorKind::ALL
                .iter()
                .filter(|k| totals.errors_of(**k) > 0)
                .map(|k| (k.name().to_string(), totals.errors_of(*k)))
                .collect(),
            rejected: rejected(totals),
            pass,
            why,
            cancelled: totals.errors_of(ErrorKind::Cancelled),
            host_cpu: None,
            drain_s: None,
            drained: None,
            server_timing: StepTiming::of(totals),
        }
    }

    /// Share of the judged window's requests that failed (an error status, or no response),
    /// the cancelled ones apart.
    pub fn failed_share(&self) -> f64 {
        if self.requests == 0 {
            return 0.0;
        }
        (self.error_share - self.cancelled as f64 / self.requests as f64).max(0.0)
    }

    /// What the result column adds to the verdict: the host's CPU when it was saturated, the
    /// wait for the server to drain when there was one (`; host CPU 96 % busy …`, or empty).
    pub fn notes(&self) -> String {
        let mut notes = String::new();
        if let Some(busy) = self.host_cpu.filter(|&b| b >= HOST_CPU_SATURATED) {
            notes += &format!(
                "; host CPU {:.0} % busy (belier and the server share it)",
                busy * 100.0
            );
        }
        match (self.drained, self.drain_s) {
            (Some(true), Some(s)) if s >= 0.05 => notes += &format!("; drained in {s:.1} s"),
            (Some(false), Some(s)) => notes += &format!("; not drained in {s:.0} s"),
            _ => {}
        }
        notes
    }

    /// The step as the overload classification reads it. The latency of the rejections is not
    /// recorded apart from the other responses': the step's p99 stands in for theirs. Requests
    /// still queued at the server when the step ended (cancelled) are not counted as broken:
    /// the step's end cut them off, not the server.
    pub fn overload(&self) -> OverloadStep {
        let errors = |kinds: &[ErrorKind]| -> u64 {
            kinds
                .iter()
                .map(|k| self.errors.get(k.name()).copied().unwrap_or(0))
                .sum()
        };
        OverloadStep {
            offered: self.target_rate,
            goodput: self.goodput,
            requests: self.requests,
            rejected: self.rejected,
            rejected_p99_us: self.p99_ms.map(|ms| (ms * 1000.0) as u64),
            refused: errors(&[ErrorKind::ConnectRefused]),
            broken: errors(&[
                ErrorKind::Timeout,
                ErrorKind::ConnectTimeout,
                ErrorKind::ConnectionReset,
                ErrorKind::ClosedBeforeResponse,
                ErrorKind::ClosedMidBody,
            ]),
        }
    }
}

/// The behaviour past capacity, as reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overload {
    /// The worst behaviour of the overload steps.
    pub behaviour: Behaviour,
    /// Whether the recovery step met the SLOs (`null` when it did not run or was not judged).
    pub recovered: Option<bool>,
    /// Seconds after the last overload step until the server answered probes at its idle
    /// latency again (`null`: not probed, or no recovery step).
    #[serde(default)]
    pub drained_s: Option<f64>,
    /// Whether it did within the longest wait (`null`: not probed, or no recovery step).
    #[serde(default)]
    pub drained: Option<bool>,
}

impl Overload {
    /// From the behaviour and the recovery, if it was measured.
    pub fn new(behaviour: Behaviour, recovery: Option<Recovery>) -> Overload {
        let probed = recovery.filter(|r| r.probed);
        Overload {
            behaviour,
            recovered: recovery.map(|r| r.recovered),
            drained_s: probed
                .and_then(|r| r.drained_after)
                .map(|d| d.as_secs_f64()),
            drained: probed.map(|r| r.drained_after.is_some()),
        }
    }

    /// The recovery in words: whether and when the server drained after the overload, and
    /// whether the recovery step met the SLOs.
    pub fn recovery_line(&self) -> String {
        let recovered = match self.recovered {
            Some(true) => "recovered at 0.8× (its step met the SLOs)",
            Some(false) => "did not recover at 0.8× (its step failed the SLOs)",
            None => "recovery not measured",
        };
        match (self.drained, self.drained_s) {
            (Some(true), Some(s)) => format!("drained {s:.1} s after the overload; {recovered}"),
            (Some(false), _) => format!("not drained after the overload; {recovered}"),
            _ => recovered.to_string(),
        }
    }
}

/// The recovery as the steps show it: the last recovery step's verdict, and how the server
/// drained after the step before it (the last overload step); `None` without a judged
/// recovery step.
pub fn recovery(steps: &[Step]) -> Option<Recovery> {
    let at = steps.iter().rposition(|s| s.kind == StepKind::Recovery)?;
    let recovered = steps[at].pass?;
    let before = at.checked_sub(1).map(|i| &steps[i]);
    let drained = before.and_then(|s| s.drained);
    Some(Recovery {
        recovered,
        drained_after: before
            .filter(|_| drained == Some(true))
            .and_then(|s| s.drain_s)
            .map(Duration::from_secs_f64),
        probed: drained.is_some(),
    })
}

/// A whole search, as reports show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The URL searched (a plan's target for a plan).
    pub url: String,
    /// What the search varied; every level and rate below is in its unit (documents written
    /// before there was a choice searched the request rate).
    #[serde(default)]
    pub dimension: Dimension,
    /// The SLOs, as written.
    pub slos: Vec<String>,
    /// The highest rate that met the SLOs, confirmed; `null` when none was.
    pub max_rate: Option<f64>,
    /// What ended the search.
    pub limited_by: LimitedBy,
    /// Highest rate that passed (confirmed or not).
    pub passed_rate: Option<f64>,
    /// Lowest rate that failed, and why.
    pub failed_rate: Option<f64>,
    /// Why it failed.
    pub failed_why: Option<String>,
    /// Why the generator could not go on, when it could not.
    pub generator: Option<String>,
    /// Every step, in order.
    pub steps: Vec<Step>,
    /// Past the answer, when the overload steps ran.
    pub overload: Option<Overload>,
    /// How long the search took, seconds.
    pub elapsed_s: f64,
}

impl Outcome {
    /// Gathers the search's answer and its steps.
    pub fn new(
        url: String,
        dimension: Dimension,
        slos: Vec<String>,
        answer: Answer,
        steps: Vec<Step>,
        overload: Option<Overload>,
        elapsed: Duration,
    ) -> Outcome {
        let (failed_rate, failed_why) = answer
            .failed
            .map_or((None, None), |(r, w)| (Some(r), Some(w)));
        Outcome {
            url,
            dimension,
            slos,
            max_rate: answer.max_rate,
            limited_by: answer.limited_by,
            passed_rate: answer.passed,
            failed_rate,
            failed_why,
            generator: answer.generator,
            steps,
            overload,
            elapsed_s: elapsed.as_secs_f64(),
        }
    }

    /// The JSON document `--output json` and results files hold (see [`crate::SCHEMA`]).
    pub fn to_json(&self) -> String {
        let doc = serde_json::json!({ "schema_version": SCHEMA_VERSION, "capacity": self });
        serde_json::to_string_pretty(&doc).expect("an outcome serializes") + "\n"
    }

    /// Reads what [`Outcome::to_json`] wrote; `None` when `text` is no capacity document.
    pub fn from_json(text: &str) -> Option<Result<Outcome, String>> {
        let doc: serde_json::Value = serde_json::from_str(text).ok()?;
        let capacity = doc.get("capacity")?;
        if doc["schema_version"] != SCHEMA_VERSION {
            return Some(Err(format!(
                "capacity document version {}, this belier reads {SCHEMA_VERSION}",
                doc["schema_version"]
            )));
        }
        if let Err(why) = bounded_numbers(capacity, "capacity") {
            return Some(Err(why));
        }
        Some(serde_json::from_value(capacity.clone()).map_err(|e| e.to_string()))
    }

    /// The answer in one line: `Capacity: 1,880/s with p99<25ms; 1,970/s failed: p99 = 41.0 ms`.
    pub fn answer_line(&self) -> String {
        let slos = self.slos.join(", ");
        let level = |v: f64| self.dimension.level(v);
        let failed = match (self.failed_rate, &self.failed_why) {
            (Some(r), Some(why)) => format!("; {} failed: {why}", level(r)),
            _ => String::new(),
        };
        match (self.limited_by, self.max_rate, self.passed_rate) {
            (LimitedBy::MaxRate, Some(c), _) => format!(
                "Capacity: at least {} with {slos}: the highest level allowed (--max-rate) met them",
                level(c)
            ),
            (_, Some(c), _) => format!("Capacity: {} with {slos}{failed}", level(c)),
            (LimitedBy::Generator, None, passed) => format!(
                "Capacity above {}: the generator's limit here ({}); no capacity is claimed",
                passed.map_or("the start level".into(), level),
                self.generator.as_deref().unwrap_or("it could not hold the rate")
            ),
            (LimitedBy::Time, None, passed) => format!(
                "No answer within --max-time: {} met {slos}{failed}",
                passed.map_or(format!("no {}", self.quantity()), level)
            ),
            (_, None, _) => {
                let what = self.quantity();
                format!("No {what} met {slos}, not even the start {what}{failed}")
            }
        }
    }

    /// What a level is, in words: `rate`, `number of connections`.
    fn quantity(&self) -> &'static str {
        match self.dimension {
            Dimension::Connections => "number of connections",
            Dimension::HeldConnections => "number of held connections",
            _ => "rate",
        }
    }

    /// The goodput at the answer: the successful responses per second of the last step at
    /// it that passed (for a rate, about the rate itself; for connections, what they carried).
    pub fn capacity_goodput(&self) -> Option<f64> {
        let c = self.max_rate?;
        self.steps
            .iter()
            .rev()
            .find(|s| s.target_rate == c && s.pass == Some(true))
            .map(|s| s.goodput)
    }
}

impl Outcome {
    /// The step table's headings for the level a step was to hold and what it achieved:
    /// a rate against the rate sent, or connections against the requests they carried.
    pub fn columns(&self) -> (&'static str, &'static str) {
        match self.dimension {
            Dimension::Rate => ("offered/s", "sent/s"),
            Dimension::IterationRate => ("iterations/s", "started/s"),
            Dimension::Connections => ("connections", "requests/s"),
            Dimension::ConnectionRate => ("connections/s", "sent/s"),
            Dimension::HeldConnections => ("held", "held (fewest)"),
        }
    }
}

/// A step's kind as reports name it.
pub fn kind_name(kind: StepKind) -> &'static str {
    match kind {
        StepKind::Grow => "grow",
        StepKind::Bisect => "bisect",
        StepKind::Confirm => "confirm",
        StepKind::Overload => "overload",
        StepKind::Recovery => "recovery",
    }
}

/// Largest magnitude a number in a capacity document may have. Rates, latencies in
/// milliseconds, counts and seconds of a search stay far below; a document claiming more
/// (`p999_ms: 1e308`) made the HTML chart's axis span 300 decades and allocate 2 GiB.
const MOST_DOCUMENT_NUMBER: f64 = 1e12;

/// Refuses, naming its field, the first number in `v` (at `path`) beyond
/// [`MOST_DOCUMENT_NUMBER`]. (JSON has no NaN or infinity; serde_json refuses 1e400.)
fn bounded_numbers(v: &serde_json::Value, path: &str) -> Result<(), String> {
    use serde_json::Value;
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.abs() <= MOST_DOCUMENT_NUMBER => Ok(()),
            _ => Err(format!(
                "field `{path}`: {n} is beyond any value belier writes (at most 1e12)"
            )),
        },
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| bounded_numbers(item, &format!("{path}[{i}]"))),
        Value::Object(fields) => fields
            .iter()
            .try_for_each(|(k, item)| bounded_numbers(item, &format!("{path}.{k}"))),
        _ => Ok(()),
    }
}

/// Requests the target turned away for load: HTTP 429 and 503, gRPC's RESOURCE_EXHAUSTED (8)
/// and UNAVAILABLE (14), the codes a gRPC server sheds with.
fn rejected(totals: &Recorder) -> u64 {
    let http: u64 = totals
        .status_counts()
        .filter(|(code, _)| *code == 429 || *code == 503)
        .map(|(_, n)| n)
        .sum();
    let grpc: u64 = totals
        .grpc_counts()
        .filter(|(code, _)| *code == 8 || *code == 14)
        .map(|(_, n)| n)
        .sum();
    http + grpc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shed_calls_are_rejected_in_http_and_in_grpc() {
        use belier_stats::{Outcome, Sample};
        let mut totals = Recorder::new();
        let outcomes = [
            Outcome::Response { status: 200 },
            Outcome::Response { status: 429 },
            Outcome::Response { status: 503 },
            Outcome::Response { status: 500 },
            Outcome::Grpc { code: 0 },
            Outcome::Grpc { code: 8 },
            Outcome::Grpc { code: 14 },
            Outcome::Grpc { code: 13 },
        ];
        for outcome in outcomes {
            let now = std::time::Instant::now();
            totals.record(&Sample::simulated(now, 0, 1_000, outcome));
        }
        assert_eq!(rejected(&totals), 4);
    }

    fn answer(max_rate: Option<f64>, limited_by: LimitedBy) -> Answer {
        Answer {
            max_rate,
            limited_by,
            passed: max_rate.or(Some(160.0)),
            failed: Some((1_970.0, "p99 = 41.0 ms (wanted p99<25ms)".into())),
            generator: Some("belier's own lag p99 4 ms".into()),
        }
    }

    fn outcome(a: Answer) -> Outcome {
        Outcome::new(
            "http://127.0.0.1:8080/".into(),
            Dimension::Rate,
            vec!["p99<25ms".into()],
            a,
            vec![],
            Some(Overload::new(
                Behaviour::Sheds,
                Some(Recovery {
                    recovered: true,
                    drained_after: Some(Duration::from_millis(2_400)),
                    probed: true,
                }),
            )),
            Duration::from_secs(300),
        )
    }

    /// Issue #28's fuzzing find: `p999_ms: 1e308` in a capacity file made the HTML chart
    /// allocate 2 GiB. Numbers beyond any belier writes are refused, naming the field.
    #[test]
    fn absurd_numbers_in_a_document_are_refused_by_field() {
        let text = outcome(answer(Some(1_880.0), LimitedBy::Slo)).to_json();
        assert!(Outcome::from_json(&text).unwrap().is_ok());
        let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        doc["capacity"]["steps"] = serde_json::json!([{"p50_ms": 1.0}, {"p999_ms": 1e308}]);
        assert_eq!(
            Outcome::from_json(&doc.to_string()).unwrap().unwrap_err(),
            "field `capacity.steps[1].p999_ms`: 1e+308 is beyond any value belier writes (at most 1e12)"
        );
        doc["capacity"]["steps"] = serde_json::json!([]);
        doc["capacity"]["elapsed_s"] = serde_json::json!(-2e13);
        let e = Outcome::from_json(&doc.to_string()).unwrap().unwrap_err();
        assert!(e.starts_with("field `capacity.elapsed_s`: "), "{e}");
    }

    #[test]
    fn the_answer_line_says_what_was_found_and_what_limited_it() {
        let found = outcome(answer(Some(1_880.0), LimitedBy::Slo));
        assert_eq!(
            found.answer_line(),
            "Capacity: 1,880/s with p99<25ms; 1,970/s failed: p99 = 41.0 ms (wanted p99<25ms)"
        );
        let generator = outcome(answer(None, LimitedBy::Generator)).answer_line();
        assert!(
            generator
                .starts_with("Capacity above 160/s: the generator's limit here (belier's own lag"),
            "{generator}"
        );
        let none = outcome(Answer {
            passed: None,
            ..answer(None, LimitedBy::Slo)
        });
        assert!(none
            .answer_line()
            .starts_with("No rate met p99<25ms, not even the start rate"));
    }

    fn step(kind: StepKind, pass: Option<bool>, drained: Option<(bool, f64)>) -> Step {
        Step {
            kind,
            target_rate: 100.0,
            achieved_rate: 100.0,
            goodput: 100.0,
            requests: 1_000,
            p50_ms: Some(1.0),
            p99_ms: Some(2.0),
            p999_ms: Some(3.0),
            error_share: 0.0,
            errors: BTreeMap::new(),
            rejected: 0,
            pass,
            why: None,
            cancelled: 0,
            host_cpu: None,
            drain_s: drained.map(|d| d.1),
            drained: drained.map(|d| d.0),
            server_timing: None,
        }
    }

    #[test]
    fn the_recovery_is_the_recovery_step_s_verdict_and_the_drain_before_it() {
        use StepKind::{Confirm, Overload as Over, Recovery as Back};
        // Found on main: a recovery step that passed said `recovered: false`, judged on a
        // last interval of stragglers.
        let steps = [
            step(Confirm, Some(true), Some((true, 0.0))),
            step(Over, Some(false), Some((true, 2.5))),
            step(Back, Some(true), None),
        ];
        let r = recovery(&steps).unwrap();
        assert!(r.recovered && r.probed);
        assert_eq!(r.drained_after, Some(Duration::from_millis(2_500)));
        let o = Overload::new(Behaviour::Slows, Some(r));
        assert_eq!(
            (o.recovered, o.drained, o.drained_s),
            (Some(true), Some(true), Some(2.5))
        );
        // Not drained within the wait, then failed.
        let steps = [
            step(Over, Some(false), Some((false, 30.0))),
            step(Back, Some(false), None),
        ];
        let o = Overload::new(Behaviour::Slows, recovery(&steps));
        assert_eq!(
            (o.recovered, o.drained, o.drained_s),
            (Some(false), Some(false), None)
        );
        assert_eq!(
            o.recovery_line(),
            "not drained after the overload; did not recover at 0.8× (its step failed the SLOs)"
        );
        // Not probed (HTTP/2), and no recovery step at all.
        let steps = [step(Over, Some(false), None), step(Back, Some(true), None)];
        let o = Overload::new(Behaviour::Sheds, recovery(&steps));
        assert_eq!((o.recovered, o.drained), (Some(true), None));
        assert_eq!(
            o.recovery_line(),
            "recovered at 0.8× (its step met the SLOs)"
        );
        assert_eq!(recovery(&steps[..1]), None);
    }

    #[test]
    fn cancelled_requests_are_not_failed() {
        let mut s = step(StepKind::Overload, Some(false), Some((true, 1.3)));
        s.error_share = 0.3;
        s.cancelled = 100;
        assert!((s.failed_share() - 0.2).abs() < 1e-9);
    }

    #[test]
    fn a_saved_outcome_reads_back() {
        let o = outcome(answer(Some(1_880.0), LimitedBy::Slo));
        let back = Outcome::from_json(&o.to_json()).unwrap().unwrap();
        assert_eq!(back, o);
        assert!(Outcome::from_json("{\"schema_version\":1,\"other\":{}}").is_none());
        assert!(Outcome::from_json("not json").is_none());
        let newer = o
            .to_json()
            .replace("\"schema_version\": 1", "\"schema_version\": 9");
        assert!(Outcome::from_json(&newer).unwrap().is_err());
    }

    #[test]
    fn connections_read_as_connections() {
        let mut o = outcome(answer(Some(64.0), LimitedBy::Slo));
        o.dimension = Dimension::Connections;
        o.failed_rate = Some(70.0);
        assert_eq!(
            o.answer_line(),
            "Capacity: 64 connections with p99<25ms; 70 connections failed: p99 = 41.0 ms (wanted p99<25ms)"
        );
    }

    #[test]
    fn a_document_without_a_dimension_searched_the_rate() {
        let o = outcome(answer(Some(1_880.0), LimitedBy::Slo));
        let old = o.to_json().replace("\"dimension\": \"rate\",", "");
        assert!(!old.contains("dimension"));
        assert_eq!(Outcome::from_json(&old).unwrap().unwrap(), o);
    }

    #[test]
    fn a_step_splits_its_latency_into_the_servers_time_and_the_wait_outside_it() {
        use belier_stats::{Sample, TimingHeader};
        let mut totals = Recorder::new();
        let now = std::time::Instant::now();
        // 100 responses of 30 ms, each of which the server says took it 10 ms.
        for _ in 0..100 {
            let ok = belier_stats::Outcome::Response { status: 200 };
            totals.record(&Sample::simulated(now, 0, 30_000, ok));
            totals.record_server_timing(TimingHeader::ServerTiming, Some(b"app;dur=10"), 30_000);
        }
        let plan = StepPlan {
            rate: 100.0,
            kind: StepKind::Grow,
            warmup: Duration::ZERO,
            window: Duration::from_secs(1),
        };
        let second = Duration::from_secs(1);
        let step = Step::measure(&plan, &Verdict::Pass, &totals, second, Duration::ZERO);
        let t = step
            .server_timing
            .clone()
            .expect("the step's server timing");
        assert_eq!(t.timed, 100);
        let near = |got: f64, want: f64| (got - want).abs() <= want * 0.001;
        assert!(
            near(t.server_p99_ms, 10.0) && near(t.outside_p99_ms, 20.0),
            "{t:?}"
        );
        // It rides in the document and reads back; a step without it has none.
        let mut o = outcome(answer(Some(100.0), LimitedBy::Slo));
        let untimed = Step::measure(&plan, &Verdict::Pass, &Recorder::new(), second, second);
        o.steps = vec![step, untimed];
        assert!(o.steps[1].server_timing.is_none());
        assert_eq!(Outcome::from_json(&o.to_json()).unwrap().unwrap(), o);
    }
}
