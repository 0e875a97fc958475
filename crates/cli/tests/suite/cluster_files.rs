//! A distributed run's files go with its job: workers that work in directories of their own,
//! where none of the paths the run names exist, read the plan's data and body files (and a
//! flag run's body file) from the copies their coordinator sent. Counted per row at the
//! built-in target. So does the environment a plan reads: workers whose own environment holds
//! other values send the coordinator's (unless they allow local files).

#![allow(clippy::print_stderr)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use belier_testserver::{Config, Server};
use belier_testsupport::ok;
use belier_testsupport::temp_dir;
use belier_testsupport::{free_port, Belier};

belier_testsupport::binary!(BELIER);

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
    ok(Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(args)
        .current_dir(dir))
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

/// The worker's token.
const TOKEN: &str = "cluster-files-token";

#[test]
fn a_worker_in_an_empty_directory_runs_a_plan_and_a_flag_run_that_name_files() {
    let server = recording_server();
    let (dir, empty, elsewhere) = (temp_dir("plan"), temp_dir("empty"), temp_dir("cwd"));
    let listen = format!("127.0.0.1:{}", free_port());
    let mut worker = BELIER.spawn_in(
        &empty,
        &[
            "worker",
            "--listen",
            &listen,
            "--token",
            TOKEN,
            "--dir",
            &empty.display().to_string(),
        ],
    );
    worker.wait_for("runs' results in");

    // The plan and its data file by relative paths (not in the worker's directory), its body
    // file by an absolute one.
    let body = dir.join("order.json").display().to_string();
    plan_in(&dir, &server, &body);
    coordinate(
        &dir,
        &[
            "run",
            "plan.yaml",
            "--workers",
            &listen,
            "--worker-token",
            TOKEN,
        ],
    );
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
        .args(["--workers", &listen, "--worker-token", TOKEN])
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

// The environment a plan reads goes with the job too: a worker's own stays its own.

/// The variable the plans read; the coordinator's and the workers' values differ.
const SECRET: &str = "BELIER_TEST_SECRET";
const COORDINATORS: &str = "coordinator-value";
const WORKERS: &str = "worker-value";
/// Set on the workers only: a plan's `default(…)` applies where the coordinator has it unset.
const UNSET: &str = "BELIER_TEST_UNSET";
const REQUESTS: usize = 10;

/// A plan sending the variables in headers, `REQUESTS` times over two users.
fn env_plan(dir: &Path, server: &Server) -> PathBuf {
    let plan = format!(
        "target: {}\n\
         headers:\n  X-Secret: \"{{{{ env.{SECRET} }}}}\"\n  X-Default: \"{{{{ env.{UNSET} | default('fallback') }}}}\"\n\
         load: {{ vus: 2, iterations: {REQUESTS} }}\n\
         scenarios:\n  - steps:\n      - get: /env\n",
        server.url("")
    );
    let path = dir.join("plan.yaml");
    std::fs::write(&path, plan).unwrap();
    path
}

/// `n` workers in `dir` (`more` flags), whose own environment has [`WORKERS`] and [`UNSET`]
/// set; their addresses, comma-separated.
fn env_workers(dir: &Path, n: usize, more: &[&str]) -> (Vec<Belier>, String) {
    let mut workers = Vec::new();
    let mut addrs = Vec::new();
    for i in 1..=n {
        let listen = format!("127.0.0.1:{}", free_port());
        // Each its own runs' directory: their run-1 would be one.
        let own = dir.join(format!("worker-{i}"));
        std::fs::create_dir_all(&own).unwrap();
        let dir_arg = own.display().to_string();
        let mut args = vec!["worker", "--listen", &listen, "--token", TOKEN];
        args.extend(["--dir", &dir_arg]);
        args.extend(more);
        let env = [(SECRET, WORKERS), (UNSET, "worker-unset")];
        let mut worker = BELIER.spawn_with(&own, &args, &env);
        worker.wait_for("runs' results in");
        workers.push(worker);
        addrs.push(listen);
    }
    (workers, addrs.join(","))
}

/// The coordinator of `plan.yaml` in `dir` over `workers`, its environment holding `secret`
/// (or not) and never [`UNSET`].
fn env_run(dir: &Path, workers: &str, secret: Option<&str>) -> std::process::Output {
    let mut belier = Command::new(env!("CARGO_BIN_EXE_belier"));
    belier
        .args([
            "run",
            "plan.yaml",
            "--save",
            "results.jsonl",
            "--output",
            "json",
        ])
        .args(["--workers", workers, "--worker-token", TOKEN])
        .env_remove(UNSET)
        .current_dir(dir);
    match secret {
        Some(value) => belier.env(SECRET, value),
        None => belier.env_remove(SECRET),
    };
    belier.output().unwrap()
}

/// The values of `name` in the requests the server saw, with how many requests had each.
fn header_values(server: &Server, name: &str) -> BTreeMap<String, usize> {
    let mut values = BTreeMap::new();
    for r in server.recent_requests() {
        let value = r.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name));
        let value = value.map_or("(none)".to_string(), |(_, v)| v.clone());
        *values.entry(value).or_default() += 1;
    }
    values
}

