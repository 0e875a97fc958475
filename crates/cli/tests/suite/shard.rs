//! `--shard I/N` through the real binary, against belier's test server on 127.0.0.1: N shard
//! processes send together what one run sends (the server counts it), their results files
//! merge into the one-machine report, and a plan's unique rows go to one shard each.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Output;

use belier_testserver::{Config, Server};
use belier_testsupport::temp_dir;
use serde_json::Value;

belier_testsupport::binary!();

fn server(record: usize) -> Server {
    Server::start(Config {
        threads: 2,
        record_requests: record,
        ..Config::default()
    })
    .expect("test server starts")
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// `belier report --type json FILES`, parsed, with its exit code.
fn report(files: &[PathBuf], extra: &[&str]) -> (Value, Option<i32>) {
    let out = belier()
        .args(["report", "--type", "json"])
        .args(extra)
        .args(files)
        .output()
        .expect("belier runs");
    let code = out.status.code();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (doc, code)
}

#[test]
fn four_open_loop_shards_send_the_one_machine_schedule_and_merge() {
    let s = server(0);
    let dir = temp_dir("open");
    let files: Vec<PathBuf> = (1..=4).map(|i| dir.join(format!("s{i}.jsonl"))).collect();
    // The four shards run at once, as four machines of a CI matrix would.
    let children: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(i, file)| {
            belier()
                .args(["--rate", "400", "-z", "3s", "-t", "1", "--name", "split"])
                .args(["--shard", &format!("{}/4", i + 1), "--output", "json"])
                .arg("--save")
                .arg(file)
                .arg(s.url("/"))
                .output()
                .expect("belier runs")
        })
        .collect();
    for (i, out) in children.iter().enumerate() {
        let doc = json(out);
        // Each shard's own share: 300 of the 1,200 arrivals, at a quarter of the rate.
        assert_eq!(doc["open_loop"]["scheduled"], 300, "shard {}", i + 1);
        assert_eq!(doc["run"]["rate"], 100.0);
        assert_eq!(doc["run"]["shard"]["numbers"][0], i as u64 + 1);
    }
    let (doc, code) = report(&files, &[]);
    assert_eq!(code, Some(0));
    // 400/s for 3 s: the one-machine schedule has exactly 1,200 arrivals, the last due at
    // 2.9975 s. Every one is sent unless a shard's dispatcher is more than its last gap
    // (≤ 10 ms) behind at the very end, when the run's end counts it as dropped: the server's
    // count is 1,200 less what the report calls dropped, never more.
    let dropped = doc["open_loop"]["dropped"].as_u64().unwrap();
    assert_eq!(doc["open_loop"]["scheduled"], 1200);
    assert_eq!(s.counts().requests, 1200 - dropped);
    assert!(dropped <= 4, "{dropped} dropped");
    assert_eq!(doc["summary"]["requests"], s.counts().requests);
    assert_eq!(doc["run"]["rate"], 400.0);
    assert_eq!(doc["run"]["shards"], 4);
    assert_eq!(doc["run"]["shard"]["count"], 4);
    assert_eq!(doc["warnings"], serde_json::json!([]));

    // Three of the four: merged, and the report says what is missing.
    let three = [files[0].clone(), files[1].clone(), files[3].clone()];
    let (doc, _) = report(&three, &[]);
    assert_eq!(doc["run"]["shards"], 3);
    let warnings = doc["warnings"].to_string();
    assert!(warnings.contains("shard 3/4 missing"), "{warnings}");
    let text = belier().arg("report").args(&files).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("  4 of 4 shards merged\n"));
}

