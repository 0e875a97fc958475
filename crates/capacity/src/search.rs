//! The search itself: which step to run next, and what the verdicts so far say.
//!
//! Grow the rate ×`growth` from `start_rate` until a step fails, then bisect between the last
//! pass and the first failure until they are within `precision` of each other; confirm the last
//! pass with longer steps (a failed confirmation moves the answer one precision down and
//! confirms again); then the overload steps past the answer and one recovery step below it.
//! A step that belier itself could not drive ends the search: it says nothing of the server.

use std::time::Duration;

use crate::slo::Verdict;

/// The default pause between steps so that what one step left queued at the server (in
/// flight, in its backlog) does not weigh on the next; the caller also waits for its own
/// in-flight requests.
pub const DRAIN: Duration = Duration::from_secs(2);

/// How the search runs; [`SearchSettings::default`] gives the documented defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchSettings {
    /// First rate tried, per second.
    pub start_rate: f64,
    /// Factor between rates while growing.
    pub growth: f64,
    /// Bisection stops once the failing rate is within this share above the passing one.
    pub precision: f64,
    /// Highest rate tried; reaching it with a pass ends the search there.
    pub max_rate: Option<f64>,
    /// Start of every step, recorded but not judged.
    pub warmup: Duration,
    /// Judged part of a growing or bisecting step.
    pub window: Duration,
    /// Confirmations of the answer.
    pub confirm: u32,
    /// Judged part of a confirmation step.
    pub confirm_window: Duration,
    /// The whole search's budget, steps and pauses between them.
    pub max_time: Option<Duration>,
    /// Overload steps, as multiples of the answer (empty: none).
    pub overload: Vec<f64>,
    /// Judged part of an overload step (and of the recovery step).
    pub overload_window: Duration,
    /// The recovery step's rate, as a share of the answer.
    pub recovery: f64,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            start_rate: 10.0,
            growth: 2.0,
            precision: 0.05,
            max_rate: None,
            warmup: Duration::from_secs(5),
            window: Duration::from_secs(15),
            confirm: 1,
            confirm_window: Duration::from_secs(30),
            max_time: None,
            overload: vec![1.25, 1.5, 2.0],
            overload_window: Duration::from_secs(10),
            recovery: 0.8,
        }
    }
}

/// Settings that cannot make a search.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: {message}")]
pub struct SettingsError {
    /// The setting, as its flag.
    pub flag: &'static str,
    /// What is wrong with it.
    pub message: String,
}

/// What a step is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// Growing the rate towards the first failure.
    Grow,
    /// Halving the bracket between the last pass and the first failure.
    Bisect,
    /// A longer step at the answer.
    Confirm,
    /// Past the answer, to see how the service fails.
    Overload,
    /// Below the answer after the overload, to see whether the service recovers.
    Recovery,
}

/// One step to run: an open loop at `rate` for `warmup + window`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepPlan {
    /// Arrivals per second.
    pub rate: f64,
    /// What the step is for.
    pub kind: StepKind,
    /// Recorded, not judged.
    pub warmup: Duration,
    /// Judged.
    pub window: Duration,
}

impl StepPlan {
    /// The step's length.
    pub fn duration(&self) -> Duration {
        self.warmup + self.window
    }
}

/// What ended the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitedBy {
    /// A rate failed the SLOs: the answer is the highest rate that met them.
    Slo,
    /// belier could not drive a rate: the capacity is above the last pass, unknown.
    Generator,
    /// The highest rate allowed passed.
    MaxRate,
    /// The budget ran out: the answer is the bracket reached so far.
    Time,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The highest rate that met the SLOs and was confirmed; `None` when no rate did, or the
    /// generator or the budget stopped the search before one was.
    pub max_rate: Option<f64>,
    /// What ended the search.
    pub limited_by: LimitedBy,
    /// Highest rate that passed (confirmed or not).
    pub passed: Option<f64>,
    /// Lowest rate that failed, and why.
    pub failed: Option<(f64, String)>,
    /// Why the generator could not go on, when it could not.
    pub generator: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Grow,
    Bisect,
    /// Confirming `candidate`.
    Confirm,
    Overload(usize),
    Recovery,
    Done,
}

