//! The real `belier` binary on argument vectors of its own flags with values near valid ones,
//! and on files one slip away from valid (plans for `check`, results files and capacity
//! documents for `report` and `compare`): it exits with a documented code (0 to 3 here),
//! never with a panic, and within its bound.
//!
//! Nothing leaves the machine: every load test and probe connects to 127.0.0.1:9 (a closed
//! port) whatever its URL says, with `-n 1 -z 300ms --timeout 200ms`; a capacity search always
//! has a `prom:` SLO and no `--prometheus`, so it stops before its first step; plans are only
//! checked. Each test runs in its own temporary directory, where the flags' files are.
//!
//! Cases: 200 in all by default; `PROPTEST_CASES` scales them (a tenth of its value in all).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use argv::{Kind, CAPACITY, COMPARE, LOAD, REPORT, REQUEST};
use belier_testsupport::argv;
use belier_testsupport::near_miss;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestRunner;

/// Longest a case may take: the bounded runs end within a second.
const BOUND: Duration = Duration::from_secs(20);

/// Every load test and probe goes here and stops soon.
const SAFE: &[&str] = &["--timeout", "200ms", "--connect-to", "127.0.0.1:9"];

const PLANS: &[&str] = &[
    r#"target: http://127.0.0.1:9/api
headers: { Accept: application/json }
timeout: 2s
variables: { password: hunter2 }
data:
  users: { file: users.csv, order: unique }
load: { vus: 2, stages: ['1s:5', { duration: 2s, target: 0 }], duration: 1m, seed: 3 }
scenarios:
  - name: shopper
    weight: 3
    steps:
      - name: login
        post: /login
        json: { email: "{{ users.email }}", password: "{{ password }}" }
        extract: { token: { json: $.token } }
        check: { status: 200, max_latency: 200ms }
        abort_on_fail: true
      - pause: 1s..3s
      - loop: 2
        steps:
          - get: /items/{{ random_int(1, 500) }}
            headers: { Authorization: "Bearer {{ token }}" }
  - name: upload
    steps: [{ put: /f, body_file: body.bin }]
thresholds: [p99 < 300ms, error_rate < 1%, "login: p95 < 500ms"]
"#,
    "target: http://127.0.0.1:9\nload: { rate: 5, max_vus: 3, arrivals: poisson }\nscenarios: [{ steps: [{ get: / }] }]\n",
];

