//! Thresholds that stop the run when they fail (`abort: true`), through the real binary
//! against belier's test server, whose answers take 100 ms while the plan asks `p99 < 50ms`:
//! at 50 iterations/s for 6 s, judged from 2 s on, the run stops at the first judgement, so
//! the server counts about 50 × 2 requests (at most 50 × 3), far below the whole run's 300;
//! the same threshold without `abort` lets the run send all 300. Exit 4 both ways, and the
//! report (live, and `belier report` of the results file) names the threshold that stopped
//! the run, when, and its value. Over `--spawn 2`, the coordinator judges the merged
//! intervals and stops both workers. As after a stop key, the plan's teardown still runs (once
//! per process that ran the load).

use std::path::{Path, PathBuf};
use std::process::Output;

use belier_testserver::{Config, Server};
use belier_testsupport::temp_dir as dir;
use serde_json::Value;

belier_testsupport::binary!(BELIER);

/// Iterations a second, and the run's planned length.
const RATE: u64 = 50;
const SECONDS: u64 = 6;
/// When the aborting threshold is first judged, seconds.
const AFTER: u64 = 2;

fn belier(args: &[&str]) -> Output {
    BELIER.output(args)
}

fn server() -> Server {
    Server::start(Config {
        threads: 2,
        record_requests: 1_000,
        ..Config::default()
    })
    .expect("test server starts")
}

/// Requests the server saw whose target starts with `path`.
fn seen(s: &Server, path: &str) -> u64 {
    let requests = s.recent_requests();
    requests
        .iter()
        .filter(|r| r.target.starts_with(path))
        .count() as u64
}

/// A plan at [`RATE`]/s for [`SECONDS`] against `s`, each answer 100 ms late, with
/// `threshold` (a line of the list).
fn plan(dir: &Path, s: &Server, threshold: &str) -> PathBuf {
    let path = dir.join("plan.yaml");
    let text = format!(
        "target: {}\nload: {{ rate: {RATE}, duration: {SECONDS}s, max_vus: 50 }}\n\
         scenarios:\n  - steps:\n      - get: /slow?delay=100ms\n\
         teardown:\n  - {{ name: bye, get: /bye }}\n\
         thresholds:\n  - requests >= 1\n  - {threshold}\n",
        s.url("/").trim_end_matches('/')
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const ABORTING: &str = "{ expr: \"p99 < 50ms\", abort: true, after: 2s }";

/// What a run stopped by [`ABORTING`] shows: the server's count within one interval after
/// `after`, the report's total equal to it, the threshold named with when and its value, and
/// `belier report` of `saved` saying the same, and each of `processes` running teardown.
fn assert_stopped(out: &Output, s: &Server, saved: &Path, processes: u64) {
    assert_eq!(out.status.code(), Some(4), "{}", stderr(out));
    assert_eq!(seen(s, "/bye"), processes, "{}", stderr(out));
    let sent = seen(s, "/slow");
    assert_eq!(s.counts().requests, sent + processes);
    assert!(
        (RATE * AFTER..=RATE * (AFTER + 1)).contains(&sent),
        "the server counted {sent} requests, not {RATE}/s × ({AFTER} s to {} s); the whole run is {}",
        AFTER + 1,
        RATE * SECONDS
    );
    let doc = json(out);
    assert_eq!(doc["summary"]["requests"], sent, "{}", stderr(out));
    assert_eq!(doc["interrupted"], false);
    let stopper = &doc["thresholds"][1];
    assert_eq!(stopper["expression"], "p99 < 50ms");
    assert_eq!(stopper["passed"], false, "the end's verdict judges it too");
    // Judged as the interval ending at 2 s settled.
    assert_eq!(stopper["stopped_run"]["at_ms"], AFTER * 1000, "{stopper}");
    // At least the server's delay, however late this busy machine read the answers.
    let value = stopper["stopped_run"]["actual"].as_str().unwrap();
    let ms: f64 = value
        .strip_prefix("p99 = ")
        .and_then(|v| v.strip_suffix(" ms"))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{value}"));
    assert!(ms >= 100.0, "{value}");
    assert!(doc["thresholds"][0].get("stopped_run").is_none());
    assert!(
        stderr(out).contains(&format!("threshold `p99 < 50ms` failed at 2.0 s ({value})")),
        "{}",
        stderr(out)
    );
    let text = belier(&["report", saved.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(
        shown.contains(&format!(
            "STOPPED by threshold `p99 < 50ms` at 2.0 s ({value})"
        )),
        "{shown}"
    );
    assert!(shown.contains("stopped the run at 2.0 s"), "{shown}");
    assert!(!shown.contains("INTERRUPTED"), "{shown}");
}

#[test]
fn a_failing_threshold_with_abort_stops_the_run_after_its_delay() {
    let s = server();
    let dir = dir("one");
    let plan = plan(&dir, &s, ABORTING);
    let saved = dir.join("run.jsonl");
    let out = belier(&[
        "run",
        plan.to_str().unwrap(),
        "--output",
        "json",
        "--save",
        saved.to_str().unwrap(),
    ]);
    assert_stopped(&out, &s, &saved, 1);
    // Judged again from the file, the threshold still stopped the run, and fails it.
    let again = belier(&[
        "report",
        saved.to_str().unwrap(),
        "--thresholds-from",
        plan.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(4), "{}", stderr(&again));
    let shown = String::from_utf8_lossy(&again.stdout);
    assert!(
        shown.contains("STOPPED by threshold `p99 < 50ms` at 2.0 s"),
        "{shown}"
    );
}

#[test]
fn the_same_threshold_without_abort_lets_the_run_end() {
    let s = server();
    let dir = dir("end");
    let plan = plan(&dir, &s, "p99 < 50ms");
    let out = belier(&["run", plan.to_str().unwrap(), "--output", "json"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let doc = json(&out);
    let sent = seen(&s, "/slow");
    assert_eq!(seen(&s, "/bye"), 1);
    assert_eq!(doc["summary"]["requests"], sent);
    assert_eq!(sent, RATE * SECONDS, "{}", doc["open_loop"]);
    assert_eq!(doc["thresholds"][1]["passed"], false);
    assert!(doc["thresholds"][1].get("stopped_run").is_none());
    assert!(!stderr(&out).contains("and stopped the run"));
}

#[test]
fn over_two_workers_the_coordinator_stops_both() {
    let s = server();
    let dir = dir("spawn");
    let plan = plan(&dir, &s, ABORTING);
    let (saved, own) = (dir.join("merged.jsonl"), dir.join("workers"));
    let out = belier(&[
        "run",
        plan.to_str().unwrap(),
        "--spawn",
        "2",
        "--output",
        "json",
        "--save",
        saved.to_str().unwrap(),
        "--worker-results",
        own.to_str().unwrap(),
    ]);
    assert_stopped(&out, &s, &saved, 2);
    // Each worker stopped too, with its half of what the server counted so far.
    let sent = seen(&s, "/slow");
    let mut total = 0;
    for i in 1..=2 {
        let file = own.join(format!("worker-{i}.jsonl"));
        let r = belier(&["report", "--type", "json", file.to_str().unwrap()]);
        let r = json(&r);
        let seconds = r["summary"]["duration_s"].as_f64().unwrap();
        assert!(seconds < (AFTER + 1) as f64, "worker {i} ran {seconds} s");
        let requests = r["summary"]["requests"].as_u64().unwrap();
        assert!(
            requests.abs_diff(sent / 2) <= 2,
            "worker {i}: {requests} of {sent}"
        );
        total += requests;
    }
    assert_eq!(total, sent);
}
