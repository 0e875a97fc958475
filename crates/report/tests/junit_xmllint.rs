//! The JUnit report validates against `schema/junit.xsd` with an independent validator
//! (libxml2's `xmllint`), and shows a failed threshold as a `<failure>`.
//!
//! xmllint is Debian's `libxml2-utils` (`scripts/install-test-deps`). Without it the test says
//! it skipped, except under CI (`CI=true`), where a missing validator is a failure.

use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use belier_report::{render_junit, Model, NamedReport, Report, RunInfo, ThresholdOutcome};
use belier_stats::{Collector, ErrorKind, Gauges, Outcome, Recorder, Sample, Series};

const SCHEMA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/junit.xsd");

fn info() -> RunInfo {
    RunInfo {
        belier_version: "0.1.0".into(),
        url: "http://127.0.0.1:8080/?a=1&b=<2>".into(),
        address: "127.0.0.1:8080".into(),
        method: "GET".into(),
        connections: 10,
        threads: 1,
        keepalive: true,
        protocol: "HTTP/1.1".into(),
        requests: None,
        duration_s: Some(2.0),
        schedule_s: None,
        timeout_s: 2.0,
        host_cores: 2,
        started_at: "2026-11-22T10:00:00Z".into(),
        model: Model::Closed,
        rate: None,
        stages: vec![],
        ramp_up_s: None,
        arrivals: None,
        seed: None,
        max_connections: None,
        max_in_flight: None,
        timer_slack_us: None,
        shards: 1,
        plan: Some("plans/shop.yaml".into()),
        virtual_users: Some(10),
        pacing_s: None,
        steps: vec!["login".into()],
        checks: vec![],
    }
}

/// Two seeded one-second intervals, one request in 25 a timeout.
fn results() -> (Recorder, Series) {
    let mut c = Collector::new(1, Duration::from_secs(1));
    let t = Instant::now();
    for second in 0..2u64 {
        let mut r = Recorder::new();
        for n in 0..500u64 {
            let outcome = if n % 25 == 0 {
                Outcome::Error(ErrorKind::Timeout)
            } else {
                Outcome::Response { status: 200 }
            };
            r.record(&Sample {
                intended: t,
                dispatched: t,
                ready: None,
                connected: None,
                handshaken: None,
                sent: t,
                first_byte: None,
                done: t + Duration::from_micros(500 + n * 5),
                outcome,
                bytes_in: 200,
                bytes_out: 60,
            });
        }
        r.record_connection();
        c.add(0, second, &r, Gauges::default());
    }
    c.finish_worker(0, Duration::from_secs(2));
    c.finish()
}

/// Whether xmllint is here to run the test; outside CI a missing one skips it (saying so),
/// under CI it fails it.
fn have_xmllint() -> bool {
    if Command::new("xmllint").arg("--version").output().is_ok() {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("xmllint is missing: CI must run scripts/install-test-deps before the tests");
    }
    // Written straight to stderr so the harness does not swallow it.
    let _ = writeln!(
        std::io::stderr(),
        "junit_xmllint: skipped: xmllint not installed (apt-get install -y libxml2-utils, or \
         scripts/install-test-deps)"
    );
    false
}

/// Runs `xmllint --noout --schema junit.xsd` on `xml`; returns (exit success, stderr).
fn validate(name: &str, xml: &str) -> (bool, String) {
    let file = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("junit-{}-{name}.xml", std::process::id()));
    std::fs::write(&file, xml).unwrap();
    let out = Command::new("xmllint")
        .args(["--noout", "--schema", SCHEMA])
        .arg(&file)
        .output()
        .expect("xmllint runs");
    let _ = std::fs::remove_file(&file);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn report<'a>(
    info: &'a RunInfo,
    results: &'a (Recorder, Series),
    thresholds: Vec<ThresholdOutcome>,
    interrupted: bool,
) -> Report<'a> {
    Report {
        info,
        totals: &results.0,
        series: &results.1,
        elapsed: Duration::from_secs(2),
        interrupted,
        warnings: vec![],
        thresholds,
        changes: vec![],
        host: None,
    }
}

#[test]
fn junit_validates_with_xmllint_and_a_failed_threshold_is_a_failure() {
    if !have_xmllint() {
        return;
    }
    let (info, results) = (info(), results());
    let thresholds = vec![
        ThresholdOutcome {
            expression: "p99 < 200ms".into(),
            passed: true,
            actual: "3.0 ms".into(),
        },
        ThresholdOutcome {
            expression: "login: error_rate < 1%".into(),
            passed: false,
            actual: "4.00 %".into(),
        },
    ];
    let judged = report(&info, &results, thresholds, false);
    // A run without thresholds, stopped early: its one case fails.
    let stopped = report(&info, &results, vec![], true);
    let runs = [
        NamedReport {
            name: "shop <v2> & \"tuned\" 'fast'",
            report: &judged,
        },
        NamedReport {
            name: "stopped",
            report: &stopped,
        },
    ];
    let xml = render_junit(&runs);
    let (valid, stderr) = validate("runs", &xml);
    assert!(valid, "xmllint rejected the JUnit report: {stderr}\n{xml}");

    assert_eq!(xml.matches("<testsuite ").count(), 2, "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 3, "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 2, "{xml}");
    let failed = r#"<testcase classname="belier.thresholds" name="login: error_rate &lt; 1%" time="0">
      <failure message="actual 4.00 %, limit login: error_rate &lt; 1%" type="threshold">"#;
    assert!(xml.contains(failed), "{xml}");
    assert!(
        xml.contains(r#"<testcase classname="belier.thresholds" name="p99 &lt; 200ms" time="0"/>"#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<failure message="the run was interrupted"#),
        "{xml}"
    );

    // The schema is not a formality: a suite without its counts is rejected.
    let broken = xml.replacen(r#" tests="2" failures="1""#, "", 1);
    assert_ne!(broken, xml);
    let (valid, _) = validate("broken", &broken);
    assert!(
        !valid,
        "xmllint accepted a testsuite without tests and failures"
    );
}
