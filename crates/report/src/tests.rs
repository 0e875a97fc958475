//! Unit tests of the report model (lib.rs): rates, spans and run information.

use std::time::Duration;

use belier_stats::{Collector, Gauges, Recorder, Series};

use super::*;

#[test]
fn run_info_from_before_http2_reads_as_http1() {
    let mut v = serde_json::to_value(super::fixtures::info()).unwrap();
    v.as_object_mut().unwrap().remove("protocol");
    let info: belier_results::RunInfo = serde_json::from_value(v).unwrap();
    assert_eq!(info.protocol, "HTTP/1.1");
}

#[test]
fn run_info_from_before_scripted_users_reads_without_them() {
    let mut v = serde_json::to_value(super::fixtures::info()).unwrap();
    for key in ["plan", "virtual_users", "pacing_s", "steps", "checks"] {
        v.as_object_mut().unwrap().remove(key);
    }
    let info: belier_results::RunInfo = serde_json::from_value(v).unwrap();
    assert_eq!(info, super::fixtures::info());
}

/// An open loop of 1,000 arrivals, all sent, whose run lasted `elapsed`.
fn open_rates(schedule_s: Option<f64>, duration_s: Option<f64>, elapsed: f64) -> (f64, f64) {
    let mut info = fixtures::info();
    info.model = Model::Open;
    info.schedule_s = schedule_s;
    info.duration_s = duration_s;
    let mut r = Recorder::new();
    for _ in 0..1000 {
        r.record_scheduled();
    }
    let mut c = Collector::new(1, Duration::from_secs(1));
    c.add(0, 0, &r, Gauges::default());
    c.finish_worker(0, Duration::from_secs_f64(elapsed));
    let (totals, series) = c.finish();
    let report = Report {
        scenarios: Vec::new(),
        info: &info,
        totals: &totals,
        series: &series,
        elapsed: Duration::from_secs_f64(elapsed),
        interrupted: false,
        warnings: vec![],
        thresholds: vec![],
        changes: vec![],
        host: None,
    };
    (report.target_rate(), report.schedule_span().as_secs_f64())
}

#[test]
fn the_target_rate_is_the_configured_one() {
    let stage = |duration_s, target| StageInfo { duration_s, target };
    // Constant: the rate, whatever the span.
    assert_eq!(mean_rate(1.0, &[], 0.0, 3.5), 1.0);
    assert_eq!(mean_rate(250.0, &[], 7.0, 2.0), 250.0);
    // 0 → 100/s over 2 s, hold 100/s for 2 s: 100 arrivals, then 200.
    let ramp = [stage(2.0, 100.0), stage(2.0, 100.0)];
    assert!((mean_rate(0.0, &ramp, 0.0, 2.0) - 50.0).abs() < 1e-9);
    assert!((mean_rate(0.0, &ramp, 0.0, 4.0) - 75.0).abs() < 1e-9);
    assert!((mean_rate(0.0, &ramp, 1.0, 1.0) - 75.0).abs() < 1e-9);
    assert!((mean_rate(0.0, &ramp, 3.0, 1.0) - 100.0).abs() < 1e-9);
    // A step: 10/s, then straight to 50/s (a stage of no length), held 1 s.
    let step = [stage(0.0, 50.0), stage(1.0, 50.0)];
    assert!((mean_rate(10.0, &step, 0.0, 1.0) - 50.0).abs() < 1e-9);
    // A results file's stage of negative or NaN length is a step too, not a panic.
    assert_eq!(mean_rate(10.0, &[stage(-1.0, 200.0)], 0.0, 1.0), 200.0);
    assert_eq!(mean_rate(10.0, &[stage(f64::NAN, 200.0)], 0.0, 1.0), 200.0);

    // In a report: 4 arrivals in 3.5 s at 1/s read as 1/s.
    let (info, totals, series) = open_loop(1.0, 3.5, 4);
    let report = Report {
        elapsed: Duration::from_secs_f64(3.5),
        ..fixtures::report(&info, &totals, &series)
    };
    assert_eq!(report.target_rate(), 1.0);
}

/// An open loop at `rate` whose schedule of `schedule_s` made `arrivals` due, all in one
/// interval: its information and what it recorded.
fn open_loop(rate: f64, schedule_s: f64, arrivals: u64) -> (RunInfo, Recorder, Series) {
    let mut info = fixtures::info();
    info.model = Model::Open;
    info.rate = Some(rate);
    info.schedule_s = Some(schedule_s);
    let mut r = Recorder::new();
    for _ in 0..arrivals {
        r.record_scheduled();
    }
    let mut c = Collector::new(1, Duration::from_secs(1));
    c.add(0, 0, &r, Gauges::default());
    c.finish_worker(0, Duration::from_secs_f64(schedule_s));
    let (totals, series) = c.finish();
    (info, totals, series)
}

#[test]
fn a_steered_rate_s_target_is_what_its_schedule_made_due() {
    // 200/s for 2 s, then set to 400/s for 2 s: 1,200 arrivals due in 4 s. The configured
    // 200/s is not the target of this run (the verdict read "273.8/s of 200/s sent").
    let (info, totals, series) = open_loop(200.0, 4.0, 1200);
    let set = Change {
        at_s: 2.0,
        what: ChangeKind::Rate,
        level: 400.0,
        from: 200.0,
    };
    let report = |changes: Vec<Change>| Report {
        changes,
        elapsed: Duration::from_secs(4),
        ..fixtures::report(&info, &totals, &series)
    };
    assert_eq!(report(vec![set]).target_rate(), 300.0);
    assert_eq!(report(vec![set]).sent_rate(), 300.0);
    // Unsteered, the configured rate stays the target (and 300/s were sent against it).
    assert_eq!(report(vec![]).target_rate(), 200.0);
    // A closed loop's changes (connections, users) do not touch an open loop's figure.
    let users = Change {
        what: ChangeKind::Users,
        ..set
    };
    assert_eq!(report(vec![users]).target_rate(), 200.0);
}

#[test]
fn open_loop_rates_are_per_second_of_the_schedule_not_of_the_drain() {
    // A 1 s schedule whose last queued requests kept the run going for another second.
    assert_eq!(open_rates(Some(1.0), Some(5.0), 2.0), (1000.0, 1.0));
    // Files from before the schedule was recorded: the duration bound.
    assert_eq!(open_rates(None, Some(1.0), 2.0), (1000.0, 1.0));
    // Stopped early: the schedule covered only the elapsed time.
    assert_eq!(open_rates(Some(4.0), None, 0.5), (2000.0, 0.5));
    // Neither known (a request budget): the elapsed time.
    assert_eq!(open_rates(None, None, 2.0), (500.0, 2.0));
}
