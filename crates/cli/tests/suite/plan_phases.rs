//! A plan's `setup` and `teardown` through the real binary, against the shop (a login that
//! issues tokens, items that need one, any other path answering 200): the shop counts the
//! logins, item requests and deletes, so each phase is seen to run exactly once, its token in
//! every user's requests, teardown after an interrupted run too, and no load after a failed
//! setup.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use belier_testsupport::process;
use belier_testsupport::shop;
use serde_json::Value;

use shop::{Seen, Shop};

belier_testsupport::binary!(BELIER);

/// A fresh directory holding `plan.yaml` with `text`; returns the plan's path.
fn plan_file(name: &str, text: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("phases-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("plan.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A plan against `shop`: setup logs in with `password`, users list the items with the
/// token, teardown deletes the session with it.
fn plan(shop: &Shop, password: &str, duration: &str) -> String {
    format!(
        r#"target: {url}
load:
  vus: 3
  duration: {duration}
setup:
  - name: login
    post: /api/login
    json: {{ user: ann, password: "{password}" }}
    extract:
      token: {{ json: $.token }}
scenarios:
  - name: browse
    steps:
      - name: items
        get: /api/items
        headers: {{ Authorization: "Bearer {{{{ token }}}}" }}
        check:
          status: 200
teardown:
  - name: logout
    delete: /api/session
    headers: {{ Authorization: "Bearer {{{{ token }}}}" }}
"#,
        url = shop.url()
    )
}

fn count(seen: &[Seen], method: &str, path: &str) -> usize {
    seen.iter()
        .filter(|s| s.method == method && s.target == path)
        .count()
}

/// Exactly one login, first; exactly one delete, last, with the token; every item request in
/// between with that token (so answered 200). Returns the number of item requests.
fn assert_once_around(shop: &Shop) -> usize {
    around(shop, shop.seen())
}

/// [`assert_once_around`] on what `seen` holds of what `shop` served.
fn around(shop: &Shop, seen: Vec<Seen>) -> usize {
    assert_eq!(count(&seen, "POST", "/api/login"), 1, "{seen:#?}");
    assert_eq!(count(&seen, "DELETE", "/api/session"), 1, "{seen:#?}");
    let tokens = shop.tokens();
    let bearer = format!("Bearer {}", tokens[0]);
    assert_eq!(seen[0].target, "/api/login");
    let last = seen.last().unwrap();
    assert_eq!(last.method, "DELETE");
    assert_eq!(last.header("authorization"), Some(bearer.as_str()));
    let items = &seen[1..seen.len() - 1];
    for s in items {
        assert_eq!(s.target, "/api/items");
        assert_eq!(s.header("authorization"), Some(bearer.as_str()));
        assert_eq!(s.status, 200);
    }
    items.len()
}

#[test]
fn setup_logs_in_once_every_user_sends_its_token_and_teardown_deletes_once() {
    let shop = Shop::start();
    let path = plan_file("once", &plan(&shop, shop::PASSWORD, "30s"));
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .arg("run")
        .arg(&path)
        .args(["-i", "30", "--output", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(
        stderr.contains("setup: 1 request in") && stderr.contains("login 200; passed"),
        "{stderr}"
    );
    assert!(stderr.contains("teardown: 1 request in"), "{stderr}");
    assert!(stderr.contains("logout 200; passed"), "{stderr}");
    assert_eq!(assert_once_around(&shop), 30);
    // The report counts the users' requests only: setup and teardown stay apart.
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["requests"], 30);
    let rows: Vec<&str> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(rows, ["items"]);
}

#[test]
fn teardown_runs_after_ctrl_c() {
    let shop = Shop::start();
    let path = plan_file("interrupted", &plan(&shop, shop::PASSWORD, "50s"));
    let mut belier = BELIER.spawn(&["run", path.to_str().unwrap(), "--output", "json"]);
    belier.wait_for("setup: 1 request");
    let deadline = Instant::now() + process::BOUND;
    while count(&shop.seen(), "GET", "/api/items") < 10 {
        assert!(Instant::now() < deadline, "no load after setup");
        std::thread::sleep(Duration::from_millis(20));
    }
    belier.interrupt();
    let (code, stdout, stderr) = belier.finish();
    assert_eq!(code, Some(130), "stderr: {stderr}");
    assert!(stderr.contains("logout 200; passed"), "{stderr}");
    let items = assert_once_around(&shop);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["summary"]["requests"], items as u64);
}

/// `belier run PATH -i 30`, which must exit 1; its stderr.
fn run_failing(path: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .arg("run")
        .arg(path)
        .args(["-i", "30"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    stderr
}

#[test]
fn a_failed_setup_exits_1_with_the_reason_and_sends_no_load() {
    let shop = Shop::start();
    let path = plan_file("failed", &plan(&shop, "wrong", "30s"));
    let stderr = run_failing(&path);
    assert!(
        stderr.contains("setup failed (login: status 401 (expected 2xx)); no load was sent"),
        "{stderr}"
    );
    let seen = shop.seen();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    assert_eq!(seen[0].target, "/api/login");
    assert_eq!(seen[0].status, 401);
}

#[test]
fn check_shows_setup_and_teardown() {
    let shop = Shop::start();
    let path = plan_file("check", &plan(&shop, shop::PASSWORD, "30s"));
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let setup = text
        .find("setup (once, before any user")
        .expect("setup listed");
    let scenarios = text.find("scenarios:").unwrap();
    let teardown = text
        .find("teardown (once, after the last user")
        .expect("listed");
    assert!(setup < scenarios && scenarios < teardown, "{text}");
    assert!(text.contains("- POST /api/login  → row `login`"), "{text}");
    assert!(text.contains("extract token ← "), "{text}");
    assert!(
        text.contains("- DELETE /api/session  → row `logout`"),
        "{text}"
    );
    assert!(text.contains("fails on a status outside 2xx"), "{text}");
    assert!(text.contains("statistics rows: items\n"), "{text}");
    assert!(shop.seen().is_empty());
}

#[test]
fn a_setup_without_a_server_exits_1_naming_the_connection_error() {
    let shop = Shop::start();
    // The plan's target: a loopback port nothing listens on.
    let text = plan(&shop, shop::PASSWORD, "30s").replace(
        &shop.url(),
        &format!("http://127.0.0.1:{}", process::free_port()),
    );
    let path = plan_file("refused", &text);
    let stderr = run_failing(&path);
    assert!(
        stderr.contains("setup failed (login: no response (connect_refused)); no load was sent"),
        "{stderr}"
    );
}

#[test]
fn capacity_runs_setup_once_before_its_steps_and_teardown_once_after() {
    let shop = Shop::start();
    let path = plan_file("capacity", &plan(&shop, shop::PASSWORD, "30s"));
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args([
            "capacity",
            "--slo",
            "p99 < 1s",
            "--start-rate",
            "20",
            "--max-rate",
            "20",
        ])
        .args([
            "--warmup",
            "1s",
            "--window",
            "1s",
            "--confirm",
            "0",
            "--no-overload",
        ])
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(stderr.contains("capacity: setup: 1 request in"), "{stderr}");
    assert!(
        stderr.contains("capacity: teardown: 1 request in"),
        "{stderr}"
    );
    // Capacity probes the idle target before its search and after each step (is the server
    // drained?): `GET /` without the token, which none of the plan's requests is. Apart from
    // them: one login first, one delete last, every step's item requests with setup's token.
    let (probes, plan): (Vec<Seen>, Vec<Seen>) = shop
        .seen()
        .into_iter()
        .partition(|s| s.method == "GET" && s.target == "/");
    assert!(
        probes.len() >= 5 && probes.iter().all(|p| p.header("authorization").is_none()),
        "{probes:#?}"
    );
    assert!(around(&shop, plan) > 0);
}

#[test]
fn capacity_stops_before_any_load_when_setup_fails() {
    let shop = Shop::start();
    let path = plan_file("capacity-bad", &plan(&shop, "wrong", "30s"));
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args([
            "capacity",
            "--slo",
            "p99 < 1s",
            "--start-rate",
            "20",
            "--max-rate",
            "20",
        ])
        .args(["--warmup", "1s", "--window", "1s", "--no-overload"])
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains("setup failed (login: status 401"),
        "{stderr}"
    );
    let seen = shop.seen();
    assert_eq!(seen.len(), 1, "only the login: {seen:#?}");
}