/// The directory of one test, with the files the flags name (written again for every case:
/// a case may overwrite them, with `--html body.bin`).
fn workdir(test: &str) -> PathBuf {
    let dir = scratch(test);
    std::fs::write(dir.join("body.bin"), b"a=1").unwrap();
    std::fs::write(dir.join("ca.pem"), b"-----BEGIN CERTIFICATE-----\nAA==\n").unwrap();
    std::fs::write(dir.join("users.csv"), "email,name\na@b,ann\n").unwrap();
    std::fs::write(dir.join("results.jsonl"), seed_results()).unwrap();
    std::fs::write(dir.join("capacity.json"), CAPACITY_DOCUMENT).unwrap();
    dir
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("belier-flags-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const CAPACITY_DOCUMENT: &str = include_str!("../../../capacity/tests/document.json");

/// A results file belier saved, of a short run against its own test server on 127.0.0.1.
fn seed_results() -> &'static str {
    static SEED: OnceLock<String> = OnceLock::new();
    SEED.get_or_init(|| {
        let server = belier_testserver::Server::start(belier_testserver::Config::default())
            .expect("test server starts");
        let dir = scratch("seed");
        let url = server.url("/");
        let (code, stderr) = belier(&dir, &["-n", "40", "-c", "2", "--save", "seed.jsonl", &url])
            .expect("the seed run ends");
        assert_eq!(code, 0, "{stderr}");
        std::fs::read_to_string(dir.join("seed.jsonl")).unwrap()
    })
}

/// Runs belier in `dir`: its exit code and standard error, or why it has none.
fn belier<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> Result<(i32, String), String> {
    // Output goes to files: a pipe nobody reads while waiting would stall a long report.
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        .spawn()
        .expect("belier starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running after {BOUND:?}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stderr = String::from_utf8_lossy(&std::fs::read(&err).unwrap()).into_owned();
    match status.code() {
        Some(code) => Ok((code, stderr)),
        None => Err(format!("killed by a signal ({status}): {stderr}")),
    }
}

/// Exits 0 (done), 1 (could not run), 2 (invalid input) or 3 (a `--fail-if` held); 101 is a
/// panic.
fn assert_documented_exit(dir: &Path, args: &[String]) -> Result<(), TestCaseError> {
    // An argument cannot hold a NUL byte (the process tests feed those).
    let args: Vec<String> = args.iter().map(|a| a.replace('\0', "")).collect();
    let ran = belier(dir, &args);
    prop_assert!(ran.is_ok(), "belier {:?}: {}", args, ran.unwrap_err());
    let (code, stderr) = ran.unwrap();
    prop_assert!(
        (0..=3).contains(&code) && !stderr.contains("panicked"),
        "belier {:?} exited {}:\n{}",
        args,
        code,
        stderr
    );
    Ok(())
}

/// Runs `test` on `share` of the cases (200 in all by default, a tenth of `PROPTEST_CASES`
/// when set). By hand rather than with `proptest!`, which would let `PROPTEST_CASES` (set by
/// `bench/fuzz` for the fast tests) override the share: a case here starts a process.
fn check<S: Strategy>(
    share: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let total = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse::<u32>().ok())
        .map_or(200, |n| n / 10);
    let config = ProptestConfig {
        cases: (total * share / 200).max(1),
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    if let Err(e) = TestRunner::new(config).run(&strategy, test) {
        panic!("{e}");
    }
}

fn with(fixed: &[&str], parts: Vec<Vec<String>>) -> Vec<String> {
    fixed
        .iter()
        .map(|s| s.to_string())
        .chain(parts.into_iter().flatten())
        .collect()
}

/// A text one to three slips from `seed`, one of them perhaps a JSON line's field retyped.
fn slipped(seed: &'static str) -> impl Strategy<Value = String> {
    (
        prop::collection::vec(near_miss::mutation(), 0..=2),
        prop::option::of((any::<Index>(), any::<Index>(), any::<Index>())),
    )
        .prop_map(move |(mutations, retype)| {
            let mut lines: Vec<String> = seed.lines().map(str::to_string).collect();
            if let Some((line, node, with)) = retype {
                let i = line.index(lines.len());
                if let Ok(doc) = serde_json::from_str(&lines[i]) {
                    lines[i] = near_miss::retype_json(&doc, node, with).to_string();
                }
            }
            near_miss::mutate(&(lines.join("\n") + "\n"), &mutations)
        })
}

fn results_files() -> impl Strategy<Value = Vec<String>> {
    prop::sample::subsequence(
        vec![
            "results.jsonl",
            "near.jsonl",
            "missing.jsonl",
            "capacity.json",
        ],
        1..=2,
    )
    .prop_map(|files| files.into_iter().map(str::to_string).collect())
}

/// A load test: plain flags (mostly a run that goes ahead), or flags with values near valid
/// ones and perhaps one that belongs elsewhere.
fn load_test() -> impl Strategy<Value = Vec<String>> {
    let plain = (
        argv::plain_flags(REQUEST, 1),
        argv::plain_flags(LOAD, 3),
        argv::plain_value(Kind::Url),
    )
        .prop_map(|(request, load, url)| vec![request, load, vec![url]]);
    let wild = (
        argv::flags(REQUEST, 2),
        argv::flags(LOAD, 4),
        prop::option::weighted(0.1, argv::misplaced()),
        argv::url(),
    )
        .prop_map(|(request, load, misplaced, url)| {
            vec![request, load, misplaced.unwrap_or_default(), vec![url]]
        });
    prop_oneof![plain, wild].prop_map(|parts| {
        let bounds = ["-n", "1", "-z", "300ms"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        [vec![bounds, safe()], parts].concat().concat()
    })
}

#[test]
fn load_tests_never_panic() {
    check(90, load_test(), |args| {
        assert_documented_exit(&workdir("load"), &args)
    });
}

#[test]
fn probes_and_capacity_searches_never_panic() {
    let case = (
        any::<bool>(),
        argv::flags(REQUEST, 2),
        argv::flags(CAPACITY, 5),
        argv::url(),
    );
    check(40, case, |(capacity, request, search, url)| {
        let args = if capacity {
            with(
                &["capacity", "--slo", "prom:up<1"],
                vec![safe(), request, search, vec![url]],
            )
        } else {
            with(&["probe"], vec![safe(), request, vec![url]])
        };
        assert_documented_exit(&workdir("probe"), &args)
    });
}

#[test]
fn reports_and_comparisons_never_panic() {
    let case = (
        any::<bool>(),
        prop_oneof![slipped(seed_results()), slipped(CAPACITY_DOCUMENT)],
        results_files(),
        argv::flags(REPORT, 3),
        argv::flags(COMPARE, 3),
    );
    check(
        45,
        case,
        |(compare, near, files, report_flags, compare_flags)| {
            let dir = workdir("report");
            std::fs::write(dir.join("near.jsonl"), near).unwrap();
            let args = if compare {
                with(
                    &["compare", "results.jsonl", "near.jsonl"],
                    vec![compare_flags],
                )
            } else {
                with(&["report"], vec![files, report_flags])
            };
            assert_documented_exit(&dir, &args)
        },
    );
}

#[test]
fn plan_checks_never_panic() {
    let plan = prop::sample::select(PLANS).prop_flat_map(slipped);
    check(25, plan, |plan| {
        let dir = workdir("check");
        std::fs::write(dir.join("plan.yaml"), plan).unwrap();
        assert_documented_exit(&dir, &["check".to_string(), "plan.yaml".to_string()])
    });
}

/// The flags that keep a run on 127.0.0.1:9 and short.
fn safe() -> Vec<String> {
    SAFE.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_seeds_are_valid() {
    let dir = workdir("seeds");
    for (i, plan) in PLANS.iter().enumerate() {
        let file = format!("plan{i}.yaml");
        std::fs::write(dir.join(&file), plan).unwrap();
        assert_eq!(belier(&dir, &["check", &file]).unwrap().0, 0, "{plan}");
    }
    for file in ["results.jsonl", "capacity.json"] {
        let (code, stderr) = belier(&dir, &["report", file]).unwrap();
        assert_eq!(code, 0, "{file}: {stderr}");
    }
}
