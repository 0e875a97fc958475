//! SLOs: what a step must meet to pass (`p99<50ms`, `p99.9<200ms`, `mean<20ms`, `errors<0.1%`),
//! written like a plan's thresholds and judged on a step's judged window.

use std::time::Duration;

use belier_stats::{Point, Recorder};
use belier_vocabulary::condition::{self, Pick};
use belier_vocabulary::format;
use belier_vocabulary::message_metric::{self, MessageMetric, MessageTime, Statistic};
use belier_vocabulary::Comparison;

/// The errors SLO in force unless one is given: under 1 % of requests failed. It holds beside
/// latency SLOs too: a latency SLO alone is met by errors answered fast (a server that sheds
/// answers its excess with a 503 in microseconds), which would read as capacity.
pub const DEFAULT_SLO: &str = "errors<1%";

/// A malformed SLO expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--slo '{expression}': at position {position}: {message}")]
pub struct SloError {
    /// The expression as given.
    pub expression: String,
    /// Byte offset of the fault, from 0.
    pub position: usize,
    /// What is wrong there.
    pub message: String,
}

/// Every SLO of a search; all must hold for a step to pass.
#[derive(Debug, Clone, PartialEq)]
pub struct Slos {
    /// On the step's own figures.
    figures: Vec<FigureSlo>,
    /// On the server's metrics, queried from Prometheus.
    prometheus: Vec<PromSlo>,
}

/// An SLO on the server's own metrics: `prom:QUERY OP VALUE`, a PromQL expression evaluated
/// by Prometheus at the end of each judged window (its largest value when it gives several).
#[derive(Debug, Clone, PartialEq)]
pub struct PromSlo {
    /// As written.
    pub expression: String,
    /// The PromQL query.
    pub query: String,
    /// How the value is compared.
    pub comparison: Comparison,
    /// With what.
    pub bound: f64,
}

/// What an SLO on a step's own figures measures.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Measure {
    /// A latency percentile (99.0 for `p99`).
    Percentile(f64),
    /// Mean latency.
    Mean,
    /// Highest latency.
    Max,
    /// Failed requests over all requests, as a fraction.
    Errors,
    /// A time of streamed messages (`ttft p99`, `itl p99`, `ws_rtt p99`), named as written.
    Message(MessageTime, &'static str, Statistic),
}

impl Measure {
    /// The metric an SLO names, in the words of a plan's thresholds; `Err` says why it is
    /// none.
    fn named(name: &str) -> Result<Measure, String> {
        match MessageMetric::parse(name)? {
            Some(MessageMetric::Time {
                time,
                name,
                statistic,
            }) => return Ok(Measure::Message(time, name, statistic)),
            Some(_) => {
                return Err(format!(
                    "`{name}` is not an SLO (a step is judged on the times of its messages: \
                     ttft, itl or ws_rtt with pNN, mean, min or max)"
                ))
            }
            None => {}
        }
        Ok(match name {
            "mean" | "avg" => Measure::Mean,
            "max" => Measure::Max,
            "error_rate" | "errors" => Measure::Errors,
            // A plan's thresholds offer these; a capacity step is judged on latency and errors.
            "min" | "rate" | "checks" | "requests" | "count" => {
                return Err(format!(
                    "`{name}` is not an SLO (use pNN, mean or max for latency, errors for the \
                     failed share)"
                ))
            }
            _ => Measure::Percentile(condition::percentile(name).ok_or_else(|| {
                format!(
                    "unknown metric `{name}` (expected p50, p90, p99, p99.9…, mean, max, errors, \
                     or a message time: ttft p99, itl p99, ws_rtt p99…)"
                )
            })?),
        })
    }

    /// As a verdict names it: `p99`, `mean`, `max`, `error_rate`.
    fn label(self) -> String {
        match self {
            Measure::Percentile(p) => format!("p{p}"),
            Measure::Mean => "mean".into(),
            Measure::Max => "max".into(),
            Measure::Errors => "error_rate".into(),
            Measure::Message(_, name, statistic) => format!("{name} {statistic}"),
        }
    }
}