/// The search's state: ask [`Search::next_step`] what to run, tell [`Search::record`] how it
/// went, read [`Search::answer`] at the end.
#[derive(Debug, Clone)]
pub struct Search {
    s: SearchSettings,
    phase: Phase,
    passed: Option<f64>,
    failed: Option<(f64, String)>,
    /// The rate being confirmed, and how many confirmations it passed.
    candidate: Option<f64>,
    confirmed: u32,
    answer: Option<f64>,
    limited: Option<LimitedBy>,
    generator: Option<String>,
}

impl Search {
    /// A search with `settings`, checked.
    pub fn new(settings: SearchSettings) -> Result<Search, SettingsError> {
        let s = settings;
        let bad = |flag, message: &str| {
            Err(SettingsError {
                flag,
                message: message.to_string(),
            })
        };
        if !(s.start_rate > 0.0 && s.start_rate.is_finite()) {
            return bad("--start-rate", "must be a positive rate");
        }
        if !(s.growth > 1.0 && s.growth.is_finite()) {
            return bad("--growth", "must be above 1");
        }
        if !(s.precision > 0.0 && s.precision < 1.0) {
            return bad("--precision", "must lie between 0 and 100 %, exclusive");
        }
        if s.max_rate
            .is_some_and(|m| !(m >= s.start_rate && m.is_finite()))
        {
            return bad("--max-rate", "must be at least --start-rate");
        }
        if s.window.is_zero() || s.confirm_window.is_zero() || s.overload_window.is_zero() {
            return bad("--window", "a judged window must last some time");
        }
        if s.overload.iter().any(|&f| !(f > 1.0 && f.is_finite())) {
            return bad(
                "--overload",
                "each step is a multiple of the capacity above 1",
            );
        }
        if !(s.recovery > 0.0 && s.recovery < 1.0) {
            return bad("--recovery", "must be a share of the capacity below 1");
        }
        Ok(Search {
            s,
            phase: Phase::Grow,
            passed: None,
            failed: None,
            candidate: None,
            confirmed: 0,
            answer: None,
            limited: None,
            generator: None,
        })
    }

    /// The settings.
    pub fn settings(&self) -> &SearchSettings {
        &self.s
    }

    /// The next step to run, `None` when the search is over. `elapsed` is the time spent so
    /// far (steps and pauses): a step that would not fit in the budget is not planned, and the
    /// search ends on the bracket it has.
    pub fn next_step(&mut self, elapsed: Duration) -> Option<StepPlan> {
        let s = &self.s;
        let (rate, kind, window) = match self.phase {
            Phase::Done => return None,
            Phase::Grow => {
                let rate = self.passed.map_or(s.start_rate, |p| p * s.growth);
                (cap(rate, s.max_rate), StepKind::Grow, s.window)
            }
            Phase::Bisect => {
                let (lo, hi) = (self.passed?, self.failed.as_ref()?.0);
                ((lo + hi) / 2.0, StepKind::Bisect, s.window)
            }
            Phase::Confirm => (self.candidate?, StepKind::Confirm, s.confirm_window),
            Phase::Overload(i) => (
                self.answer? * s.overload[i],
                StepKind::Overload,
                s.overload_window,
            ),
            Phase::Recovery => (
                self.answer? * s.recovery,
                StepKind::Recovery,
                s.overload_window,
            ),
        };
        let plan = StepPlan {
            rate,
            kind,
            warmup: s.warmup,
            window,
        };
        if s.max_time
            .is_some_and(|budget| elapsed + plan.duration() > budget)
        {
            // Past the answer, what does not fit is left out; before it, the budget is
            // what ended the search.
            if !matches!(self.phase, Phase::Overload(_) | Phase::Recovery) {
                self.limited = Some(LimitedBy::Time);
            }
            self.phase = Phase::Done;
            return None;
        }
        Some(plan)
    }

