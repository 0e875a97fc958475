//! A plan's thresholds judged on what was recorded: every one at the end, on the whole run
//! ([`judge`]), and while the run goes, those with `abort: true`, on its figures so far
//! ([`Watch`]): the first that fails stops the run.

use std::time::Duration;

use belier_plan::{Figures, Plan, Threshold};
use belier_results::{ThresholdOutcome, ThresholdStop};
use belier_stats::{value_at_percentile, Collector, MetricRow, Recorder, Series};
use hdrhistogram::Histogram;

/// Judges every threshold of the plan on the recorded totals, over `elapsed`; `scenarios`
/// holds each executor's name and totals (a plan whose scenarios have loads of their own).
pub fn judge(
    plan: &Plan,
    totals: &Recorder,
    elapsed: Duration,
    scenarios: &[(&str, &Recorder)],
) -> Vec<ThresholdOutcome> {
    let recorded = Recorded::new(plan, totals, elapsed, scenarios);
    plan.thresholds
        .iter()
        .map(|t| {
            let outcome = t.evaluate(|scope| recorded.scope(scope));
            ThresholdOutcome {
                expression: t.expression.clone(),
                passed: outcome.passed,
                actual: outcome.actual,
                stopped_run: None,
            }
        })
        .collect()
}

/// The threshold that stopped a run: which, when, and its value then.
#[derive(Clone, Debug, PartialEq)]
pub struct Abort {
    /// Its place in the plan's `thresholds`.
    pub threshold: usize,
    /// As written.
    pub expression: String,
    /// When it failed, and its value then.
    pub stop: ThresholdStop,
}

impl Abort {
    /// What belier says when it stops the run.
    pub fn line(&self) -> String {
        format!(
            "threshold `{}` failed at {:.1} s ({}) and stopped the run",
            self.expression,
            self.stop.at_ms as f64 / 1e3,
            self.stop.actual
        )
    }

    /// Marks the threshold that stopped the run among the end's `outcomes` (the plan's
    /// thresholds, in its order).
    pub fn mark(&self, outcomes: &mut [ThresholdOutcome]) {
        if let Some(t) = outcomes.get_mut(self.threshold) {
            t.stopped_run = Some(self.stop.clone());
        }
    }
}

/// Watches a running plan for its thresholds with `abort: true`: each time an interval
/// settles (every worker has sent it), they are judged on everything settled so far, and the
/// first that fails is the run's [`Abort`].
pub struct Watch<'p> {
    plan: &'p Plan,
    /// How much of the run had settled when last judged (not a count of points: past
    /// [`belier_stats::series::MAX_POINTS`] a series grows its last point instead).
    judged_to: Duration,
    stopped: Option<Abort>,
}

impl<'p> Watch<'p> {
    /// A watch over `plan`'s thresholds; `None` when none aborts.
    pub fn new(plan: &'p Plan) -> Option<Watch<'p>> {
        plan.thresholds
            .iter()
            .any(|t| t.abort_after.is_some())
            .then_some(Watch {
                plan,
                judged_to: Duration::ZERO,
                stopped: None,
            })
    }

    /// Judges on `collector`'s settled intervals if one settled since the last call (the
    /// run so far ends where the last settled one does); `scenarios`: each executor's totals
    /// so far. `Some` once, when a threshold first fails.
    pub fn settled(
        &mut self,
        collector: &Collector,
        scenarios: &[(&str, &Recorder)],
    ) -> Option<&Abort> {
        self.settled_in(collector.series(), collector.settled_total(), scenarios)
    }

    /// [`Watch::settled`] on a series of settled intervals and their `totals`.
    fn settled_in(
        &mut self,
        series: &Series,
        totals: &Recorder,
        scenarios: &[(&str, &Recorder)],
    ) -> Option<&Abort> {
        let last = series.points().last();
        let so_far = last.map_or(Duration::ZERO, |p| p.offset + p.width);
        if so_far <= self.judged_to || self.stopped.is_some() {
            return None;
        }
        self.judged_to = so_far;
        self.judge(totals, so_far, scenarios)
    }

    /// Judges the aborting thresholds on `totals`, the run's first `elapsed`: `Some` when
    /// one fails, the first in the plan's order (then kept: [`Watch::stopped`]).
    pub fn judge(
        &mut self,
        totals: &Recorder,
        elapsed: Duration,
        scenarios: &[(&str, &Recorder)],
    ) -> Option<&Abort> {
        let due = |t: &Threshold| t.abort_after.is_some_and(|after| elapsed >= after);
        if !self.plan.thresholds.iter().any(due) {
            return None;
        }
        let recorded = Recorded::new(self.plan, totals, elapsed, scenarios);
        let failed = self.plan.thresholds.iter().enumerate().find_map(|(i, t)| {
            let outcome = t.judge_live(elapsed, |scope| recorded.scope(scope))?;
            (!outcome.passed).then(|| Abort {
                threshold: i,
                expression: t.expression.clone(),
                stop: ThresholdStop {
                    at_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
                    actual: outcome.actual,
                },
            })
        })?;
        self.stopped = Some(failed);
        self.stopped.as_ref()
    }

    /// The threshold that stopped the run, if one did.
    pub fn stopped(&self) -> Option<&Abort> {
        self.stopped.as_ref()
    }
}

/// What was recorded, as thresholds take it: the figures of a scope ([`Recorded::scope`]).
struct Recorded<'a> {
    plan: &'a Plan,
    totals: &'a Recorder,
    elapsed: Duration,
    /// Each executor's name and totals (a plan whose scenarios have loads of their own).
    scenarios: &'a [(&'a str, &'a Recorder)],
    /// Checks passed and failed over the run.
    checks: (u64, u64),
    /// Failed steps over the run.
    failures: u64,
    whole: Percentiles<'a>,
    rows: Vec<Percentiles<'a>>,
    custom: Vec<Percentiles<'a>>,
    parts: Vec<Percentiles<'a>>,
}