#[test]
fn a_plan_on_workers_reads_the_coordinators_environment_never_theirs() {
    let server = recording_server();
    let (dir, there) = (temp_dir("env"), temp_dir("env-workers"));
    env_plan(&dir, &server);
    let (workers, addrs) = env_workers(&there, 2, &[]);

    let out = env_run(&dir, &addrs, Some(COORDINATORS));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let expected = BTreeMap::from([(COORDINATORS.to_string(), REQUESTS)]);
    assert_eq!(header_values(&server, "X-Secret"), expected);
    let fallback = BTreeMap::from([("fallback".to_string(), REQUESTS)]);
    assert_eq!(header_values(&server, "X-Default"), fallback, "unset here");
    assert_eq!(server.counts().requests, REQUESTS as u64);
    // The value went to the workers and the target, and nowhere it could be read.
    let results = std::fs::read_to_string(dir.join("results.jsonl")).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    for (what, text) in [
        ("stdout", &*stdout),
        ("stderr", &stderr),
        ("results", &results),
    ] {
        assert!(!text.contains(COORDINATORS), "the value is in the {what}");
    }

    // Unset on the coordinator, without a default: the plan stops there, as on one machine,
    // whatever the workers hold.
    let out = env_run(&dir, &addrs, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("environment variable `{SECRET}` is not set")),
        "{stderr}"
    );
    assert_eq!(
        server.counts().requests,
        REQUESTS as u64,
        "nothing more sent"
    );
    for worker in workers {
        worker.interrupt();
        let (_, _, worker_err) = worker.finish();
        assert!(!worker_err.contains(COORDINATORS), "{worker_err}");
    }
    let kept = walk(&there);
    assert_eq!(kept.len(), 2, "each worker's results file: {kept:?}");
    for file in kept {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains(COORDINATORS),
            "the value is in {}",
            file.display()
        );
    }
    for d in [dir, there] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn a_worker_that_allows_local_files_reads_its_own_environment_as_before() {
    let server = recording_server();
    let (dir, there) = (temp_dir("env-local"), temp_dir("env-local-workers"));
    env_plan(&dir, &server);
    let (_workers, addrs) = env_workers(&there, 2, &["--allow-local-files"]);
    let out = env_run(&dir, &addrs, Some(COORDINATORS));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The worker's own values win, its UNSET too.
    let expected = BTreeMap::from([(WORKERS.to_string(), REQUESTS)]);
    assert_eq!(header_values(&server, "X-Secret"), expected);
    let own = BTreeMap::from([("worker-unset".to_string(), REQUESTS)]);
    assert_eq!(header_values(&server, "X-Default"), own);
    for d in [dir, there] {
        let _ = std::fs::remove_dir_all(d);
    }
}