    /// Takes the verdict of the step `plan` (the last one [`Search::next_step`] gave).
    pub fn record(&mut self, plan: &StepPlan, verdict: Verdict) {
        let rate = plan.rate;
        if let Verdict::Generator(why) = verdict {
            // Nothing the generator could not drive says anything of the server; past the
            // answer, what was seen so far stands.
            if !matches!(self.phase, Phase::Overload(_) | Phase::Recovery) {
                self.limited = Some(LimitedBy::Generator);
            }
            self.generator = Some(why);
            self.phase = Phase::Done;
            return;
        }
        let passed = verdict == Verdict::Pass;
        match (self.phase, verdict) {
            (Phase::Grow | Phase::Bisect, Verdict::Pass) => {
                self.passed = Some(rate);
                if self.s.max_rate.is_some_and(|m| rate >= m) {
                    self.limited = Some(LimitedBy::MaxRate);
                    self.confirm(rate);
                } else if self.failed.is_some() {
                    self.bracket_or_confirm();
                }
            }
            (Phase::Grow | Phase::Bisect, Verdict::Fail(why)) => {
                if self.failed.as_ref().is_none_or(|(f, _)| rate < *f) {
                    self.failed = Some((rate, why));
                }
                if self.passed.is_none() {
                    // Not even the start rate met the SLOs.
                    self.limited = Some(LimitedBy::Slo);
                    self.phase = Phase::Done;
                } else {
                    self.bracket_or_confirm();
                }
            }
            (Phase::Confirm, verdict) => {
                if passed {
                    self.confirmed += 1;
                    if self.confirmed >= self.s.confirm {
                        self.answer = self.candidate;
                        self.limited.get_or_insert(LimitedBy::Slo);
                        self.phase = self.after(None);
                    }
                } else {
                    // The longer step failed: the answer moves one precision down.
                    if let Verdict::Fail(why) = verdict {
                        self.failed = Some((rate, why));
                    }
                    self.limited = None;
                    let lower = rate * (1.0 - self.s.precision);
                    if lower < self.s.start_rate {
                        self.limited = Some(LimitedBy::Slo);
                        self.passed = None;
                        self.phase = Phase::Done;
                    } else {
                        self.passed = Some(lower);
                        self.confirm(lower);
                    }
                }
            }
            (Phase::Overload(i), _) => self.phase = self.after(Some(i)),
            (Phase::Recovery, _) => self.phase = Phase::Done,
            (Phase::Done, _) => {}
            (_, Verdict::Generator(_)) => unreachable!("handled above"),
        }
    }

    /// Bisect on, or confirm once the bracket is narrow enough.
    fn bracket_or_confirm(&mut self) {
        match (self.passed, &self.failed) {
            (Some(lo), Some((hi, _))) if (hi - lo) / lo > self.s.precision => {
                self.phase = Phase::Bisect;
            }
            (Some(lo), _) => self.confirm(lo),
            (None, _) => self.phase = Phase::Done,
        }
    }

    fn confirm(&mut self, rate: f64) {
        self.candidate = Some(rate);
        self.confirmed = 0;
        self.phase = if self.s.confirm == 0 {
            self.answer = Some(rate);
            self.limited.get_or_insert(LimitedBy::Slo);
            self.after(None)
        } else {
            Phase::Confirm
        };
    }

    /// The phase after overload step `done` (`None`: after the confirmation).
    fn after(&self, done: Option<usize>) -> Phase {
        let next = done.map_or(0, |i| i + 1);
        if next < self.s.overload.len() {
            Phase::Overload(next)
        } else if !self.s.overload.is_empty() && done.is_some() {
            Phase::Recovery
        } else {
            Phase::Done
        }
    }