type Percentiles<'a> = Box<dyn Fn(f64) -> Option<u64> + 'a>;

/// A custom metric without a row yet.
static NO_ROW: std::sync::LazyLock<MetricRow> = std::sync::LazyLock::new(MetricRow::default);

impl<'a> Recorded<'a> {
    fn new(
        plan: &'a Plan,
        totals: &'a Recorder,
        elapsed: Duration,
        scenarios: &'a [(&'a str, &'a Recorder)],
    ) -> Recorded<'a> {
        Recorded {
            plan,
            totals,
            elapsed,
            scenarios,
            checks: checks_of(totals),
            // A plan's requests are all steps; their failures (no response, an unexpected
            // status, a failed check) are what `error_rate` counts.
            failures: failures_of(totals),
            whole: percentiles(totals.latency_us()),
            rows: totals
                .steps()
                .iter()
                .map(|row| percentiles(row.values_us()))
                .collect(),
            custom: (0..plan.metrics().len())
                .map(|i| percentiles(Self::metric_row(totals, i).values_us()))
                .collect(),
            parts: scenarios
                .iter()
                .map(|(_, part)| percentiles(part.latency_us()))
                .collect(),
        }
    }

    fn metric_row(totals: &Recorder, i: usize) -> &MetricRow {
        totals.metrics().get(i).unwrap_or(&NO_ROW)
    }

    /// The figures of `scope`: `None`, the whole run; a custom metric, an executor or a step
    /// by name.
    fn scope(&self, scope: Option<&str>) -> Option<Figures<'_>> {
        let (plan, totals, scenarios) = (self.plan, self.totals, self.scenarios);
        let mut checks = self.checks;
        let (requests, failures, latency, percentile_us) = match scope {
            None => (
                totals.requests(),
                self.failures,
                totals.latency_us(),
                &self.whole,
            ),
            // A custom metric: its count, and a trend's values as the latencies.
            Some(name) if plan.metrics().iter().any(|m| m.name == name) => {
                let index = plan.metrics().iter().position(|m| m.name == name)?;
                let row = Self::metric_row(totals, index);
                (row.counts, 0, row.values_us(), self.custom.get(index)?)
            }
            // A scenario with a load of its own (the parser refused a name that is both).
            Some(name) if scenarios.iter().any(|(s, _)| *s == name) => {
                let index = scenarios.iter().position(|(s, _)| *s == name)?;
                let part = scenarios[index].1;
                checks = checks_of(part);
                let latency = part.latency_us();
                (
                    part.requests(),
                    failures_of(part),
                    latency,
                    self.parts.get(index)?,
                )
            }
            Some(name) => {
                let index = plan.steps().iter().position(|s| s == name)?;
                let row = totals.steps().get(index)?;
                (
                    row.counts.requests,
                    row.counts.failures,
                    row.values_us(),
                    self.rows.get(index)?,
                )
            }
        };
        Some(Figures {
            requests,
            failures,
            elapsed: self.elapsed,
            checks_passed: checks.0,
            checks_failed: checks.1,
            mean_us: latency.mean(),
            min_us: latency.min(),
            max_us: latency.max(),
            percentile_us: &**percentile_us,
            // Messages are recorded for the whole run only (a scoped message threshold is
            // refused when the plan loads).
            messages: scope.is_none().then(|| totals.messages()).flatten(),
        })
    }
}

