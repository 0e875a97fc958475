//! What a plan takes from outside itself, through the real binary against belier's test server
//! on 127.0.0.1: `{{ env.NAME }}` values and `--var` overrides reach the server, and a secret
//! from the environment stays out of the report, the results file and `belier check`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use belier_testserver::{Config, Server};

fn belier() -> Command {
    Command::new(env!("CARGO_BIN_EXE_belier"))
}

fn server() -> Server {
    Server::start(Config {
        threads: 2,
        record_requests: 64,
        ..Config::default()
    })
    .expect("test server starts")
}

/// A fresh directory for one test's files.
fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("plan-inputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(out: &Output) -> String {
    format!(
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn assert_exit(out: &Output, code: i32) {
    assert_eq!(out.status.code(), Some(code), "{}", text(out));
}

const SECRET: &str = "tok-7f3a9c1e5b";

const ENV_PLAN: &str = r#"
target: http://{{ env.BELIER_TEST_HOST }}:{{ env.BELIER_TEST_PORT }}/{{ env.BELIER_TEST_BASE | default("v1") }}
headers:
  Authorization: "Bearer {{ env.BELIER_TEST_TOKEN }}"
variables:
  user: nobody
  key: "{{ env.BELIER_TEST_TOKEN }}"
scenarios:
  - steps:
      - name: profile
        get: /users/{{ user }}
        headers: { X-Key: "{{ key }}" }
        check: { status: 200 }
"#;

/// `belier SUB PLAN ARGS` with the test's environment: the target from the server, the token.
fn with_env(sub: &str, plan: &Path, s: &Server, args: &[&str]) -> Output {
    belier()
        .arg(sub)
        .arg(plan)
        .args(args)
        .env("BELIER_TEST_HOST", "127.0.0.1")
        .env("BELIER_TEST_PORT", s.addr().port().to_string())
        .env("BELIER_TEST_TOKEN", SECRET)
        .env_remove("BELIER_TEST_BASE")
        .output()
        .expect("belier runs")
}

#[test]
fn target_and_token_from_the_environment_and_var_reach_the_server_but_no_report() {
    let s = server();
    let dir = temp_dir("env");
    let plan = dir.join("plan.yaml");
    std::fs::write(&plan, ENV_PLAN).unwrap();
    let saved = dir.join("run.results");
    let out = with_env(
        "run",
        &plan,
        &s,
        &[
            "-i",
            "6",
            "-z",
            "20s",
            "--var",
            "user=ann",
            "--output",
            "json",
            "--save",
            saved.to_str().unwrap(),
        ],
    );
    assert_exit(&out, 0);
    // No --connect-to: the server was reached through the host and port of the environment.
    s.wait_idle(Duration::from_secs(5));
    assert_eq!(s.counts().requests, 6);
    let seen = s.recent_requests();
    assert_eq!(seen.len(), 6);
    for r in &seen {
        assert_eq!(r.target, "/v1/users/ann");
        assert_eq!(
            r.header("authorization"),
            Some(&*format!("Bearer {SECRET}"))
        );
        assert_eq!(r.header("x-key"), Some(SECRET));
    }
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["requests"], 6);
    assert!(!text(&out).contains(SECRET), "{}", text(&out));
    let results = std::fs::read(&saved).unwrap();
    assert!(!results.is_empty());
    assert!(
        !String::from_utf8_lossy(&results).contains(SECRET),
        "the results file holds the secret"
    );

    // `belier check` shows where the values come from, not what they are.
    let out = with_env("check", &plan, &s, &["--var", "user=ann"]);
    assert_exit(&out, 0);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(!text(&out).contains(SECRET), "{shown}");
    assert!(
        shown.contains("Authorization: Bearer {{ env.BELIER_TEST_TOKEN }}"),
        "{shown}"
    );
    assert!(
        shown.contains("key: {{ env.BELIER_TEST_TOKEN }}"),
        "{shown}"
    );
    assert!(shown.contains("user: (set by --var)"), "{shown}");
}

#[test]
fn a_missing_variable_or_a_bad_var_exits_2_naming_it() {
    let s = server();
    let dir = temp_dir("bad");
    let plan = dir.join("plan.yaml");
    std::fs::write(&plan, ENV_PLAN).unwrap();

    let out = belier()
        .arg("check")
        .arg(&plan)
        .env_remove("BELIER_TEST_HOST")
        .output()
        .unwrap();
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("plan.yaml:2:16: environment variable `BELIER_TEST_HOST` is not set"),
        "{err}"
    );

    for (sub, var, expected) in [
        ("run", "usr=x", "--var <NAME=VALUE>"),
        (
            "check",
            "usr=x",
            "the plan has no variable `usr` (its variables: user, key)",
        ),
        ("run", "user", "expects NAME=VALUE (found no `=`)"),
    ] {
        let out = with_env(
            sub,
            &plan,
            &s,
            &["--var", var, "-i", "1"][..if sub == "run" { 4 } else { 2 }],
        );
        assert_exit(&out, 2);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected) && err.contains("--var"), "{err}");
    }
    s.wait_idle(Duration::from_secs(1));
    assert_eq!(s.counts().requests, 0, "a bad plan or flag sends nothing");
}