/// An SLO on the step's own figures: `METRIC OP VALUE`, in a plan threshold's words.
#[derive(Debug, Clone, PartialEq)]
struct FigureSlo {
    /// As written.
    expression: String,
    measure: Measure,
    comparison: Comparison,
    /// µs for a latency, a fraction for errors.
    bound: f64,
}

impl FigureSlo {
    fn parse(text: &str) -> Result<FigureSlo, SloError> {
        let fail = |position, message: String| SloError {
            expression: text.to_string(),
            position,
            message,
        };
        let (scope, expr, expr_at) = condition::scope(text).map_err(|(at, why)| fail(at, why))?;
        let Some(parts) = condition::split(expr, &Comparison::ALL, Pick::First) else {
            return Err(fail(
                expr_at,
                "expected METRIC OP VALUE, e.g. `p99 < 50ms` (OP is <, <=, > or >=)".into(),
            ));
        };
        if scope.is_some() {
            return Err(fail(
                0,
                "an SLO covers every request of a step: no `NAME:` scope".into(),
            ));
        }
        let measure = Measure::named(parts.metric).map_err(|why| {
            let unknown = why.starts_with("unknown") || why.contains("statistic");
            fail(
                if unknown {
                    expr_at + parts.metric_at
                } else {
                    0
                },
                why,
            )
        })?;
        // `==` is for plans' exact counts; an SLO is a bound.
        if parts.comparison == Comparison::Equal {
            return Err(fail(0, "an SLO is a bound: use <, <=, > or >=".into()));
        }
        let bound = match measure {
            Measure::Errors => condition::share_limit(parts.limit),
            // `Measure::Message` as a latency: a duration.
            _ => condition::latency_limit_us(parts.limit),
        }
        .map_err(|why| fail(expr_at + parts.limit_at, why))?;
        Ok(FigureSlo {
            expression: text.trim().to_string(),
            measure,
            comparison: parts.comparison,
            bound,
        })
    }

    /// The SLO's figure in `step`, with every latency `discount_us` shorter, and as shown
    /// (`231.4 ms`); `None` with nothing to measure.
    fn measure(&self, t: &Recorder, discount_us: u64) -> Option<(f64, String)> {
        if t.requests() == 0 {
            return None;
        }
        let latency = t.latency_summary();
        let us = match self.measure {
            Measure::Message(time, _, statistic) => {
                let us = t.messages()?.time_us(time, statistic)?;
                (us - discount_us as f64).max(0.0)
            }
            Measure::Errors => {
                let r = (t.requests() - t.succeeded()) as f64 / t.requests() as f64;
                return Some((r, format!("{:.2} %", r * 100.0)));
            }
            Measure::Percentile(p) => {
                let h = t.latency_us();
                if h.is_empty() {
                    return None;
                }
                belier_stats::value_at_percentile(h, p).saturating_sub(discount_us) as f64
            }
            Measure::Mean => (latency.mean_us - discount_us as f64).max(0.0),
            Measure::Max => latency.max_us.saturating_sub(discount_us) as f64,
        };
        Some((us, format::latency(us)))
    }

    /// `None` when the SLO held, else what failed: `p99 = 45.0 ms (wanted p99<30ms)`.
    fn failure(&self, t: &Recorder, discount_us: u64) -> Option<String> {
        let (passed, shown) = match (self.measure(t, discount_us), self.measure) {
            (Some((value, shown)), _) => (self.comparison.holds(value, self.bound), shown),
            (None, Measure::Message(time, ..)) if t.requests() > 0 => {
                let why = match t.messages() {
                    Some(_) => time.missing(),
                    None => message_metric::NO_MESSAGES,
                };
                (false, format!("no data ({why})"))
            }
            (None, _) => (false, "no data".into()),
        };
        (!passed).then(|| {
            format!(
                "{} = {shown} (wanted {})",
                self.measure.label(),
                self.expression
            )
        })
    }
}

