//! Thresholds: pass/fail expressions over a run's figures (`p99 < 200ms`, `error_rate < 1%`,
//! `rate > 900/s`, `login: checks > 99%`), parsed at load time and evaluated by a pure function
//! against figures the caller fills in from its statistics. A threshold may also stop the run
//! as soon as it fails while running (`abort`), judged on the run's figures so far
//! ([`Threshold::judge_live`]).

use std::fmt;
use std::time::Duration;

use belier_stats::Messages;
use belier_vocabulary::condition::{self, Pick};
use belier_vocabulary::message_metric::{self, Direction, MessageMetric};
use belier_vocabulary::{format, rate};

/// What a threshold measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    /// A latency percentile, e.g. 99.0 for `p99`, 99.9 for `p99.9`.
    Percentile(f64),
    /// Mean latency.
    Mean,
    /// Lowest latency.
    Min,
    /// Highest latency.
    Max,
    /// Failed requests (steps) over all requests, as a fraction.
    ErrorRate,
    /// Requests per second over the run.
    Rate,
    /// Passed checks over all checks evaluated, as a fraction.
    Checks,
    /// Number of requests.
    Requests,
    /// How many: a custom counter's total, a custom trend's number of values (a step's or
    /// the run's requests otherwise).
    Count,
    /// A figure of streamed messages (`ttft p99`, `itl p99`, `messages_received`): the
    /// whole run's.
    Message(MessageMetric),
}

/// A comparison: the vocabulary's, shared with capacity SLOs and `--fail-if`.
pub use belier_vocabulary::Comparison;

/// One threshold of a plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    /// The expression as written in the plan.
    pub expression: String,
    /// `None`: the whole run; `Some(step)`: one step's statistics row.
    pub scope: Option<String>,
    /// What is measured.
    pub metric: Metric,
    /// How it is compared.
    pub comparison: Comparison,
    /// The bound, in the metric's unit: microseconds for latencies, a fraction for
    /// `error_rate` and `checks`, per second for `rate`, a count for `requests`.
    pub bound: f64,
    /// `Some(after)`: the run stops as soon as the threshold fails on its figures so far,
    /// judged once `after` of the run has passed (`abort: true`); `None`: judged at the end
    /// only.
    pub abort_after: Option<Duration>,
}

/// How much of the run passes before a threshold that aborts it is first judged, when it
/// does not say (`after:`): the first seconds' few requests and cold connections would stop
/// runs for nothing.
pub const DEFAULT_ABORT_AFTER: Duration = Duration::from_secs(5);

/// A run's (or one step's) figures, as the caller's statistics give them.
pub struct Figures<'a> {
    /// Requests completed (or failed).
    pub requests: u64,
    /// Of which failed.
    pub failures: u64,
    /// Length of the run.
    pub elapsed: Duration,
    /// Checks passed.
    pub checks_passed: u64,
    /// Checks failed.
    pub checks_failed: u64,
    /// Mean latency, µs.
    pub mean_us: f64,
    /// Lowest latency, µs.
    pub min_us: u64,
    /// Highest latency, µs.
    pub max_us: u64,
    /// Latency at a percentile (0–100), µs.
    pub percentile_us: &'a dyn Fn(f64) -> Option<u64>,
    /// The streamed messages of the run, when it made streaming calls (`None` for a step's
    /// figures: messages are recorded for the whole run).
    pub messages: Option<&'a Messages>,
}

/// A threshold's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Whether it held.
    pub passed: bool,
    /// The measured value, e.g. `p99 = 231.4 ms`.
    pub actual: String,
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::Percentile(p) => write!(f, "p{p}"),
            Metric::Mean => f.write_str("mean"),
            Metric::Min => f.write_str("min"),
            Metric::Max => f.write_str("max"),
            Metric::ErrorRate => f.write_str("error_rate"),
            Metric::Rate => f.write_str("rate"),
            Metric::Checks => f.write_str("checks"),
            Metric::Requests => f.write_str("requests"),
            Metric::Count => f.write_str("count"),
            Metric::Message(m) => m.fmt(f),
        }
    }
}

