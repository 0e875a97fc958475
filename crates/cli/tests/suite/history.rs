//! The run history through the real binary, against belier's test server on 127.0.0.1 with
//! a known delay per request (`?delay=`): runs kept with `--history` at their end, a gate that
//! passes an unchanged server every time and fails a slower one naming the metric, its change
//! interval and p-value, and many processes writing one database at once.

use std::path::Path;
use std::process::Output;

use belier_history::Store;
use belier_testserver::{Config, Server};
use belier_testsupport::temp_dir;

belier_testsupport::binary!();

fn server() -> Server {
    Server::start(Config {
        threads: 2,
        ..Config::default()
    })
    .expect("test server starts")
}

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A short run kept in `db` under `name`: 8 connections for 2 s, 20 intervals of 100 ms. The
/// server's delay (50 ms) dwarfs the scheduling hiccups of a loaded machine.
fn kept_run(s: &Server, db: &Path, name: &str, delay: &str) -> Output {
    belier()
        .args([
            "-c",
            "4",
            "-t",
            "1",
            "-z",
            "2s",
            "--interval",
            "100ms",
            "--name",
            name,
        ])
        .arg(format!("--history={}", db.display()))
        .arg(s.url(&format!("/?delay={delay}")))
        .output()
        .expect("belier runs")
}

/// `belier history check NAME --against median-of-5 --fail-if EXPR`: exit code and output.
fn check(db: &Path, name: &str, fail_if: &str) -> (Option<i32>, String) {
    let out = belier()
        .args([
            "history",
            "check",
            name,
            "--against",
            "median-of-5",
            "--fail-if",
            fail_if,
        ])
        .arg("--db")
        .arg(db)
        .output()
        .expect("belier runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

#[test]
fn an_unchanged_server_passes_every_check_and_a_slower_one_fails_naming_p99() {
    let s = server();
    let dir = temp_dir("gate");
    let db = dir.join("history.db");
    for i in 1..=10 {
        let out = ok(kept_run(&s, &db, "svc", "50ms"));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("run {i} kept in the history"))
        );
        let (code, text) = check(&db, "svc", "p99>+5%");
        assert_eq!(code, Some(0), "run {i}, a false alarm: {text}");
    }
    let store = Store::open(&db).unwrap();
    let runs = store.runs(Some("svc")).unwrap();
    assert_eq!(runs.len(), 10);
    let served: u64 = runs.iter().map(|r| r.record.requests).sum();
    assert_eq!(
        served,
        s.counts().requests,
        "every request the server saw is kept"
    );
    assert!(runs
        .iter()
        .all(|r| r.record.intervals.len() >= 20 && r.record.errors == 0));

    // 3 % slower under a 10 % limit: passes.
    ok(kept_run(&s, &db, "svc", "51500us"));
    let (code, text) = check(&db, "svc", "p99>+10%");
    assert_eq!(code, Some(0), "{text}");

    // 15 % slower: a regression, named with its change, interval and p-value.
    ok(kept_run(&s, &db, "svc", "57500us"));
    let (code, text) = check(&db, "svc", "p99>+5%");
    assert_eq!(code, Some(3), "{text}");
    assert!(
        text.contains("run 12 of 'svc' against median-of-5 (5 runs):"),
        "{text}"
    );
    let line = text.lines().find(|l| l.starts_with("p99: ")).expect(&text);
    assert!(
        line.contains("% interval +") && line.contains(", p = 0.0"),
        "{line}"
    );
    assert!(line.ends_with("): regression, p99>+5%"), "{line}");

    // The same gate on two results files: the first run's and the slower one's.
    let store = Store::open(&db).unwrap();
    let file = |id| store.get(id).unwrap().unwrap().record.results_path.unwrap();
    let compare = |output: &str| {
        belier()
            .args(["compare", &file(1), &file(12), "--fail-if", "p99>+5%"])
            .args(["--significance", "0.05", "--output", output])
            .output()
            .unwrap()
    };
    let out = compare("text");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    let line = text.lines().find(|l| l.starts_with("p99: ")).expect(&text);
    assert!(line.ends_with("): regression, p99>+5%"), "{line}");
    let out = compare("json");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gives text output only"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn four_shards_and_two_runs_finishing_at_once_are_all_kept_whole() {
    let s = server();
    let dir = temp_dir("writers");
    let db = dir.join("history.db");
    let history = format!("--history={}", db.display());
    let url = s.url("/?delay=5ms");
    let mut children: Vec<_> = (1..=4)
        .map(|i| {
            belier()
                .args(["-c", "4", "-t", "1", "-n", "200", "--name", "split"])
                .args(["--shard", &format!("{i}/4"), &history, &url])
                .output_spawned()
        })
        .collect();
    children.extend((0..2).map(|_| {
        belier()
            .args([
                "-c", "2", "-t", "1", "-n", "100", "--name", "pair", &history, &url,
            ])
            .output_spawned()
    }));
    for child in children {
        ok(child.wait_with_output().unwrap());
    }
    let store = Store::open(&db).unwrap();
    let split = store.runs(Some("split")).unwrap();
    let pair = store.runs(Some("pair")).unwrap();
    assert_eq!((split.len(), pair.len()), (4, 2));
    // -n 200 split four ways: 50 each; every request the server saw is kept once.
    assert!(split.iter().all(|r| r.record.requests == 50), "{split:?}");
    assert!(pair.iter().all(|r| r.record.requests == 100));
    assert_eq!(s.counts().requests, 400);
    assert_eq!(store.integrity_check().unwrap(), "ok");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn labels_are_kept_and_bad_history_flags_are_refused_by_name() {
    let s = server();
    let dir = temp_dir("labels");
    let db = dir.join("history.db");
    ok(belier()
        .args([
            "-c", "1", "-n", "5", "--label", "env=ci", "--label", "pool=a",
        ])
        .arg(format!("--history={}", db.display()))
        .arg(s.url("/"))
        .output()
        .unwrap());
    let shown = ok(belier()
        .args(["history", "show", "1", "--db"])
        .arg(&db)
        .output()
        .unwrap());
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("run 1: GET 127.0.0.1:"), "{shown}");
    assert!(
        shown.contains("label        env=ci\n  label        pool=a\n"),
        "{shown}"
    );
    assert!(
        shown.contains("requests     5 (5 succeeded, 0 errors)"),
        "{shown}"
    );
    let bad = [
        (&["--label", "env=ci"][..], "--label <KEY=VALUE>"),
        (&["--history", "--label", "=x"], "expected KEY=VALUE"),
        (
            &["--history", "--save", "-"],
            "read back from its results file",
        ),
    ];
    for (args, want) in bad {
        let out = belier()
            .args(args)
            .arg(s.url("/"))
            .env("BELIER_HISTORY", "")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let out = belier()
        .args(["history", "check", "x", "--fail-if", "p99.9>+5%", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no per-interval values of p99.9"));
    assert_eq!(s.counts().requests, 5);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Starts a command with its output captured, for several to run at once.
trait Spawned {
    fn output_spawned(&mut self) -> std::process::Child;
}

impl Spawned for std::process::Command {
    fn output_spawned(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("belier starts")
    }
}
