//! `if:` and `choice:` steps through the real binary against the shop (a login issuing
//! tokens, items that need one, any other path answering 200): the requests the shop counts
//! per path are the ones the conditions let through, and equal the report's rows.

use std::process::Command;

use belier_testsupport::shop;
use serde_json::Value;

use shop::Shop;

/// Runs a plan against `shop` whose login uses `password`, for 40 iterations; returns the
/// report.
fn run(shop: &Shop, name: &str, password: &str) -> Value {
    let plan = format!(
        r#"target: {url}
variables: {{ role: user }}
load: {{ vus: 2, duration: 30s }}
scenarios:
  - steps:
      - name: login
        post: /api/login
        json: {{ user: ann, password: "{password}" }}
        check: {{ status: 200 }}
        extract: {{ token: {{ json: $.token }} }}
      - name: items
        if: status == 200
        get: /api/items
        headers: {{ Authorization: "Bearer {{{{ token }}}}" }}
      - name: admin
        if: role == 'admin'
        get: /api/admin
      - name: recover
        if: "failed && !check('login: status in [200]')"
        get: /api/recover
      - choice:
          - weight: 3
            steps: [{{ name: a, get: /api/a }}]
          - steps: [{{ name: b, get: /api/b }}]
"#,
        url = shop.url()
    );
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("conditions-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("plan.yaml");
    std::fs::write(&path, plan).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .arg("run")
        .arg(&path)
        .args(["-i", "40", "--output", "json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    })
}

/// Requests the shop got per path, and the report's row of the same step.
fn counts(shop: &Shop, doc: &Value, step: &str, path: &str) -> (usize, u64) {
    let seen = shop.seen().iter().filter(|s| s.target == path).count();
    let row = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == step)
        .map_or(0, |r| r["requests"].as_u64().unwrap());
    (seen, row)
}

#[test]
fn conditions_and_a_weighted_choice_send_exactly_what_they_say() {
    let shop = Shop::start();
    let doc = run(&shop, "ok", shop::PASSWORD);
    assert_eq!(counts(&shop, &doc, "login", "/api/login"), (40, 40));
    // Logged in: items follow every login, with its token (else the shop answers 401).
    assert_eq!(counts(&shop, &doc, "items", "/api/items"), (40, 40));
    assert!(shop
        .seen()
        .iter()
        .filter(|s| s.target == "/api/items")
        .all(|s| s.status == 200));
    assert_eq!(counts(&shop, &doc, "admin", "/api/admin"), (0, 0));
    assert_eq!(counts(&shop, &doc, "recover", "/api/recover"), (0, 0));
    let (a, a_row) = counts(&shop, &doc, "a", "/api/a");
    let (b, b_row) = counts(&shop, &doc, "b", "/api/b");
    assert_eq!((a as u64, b as u64), (a_row, b_row));
    assert_eq!(a + b, 40, "one branch per iteration");
    assert!(a > b, "3 : 1 weights: a {a}, b {b}");
    assert_eq!(doc["summary"]["requests"], 120);
}

#[test]
fn a_failed_login_takes_the_other_branch() {
    let shop = Shop::start();
    let doc = run(&shop, "failed", "wrong");
    assert_eq!(counts(&shop, &doc, "login", "/api/login"), (40, 40));
    assert_eq!(counts(&shop, &doc, "items", "/api/items"), (0, 0));
    assert_eq!(counts(&shop, &doc, "recover", "/api/recover"), (40, 40));
    let (a, _) = counts(&shop, &doc, "a", "/api/a");
    let (b, _) = counts(&shop, &doc, "b", "/api/b");
    assert_eq!(a + b, 40);
}