impl PromSlo {
    /// Parses `prom:QUERY OP VALUE`; `None` when `text` is no `prom:` SLO.
    fn parse(text: &str) -> Option<Result<PromSlo, SloError>> {
        let query_text = text.trim().strip_prefix("prom:")?;
        let fail = |position, message: &str| SloError {
            expression: text.to_string(),
            position,
            message: message.to_string(),
        };
        // The comparison is the last operator: PromQL has its own `<` and `>`.
        let Some(parts) = condition::split(query_text, &Comparison::BOUNDS, Pick::Last) else {
            return Some(Err(fail(
                0,
                "expected prom:QUERY OP VALUE, e.g. prom:rate(process_cpu_seconds_total[10s])<0.8",
            )));
        };
        let (at, comparison) = (parts.comparison_at, parts.comparison);
        let offset = text.len() - text.trim_start().len() + "prom:".len();
        // `<<`, `<>`, `><`, `>>`, `<<=`: no comparison (`<<` was read as `>`).
        if query_text[..at].ends_with(['<', '>']) {
            return Some(Err(fail(
                offset + at - 1,
                "expected one comparison: <, <=, > or >=",
            )));
        }
        let query = parts.metric;
        if query.is_empty() {
            return Some(Err(fail(offset, "no PromQL query before the comparison")));
        }
        // A bound that is not finite decides nothing: NaN fails every comparison (`>=NaN`
        // failed every step), infinity passes or fails them all.
        let Some(bound) = parts.limit.parse::<f64>().ok().filter(|b| b.is_finite()) else {
            return Some(Err(fail(
                offset + at + comparison.symbol().len(),
                "expected a finite number after the comparison",
            )));
        };
        Some(Ok(PromSlo {
            expression: text.trim().to_string(),
            query: query.to_string(),
            comparison,
            bound,
        }))
    }
}

/// What one step measured in its judged window.
pub struct StepFigures<'a> {
    /// Arrivals per second the step was to send.
    pub target_rate: f64,
    /// Arrivals per second it sent.
    pub achieved_rate: f64,
    /// Length of the judged window.
    pub window: Duration,
    /// Everything recorded in the judged window.
    pub totals: &'a Recorder,
    /// Why belier itself could not hold the step's rate (the run's verdict), if it could not:
    /// then the step says nothing about the server.
    pub generator: Option<String>,
    /// The value of each Prometheus SLO's query at the window's end, in order (`None`: no
    /// data, which fails the SLO).
    pub prometheus: Vec<Option<f64>>,
}

/// A step's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every SLO held.
    Pass,
    /// These SLOs did not hold (one sentence, with the figures).
    Fail(String),
    /// belier could not hold the rate; the step judged nothing of the server.
    Generator(String),
}

impl Slos {
    /// Parses `expressions`, and adds [`DEFAULT_SLO`] unless one of them bounds the errors. A
    /// latency SLO needs a unit (`50ms`), an error SLO a share (`0.1%`); a step's scope
    /// (`login: …`), `rate`, `checks` and `requests` mean nothing for a capacity step and are
    /// refused.
    pub fn parse(expressions: &[String]) -> Result<Slos, SloError> {
        let mut prometheus = Vec::new();
        let mut on_figures = Vec::new();
        for e in expressions {
            match PromSlo::parse(e) {
                Some(slo) => prometheus.push(slo?),
                None => on_figures.push(e.clone()),
            }
        }
        let figures = on_figures
            .iter()
            .map(|e| FigureSlo::parse(e))
            .collect::<Result<Vec<_>, _>>()?;
        let mut figures = figures;
        if !figures.iter().any(|t| t.measure == Measure::Errors) {
            let default = FigureSlo::parse(DEFAULT_SLO).expect("the default SLO parses");
            figures.push(default);
        }
        Ok(Slos {
            figures,
            prometheus,
        })
    }

    /// The SLOs on the server's metrics, to query after each judged window.
    pub fn prometheus(&self) -> &[PromSlo] {
        &self.prometheus
    }

    /// The SLOs in force, as written (the default errors SLO among them when none was given).
    pub fn expressions(&self) -> Vec<&str> {
        self.figures
            .iter()
            .map(|t| t.expression.as_str())
            .chain(self.prometheus.iter().map(|p| p.expression.as_str()))
            .collect()
    }

    /// The tightest latency bound among the SLOs, µs (a rejection answered within it is
    /// "answered fast"); `None` without a latency SLO. A message time bounds no request's
    /// latency.
    pub fn latency_bound_us(&self) -> Option<f64> {
        self.figures
            .iter()
            .filter(|t| !matches!(t.measure, Measure::Errors | Measure::Message(..)))
            .map(|t| t.bound)
            .reduce(f64::min)
    }