impl Threshold {
    /// Parses an expression: `[STEP:] METRIC OP VALUE`. The error carries the byte offset of
    /// the fault in `text`.
    pub fn parse(text: &str) -> Result<Threshold, (usize, String)> {
        // A step name may itself contain `:`, so the scope is everything before the last one.
        let (scope, expr, expr_at) = condition::scope(text)?;
        let Some(parts) = condition::split(expr, &Comparison::ALL, Pick::First) else {
            return Err((
                expr_at,
                "expected METRIC OP VALUE, e.g. `p99 < 200ms` (OP is <, <=, >, >= or ==)".into(),
            ));
        };
        let (metric_text, value) = (parts.metric, parts.limit);
        let metric_at = expr_at + parts.metric_at;
        let metric = metric(metric_text)
            .map_err(|why| (metric_at, why))?
            .ok_or_else(|| {
                (
                    metric_at,
                    format!("unknown metric `{metric_text}` (expected p50, p90, p99, p99.9…, mean, min, max, error_rate, rate, checks, requests, count, or a message figure: ttft p99, itl p99, ws_rtt p99, messages_received…)"),
                )
            })?;
        if let (Metric::Message(_), Some(_)) = (metric, scope) {
            return Err((
                0,
                "message figures are recorded for the whole run: no `NAME:` scope".into(),
            ));
        }
        let (comparison, value_at) = (parts.comparison, expr_at + parts.limit_at);
        let bound = bound(metric, value).map_err(|m| (value_at, m))?;
        Ok(Threshold {
            expression: text.trim().to_string(),
            scope: scope.map(str::to_string),
            metric,
            comparison,
            bound,
            abort_after: None,
        })
    }

    /// Whether the run's figures so far can show that this threshold failed: percentiles,
    /// mean, min, max, `error_rate`, `checks` and `rate` are figures of the run so far; a
    /// count only grows, so only an upper bound on it (`requests < 1000`) can fail before the
    /// end. `Err` says why not.
    pub fn judged_live(&self) -> Result<(), String> {
        let count = matches!(
            self.metric,
            Metric::Requests | Metric::Count | Metric::Message(MessageMetric::Count(_))
        );
        match (count, self.comparison) {
            (true, Comparison::Less | Comparison::LessOrEqual) => Ok(()),
            (true, _) => Err(format!(
                "`{}` can only be judged at the end of the run (a count grows as the run goes; \
                 only `<` or `<=` on it can fail before the end): drop `abort`",
                self.expression
            )),
            _ => Ok(()),
        }
    }