fn checks_of(r: &Recorder) -> (u64, u64) {
    r.checks()
        .iter()
        .fold((0, 0), |(p, f), c| (p + c.passed, f + c.failed))
}

fn failures_of(r: &Recorder) -> u64 {
    r.steps().iter().map(|s| s.counts.failures).sum()
}

/// Percentiles of `latency`, ranked as everywhere in belier's reports.
fn percentiles(latency: &Histogram<u64>) -> Percentiles<'_> {
    Box::new(move |p| (!latency.is_empty()).then(|| value_at_percentile(latency, p)))
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Instant;

    use belier_stats::{Gauges, Outcome, Point, Sample};

    use super::*;

    const PLAN: &str = r#"
target: http://127.0.0.1:1
scenarios:
  - steps:
      - { get: /login, name: login }
      - { get: /items, name: items }
thresholds:
  - max < 1ms
  - { expr: "p99 < 50ms", abort: true, after: 2s }
  - { expr: "login: error_rate < 10%", abort: true, after: 1s }
  - { expr: "requests < 1000", abort: true, after: 0s }
"#;

    fn parse_plan(text: &str) -> Plan {
        belier_plan::parse(text, Path::new("p.yaml")).unwrap()
    }

    /// `n` requests of `step` taking `latency_ms`, of which `failed` failed.
    fn record(r: &mut Recorder, step: usize, n: u64, latency_ms: u64, failed: u64) {
        let t = Instant::now();
        for i in 0..n {
            let sample =
                Sample::simulated(t, 0, latency_ms * 1_000, Outcome::Response { status: 200 });
            r.record(&sample);
            r.record_step(step, &sample, i < failed);
        }
    }

    #[test]
    fn aborting_thresholds_are_judged_from_their_after_on_first_failure_first() {
        let plan = parse_plan(PLAN);
        let mut watch = Watch::new(&plan).unwrap();
        let s = Duration::from_secs;
        let mut totals = Recorder::new();
        // Slow but fine on errors and count: `max < 1ms` fails, yet never stops the run; p99
        // is not judged before 2 s.
        record(&mut totals, 0, 50, 100, 0);
        record(&mut totals, 1, 50, 100, 0);
        assert_eq!(watch.judge(&totals, s(1), &[]), None);
        let abort = watch.judge(&totals, s(2), &[]).cloned().unwrap();
        assert_eq!(
            abort,
            Abort {
                threshold: 1,
                expression: "p99 < 50ms".into(),
                stop: ThresholdStop {
                    at_ms: 2_000,
                    actual: "p99 = 100.0 ms".into()
                }
            }
        );
        assert_eq!(watch.stopped(), Some(&abort));
        assert!(abort
            .line()
            .contains("`p99 < 50ms` failed at 2.0 s (p99 = 100.0 ms)"));
        // Marked among the end's outcomes, which judge the whole run.
        let mut outcomes = judge(&plan, &totals, s(2), &[]);
        abort.mark(&mut outcomes);
        let stopped: Vec<bool> = outcomes.iter().map(|o| o.stopped_run.is_some()).collect();
        assert_eq!(stopped, [false, true, false, false]);
        assert_eq!(
            outcomes.iter().map(|o| o.passed).collect::<Vec<_>>(),
            [false, false, true, true]
        );
    }

    #[test]
    fn a_scoped_rate_and_a_count_bound_stop_in_the_plans_order() {
        let plan = parse_plan(PLAN);
        let s = Duration::from_secs;
        // One login in ten failed (10 %, not below 10 %): the step's own figures, at 1 s.
        let mut totals = Recorder::new();
        record(&mut totals, 0, 20, 1, 2);
        record(&mut totals, 1, 20, 1, 0);
        let mut watch = Watch::new(&plan).unwrap();
        let abort = watch.judge(&totals, s(1), &[]).unwrap();
        assert_eq!(abort.threshold, 2);
        assert_eq!(abort.stop.actual, "error_rate = 10.00 %");
        // 1,000 requests break `requests < 1000` from the start (after: 0s); the login
        // step's errors come first in the plan but 1 in 100 passes.
        let mut totals = Recorder::new();
        record(&mut totals, 0, 100, 1, 1);
        record(&mut totals, 1, 900, 1, 0);
        let mut watch = Watch::new(&plan).unwrap();
        let abort = watch.judge(&totals, Duration::ZERO, &[]).unwrap();
        assert_eq!(
            (abort.threshold, abort.stop.actual.as_str()),
            (3, "requests = 1000")
        );
    }

    #[test]
    fn the_watch_judges_each_settled_interval_once_and_stops_once() {
        let plan = parse_plan(PLAN);
        let mut watch = Watch::new(&plan).unwrap();
        let mut collector = Collector::new(2, Duration::from_secs(1));
        let mut slow = Recorder::new();
        record(&mut slow, 1, 10, 100, 0);
        // Interval 0 from both workers, interval 1 from one: one settled second, before
        // p99's 2 s.
        for (worker, index) in [(0, 0), (1, 0), (0, 1)] {
            collector.add(worker, index, &slow, Gauges::default());
        }
        assert_eq!(watch.settled(&collector, &[]), None);
        assert_eq!(watch.judged_to, Duration::from_secs(1));
        // Nothing new settled: not judged again.
        assert_eq!(watch.settled(&collector, &[]), None);
        collector.add(1, 1, &slow, Gauges::default());
        let abort = watch.settled(&collector, &[]).cloned().unwrap();
        // The run so far ends where its last settled interval does.
        assert_eq!((abort.threshold, abort.stop.at_ms), (1, 2_000));
        collector.add(0, 2, &slow, Gauges::default());
        collector.add(1, 2, &slow, Gauges::default());
        assert_eq!(watch.settled(&collector, &[]), None, "stops once");
        assert_eq!(watch.stopped(), Some(&abort));
    }

    #[test]
    fn the_watch_goes_on_judging_once_the_series_coarsens() {
        let plan = parse_plan(
            "target: http://127.0.0.1:1\nscenarios: [{ steps: [{ get: / }] }]\nthresholds:\n  - { expr: \"p99 < 50ms\", abort: true, after: 7300s }\n",
        );
        let mut watch = Watch::new(&plan).unwrap();
        let mut slow = Recorder::new();
        record(&mut slow, 0, 1, 100, 0);
        let second = Duration::from_secs(1);
        let mut series = Series::new();
        let intervals = belier_stats::series::MAX_POINTS as u32 + 100;
        let point = Point::of(&slow, Gauges::default(), Duration::ZERO, second);
        for index in 0..intervals {
            series.push(Point {
                offset: second * index,
                ..point.clone()
            });
            let stopped = watch.settled_in(&series, &slow, &[]).is_some();
            assert_eq!(stopped, index == 7_299, "{index}");
        }
        assert!(series.points().len() < intervals as usize);
        assert_eq!(watch.stopped().unwrap().stop.at_ms, 7_300_000);
    }

    #[test]
    fn an_executors_threshold_takes_its_own_figures_and_none_without_them() {
        let plan = parse_plan(
            "target: http://127.0.0.1:1\nscenarios:\n  - { name: browse, load: { vus: 1 }, steps: [{ get: / }] }\n  - { name: checkout, load: { vus: 1 }, steps: [{ get: /c }] }\nthresholds:\n  - { expr: \"checkout: p99 < 50ms\", abort: true, after: 0s }\n",
        );
        let (mut browse, mut checkout) = (Recorder::new(), Recorder::new());
        record(&mut browse, 0, 10, 100, 0);
        record(&mut checkout, 1, 10, 10, 0);
        let mut totals = browse.clone();
        totals += &checkout;
        let mut watch = Watch::new(&plan).unwrap();
        let parts = [("browse", &browse), ("checkout", &checkout)];
        assert_eq!(watch.judge(&totals, Duration::ZERO, &parts), None);
        // Without the executors' figures (a distributed run) it is not judged live.
        assert_eq!(watch.judge(&totals, Duration::ZERO, &[]), None);
        let parts = [("browse", &checkout), ("checkout", &browse)];
        assert_eq!(
            watch
                .judge(&totals, Duration::ZERO, &parts)
                .unwrap()
                .threshold,
            0
        );
        assert!(Watch::new(&parse_plan("target: http://127.0.0.1:1\nscenarios: [{ steps: [{ get: / }] }]\nthresholds: [p99 < 1ms]\n")).is_none());
    }
}