    /// Whether one interval of a series met the SLOs, as far as its figures tell: a
    /// percentile SLO is read at the interval's p50, p90 or p99, whichever is the first at or
    /// above it (p99.9 at its max), so it is never judged more leniently; a mean at the p90.
    /// An interval records no message times: an SLO on them is judged on the step only.
    pub fn met_by(&self, point: &Point) -> bool {
        let failures = point.requests - point.succeeded.min(point.requests);
        self.figures.iter().all(|slo| {
            let actual = match slo.measure {
                Measure::Message(..) => return true,
                Measure::Errors if point.requests == 0 => return true,
                Measure::Errors => failures as f64 / point.requests as f64,
                _ if point.succeeded == 0 && point.p99_us == 0 => return point.requests == 0,
                Measure::Percentile(p) if p <= 50.0 => point.p50_us as f64,
                Measure::Percentile(p) if p <= 90.0 => point.p90_us as f64,
                Measure::Percentile(p) if p <= 99.0 => point.p99_us as f64,
                Measure::Mean => point.p90_us as f64,
                _ => point.max_us as f64,
            };
            slo.comparison.holds(actual, slo.bound)
        })
    }

    /// Judges a step: the generator's own limit first (it voids the step), then every SLO on
    /// the judged window's figures. A failed
    /// request is any without a status below 400: an error status (a 503 shed at once) as
    /// well as no response, and a request still unanswered at the step's end (cancelled).
    pub fn judge(&self, step: &StepFigures<'_>) -> Verdict {
        if let Some(why) = &step.generator {
            return Verdict::Generator(why.clone());
        }
        self.judge_less(step, 0)
    }

    /// Whether the step would still fail with every latency `discount_us` shorter: belier's
    /// own lateness is part of each latency (measured from the intended start), so a failure
    /// that this discount turns into a pass may be belier's doing, not the server's.
    pub fn fails_without(&self, step: &StepFigures<'_>, discount_us: u64) -> bool {
        self.judge_less(step, discount_us) != Verdict::Pass
    }

