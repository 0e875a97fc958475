//! A distributed run's files go with its job: workers that work in directories of their own,
//! where none of the paths the run names exist, read the plan's data and body files (and a
//! flag run's body file) from the copies their coordinator sent. Counted per row at the
//! built-in target.

#![allow(clippy::print_stderr)]

#[path = "support/process.rs"]
mod process;
#[path = "support/run.rs"]
mod run;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use belier_testserver::{Config, Server};
use process::{free_port, Belier};

fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cluster-files-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn recording_server() -> Server {
    Server::start(Config {
        record_requests: 1000,
        ..Config::default()
    })
    .unwrap()
}

/// Requests the server saw, by target, with the bodies each came with.
fn seen(server: &Server) -> BTreeMap<String, Vec<String>> {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in server.recent_requests() {
        seen.entry(r.target)
            .or_default()
            .push(String::from_utf8_lossy(&r.body).into_owned());
    }
    seen
}

const ROWS: usize = 8;
const BODY: &str = r#"{"order":"from the body file"}"#;

/// A plan beside its data file (ids 1…8, each used once) and its body file, in `dir`; the
/// body file named by `body` (relative, or absolute).
fn plan_in(dir: &Path, server: &Server, body: &str) -> PathBuf {
    let mut rows = String::from("id\n");
    for i in 1..=ROWS {
        rows.push_str(&format!("{i}\n"));
    }
    std::fs::write(dir.join("items.csv"), rows).unwrap();
    std::fs::write(dir.join("order.json"), BODY).unwrap();
    let plan = format!(
        "target: {}\n\
         data:\n  items: {{ file: items.csv, order: unique }}\n\
         load: {{ vus: 2, iterations: {ROWS} }}\n\
         scenarios:\n  - name: order\n    steps:\n      - post: /items/{{{{ items.id }}}}\n        body_file: {body}\n",
        server.url("")
    );
    let path = dir.join("plan.yaml");
    std::fs::write(&path, plan).unwrap();
    path
}

/// Each row's request came once, with the body file's bytes.
fn assert_each_row_once(server: &Server) {
    let seen = seen(server);
    let expected: BTreeMap<String, Vec<String>> = (1..=ROWS)
        .map(|i| (format!("/items/{i}"), vec![BODY.to_string()]))
        .collect();
    assert_eq!(seen, expected);
    assert_eq!(server.counts().requests, ROWS as u64);
}

/// `belier ARGS` in `dir`, which must succeed: its standard output.
fn coordinate(dir: &Path, args: &[&str]) -> Vec<u8> {
    run::ok(
        Command::new(env!("CARGO_BIN_EXE_belier"))
            .args(args)
            .current_dir(dir),
    )
    .stdout
}

#[test]
fn spawned_workers_read_the_plans_files_from_the_copies_sent_with_the_job() {
    let server = recording_server();
    let dir = temp_dir("spawn");
    plan_in(&dir, &server, "order.json");
    // Relative paths, from the plan's directory: the spawned workers work in directories of
    // their own, where neither the plan nor its files are.
    let out = coordinate(
        &dir,
        &["run", "plan.yaml", "--spawn", "2", "--output", "json"],
    );
    assert_each_row_once(&server);
    let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(report["summary"]["requests"], ROWS as u64, "{report}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_worker_in_an_empty_directory_runs_a_plan_and_a_flag_run_that_name_files() {
    let server = recording_server();
    let (dir, empty, elsewhere) = (temp_dir("plan"), temp_dir("empty"), temp_dir("cwd"));
    let listen = format!("127.0.0.1:{}", free_port());
    let mut worker = Belier::spawn_in(
        &empty,
        &[
            "worker",
            "--listen",
            &listen,
            "--dir",
            &empty.display().to_string(),
        ],
    );
    worker.wait_for("runs' results in");

    // The plan and its data file by relative paths (not in the worker's directory), its body
    // file by an absolute one.
    let body = dir.join("order.json").display().to_string();
    plan_in(&dir, &server, &body);
    coordinate(&dir, &["run", "plan.yaml", "--workers", &listen]);
    assert_each_row_once(&server);

    // A flag run's --body-file, relative to the coordinator's directory.
    let flags = recording_server();
    std::fs::write(elsewhere.join("payload.bin"), "payload").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args([
            &flags.url("/flag"),
            "-m",
            "POST",
            "-D",
            "payload.bin",
            "-n",
            "7",
        ])
        .args(["--workers", &listen])
        .current_dir(&elsewhere)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let seen = seen(&flags);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen["/flag"], vec!["payload".to_string(); 7]);

    // The worker's copies went with each run: only the runs' results files are left.
    let left: Vec<PathBuf> = walk(&empty);
    assert!(
        left.iter().all(|p| p.ends_with("results.jsonl")),
        "{left:?}"
    );
    assert_eq!(left.len(), 2, "{left:?}");
    drop(worker);
    for d in [dir, empty, elsewhere] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().map_while(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn files_over_the_bound_stop_the_run_before_it_starts_naming_the_file() {
    let server = recording_server();
    let dir = temp_dir("bound");
    plan_in(&dir, &server, "big.bin");
    // 63 MiB, sparse: a body belier sends (64 MiB at most each), but with the plan's data
    // file of 2 MiB over the 64 MiB a run's files may hold together.
    let big = std::fs::File::create(dir.join("big.bin")).unwrap();
    big.set_len(63 << 20).unwrap();
    let rows: String = (0..300_000).map(|i| format!("{i}\n")).collect();
    std::fs::write(dir.join("items.csv"), format!("id\n{rows}")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(["run", "plan.yaml", "--spawn", "2"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("big.bin (66060288 bytes)") && stderr.contains("64 MiB"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("worker 1 at"),
        "no worker started: {stderr}"
    );
    assert_eq!(server.counts().requests, 0);
    let _ = std::fs::remove_dir_all(dir);
}
