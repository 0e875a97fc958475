//! The search against simulated servers: growth, bisection, confirmation, budget, the generator's limit.

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

/// The simulated wait after each step for the server to drain.
const PAUSE: Duration = Duration::from_secs(2);

/// Runs a search to its end; returns the answer and every step run.
fn run(settings: SearchSettings, sim: &Sim) -> (Answer, Vec<StepPlan>) {
    let mut search = Search::new(settings).unwrap();
    let mut steps = Vec::new();
    let mut elapsed = Duration::ZERO;
    while let Some(plan) = search.next_step(elapsed) {
        elapsed += plan.duration() + PAUSE;
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
    // 320/s voided, run again, voided again.
    let last: Vec<f64> = steps[steps.len() - 3..].iter().map(|s| s.rate).collect();
    assert_eq!(last, [160.0, 320.0, 320.0]);
    assert_eq!(a.max_rate, None);
    assert_eq!(a.passed, Some(160.0));
    assert_eq!(a.limited_by, LimitedBy::Generator);
    assert_eq!(a.generator.as_deref(), Some("lag"));
}

/// Runs a search to its end, voiding the steps whose numbers (from 0) are in `voided` with
/// the generator's lag; returns the answer and every step run.
fn run_voiding(settings: SearchSettings, sim: &Sim, voided: &[usize]) -> (Answer, Vec<StepPlan>) {
    let mut search = Search::new(settings).unwrap();
    let mut steps = Vec::new();
    while let Some(plan) = search.next_step(Duration::ZERO) {
        let verdict = if voided.contains(&steps.len()) {
            Verdict::Generator("belier's own lag p99 9.2 ms".into())
        } else {
            sim.verdict(&plan)
        };
        search.record(&plan, verdict);
        steps.push(plan);
        assert!(steps.len() < 100, "the search does not end: {steps:?}");
    }
    (search.answer(), steps)
}

#[test]
fn a_voided_step_is_run_again_at_the_same_rate() {
    // Found beside `stress-ng --cpu 1`: one bisecting step voided by a passing stall of
    // belier's ended the search with no capacity claimed.
    let (clean, clean_steps) = run(no_overload(), &Sim::new(1_000.0));
    for at in [0, 3, 9, clean_steps.len() - 1] {
        let (a, steps) = run_voiding(no_overload(), &Sim::new(1_000.0), &[at]);
        assert_eq!(steps[at + 1], steps[at], "voided step {at}: {steps:?}");
        // The void moved nothing: the search is the clean one with the step run twice.
        let mut without = steps.clone();
        without.remove(at);
        assert_eq!(without, clean_steps, "voided step {at}");
        assert_eq!(a, clean, "voided step {at}");
        assert_eq!(a.generator, None);
    }
}

#[test]
fn a_voided_step_counts_as_neither_a_pass_nor_a_fail() {
    let mut search = Search::new(no_overload()).unwrap();
    for verdict in [Verdict::Pass, Verdict::Pass, Verdict::Fail("p99".into())] {
        let plan = search.next_step(Duration::ZERO).unwrap();
        search.record(&plan, verdict);
    }
    // 10 and 20 passed, 40 failed: bisecting at 30.
    let before = search.answer();
    let plan = search.next_step(Duration::ZERO).unwrap();
    assert_eq!((plan.kind, plan.rate), (StepKind::Bisect, 30.0));
    search.record(&plan, Verdict::Generator("lag".into()));
    assert_eq!(search.answer(), before);
    assert!(!search.finished());
    assert_eq!(search.next_step(Duration::ZERO), Some(plan));
}

#[test]
fn the_last_voided_step_allowed_ends_the_search_on_what_passed() {
    // Voids apart from each other spend the same allowance.
    let (a, steps) = run_voiding(no_overload(), &Sim::new(1_000.0), &[2, 5]);
    assert_eq!(steps.len(), 6, "{steps:?}");
    assert_eq!(VOIDED_STEPS, 2);
    assert_eq!(a.limited_by, LimitedBy::Generator);
    assert_eq!(a.max_rate, None);
    // 10, 20, 40 (voided, run again), 40, 80 passed; 160 voided.
    assert_eq!(a.passed, Some(80.0));
    assert_eq!(a.failed, None);
    assert_eq!(a.generator.as_deref(), Some("belier's own lag p99 9.2 ms"));
}

#[test]
fn a_rerun_must_fit_in_the_budget() {
    // Steps of 20 s: the third (40/s) is voided at 60 s, and its rerun does not fit in 70 s.
    let settings = SearchSettings {
        max_time: Some(Duration::from_secs(70)),
        ..no_overload()
    };
    let mut search = Search::new(settings).unwrap();
    let mut elapsed = Duration::ZERO;
    let mut steps = Vec::new();
    while let Some(plan) = search.next_step(elapsed) {
        elapsed += plan.duration();
        let verdict = if steps.len() == 2 {
            Verdict::Generator("lag".into())
        } else {
            Verdict::Pass
        };
        search.record(&plan, verdict);
        steps.push(plan.rate);
    }
    assert_eq!(steps, [10.0, 20.0, 40.0]);
    let a = search.answer();
    assert_eq!(a.limited_by, LimitedBy::Time);
    assert_eq!(a.passed, Some(20.0));
}

#[test]
fn past_the_answer_a_voided_step_ends_the_search_as_before() {
    let mut search = Search::new(SearchSettings::default()).unwrap();
    let sim = Sim::new(1_000.0);
    while let Some(plan) = search.next_step(Duration::ZERO) {
        if plan.kind == StepKind::Overload {
            search.record(&plan, Verdict::Generator("lag".into()));
            break;
        }
        search.record(&plan, sim.verdict(&plan));
    }
    assert!(search.finished());
    let a = search.answer();
    assert_eq!(a.limited_by, LimitedBy::Slo);
    assert!(a.max_rate.is_some());
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
fn the_budget_bounds_the_search_with_its_overheads_and_drain_waits() {
    // Found on main: --max-time 300s ran 305 s, the pause before each step and the grace
    // after it uncounted. On a simulated clock, each step costs its length, up to its
    // overhead more, and a drain wait after it that the caller cuts at the budget.
    for (budget_s, drain_s) in [(60, 0), (60, 7), (300, 4), (300, 30), (45, 1)] {
        let budget = Duration::from_secs(budget_s);
        let overhead = Duration::from_millis(1_500);
        let mut search = Search::new(SearchSettings {
            max_time: Some(budget),
            step_overhead: overhead,
            warmup: Duration::from_secs(1),
            window: Duration::from_secs(3),
            confirm_window: Duration::from_secs(5),
            overload_window: Duration::from_secs(3),
            ..SearchSettings::default()
        })
        .unwrap();
        let sim = Sim::new(300.0);
        let mut elapsed = Duration::ZERO;
        while let Some(plan) = search.next_step(elapsed) {
            elapsed += plan.duration() + overhead;
            search.record(&plan, sim.verdict(&plan));
            if !search.finished() {
                let left = budget.saturating_sub(elapsed);
                elapsed += Duration::from_secs(drain_s).min(left);
            }
        }
        assert!(
            elapsed <= budget,
            "{budget_s} s, drain {drain_s} s: {elapsed:?}"
        );
    }
}

#[test]
fn what_passed_is_always_a_rate_a_step_ran() {
    // A confirmation fails and the budget ends the search before the rate one precision
    // below it runs: what passed is the last rate that ran and passed below the failure.
    let sim = Sim {
        confirm_capacity: 900.0,
        ..Sim::new(1_000.0)
    };
    let mut search = Search::new(no_overload()).unwrap();
    let mut ran = Vec::new();
    while let Some(plan) = search.next_step(Duration::ZERO) {
        let verdict = sim.verdict(&plan);
        if verdict == Verdict::Pass {
            ran.push(plan.rate);
        }
        search.record(&plan, verdict);
        if plan.kind == StepKind::Confirm {
            break;
        }
    }
    let passed = search.answer().passed.unwrap();
    assert!(ran.contains(&passed), "{passed} never ran: {ran:?}");
    assert!(passed < 1_000.0);
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

fn whole(start: f64) -> SearchSettings {
    SearchSettings {
        start_rate: start,
        whole: true,
        ..SearchSettings::default()
    }
}

#[test]
fn whole_levels_find_the_exact_number_of_connections() {
    // 1, 2, 4, …, 64 pass, 128 fails; bisection on whole numbers ends on 100 | 101 even
    // though 5 % of 100 would stop it at 97 | 101, since no whole number is skipped below 5 %.
    for capacity in [1.0, 2.0, 3.0, 37.0, 100.0] {
        let (answer, steps) = run(whole(1.0), &Sim::new(capacity));
        assert_eq!(answer.limited_by, LimitedBy::Slo, "{capacity}: {steps:?}");
        let found = answer.max_rate.unwrap();
        assert!(
            found <= capacity && found >= capacity * 0.95 - 1.0,
            "{capacity}: found {found}: {steps:?}"
        );
        for s in &steps {
            assert_eq!(s.rate.fract(), 0.0, "{s:?}");
            assert!(s.rate >= 1.0, "{s:?}");
        }
        // Every step is a new level until the confirmation and past it.
        let searched: Vec<f64> = steps
            .iter()
            .filter(|s| matches!(s.kind, StepKind::Grow | StepKind::Bisect))
            .map(|s| s.rate)
            .collect();
        let mut distinct = searched.clone();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        assert_eq!(distinct.len(), searched.len(), "{capacity}: {searched:?}");
    }
    // Small capacities are found exactly: no whole number lies between n and n + 1.
    for capacity in [1.0, 2.0, 3.0, 5.0, 9.0] {
        let (answer, _) = run(whole(1.0), &Sim::new(capacity));
        assert_eq!(answer.max_rate, Some(capacity));
    }
}

#[test]
fn whole_overload_and_recovery_steps_differ_from_the_answer() {
    let (answer, steps) = run(
        SearchSettings {
            overload: vec![1.25, 1.5, 2.0],
            ..whole(1.0)
        },
        &Sim::new(2.0),
    );
    assert_eq!(answer.max_rate, Some(2.0));
    let past: Vec<(StepKind, f64)> = steps
        .iter()
        .filter(|s| matches!(s.kind, StepKind::Overload | StepKind::Recovery))
        .map(|s| (s.kind, s.rate))
        .collect();
    assert_eq!(
        past,
        vec![
            (StepKind::Overload, 3.0),
            (StepKind::Overload, 3.0),
            (StepKind::Overload, 4.0),
            (StepKind::Recovery, 1.0),
        ]
    );
}

#[test]
fn a_single_connection_that_fails_its_confirmation_ends_with_no_capacity() {
    let sim = Sim {
        confirm_capacity: 0.0,
        ..Sim::new(1.0)
    };
    let (answer, steps) = run(whole(1.0), &sim);
    assert_eq!(answer.max_rate, None, "{steps:?}");
    assert_eq!(answer.limited_by, LimitedBy::Slo);
}

#[test]
fn whole_levels_must_be_whole() {
    let e = Search::new(whole(2.5)).unwrap_err();
    assert_eq!(e.flag, "--start-rate");
    let e = Search::new(SearchSettings {
        max_rate: Some(10.5),
        ..whole(1.0)
    })
    .unwrap_err();
    assert_eq!(e.flag, "--max-rate");
}