    fn judge_less(&self, step: &StepFigures<'_>, discount_us: u64) -> Verdict {
        let mut failed: Vec<String> = self
            .figures
            .iter()
            .filter_map(|slo| slo.failure(step.totals, discount_us))
            .collect();
        for (slo, value) in self.prometheus.iter().zip(&step.prometheus) {
            match value {
                Some(v) if slo.comparison.holds(*v, slo.bound) => {}
                Some(v) => failed.push(format!("{} = {v} (wanted {})", slo.query, slo.expression)),
                None => failed.push(format!(
                    "{} = no data (wanted {})",
                    slo.query, slo.expression
                )),
            }
        }
        if failed.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail(failed.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use belier_stats::{ErrorKind, Outcome, Sample};

    use super::*;

    fn recorder(latencies_us: &[u64], errors: u64, status: u16) -> Recorder {
        let mut r = Recorder::new();
        let t0 = Instant::now();
        for &us in latencies_us {
            let s = Sample::simulated(t0, 0, us, Outcome::Response { status });
            r.record(&Sample {
                first_byte: Some(s.done),
                ..s
            });
        }
        r.record_errors(ErrorKind::Timeout, errors);
        r
    }

    fn step(totals: &Recorder) -> StepFigures<'_> {
        StepFigures {
            target_rate: 100.0,
            achieved_rate: 100.0,
            window: Duration::from_secs(10),
            totals,
            generator: None,
            prometheus: vec![],
        }
    }

    fn slos(list: &[&str]) -> Slos {
        Slos::parse(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn the_default_is_under_one_percent_failed() {
        let s = slos(&[]);
        assert_eq!(s.expressions(), [DEFAULT_SLO]);
        let fine = recorder(&vec![1_000; 995], 5, 200);
        assert_eq!(s.judge(&step(&fine)), Verdict::Pass);
        let bad = recorder(&vec![1_000; 980], 20, 200);
        assert!(matches!(s.judge(&step(&bad)), Verdict::Fail(_)));
        // A 5xx is a failure too.
        let unavailable = recorder(&vec![1_000; 100], 0, 503);
        assert!(matches!(s.judge(&step(&unavailable)), Verdict::Fail(_)));
    }

    #[test]
    fn an_errors_slo_holds_beside_latency_slos_unless_one_is_given() {
        // Found on main: a server shedding its excess with fast 503s met p99<30ms at 37×
        // what it served.
        let s = slos(&["p99<30ms"]);
        assert_eq!(s.expressions(), ["p99<30ms", DEFAULT_SLO]);
        let mut shed = recorder(&vec![200; 600], 0, 503);
        shed += &recorder(&vec![5_000; 400], 0, 200);
        let Verdict::Fail(why) = s.judge(&step(&shed)) else {
            panic!("60 % of 503s passed p99<30ms");
        };
        assert!(why.contains("errors<1%"), "{why}");
        // The user's own errors SLO replaces the default; a Prometheus SLO does not.
        assert_eq!(
            slos(&["errors<5%", "p99<30ms"]).expressions(),
            ["errors<5%", "p99<30ms"]
        );
        assert_eq!(
            slos(&["prom:up<2"]).expressions(),
            [DEFAULT_SLO, "prom:up<2"]
        );
    }

    #[test]
    fn latency_slos_name_what_failed() {
        let s = slos(&["p99<30ms", "errors<0.1%"]);
        let mut values = vec![10_000; 980];
        values.extend([45_000; 20]);
        let r = recorder(&values, 0, 200);
        let Verdict::Fail(why) = s.judge(&step(&r)) else {
            panic!("p99 of 45 ms passed p99<30ms");
        };
        assert!(why.contains("p99") && why.contains("p99<30ms"), "{why}");
        assert!(!why.contains("errors<0.1%"), "{why}");
        assert_eq!(s.latency_bound_us(), Some(30_000.0));
    }

    #[test]
    fn a_failure_by_more_than_the_discount_stands() {
        let s = slos(&["p99<30ms"]);
        let r = recorder(&vec![32_000; 100], 0, 200);
        let f = step(&r);
        assert!(matches!(s.judge(&f), Verdict::Fail(_)));
        // 32 ms with 1 ms of belier's lateness still fails; with 5 ms it might not have.
        assert!(s.fails_without(&f, 1_000));
        assert!(!s.fails_without(&f, 5_000));
    }

    #[test]
    fn the_generator_s_limit_voids_the_step() {
        let s = slos(&[]);
        let r = recorder(&[1_000], 0, 200);
        let mut f = step(&r);
        f.generator = Some("belier's own lag p99 4 ms".into());
        assert_eq!(
            s.judge(&f),
            Verdict::Generator("belier's own lag p99 4 ms".into())
        );
    }

    #[test]
    fn prometheus_slos_are_queries_judged_on_their_values() {
        let s = slos(&[
            "p99<30ms",
            "prom:rate(process_cpu_seconds_total[10s]) <= 0.8",
        ]);
        assert_eq!(s.prometheus().len(), 1);
        let p = &s.prometheus()[0];
        assert_eq!(p.query, "rate(process_cpu_seconds_total[10s])");
        assert_eq!((p.comparison, p.bound), (Comparison::LessOrEqual, 0.8));
        assert_eq!(
            s.expressions(),
            [
                "p99<30ms",
                DEFAULT_SLO,
                "prom:rate(process_cpu_seconds_total[10s]) <= 0.8"
            ]
        );
        let r = recorder(&[1_000; 100], 0, 200);
        let mut f = step(&r);
        f.prometheus = vec![Some(0.5)];
        assert_eq!(s.judge(&f), Verdict::Pass);
        f.prometheus = vec![Some(0.93)];
        let Verdict::Fail(why) = s.judge(&f) else {
            panic!("0.93 met <= 0.8");
        };
        assert!(why.contains("= 0.93") && why.contains("prom:"), "{why}");
        f.prometheus = vec![None];
        assert!(matches!(s.judge(&f), Verdict::Fail(w) if w.contains("no data")));
        // PromQL's own comparisons stay in the query: the last one is the SLO's.
        let s = slos(&["prom:sum(up > 0) < 3"]);
        assert_eq!(s.prometheus()[0].query, "sum(up > 0)");
        for (bad, position) in [
            ("prom:up", 0),
            ("prom:<1", 5),
            ("prom:up<high", 8),
            // Found by the property tests: read as bounds that nothing meets.
            ("prom: sum(up) >= NaN", 16),
            ("prom:up<inf", 8),
            // Found by the property tests: `<<` was read as `>`.
            ("prom:a > b << 3", 11),
            ("prom:up<>1", 7),
            ("prom:up<<=1", 7),
        ] {
            let e = Slos::parse(&[bad.to_string()]).unwrap_err();
            assert_eq!(e.position, position, "{bad}: {e}");
        }
    }

    /// `calls` streams whose first message came after `first_us`, then 3 more `gap_us` apart.
    fn streams(calls: usize, first_us: u64, gap_us: u64) -> Recorder {
        let mut r = Recorder::new();
        let mut gaps = belier_stats::MessageTimes::default();
        for _ in 0..3 {
            gaps.push(gap_us);
        }
        for _ in 0..calls {
            let call = belier_stats::CallMessages::one_way(1, 4, Some(first_us), &gaps);
            r.record_simulated_stream(first_us + 3 * gap_us, &call);
        }
        r
    }

    #[test]
    fn message_time_slos_read_the_step_s_messages() {
        let s = slos(&["ttft p99 < 100ms", "itl_p99<50ms"]);
        assert_eq!(
            s.expressions(),
            ["ttft p99 < 100ms", "itl_p99<50ms", DEFAULT_SLO]
        );
        // A message time bounds no request's latency (that is the fast-rejection bound).
        assert_eq!(s.latency_bound_us(), None);
        let fast = streams(100, 20_000, 10_000);
        assert_eq!(s.judge(&step(&fast)), Verdict::Pass);
        let Verdict::Fail(why) = s.judge(&step(&streams(100, 150_000, 10_000))) else {
            panic!("a first message after 150 ms met ttft p99 < 100ms");
        };
        assert!(
            why.starts_with("ttft p99 = 150.") && why.contains("wanted ttft p99 < 100ms"),
            "{why}"
        );
        let Verdict::Fail(why) = s.judge(&step(&streams(100, 20_000, 80_000))) else {
            panic!("gaps of 80 ms met itl p99 < 50ms");
        };
        assert!(
            why.starts_with("itl p99 = 80.") && !why.contains("ttft"),
            "{why}"
        );
        // belier's lateness is taken off message times too.
        let late = streams(100, 105_000, 10_000);
        let f = step(&late);
        assert!(matches!(s.judge(&f), Verdict::Fail(_)));
        assert!(!s.fails_without(&f, 10_000));
    }

    #[test]
    fn a_message_slo_without_messages_fails_by_name() {
        let s = slos(&["ttft p99 < 100ms"]);
        let plain = recorder(&[1_000; 100], 0, 200);
        assert_eq!(
            s.judge(&step(&plain)),
            Verdict::Fail(
                "ttft p99 = no data (the run recorded no streamed messages) \
                 (wanted ttft p99 < 100ms)"
                    .into()
            )
        );
        let Verdict::Fail(why) =
            slos(&["ws_rtt p99<20ms"]).judge(&step(&streams(10, 1_000, 1_000)))
        else {
            panic!("streams without round trips met ws_rtt p99<20ms");
        };
        assert!(
            why.contains("no reply answered a message one for one"),
            "{why}"
        );
    }

    #[test]
    fn malformed_slos_say_where() {
        for (text, position, words) in [
            ("p99<", 4, ""),
            ("p99<50", 4, "unit"),
            ("p99 50ms", 0, "METRIC OP VALUE"),
            ("rate>10/s", 0, "not an SLO"),
            ("login: p99<1s", 0, "scope"),
            ("q99<1s", 0, "unknown metric"),
            ("ttft<1s", 0, "needs a statistic"),
            ("itl q99<1s", 0, "unknown statistic"),
            ("ws_rtt p99<20", 11, "unit"),
            ("messages_received>10", 0, "not an SLO"),
            ("received_per_s>10/s", 0, "not an SLO"),
        ] {
            let e = Slos::parse(&[text.to_string()]).unwrap_err();
            assert_eq!(e.position, position, "{text}: {e}");
            assert!(e.to_string().contains(words), "{text}: {e}");
            assert!(e.to_string().contains(text), "{text}: {e}");
        }
    }
}
