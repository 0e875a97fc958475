//! A plan of several scenarios, some with loads of their own, over two spawned workers: the
//! per-scenario table (requests, failures, iterations, arrivals, loads, percentiles) is the
//! one-machine run's, merged from what each worker's executors recorded, and thresholds
//! scoped to a scenario are judged on the merged figures (each worker's share alone would
//! fail them). Counted per path at the built-in target.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use belier_testserver::{Config, Server};
use belier_testsupport::temp_dir;
use serde_json::Value;

belier_testsupport::binary!(BELIER);

/// Browsing arrives at 40/s for 2 s (80 arrivals); 30 checkouts over 4 users, each answered
/// after 20 ms; search and home share the plan's load of 20 iterations over 2 users.
fn plan(url: &str) -> String {
    format!(
        r#"target: {url}
load: {{ vus: 2, iterations: 20 }}
scenarios:
  - name: browse
    load: {{ rate: 40, duration: 2s, max_vus: 20 }}
    steps:
      - get: /browse
  - name: checkout
    load: {{ vus: 4, iterations: 30 }}
    steps:
      - name: pay
        post: /checkout?delay=20ms
  - name: search
    steps:
      - get: /search
  - name: home
    steps:
      - get: /home
thresholds:
  - "checkout: requests == 30"
  - "checkout: p50 >= 20ms"
  - "browse: requests == 80"
  - "checkout: p99 < 300ms"
"#
    )
}

fn recording_server() -> Server {
    Server::start(Config {
        record_requests: 1000,
        ..Config::default()
    })
    .unwrap()
}

/// Requests the server saw, by target.
fn per_path(server: &Server) -> BTreeMap<String, u64> {
    let mut seen = BTreeMap::new();
    for r in server.recent_requests() {
        *seen.entry(r.target).or_insert(0) += 1;
    }
    seen
}

/// The run of `plan` with `extra` flags: its JSON report and the server's counts per path.
fn run(dir: &Path, extra: &[&str]) -> (Value, BTreeMap<String, u64>) {
    let server = recording_server();
    let plan_path = dir.join("plan.yaml");
    std::fs::write(&plan_path, plan(&server.url(""))).unwrap();
    let mut args = vec!["run", plan_path.to_str().unwrap(), "--output", "json"];
    args.extend(extra);
    let out = BELIER.ok(&args);
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    (report, per_path(&server))
}

/// The scenarios table without what depends on the run's timing (rates, percentiles).
fn counted(report: &Value) -> Vec<Value> {
    report["scenarios"]
        .as_array()
        .unwrap_or_else(|| panic!("no scenarios table: {report}"))
        .iter()
        .map(|s| {
            let mut s = s.clone();
            let fields = s.as_object_mut().unwrap();
            for timed in ["rate", "p50_us", "p90_us", "p99_us"] {
                fields.remove(timed);
            }
            s
        })
        .collect()
}

fn scenario<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no scenario {name}: {report}"))
}

#[test]
fn two_workers_give_the_one_machine_runs_per_scenario_table_and_verdict() {
    let dir = temp_dir("run");
    let (alone, alone_seen) = run(&dir, &[]);
    let merged = dir.join("merged.jsonl");
    let own = dir.join("own");
    let (spread, spread_seen) = run(
        &dir,
        &[
            "--spawn",
            "2",
            "--save",
            merged.to_str().unwrap(),
            "--worker-results",
            own.to_str().unwrap(),
        ],
    );

    // The server saw the same requests per path, and each run's table says so.
    assert_eq!(spread_seen, alone_seen);
    assert_eq!(spread_seen["/browse"], 80, "{spread_seen:?}");
    assert_eq!(spread_seen["/checkout?delay=20ms"], 30, "{spread_seen:?}");
    let shared = spread_seen["/search"] + spread_seen["/home"];
    assert_eq!(shared, 20, "{spread_seen:?}");
    assert_eq!(counted(&spread), counted(&alone));
    assert_eq!(scenario(&spread, "browse")["requests"], 80);
    assert_eq!(scenario(&spread, "browse")["arrivals"], 80);
    assert_eq!(scenario(&spread, "checkout")["requests"], 30);
    assert_eq!(scenario(&spread, "checkout")["iterations"], 30);
    assert_eq!(scenario(&spread, "search + home")["requests"], shared);
    assert!(scenario(&spread, "checkout")["load"]
        .as_str()
        .unwrap()
        .contains("4 users"));

    // The coordinator judged the thresholds: no worker's note that its share left them.
    let warnings = spread["warnings"].to_string();
    assert!(!warnings.contains("not judged"), "{warnings}");

    // Each threshold scoped to a scenario passed on the merged figures, as on one machine;
    // each worker's share (15 checkouts, 40 browses) would fail two of them.
    let verdicts = |r: &Value| -> Vec<(String, bool)> {
        r["thresholds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["expression"].as_str().unwrap().into(),
                    t["passed"] == true,
                )
            })
            .collect()
    };
    assert_eq!(verdicts(&spread), verdicts(&alone));
    assert!(verdicts(&spread).iter().all(|(_, passed)| *passed));

    // The merged percentiles are those of all the workers' responses together: each lies
    // between the workers' own (their shares' figures, in their results files).
    let workers: Vec<Value> = (1..=2)
        .map(|i| {
            let file = own.join(format!("worker-{i}.jsonl"));
            let out = BELIER.ok(&["report", file.to_str().unwrap(), "--type", "json"]);
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .collect();
    for name in ["browse", "checkout", "search + home"] {
        for p in ["p50_us", "p90_us", "p99_us"] {
            let merged = scenario(&spread, name)[p].as_u64().unwrap();
            let shares: Vec<u64> = workers
                .iter()
                .map(|w| scenario(w, name)[p].as_u64().unwrap())
                .collect();
            let (low, high) = (*shares.iter().min().unwrap(), *shares.iter().max().unwrap());
            assert!(
                (low..=high).contains(&merged),
                "{name} {p}: {merged} outside the workers' {shares:?}"
            );
        }
        let share_requests: u64 = workers
            .iter()
            .map(|w| scenario(w, name)["requests"].as_u64().unwrap())
            .sum();
        assert_eq!(scenario(&spread, name)["requests"], share_requests);
    }
    assert!(scenario(&spread, "checkout")["p50_us"].as_u64().unwrap() >= 20_000);

    // `belier report` over the workers' own files (shards of one run) merges their executors'
    // totals as the coordinator did: the same table, percentiles exact, and the plan's scoped
    // thresholds judged on it.
    let plan_path = dir.join("plan.yaml");
    let mut args = vec!["report", "--type", "json", "--thresholds-from"];
    args.push(plan_path.to_str().unwrap());
    let files: Vec<PathBuf> = (1..=2)
        .map(|i| own.join(format!("worker-{i}.jsonl")))
        .collect();
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let shards: Value = serde_json::from_slice(&BELIER.ok(&args).stdout).unwrap();
    assert_eq!(counted(&shards), counted(&spread));
    for name in ["browse", "checkout", "search + home"] {
        for p in ["p50_us", "p90_us", "p99_us"] {
            assert_eq!(
                scenario(&shards, name)[p],
                scenario(&spread, name)[p],
                "{name} {p}"
            );
        }
    }
    assert_eq!(verdicts(&shards), verdicts(&spread));

    // The merged results file keeps the table: `belier report` shows it again.
    let again = BELIER.ok(&["report", merged.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(text.contains("Scenarios"), "{text}");
    for name in ["browse", "checkout", "search + home"] {
        assert!(text.contains(name), "{name} in {text}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
