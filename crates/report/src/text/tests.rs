use std::time::Duration;

use belier_results::{Model, RunInfo, StageInfo};

use super::*;
use crate::fixtures;

#[test]
fn golden_text_report() {
    let info = fixtures::info();
    let (totals, series) = fixtures::results();
    let report = fixtures::report(&info, &totals, &series);
    let got = render_text(&report);
    crate::golden::check("report.txt", &got);
}

#[test]
fn the_bound_names_what_ends_the_run() {
    let stage = |duration_s, target| StageInfo { duration_s, target };
    let info = RunInfo {
        requests: None,
        duration_s: None,
        ..fixtures::info()
    };
    assert_eq!(bound(&info), None);
    let with = |requests, duration_s, stages| RunInfo {
        requests,
        duration_s,
        stages,
        ..info.clone()
    };
    assert_eq!(
        bound(&with(Some(1000), None, vec![])).unwrap(),
        "1,000 requests"
    );
    assert_eq!(bound(&with(None, Some(1.5), vec![])).unwrap(), "1.5 s");
    assert_eq!(
        bound(&with(Some(5000), Some(30.0), vec![])).unwrap(),
        "5,000 requests or 30 s, whichever first"
    );
    // Stages end the run unless a shorter duration does.
    let stages = vec![stage(2.0, 3000.0), stage(2.5, 3000.0)];
    assert_eq!(
        bound(&with(None, None, stages.clone())).unwrap(),
        "4.5 s, the end of the stages"
    );
    assert_eq!(
        bound(&with(None, Some(3.0), stages.clone())).unwrap(),
        "3 s"
    );
    assert_eq!(
        bound(&with(Some(100), Some(60.0), stages)).unwrap(),
        "100 requests or 4.5 s, the end of the stages, whichever first"
    );
    let got = render_text(&fixtures::report(
        &info,
        &belier_stats::Recorder::new(),
        &belier_stats::Series::new(),
    ));
    assert!(got.contains("timeout 30 s, run until stopped\n"), "{got}");
}

#[test]
fn interrupted_and_empty_runs_still_render() {
    let info = fixtures::info();
    let totals = belier_stats::Recorder::new();
    let series = belier_stats::Series::new();
    let report = Report {
        elapsed: Duration::ZERO,
        interrupted: true,
        warnings: vec!["1 worker thread crashed".into()],
        ..fixtures::report(&info, &totals, &series)
    };
    let got = render_text(&report);
    assert!(got.contains("INTERRUPTED"));
    assert!(got.contains("WARNING: 1 worker thread crashed"));
    assert!(got.contains("(no responses)"));
    assert!(!got.contains("NaN"));
    assert!(
        got.contains("none: no response arrived, so there is no latency to report"),
        "{got}"
    );
    assert!(!got.contains("0.000 ms"), "no table of zeros: {got}");
    assert!(!got.contains("Phases"), "{got}");
}

#[test]
fn a_threshold_that_stopped_the_run_is_named_with_when_and_its_value() {
    let info = fixtures::info();
    let (totals, series) = fixtures::results();
    let outcome = |expression: &str, stopped_run| belier_results::ThresholdOutcome {
        expression: expression.into(),
        passed: false,
        actual: "p99 = 15.2 ms".into(),
        stopped_run,
    };
    let report = Report {
        thresholds: vec![
            outcome("requests >= 100000", None),
            outcome(
                "p99 < 5ms",
                Some(belier_results::ThresholdStop {
                    at_ms: 6_000,
                    actual: "p99 = 14.0 ms".into(),
                }),
            ),
        ],
        ..fixtures::report(&info, &totals, &series)
    };
    let got = render_text(&report);
    assert!(
        got.contains(
            "  STOPPED by threshold `p99 < 5ms` at 6.0 s (p99 = 14.0 ms); the figures cover the run so far\n"
        ),
        "{got}"
    );
    assert!(
        got.contains("  ✗ p99 < 5ms            actual p99 = 15.2 ms\n    stopped the run at 6.0 s: p99 = 14.0 ms then\n"),
        "{got}"
    );
    assert_eq!(got.matches("stopped the run").count(), 1, "{got}");
    assert!(!got.contains("INTERRUPTED"), "{got}");
}