#[test]
fn a_closed_loop_of_ten_connections_splits_three_three_two_two() {
    let s = server(0);
    let dir = temp_dir("closed");
    let mut files = Vec::new();
    let mut opened = Vec::new();
    for i in 1..=4 {
        let file = dir.join(format!("c{i}.jsonl"));
        let before = s.counts();
        let doc = json(
            &belier()
                .args(["-c", "10", "-n", "202", "-t", "2", "--name", "closed"])
                .args(["--shard", &format!("{i}/4"), "--output", "json", "--save"])
                .arg(&file)
                .arg(s.url("/"))
                .output()
                .unwrap(),
        );
        let after = s.counts();
        opened.push(after.connections - before.connections);
        // -n 202 over 4 shards: 51 + 51 + 50 + 50.
        assert_eq!(after.requests - before.requests, [51, 51, 50, 50][i - 1]);
        assert_eq!(doc["summary"]["connections_opened"], opened[i - 1]);
        files.push(file);
    }
    assert_eq!(opened, [3, 3, 2, 2]);
    let (doc, _) = report(&files, &[]);
    assert_eq!(doc["summary"]["requests"], 202);
    assert_eq!(doc["run"]["connections"], 10);
    assert_eq!(doc["run"]["requests"], 202);
    assert_eq!(s.counts().requests, 202);
}

#[test]
fn bad_shards_are_refused_naming_the_flag() {
    for (args, says) in [
        (
            vec!["--shard", "0/4", "-n", "1"],
            "shard 0 of 4 does not exist",
        ),
        (vec!["--shard", "2/x", "-n", "1"], "expected I/N"),
        (
            vec!["--shard", "3/4", "-c", "2", "-n", "4"],
            "too few for 4 shards",
        ),
        (
            vec![
                "--shard",
                "1/2",
                "--rate",
                "10",
                "--arrivals",
                "poisson",
                "-n",
                "2",
            ],
            "give the same --seed N",
        ),
    ] {
        let out = belier()
            .args(&args)
            .arg("http://127.0.0.1:9/")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--shard") && err.contains(says),
            "{args:?}: {err}"
        );
    }
    let out = belier()
        .args(["capacity", "http://127.0.0.1:9/", "--shard", "1/2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a capacity search cannot be split"));
}

#[test]
fn plan_shards_use_unique_rows_once_and_thresholds_are_judged_merged() {
    let s = server(1000);
    let dir = temp_dir("plan");
    let mut csv = String::from("id\n");
    for i in 0..30 {
        csv.push_str(&format!("{i}\n"));
    }
    std::fs::write(dir.join("rows.csv"), csv).unwrap();
    let plan = dir.join("plan.yaml");
    std::fs::write(
        &plan,
        r#"
target: http://127.0.0.1:8080
data:
  rows: { file: rows.csv, order: unique }
load: { vus: 3, duration: 30s }
thresholds:
  - requests < 31
  - error_rate < 1%
scenarios:
  - steps:
      - name: row
        get: /rows/{{ rows.id }}
"#,
    )
    .unwrap();
    let mut files = Vec::new();
    for i in 1..=3 {
        let file = dir.join(format!("p{i}.jsonl"));
        let out = belier()
            .arg("run")
            .arg(&plan)
            .args([
                "--connect-to",
                &s.addr().to_string(),
                "--name",
                "plan",
                "--shard",
            ])
            .arg(format!("{i}/3"))
            .arg("--save")
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // A shard does not judge the run's thresholds on its share.
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("thresholds not judged on shard"), "{text}");
        files.push(file);
    }
    // Every row once, across the shards together.
    let seen: Vec<String> = s.recent_requests().into_iter().map(|r| r.target).collect();
    assert_eq!(seen.len(), 30);
    let distinct: BTreeSet<&String> = seen.iter().collect();
    let want: Vec<String> = (0..30).map(|i| format!("/rows/{i}")).collect();
    assert_eq!(distinct, want.iter().collect());

    // Judged on the merged data: 30 requests pass `requests < 31`…
    let (doc, code) = report(&files, &["--thresholds-from", plan.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    assert_eq!(doc["summary"]["requests"], 30);
    assert_eq!(
        doc["thresholds"][0]["passed"], true,
        "{}",
        doc["thresholds"]
    );
    // …and a stricter plan fails on the same merged data: exit 4.
    let strict = dir.join("strict.yaml");
    let text = std::fs::read_to_string(&plan)
        .unwrap()
        .replace("requests < 31", "requests < 30");
    std::fs::write(&strict, text).unwrap();
    let (doc, code) = report(&files, &["--thresholds-from", strict.to_str().unwrap()]);
    assert_eq!(code, Some(4));
    assert_eq!(doc["thresholds"][0]["passed"], false);
}