    /// What the search found so far.
    pub fn answer(&self) -> Answer {
        Answer {
            max_rate: self.answer,
            limited_by: self.limited.unwrap_or(LimitedBy::Time),
            passed: self.passed,
            failed: self.failed.clone(),
            generator: self.generator.clone(),
        }
    }
}

fn cap(rate: f64, max: Option<f64>) -> f64 {
    max.map_or(rate, |m| rate.min(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that meets the SLOs up to `capacity`, and a generator that drives up to
    /// `generator` (each optional step outcome can be forced by rate).
    struct Sim {
        capacity: f64,
        generator: f64,
        /// Confirmation steps fail above this rate (a longer step finds what a short one
        /// missed).
        confirm_capacity: f64,
    }

    impl Sim {
        fn new(capacity: f64) -> Sim {
            Sim {
                capacity,
                generator: f64::INFINITY,
                confirm_capacity: capacity,
            }
        }

        fn verdict(&self, plan: &StepPlan) -> Verdict {
            let limit = if plan.kind == StepKind::Confirm {
                self.confirm_capacity
            } else {
                self.capacity
            };
            if plan.rate > self.generator {
                Verdict::Generator("lag".into())
            } else if plan.rate <= limit {
                Verdict::Pass
            } else {
                Verdict::Fail(format!("p99 too high at {}", plan.rate))
            }
        }
    }

    /// Runs a search to its end; returns the answer and every step run.
    fn run(settings: SearchSettings, sim: &Sim) -> (Answer, Vec<StepPlan>) {
        let mut search = Search::new(settings).unwrap();
        let mut steps = Vec::new();
        let mut elapsed = Duration::ZERO;
        while let Some(plan) = search.next_step(elapsed) {
            elapsed += plan.duration() + DRAIN;
            search.record(&plan, sim.verdict(&plan));
            steps.push(plan);
            assert!(steps.len() < 100, "the search does not end: {steps:?}");
        }
        (search.answer(), steps)
    }

    fn no_overload() -> SearchSettings {
        SearchSettings {
            overload: vec![],
            ..SearchSettings::default()
        }
    }

    #[test]
    fn grows_then_bisects_to_the_precision_then_confirms() {
        let (a, steps) = run(no_overload(), &Sim::new(1_000.0));
        let rates: Vec<f64> = steps.iter().map(|s| s.rate).collect();
        // 10, 20, … 640 pass, 1,280 fails.
        assert_eq!(
            &rates[..8],
            &[10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0, 1280.0]
        );
        assert!(steps[8..steps.len() - 1]
            .iter()
            .all(|s| s.kind == StepKind::Bisect));
        let last = steps.last().unwrap();
        assert_eq!(last.kind, StepKind::Confirm);
        assert_eq!(last.window, Duration::from_secs(30));
        let found = a.max_rate.unwrap();
        assert!((950.0..=1_000.0).contains(&found), "{found}");
        assert_eq!(a.limited_by, LimitedBy::Slo);
        let (failed, why) = a.failed.unwrap();
        assert!(
            failed > 1_000.0 && (failed - found) / found <= 0.05,
            "{failed}"
        );
        assert!(why.contains("p99"));
    }

    #[test]
    fn a_start_rate_that_fails_finds_no_capacity() {
        let (a, steps) = run(SearchSettings::default(), &Sim::new(5.0));
        assert_eq!(steps.len(), 1);
        assert_eq!(a.max_rate, None);
        assert_eq!(a.passed, None);
        assert_eq!(a.limited_by, LimitedBy::Slo);
    }

    #[test]
    fn the_max_rate_bounds_the_search() {
        let settings = SearchSettings {
            max_rate: Some(500.0),
            ..no_overload()
        };
        let (a, steps) = run(settings, &Sim::new(f64::INFINITY));
        let rates: Vec<f64> = steps.iter().map(|s| s.rate).collect();
        assert_eq!(rates, [10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 500.0, 500.0]);
        assert_eq!(a.max_rate, Some(500.0));
        assert_eq!(a.limited_by, LimitedBy::MaxRate);
    }

    #[test]
    fn the_generator_s_limit_is_never_a_capacity() {
        let sim = Sim {
            generator: 300.0,
            ..Sim::new(1_000.0)
        };
        let (a, steps) = run(SearchSettings::default(), &sim);
        assert_eq!(steps.last().unwrap().rate, 320.0);
        assert_eq!(a.max_rate, None);
        assert_eq!(a.passed, Some(160.0));
        assert_eq!(a.limited_by, LimitedBy::Generator);
        assert_eq!(a.generator.as_deref(), Some("lag"));
    }

    #[test]
    fn a_failed_confirmation_moves_the_answer_down_and_confirms_again() {
        let sim = Sim {
            confirm_capacity: 900.0,
            ..Sim::new(1_000.0)
        };
        let (a, steps) = run(no_overload(), &sim);
        let confirms: Vec<f64> = steps
            .iter()
            .filter(|s| s.kind == StepKind::Confirm)
            .map(|s| s.rate)
            .collect();
        assert!(confirms.len() >= 2, "{confirms:?}");
        assert!(confirms.windows(2).all(|w| w[1] < w[0]), "{confirms:?}");
        let found = a.max_rate.unwrap();
        assert!((900.0 * 0.95..=900.0).contains(&found), "{found}");
        assert_eq!(a.limited_by, LimitedBy::Slo);
    }

    #[test]
    fn a_budget_ends_the_search_on_its_bracket() {
        let settings = SearchSettings {
            max_time: Some(Duration::from_secs(200)),
            ..SearchSettings::default()
        };
        let (a, steps) = run(settings, &Sim::new(1_000.0));
        // Steps of 20 s and 2 s pauses: 9 fit in 200 s, the last halving 640..1,280.
        assert_eq!(steps.len(), 9);
        assert_eq!(a.limited_by, LimitedBy::Time);
        assert_eq!(a.max_rate, None);
        assert_eq!(a.passed, Some(960.0));
        assert_eq!(a.failed.map(|f| f.0), Some(1280.0));
    }

    #[test]
    fn overload_steps_then_recovery_follow_the_answer() {
        let (a, steps) = run(SearchSettings::default(), &Sim::new(1_000.0));
        let c = a.max_rate.unwrap();
        let tail: Vec<(StepKind, f64)> = steps[steps.len() - 4..]
            .iter()
            .map(|s| (s.kind, s.rate / c))
            .collect();
        assert_eq!(
            tail,
            [
                (StepKind::Overload, 1.25),
                (StepKind::Overload, 1.5),
                (StepKind::Overload, 2.0),
                (StepKind::Recovery, 0.8),
            ]
        );
        assert!(steps[steps.len() - 4..]
            .iter()
            .all(|s| s.window == Duration::from_secs(10)));
        // Failing past the answer changes nothing of it.
        assert_eq!(a.limited_by, LimitedBy::Slo);
    }

    #[test]
    fn bad_settings_name_their_flag() {
        for (settings, flag) in [
            (
                SearchSettings {
                    start_rate: 0.0,
                    ..SearchSettings::default()
                },
                "--start-rate",
            ),
            (
                SearchSettings {
                    growth: 1.0,
                    ..SearchSettings::default()
                },
                "--growth",
            ),
            (
                SearchSettings {
                    precision: 1.5,
                    ..SearchSettings::default()
                },
                "--precision",
            ),
            (
                SearchSettings {
                    max_rate: Some(5.0),
                    ..SearchSettings::default()
                },
                "--max-rate",
            ),
            (
                SearchSettings {
                    overload: vec![0.5],
                    ..SearchSettings::default()
                },
                "--overload",
            ),
        ] {
            assert_eq!(Search::new(settings).unwrap_err().flag, flag);
        }
    }
}