    /// Judges an aborting threshold on the run's figures so far, `elapsed` into the run:
    /// `None` when it does not abort, before its `after`, or with nothing to measure yet (no
    /// requests, no checks: nothing shows it failed); otherwise its outcome.
    pub fn judge_live<'f>(
        &self,
        elapsed: Duration,
        figures_for: impl Fn(Option<&str>) -> Option<Figures<'f>>,
    ) -> Option<Outcome> {
        let after = self.abort_after?;
        if elapsed < after {
            return None;
        }
        let measured = self.measure(&figures_for(self.scope.as_deref())?)?;
        Some(self.outcome(Some(measured), None))
    }

    /// Evaluates the threshold; `figures_for(None)` gives the whole run's figures,
    /// `figures_for(Some(step))` one step's. Missing figures (or no requests, for a latency;
    /// no streamed messages, for a message figure) fail the threshold: it cannot be shown to
    /// hold. A message figure's verdict says why it had none.
    pub fn evaluate<'f>(
        &self,
        figures_for: impl Fn(Option<&str>) -> Option<Figures<'f>>,
    ) -> Outcome {
        let figures = figures_for(self.scope.as_deref());
        let measured = figures.as_ref().and_then(|f| self.measure(f));
        self.outcome(measured, figures.as_ref())
    }

    /// The outcome of a measured value (`None`: nothing to measure, which fails; `figures`
    /// say why, for a message figure).
    fn outcome(&self, measured: Option<(f64, String)>, figures: Option<&Figures<'_>>) -> Outcome {
        match measured {
            None => Outcome {
                passed: false,
                actual: match (self.metric, figures) {
                    (Metric::Message(m), Some(f)) => {
                        format!("{} = no data ({})", self.metric, missing(m, f.messages))
                    }
                    _ => format!("{} = no data", self.metric),
                },
            },
            Some((value, shown)) => Outcome {
                passed: self.comparison.holds(value, self.bound),
                actual: format!("{} = {shown}", self.metric),
            },
        }
    }

    /// The threshold's metric in `f`, and as shown (`231.4 ms`); `None` with nothing to
    /// measure.
    fn measure(&self, f: &Figures<'_>) -> Option<(f64, String)> {
        let latency = |us: Option<f64>| -> Option<(f64, String)> {
            let us = us?;
            Some((us, format::latency(us)))
        };
        match self.metric {
            Metric::Percentile(_) | Metric::Mean | Metric::Min | Metric::Max if f.requests == 0 => {
                None
            }
            Metric::Percentile(p) => latency((f.percentile_us)(p).map(|v| v as f64)),
            Metric::Mean => latency(Some(f.mean_us)),
            Metric::Min => latency(Some(f.min_us as f64)),
            Metric::Max => latency(Some(f.max_us as f64)),
            Metric::ErrorRate => (f.requests > 0).then(|| {
                let r = f.failures as f64 / f.requests as f64;
                (r, format!("{:.2} %", r * 100.0))
            }),
            Metric::Checks => {
                let total = f.checks_passed + f.checks_failed;
                (total > 0).then(|| {
                    let r = f.checks_passed as f64 / total as f64;
                    (r, format!("{:.2} %", r * 100.0))
                })
            }
            Metric::Rate => {
                let secs = f.elapsed.as_secs_f64();
                (secs > 0.0).then(|| {
                    let r = f.requests as f64 / secs;
                    (r, format!("{r:.1}/s"))
                })
            }
            Metric::Requests | Metric::Count => Some((f.requests as f64, f.requests.to_string())),
            Metric::Message(m) => measure_messages(m, f.messages?, f.elapsed),
        }
    }

    /// The threshold in canonical form, e.g. `login: p99 < 300ms`.
    pub fn canonical(&self) -> String {
        let bound = match self.metric {
            Metric::Percentile(_) | Metric::Mean | Metric::Min | Metric::Max => {
                format::latency(self.bound).replace(' ', "")
            }
            Metric::ErrorRate | Metric::Checks => format!("{}%", self.bound * 100.0),
            Metric::Rate => format!("{}/s", self.bound),
            // Through u64: a count past 2^53 is shown as f64 rounds it, which may no longer
            // fit the u64 the parser reads (`requests < 18446744073709551615`).
            Metric::Requests | Metric::Count => format!("{}", self.bound as u64),
            Metric::Message(MessageMetric::Time { .. }) => {
                format::latency(self.bound).replace(' ', "")
            }
            Metric::Message(MessageMetric::Count(_)) => format!("{}", self.bound as u64),
            Metric::Message(MessageMetric::Rate(_)) => format!("{}/s", self.bound),
        };
        let expr = format!("{} {} {bound}", self.metric, self.comparison);
        match &self.scope {
            Some(step) => format!("{step}: {expr}"),
            None => expr,
        }
    }
}

/// The metric `text` names: `Ok(None)` when none, `Err` when a message figure is written
/// wrongly (`ttft` without its statistic).
fn metric(text: &str) -> Result<Option<Metric>, String> {
    if let Some(m) = MessageMetric::parse(text)? {
        return Ok(Some(Metric::Message(m)));
    }
    Ok(Some(match text {
        "mean" | "avg" => Metric::Mean,
        "min" => Metric::Min,
        "max" => Metric::Max,
        "error_rate" | "errors" => Metric::ErrorRate,
        "rate" => Metric::Rate,
        "checks" => Metric::Checks,
        "requests" => Metric::Requests,
        "count" => Metric::Count,
        _ => match condition::percentile(text) {
            Some(p) => Metric::Percentile(p),
            None => return Ok(None),
        },
    }))
}