#[test]
fn an_open_loop_counts_its_rates_per_second_of_the_schedule() {
    // 1,000 requests over a 1 s schedule in a run that took 1.5 s to read the last
    // answers: sent at 1,000/s of a 1,000/s target, not at 666.7/s.
    let mut info = fixtures::info();
    info.model = belier_results::Model::Open;
    info.schedule_s = Some(1.0);
    let (mut totals, series) = fixtures::results();
    for _ in 0..1000 {
        totals.record_scheduled();
    }
    let report = fixtures::report(&info, &totals, &series);
    let got = render_text(&report);
    assert!(
        got.contains("1,000   1,000.0/s sent, target 1,000.0/s"),
        "{got}"
    );
}

#[test]
fn golden_text_report_with_steps() {
    let run = crate::seeded::with_steps();
    let got = render_text(&run.report());
    crate::golden::check("report-steps.txt", &got);
}

#[test]
fn runs_without_users_show_no_step_tables() {
    let info = fixtures::info();
    let (totals, series) = fixtures::results();
    let report = fixtures::report(&info, &totals, &series);
    let got = render_text(&report);
    for absent in ["Steps", "Checks", "Iterations", "Thresholds", "plan "] {
        assert!(!got.contains(absent), "{absent}");
    }
}

#[test]
fn plan_runs_count_virtual_users_and_iterations() {
    let mut info = fixtures::info();
    info.plan = Some("shop.yaml".into());
    info.virtual_users = Some(30);
    info.threads = 2;
    info.stages = vec![
        belier_results::StageInfo {
            duration_s: 10.0,
            target: 30.0,
        },
        belier_results::StageInfo {
            duration_s: 5.0,
            target: 0.0,
        },
    ];
    assert_eq!(
        load_line(&info),
        "closed loop, virtual users 0 → 30 over 10 s → 0 over 5 s (peak 30), on 2 threads"
    );
    info.model = Model::Open;
    info.rate = Some(2.5);
    info.stages.clear();
    info.arrivals = Some("even".into());
    assert_eq!(
        load_line(&info),
        "iterations at 2.5/s (even arrivals), up to 30 virtual users, on 2 threads"
    );
    let (totals, series) = fixtures::results();
    let report = fixtures::report(&info, &totals, &series);
    let got = render_text(&report);
    let head = format!(
        "belier {}  plan shop.yaml → {}\n",
        info.belier_version, info.url
    );
    assert!(got.starts_with(&head), "{got}");
    assert!(!got.contains("connections on"), "{got}");
}

#[test]
fn one_thread_is_singular() {
    let mut info = fixtures::info();
    info.connections = 4;
    info.threads = 1;
    assert_eq!(load_line(&info), "4 connections on 1 thread");
    info.threads = 3;
    assert_eq!(load_line(&info), "4 connections on 3 threads");
}

/// A name of 65,536 characters or more made `{:<width$}` panic (std::fmt takes widths up to
/// 65,535), losing the report after the load was sent. Every name now renders in text and
/// Markdown, cut to a column; JSON keeps it whole.
#[test]
fn names_of_any_length_render_cut_in_text_and_markdown() {
    let long = |tag: &str| format!("{tag}{}end", "x".repeat(70_000));
    let mut run = crate::seeded::with_steps();
    run.info.steps[1] = long("step");
    run.info.checks[0] = long("check");
    run.info.metrics[1].name = long("metric");
    run.thresholds[0].expression = long("p99 < 200ms ");
    let report = run.report();
    let text = render_text(&report);
    let markdown = crate::render_markdown(&[crate::NamedReport {
        name: "run",
        report: &report,
    }]);
    for got in [&text, &markdown] {
        for tag in ["step", "check", "metric"] {
            let shown = crate::format::cut(&long(tag), crate::format::NAME_COLUMN).into_owned();
            assert!(got.contains(&shown), "{tag} not shown cut");
        }
    }
    // The text cuts a threshold too (to a wider column); the Markdown, unpadded, keeps it.
    assert!(text.lines().all(|l| l.chars().count() < 400));
    assert!(markdown.contains(&format!("200ms {}end", "x".repeat(70_000))));
    let json = crate::render_json(&report);
    for tag in ["step", "check", "metric"] {
        assert!(json.contains(&long(tag)), "{tag} not whole in JSON");
    }
}
