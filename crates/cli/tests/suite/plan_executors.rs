//! Scenarios with loads of their own (#19 item 1) through the real binary, against belier's
//! test server, which records every request it sees: 10 closed-loop browsing users beside
//! checkouts arriving at 20/s for 5 s. The server's count per path equals each scenario's
//! figures in the JSON report (and in `belier report` of the results file), checkout sees
//! 100 ± 1 arrivals, and thresholds scoped to a scenario pass and fail by its own figures
//! (exit 4, naming the failed one).

use std::process::Output;

use belier_testserver::{Config, Server};
use belier_testsupport::temp_dir as dir;
use serde_json::Value;

belier_testsupport::binary!(BELIER);

fn belier(args: &[&str]) -> Output {
    BELIER.output(args)
}

fn plan(url: &str, thresholds: &str) -> String {
    format!(
        r#"target: {url}
scenarios:
  - name: browse
    load: {{ vus: 10, duration: 5s }}
    steps:
      - name: page
        get: /browse
      - pause: 50ms
  - name: checkout
    load: {{ rate: 20, duration: 5s, max_vus: 50 }}
    steps:
      - name: pay
        post: /checkout
        json: {{ item: 7 }}
thresholds:
{thresholds}"#
    )
}

fn seen(server: &Server, path: &str) -> u64 {
    server
        .recent_requests()
        .iter()
        .filter(|r| r.target == path)
        .count() as u64
}

fn scenario<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["scenarios"]
        .as_array()
        .expect("a scenarios table")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no scenario {name} in {doc}"))
}

#[test]
fn each_scenario_runs_its_own_load_and_is_reported_and_judged_apart() {
    let server = Server::start(Config {
        record_requests: 20_000,
        ..Config::default()
    })
    .expect("test server starts");
    let d = dir("run");
    let plan_path = d.join("plan.yaml");
    let thresholds = "  - \"checkout: requests >= 99\"\n  - \"browse: requests < 100\"\n  - \"requests > 100\"\n";
    std::fs::write(&plan_path, plan(&server.url("/"), thresholds)).unwrap();
    let results = d.join("run.jsonl");
    let out = belier(&[
        "run",
        plan_path.to_str().unwrap(),
        "--output",
        "json",
        "--save",
        results.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Browse makes far more than 100 requests: its threshold fails, checkout's passes.
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON report: {e}; stderr: {stderr}"));
    let schema: Value = serde_json::from_str(belier_report::SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&doc), "the report validates");

    let (browse, checkout) = (scenario(&doc, "browse"), scenario(&doc, "checkout"));
    let browse_seen = seen(&server, "/browse");
    let checkout_seen = seen(&server, "/checkout");
    assert_eq!(browse["requests"].as_u64(), Some(browse_seen));
    assert_eq!(checkout["requests"].as_u64(), Some(checkout_seen));
    assert_eq!(server.counts().requests, browse_seen + checkout_seen);
    assert_eq!(
        doc["summary"]["requests"].as_u64(),
        Some(browse_seen + checkout_seen)
    );
    assert!(
        (99..=101).contains(&checkout_seen),
        "checkout arrivals: {checkout_seen}"
    );
    assert_eq!(checkout["arrivals"].as_u64(), Some(checkout_seen));
    assert!(browse["arrivals"].is_null());
    // 10 users, each a request then 50 ms of pause, for 5 s: about 1000, surely above 500.
    assert!(browse_seen > 500, "browse: {browse_seen}");
    assert!(browse["load"]
        .as_str()
        .unwrap()
        .contains("closed loop, 10 users"));
    assert!(checkout["load"]
        .as_str()
        .unwrap()
        .contains("open loop, 20 iterations/s"));

    let judged: Vec<(String, bool)> = doc["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["expression"].as_str().unwrap().to_string(),
                t["passed"] == true,
            )
        })
        .collect();
    assert!(browse["p99_us"].as_u64().unwrap() <= browse["p90_us"].as_u64().unwrap() * 1000);
    assert_eq!(judged[0], ("checkout: requests >= 99".into(), true));
    assert_eq!(judged[1], ("browse: requests < 100".into(), false));
    assert_eq!(judged[2], ("requests > 100".into(), true));

    // The results file keeps each scenario's figures: `belier report` shows them again.
    let again = belier(&["report", results.to_str().unwrap(), "--type", "json"]);
    let redone: Value = serde_json::from_slice(&again.stdout).expect("JSON re-report");
    assert_eq!(redone["scenarios"], doc["scenarios"]);
    let text = belier(&["report", results.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("\nScenarios  (each its own load"), "{text}");
    assert!(text.contains("\n  checkout "), "{text}");
}

#[test]
fn a_failed_scenario_threshold_exits_4_naming_it() {
    let server = Server::start(Config::default()).expect("test server starts");
    let d = dir("fail");
    let plan_path = d.join("plan.yaml");
    // Checkout makes about 100 requests: its own count fails a bound the run's total meets.
    let thresholds = "  - \"checkout: requests > 500\"\n  - \"browse: requests > 100\"\n";
    std::fs::write(&plan_path, plan(&server.url("/"), thresholds)).unwrap();
    let out = belier(&["run", plan_path.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{stdout}");
    assert!(stdout.contains("✗ checkout: requests > 500"), "{stdout}");
    assert!(stdout.contains("✓ browse: requests > 100"), "{stdout}");
}

#[test]
fn bad_scenario_loads_and_scopes_exit_2_naming_the_line() {
    let d = dir("bad");
    let plan_path = d.join("plan.yaml");
    let url = "http://127.0.0.1:9";
    std::fs::write(&plan_path, plan(url, "  - \"chekout: p99 < 1s\"\n")).unwrap();
    let out = belier(&["check", plan_path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("plan.yaml:16:5:"), "{stderr}");
    assert!(stderr.contains("did you mean `checkout`?"), "{stderr}");

    std::fs::write(&plan_path, plan(url, "  - p99 < 1s\n")).unwrap();
    let out = belier(&["run", plan_path.to_str().unwrap(), "--vus", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--vus"));

    let out = belier(&["capacity", plan_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("loads of their own"));

    let check = belier(&["check", plan_path.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(text.contains("loads: 2 at once"), "{text}");
    assert!(
        text.contains("    load: open loop, 20 iterations/s, at most 50 users"),
        "{text}"
    );
}