/// A message figure of `m`, over `elapsed`, and as shown; `None` when none was recorded.
fn measure_messages(
    metric: MessageMetric,
    m: &Messages,
    elapsed: Duration,
) -> Option<(f64, String)> {
    let count = |d: Direction| match d {
        Direction::Received => m.received(),
        Direction::Sent => m.sent(),
    };
    match metric {
        MessageMetric::Time {
            time, statistic, ..
        } => {
            let us = m.time_us(time, statistic)?;
            Some((us, format::latency(us)))
        }
        MessageMetric::Count(d) => Some((count(d) as f64, count(d).to_string())),
        MessageMetric::Rate(d) => {
            let secs = elapsed.as_secs_f64();
            (secs > 0.0).then(|| {
                let r = count(d) as f64 / secs;
                (r, format!("{r:.1}/s"))
            })
        }
    }
}

/// Why a message figure had no data: no streaming calls, or none of its kind.
fn missing(metric: MessageMetric, messages: Option<&Messages>) -> &'static str {
    match (metric, messages) {
        (MessageMetric::Time { time, .. }, Some(_)) => time.missing(),
        _ => message_metric::NO_MESSAGES,
    }
}

fn bound(metric: Metric, value: &str) -> Result<f64, String> {
    match metric {
        Metric::Percentile(_) | Metric::Mean | Metric::Min | Metric::Max => {
            condition::latency_limit_us(value)
        }
        Metric::ErrorRate | Metric::Checks => condition::share_limit(value),
        Metric::Message(MessageMetric::Time { .. }) => condition::latency_limit_us(value),
        Metric::Message(MessageMetric::Count(_)) => value
            .parse::<u64>()
            .map(|n| n as f64)
            .map_err(|_| format!("expected a count of messages, found `{value}`")),
        Metric::Message(MessageMetric::Rate(_)) => rate::parse(value)
            .map_err(|_| format!("expected a rate such as `900/s`, found `{value}`")),
        Metric::Rate => rate::parse(value)
            .map_err(|_| format!("expected a rate such as `900/s`, found `{value}`")),
        Metric::Requests | Metric::Count => value
            .parse::<u64>()
            .map(|n| n as f64)
            .map_err(|_| format!("expected a count of requests, found `{value}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(p: &dyn Fn(f64) -> Option<u64>) -> Figures<'_> {
        Figures {
            requests: 1000,
            failures: 5,
            elapsed: Duration::from_secs(2),
            checks_passed: 990,
            checks_failed: 10,
            mean_us: 120_000.0,
            min_us: 800,
            max_us: 1_500_000,
            percentile_us: p,
            messages: None,
        }
    }

    #[test]
    fn parses_every_form() {
        let t = Threshold::parse("p99 < 200ms").unwrap();
        assert_eq!(
            (t.metric, t.comparison, t.bound, t.scope),
            (Metric::Percentile(99.0), Comparison::Less, 200_000.0, None)
        );
        let t = Threshold::parse("login: p99.9 <= 1s").unwrap();
        assert_eq!(
            (t.metric, t.comparison, t.bound, t.scope.as_deref()),
            (
                Metric::Percentile(99.9),
                Comparison::LessOrEqual,
                1e6,
                Some("login")
            )
        );
        assert_eq!(Threshold::parse("error_rate < 1%").unwrap().bound, 0.01);
        assert_eq!(Threshold::parse("rate > 900/s").unwrap().bound, 900.0);
        assert_eq!(
            Threshold::parse("checks >= 99%").unwrap().comparison,
            Comparison::GreaterOrEqual
        );
        assert_eq!(Threshold::parse("max < 2s").unwrap().metric, Metric::Max);
        assert_eq!(
            Threshold::parse("GET /a:b: mean < 5ms")
                .unwrap()
                .scope
                .as_deref(),
            Some("GET /a:b")
        );
        assert_eq!(
            Threshold::parse("login: p99 < 300ms").unwrap().canonical(),
            "login: p99 < 300.0ms"
        );
        // Found by the property tests: the largest count printed as 18446744073709552000.
        let most = Threshold::parse("requests < 18446744073709551615").unwrap();
        assert_eq!(most.canonical(), "requests < 18446744073709551615");
        assert!(Threshold::parse(&most.canonical()).is_ok());
    }

    #[test]
    fn rejects_with_offsets() {
        assert_eq!(Threshold::parse("p99 < 200").unwrap_err().0, 6);
        assert_eq!(Threshold::parse("p101 < 1s").unwrap_err().0, 0);
        assert_eq!(Threshold::parse("x: q99 < 1s").unwrap_err().0, 3);
        assert!(Threshold::parse("error_rate < 1").is_err());
        assert!(Threshold::parse("error_rate < 101%").is_err());
        assert!(Threshold::parse("rate > fast").is_err());
        assert!(Threshold::parse("p99 = 1s").is_err());
        assert!(Threshold::parse(": p99 < 1s").is_err());
        assert!(Threshold::parse("").is_err());
    }

    #[test]
    fn evaluates_against_figures() {
        let p = |q: f64| Some(if q >= 99.0 { 231_400 } else { 100_000 });
        let eval = |text: &str| {
            Threshold::parse(text)
                .unwrap()
                .evaluate(|_| Some(figures(&p)))
        };
        let o = eval("p99 < 200ms");
        assert_eq!(
            o,
            Outcome {
                passed: false,
                actual: "p99 = 231.4 ms".into()
            }
        );
        assert!(eval("p99 < 300ms").passed);
        assert!(eval("p50 <= 100ms").passed);
        assert_eq!(eval("error_rate < 1%").actual, "error_rate = 0.50 %");
        assert!(eval("error_rate < 1%").passed);
        assert!(!eval("error_rate < 0.1%").passed);
        assert_eq!(eval("rate > 400/s").actual, "rate = 500.0/s");
        assert!(eval("rate > 400/s").passed);
        assert!(!eval("checks > 99%").passed);
        assert!(eval("checks >= 99%").passed);
        assert!(!eval("max < 1s").passed);
        assert!(eval("min < 1ms").passed);
        assert!(eval("requests >= 1000").passed);
        let none = Threshold::parse("login: p99 < 1s")
            .unwrap()
            .evaluate(|_| None);
        assert_eq!(
            none,
            Outcome {
                passed: false,
                actual: "p99 = no data".into()
            }
        );
        let scoped = Threshold::parse("login: requests > 1")
            .unwrap()
            .evaluate(|scope| {
                assert_eq!(scope, Some("login"));
                Some(figures(&p))
            });
        assert!(scoped.passed);
    }

    /// A run of 10 streams of 5 messages each: first after 120 ms, gaps of 40 ms.
    fn streamed() -> belier_stats::Recorder {
        let mut r = belier_stats::Recorder::new();
        let mut gaps = belier_stats::MessageTimes::default();
        for _ in 0..4 {
            gaps.push(40_000);
        }
        for _ in 0..10 {
            let call = belier_stats::CallMessages::one_way(1, 5, Some(120_000), &gaps);
            r.record_simulated_stream(300_000, &call);
        }
        r
    }

    #[test]
    fn message_figures_are_judged_and_say_why_they_are_missing() {
        let p = |_: f64| Some(100_000);
        let r = streamed();
        let eval = |text: &str, messages| {
            let mut f = figures(&p);
            f.messages = messages;
            Threshold::parse(text).unwrap().evaluate(|_| {
                let mut g = figures(&p);
                g.messages = f.messages;
                Some(g)
            })
        };
        let m = r.messages();
        let o = eval("ttft p99 < 500ms", m);
        assert!(o.passed, "{o:?}");
        assert_eq!(o.actual, "ttft p99 = 120.1 ms");
        assert!(!eval("ttft_p99 < 100ms", m).passed);
        assert!(eval("first_message max <= 121ms", m).passed);
        assert!(eval("itl p99 < 50ms", m).passed);
        assert!(!eval("gap mean < 30ms", m).passed);
        assert!(eval("gap min >= 40ms", m).passed);
        assert_eq!(
            eval("messages_received == 50", m).actual,
            "messages_received = 50"
        );
        assert!(eval("messages_sent == 10", m).passed);
        assert_eq!(
            eval("received_per_s > 20/s", m).actual,
            "received_per_s = 25.0/s"
        );
        // Streams without replies to their messages: no round trips, and the verdict says so.
        let o = eval("ws_rtt p99 < 20ms", m);
        assert_eq!(
            o,
            Outcome {
                passed: false,
                actual: "ws_rtt p99 = no data (no reply answered a message one for one)".into()
            }
        );
        // A run without streaming calls fails every message figure, by name.
        for text in [
            "ttft p99 < 500ms",
            "itl p99 < 50ms",
            "messages_received < 10",
        ] {
            let o = eval(text, None);
            assert!(!o.passed, "{text}");
            assert!(
                o.actual
                    .ends_with("no data (the run recorded no streamed messages)"),
                "{o:?}"
            );
        }
    }

    #[test]
    fn message_figures_parse_with_their_units() {
        let t = Threshold::parse("ttft p99 < 500ms").unwrap();
        assert_eq!(t.bound, 500_000.0);
        assert_eq!(t.canonical(), "ttft p99 < 500.0ms");
        assert_eq!(Threshold::parse("itl_p99.9 <= 1s").unwrap().bound, 1e6);
        assert_eq!(
            Threshold::parse("sent_per_s > 10/s").unwrap().canonical(),
            "sent_per_s > 10/s"
        );
        assert_eq!(
            Threshold::parse("messages_received >= 100")
                .unwrap()
                .canonical(),
            "messages_received >= 100"
        );
        for (text, at, words) in [
            ("ttft p99 < 500", 11, "unit"),
            ("ttft < 500ms", 0, "needs a statistic"),
            ("itl q99 < 5ms", 0, "unknown statistic"),
            ("login: ttft p99 < 1s", 0, "whole run"),
            ("messages_received > many", 20, "count of messages"),
            ("received_per_s > fast", 17, "rate"),
        ] {
            let (position, why) = Threshold::parse(text).unwrap_err();
            assert_eq!(position, at, "{text}: {why}");
            assert!(why.contains(words), "{text}: {why}");
        }
        let live = Threshold::parse("messages_received > 5")
            .unwrap()
            .judged_live();
        assert!(live.is_err());
        assert!(Threshold::parse("messages_received < 5")
            .unwrap()
            .judged_live()
            .is_ok());
    }

    #[test]
    fn counts_are_judged_live_only_against_an_upper_bound() {
        for (text, live) in [
            ("p99 < 1s", true),
            ("mean <= 5ms", true),
            ("min > 1ms", true),
            ("max < 2s", true),
            ("error_rate < 1%", true),
            ("checks > 99%", true),
            ("rate > 100/s", true),
            ("requests < 1000", true),
            ("x: count <= 5", true),
            ("requests >= 1000", false),
            ("count == 10", false),
            ("requests > 1", false),
        ] {
            let t = Threshold::parse(text).unwrap();
            assert_eq!(t.judged_live().is_ok(), live, "{text}");
        }
        let why = Threshold::parse("count == 10").unwrap().judged_live();
        assert!(why.unwrap_err().contains("only be judged at the end"));
    }

    #[test]
    fn live_judgement_waits_for_after_and_for_data() {
        let p = |q: f64| Some(if q >= 99.0 { 231_400 } else { 100_000 });
        let mut t = Threshold::parse("p99 < 200ms").unwrap();
        let at = Duration::from_secs;
        // Not an aborting threshold: never judged live.
        assert_eq!(t.judge_live(at(60), |_| Some(figures(&p))), None);
        t.abort_after = Some(at(10));
        assert_eq!(t.judge_live(at(9), |_| Some(figures(&p))), None);
        assert_eq!(
            t.judge_live(at(10), |_| Some(figures(&p))),
            Some(Outcome {
                passed: false,
                actual: "p99 = 231.4 ms".into()
            })
        );
        // Nothing measured yet shows no failure (the end's verdict says `no data`).
        assert_eq!(t.judge_live(at(10), |_| None), None);
        let idle = |_: Option<&str>| {
            let mut f = figures(&p);
            f.requests = 0;
            Some(f)
        };
        assert_eq!(t.judge_live(at(10), idle), None);
        let mut rate = Threshold::parse("rate > 600/s").unwrap();
        rate.abort_after = Some(at(1));
        // 1000 requests over the run's first 2 s so far.
        let live = rate.judge_live(at(2), |_| Some(figures(&p))).unwrap();
        assert_eq!(
            (live.passed, live.actual.as_str()),
            (false, "rate = 500.0/s")
        );
        let mut errors = Threshold::parse("error_rate < 1%").unwrap();
        errors.abort_after = Some(at(0));
        assert!(
            errors
                .judge_live(at(0), |_| Some(figures(&p)))
                .unwrap()
                .passed
        );
    }
}
