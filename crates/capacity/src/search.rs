//! The search itself: which step to run next, and what the verdicts so far say.
//!
//! Grow the rate ×`growth` from `start_rate` until a step fails, then bisect between the last
//! pass and the first failure until they are within `precision` of each other; confirm the last
//! pass with longer steps (a failed confirmation moves the answer one precision down and
//! confirms again); then the overload steps past the answer and one recovery step below it.
//! A step that belier itself could not drive says nothing of the server: it is run again at
//! the same rate, and the last of the [`VOIDED_STEPS`] a search allows ends it.

use std::time::Duration;

use crate::slo::Verdict;

/// The default longest wait after a step for the server to drain: what one step left queued
/// at the server (requests of connections belier gave up on, a listen backlog) must not weigh
/// on the next, so the caller probes until the server answers at its idle latency again
/// ([`crate::drain`]), for at most this long.
pub const DRAIN: Duration = Duration::from_secs(30);

/// Voided steps (belier could not drive them: its own lateness, CPU, dropped arrivals) after
/// which the search ends on the generator's limit. On a shared VM or CI runner belier's lag
/// often spikes for a moment (a neighbour's burst), so the first voided step is run again at
/// the same rate rather than ending the search; a second says the limit is belier's own, and
/// more reruns would cost steps (of the `--max-time` budget) that say nothing either.
pub const VOIDED_STEPS: u32 = 2;

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
    /// The whole search's budget, steps and the waits between them.
    pub max_time: Option<Duration>,
    /// What a step costs beyond its warm-up and window (starting it, the grace its last
    /// requests get, queries after it): a step is planned only when this much more fits in
    /// the budget too.
    pub step_overhead: Duration,
    /// Overload steps, as multiples of the answer (empty: none).
    pub overload: Vec<f64>,
    /// Judged part of an overload step (and of the recovery step).
    pub overload_window: Duration,
    /// The recovery step's rate, as a share of the answer.
    pub recovery: f64,
    /// Levels are whole numbers (connections): every step's level is rounded, a bisection
    /// ends when no whole number lies inside the bracket, and each step differs from the
    /// level it derives from by at least one.
    pub whole: bool,
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
            step_overhead: Duration::ZERO,
            overload: vec![1.25, 1.5, 2.0],
            overload_window: Duration::from_secs(10),
            recovery: 0.8,
            whole: false,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// Every rate that passed a growing or bisecting step: after a failed confirmation, the
    /// highest of them below it is what passed (never a rate no step ran).
    passes: Vec<f64>,
    /// The rate being confirmed, and how many confirmations it passed.
    candidate: Option<f64>,
    confirmed: u32,
    answer: Option<f64>,
    limited: Option<LimitedBy>,
    generator: Option<String>,
    /// Steps belier could not drive so far, before the answer (see [`VOIDED_STEPS`]).
    voided: u32,
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
        if s.whole && s.start_rate.fract() != 0.0 {
            return bad("--start-rate", "must be a whole number of connections");
        }
        if s.whole && s.max_rate.is_some_and(|m| m.fract() != 0.0) {
            return bad("--max-rate", "must be a whole number of connections");
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
            passes: Vec::new(),
            candidate: None,
            confirmed: 0,
            answer: None,
            limited: None,
            generator: None,
            voided: 0,
        })
    }

    /// The settings.
    pub fn settings(&self) -> &SearchSettings {
        &self.s
    }

    /// Whether the search is over: no step will follow, so the caller need not wait for the
    /// server to drain.
    pub fn finished(&self) -> bool {
        self.phase == Phase::Done
    }

    /// The next step to run, `None` when the search is over. `elapsed` is the time spent so
    /// far (steps and waits): a step that would not fit in the budget with its overhead is not
    /// planned, and the search ends on the bracket it has.
    pub fn next_step(&mut self, elapsed: Duration) -> Option<StepPlan> {
        let s = &self.s;
        let (rate, kind, window) = match self.phase {
            Phase::Done => return None,
            Phase::Grow => {
                let rate = match self.passed {
                    None => s.start_rate,
                    Some(p) => self.above(p, p * s.growth),
                };
                (cap(rate, s.max_rate), StepKind::Grow, s.window)
            }
            Phase::Bisect => {
                let (lo, hi) = (self.passed?, self.failed.as_ref()?.0);
                let mid = (lo + hi) / 2.0;
                let mid = if s.whole {
                    mid.floor().max(lo + 1.0)
                } else {
                    mid
                };
                (mid, StepKind::Bisect, s.window)
            }
            Phase::Confirm => (self.candidate?, StepKind::Confirm, s.confirm_window),
            Phase::Overload(i) => {
                let c = self.answer?;
                (
                    self.above(c, c * s.overload[i]),
                    StepKind::Overload,
                    s.overload_window,
                )
            }
            Phase::Recovery => {
                let c = self.answer?;
                let rate = self.below(c, c * s.recovery);
                // One connection below a capacity of one is none: stay at one.
                let rate = if s.whole { rate.max(1.0) } else { rate };
                (rate, StepKind::Recovery, s.overload_window)
            }
        };
        let plan = StepPlan {
            rate,
            kind,
            warmup: s.warmup,
            window,
        };
        if s.max_time
            .is_some_and(|budget| elapsed + plan.duration() + s.step_overhead > budget)
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
            // Nothing the generator could not drive says anything of the server: the state
            // stays as it was, so the next step is the same one again, until the voided
            // steps are spent. Past the answer, what was seen so far stands.
            let searching = !matches!(self.phase, Phase::Overload(_) | Phase::Recovery);
            if searching {
                self.voided += 1;
                if self.voided < VOIDED_STEPS {
                    return;
                }
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
                self.passes.push(rate);
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
                    let lower = self.below(rate, rate * (1.0 - self.s.precision));
                    // What passed is a rate a step ran and passed below the failure, not the
                    // rate about to be confirmed (a budget may end the search before it runs).
                    self.passed = self
                        .passes
                        .iter()
                        .copied()
                        .filter(|&p| p < rate)
                        .reduce(f64::max);
                    if lower < self.s.start_rate {
                        self.limited = Some(LimitedBy::Slo);
                        self.passed = None;
                        self.phase = Phase::Done;
                    } else {
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
            (Some(lo), Some((hi, _)))
                if (hi - lo) / lo > self.s.precision && !(self.s.whole && hi - lo <= 1.0) =>
            {
                self.phase = Phase::Bisect;
            }
            (Some(lo), _) => self.confirm(lo),
            (None, _) => self.phase = Phase::Done,
        }
    }

    /// `want`, a level derived from `from` and above it: whole levels are rounded up and at
    /// least one above.
    fn above(&self, from: f64, want: f64) -> f64 {
        if self.s.whole {
            want.ceil().max(from + 1.0)
        } else {
            want
        }
    }

    /// `want`, a level derived from `from` and below it: whole levels are rounded down and
    /// at least one below.
    fn below(&self, from: f64, want: f64) -> f64 {
        if self.s.whole {
            want.floor().min(from - 1.0)
        } else {
            want
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
mod tests;
