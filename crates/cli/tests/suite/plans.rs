//! `belier run PLAN` and `belier check PLAN` through the real binary, against belier's test
//! server on 127.0.0.1: what the server saw (tokens, cookies, paths, data rows, arrival times)
//! checked against the plan, and the report's steps, checks, iterations and thresholds.
//!
//! Every plan names `http://127.0.0.1:8080` as its target, like the examples, and every run
//! reaches its own server with `--connect-to`; the server ignores the Host header. Every run is
//! bounded by `-i` (and the plan's own `duration` as a backstop).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use belier_testserver::{Config, SeenRequest, Server};
use belier_testsupport::assert_exit;
use belier_testsupport::temp_dir;
use serde_json::Value;

belier_testsupport::binary!();

/// A test server on 127.0.0.1:0 that keeps the last `record` requests.
fn server(record: usize) -> Server {
    Server::start(Config {
        threads: 2,
        record_requests: record,
        ..Config::default()
    })
    .expect("test server starts")
}

/// Writes `text` as `dir/name` and returns its path.
fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `belier run PLAN --connect-to SERVER ARGS...`.
fn run_plan(plan: &Path, s: &Server, args: &[&str]) -> Output {
    belier()
        .arg("run")
        .arg(plan)
        .args(["--connect-to", &s.addr().to_string()])
        .args(args)
        .output()
        .expect("belier runs")
}

/// `run_plan` with `--output json`, parsed.
fn json_run(plan: &Path, s: &Server, args: &[&str]) -> (Value, Output) {
    let mut all = vec!["--output", "json"];
    all.extend_from_slice(args);
    let out = run_plan(plan, s, &all);
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (doc, out)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Requests in the report == the sum of the step rows == requests the server saw.
fn assert_steps_conserved(doc: &Value, s: &Server) {
    let requests = doc["summary"]["requests"].as_u64().unwrap();
    let rows: u64 = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(requests, rows, "steps: {}", doc["steps"]);
    s.wait_idle(Duration::from_secs(5));
    // A request the server reset on a connection idle for a millisecond or more looks like
    // one that crossed an idle close: belier sends it once more and says so (`resent`), the
    // server counting both. A scripted user's next step on a loaded machine can find its
    // connection that idle (the server here counted 127 for belier's 126 once).
    let resent = doc["summary"]["resent"].as_u64().unwrap();
    assert_eq!(s.counts().requests, requests + resent);
}

fn step<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no step `{name}` in {}", doc["steps"]))
}

fn failed_checks(doc: &Value) -> u64 {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["failed"].as_u64().unwrap())
        .sum()
}

/// The path of a request target, without its query.
fn path(r: &SeenRequest) -> &str {
    r.target.split('?').next().unwrap()
}

/// The requests each virtual user sent (by its `X-VU` header), in arrival order.
fn by_vu(seen: &[SeenRequest]) -> BTreeMap<u64, Vec<&SeenRequest>> {
    let mut users: BTreeMap<u64, Vec<&SeenRequest>> = BTreeMap::new();
    for r in seen {
        let vu = r.header("x-vu").expect("every request names its user");
        users.entry(vu.parse().unwrap()).or_default().push(r);
    }
    users
}

#[test]
fn login_token_and_session_cookie_follow_each_user_and_only_that_user() {
    let s = server(1000);
    let dir = temp_dir("login");
    let plan = write(
        &dir,
        "login.yaml",
        r#"
target: http://127.0.0.1:8080
headers: { X-VU: "{{ vu }}" }
load: { vus: 4, duration: 20s }
scenarios:
  - steps:
      - name: login
        post: /login?token=1
        json: { user: "{{ vu }}" }
        extract: { token: { json: $.token } }
        check: { status: 200 }
        abort_on_fail: true
      - loop: 3
        steps:
          - name: item
            get: /items?json=1
            headers: { Authorization: "Bearer {{ token }}" }
            check: { json: { $.ok: true } }
"#,
    );
    let (doc, out) = json_run(&plan, &s, &["-i", "40"]);
    assert_exit(&out, 0);
    assert_eq!(doc["iterations"]["count"], 40);
    assert_eq!(step(&doc, "login")["requests"], 40);
    assert_eq!(step(&doc, "item")["requests"], 120);
    assert_eq!(failed_checks(&doc), 0, "{}", doc["checks"]);
    assert_steps_conserved(&doc, &s);

    let seen = s.recent_requests();
    assert_eq!(seen.len(), 160);
    // The token the server issued for a login: its connection and its index on it.
    let mut on_connection: HashMap<u64, u64> = HashMap::new();
    let mut issued: HashMap<*const SeenRequest, String> = HashMap::new();
    for r in &seen {
        let index = on_connection.entry(r.connection).or_default();
        if path(r) == "/login" {
            issued.insert(r, format!("t{}-{index}", r.connection));
        }
        *index += 1;
    }
    let users = by_vu(&seen);
    assert_eq!(users.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3]);
    let mut all_tokens = BTreeSet::new();
    for (vu, requests) in &users {
        assert_eq!(
            path(requests[0]),
            "/login",
            "user {vu} starts by logging in"
        );
        // The first request of a user has no cookie yet: nobody else's leaked into its jar.
        assert_eq!(requests[0].header("cookie"), None, "user {vu}");
        let mut token: Option<&str> = None;
        for r in requests {
            if let Some(t) = token {
                // Every later request, the next login included, carries this user's own
                // latest session cookie, and nothing else.
                assert_eq!(
                    r.header("cookie"),
                    Some(format!("session={t}").as_str()),
                    "user {vu}: {}",
                    r.target
                );
            }
            if path(r) == "/login" {
                let t = &issued[&std::ptr::from_ref(*r)];
                assert!(all_tokens.insert(t.clone()), "token {t} issued twice");
                token = Some(t);
            } else {
                assert_eq!(
                    r.header("authorization"),
                    Some(format!("Bearer {}", token.unwrap()).as_str()),
                    "user {vu}: {}",
                    r.target
                );
            }
        }
    }
}

#[test]
fn weights_three_to_one_split_the_iterations() {
    let s = server(3000);
    let dir = temp_dir("weights");
    let plan = write(
        &dir,
        "weights.yaml",
        r#"
target: http://127.0.0.1:8080
load: { vus: 8, duration: 30s, seed: 11 }
scenarios:
  - name: often
    weight: 3
    steps: [ { name: a, get: /a } ]
  - name: rarely
    steps: [ { name: b, get: /b } ]
"#,
    );
    let (doc, out) = json_run(&plan, &s, &["-i", "2000"]);
    assert_exit(&out, 0);
    assert_eq!(doc["iterations"]["count"], 2000);
    assert_steps_conserved(&doc, &s);
    let seen = s.recent_requests();
    assert_eq!(seen.len(), 2000);
    let a = seen.iter().filter(|r| r.target == "/a").count();
    let b = seen.iter().filter(|r| r.target == "/b").count();
    assert_eq!(a + b, 2000);
    let share = a as f64 / 2000.0;
    assert!((share - 0.75).abs() <= 0.03, "a: {a}, b: {b}");
    assert_eq!(step(&doc, "a")["requests"], a as u64);
    assert_eq!(step(&doc, "b")["requests"], b as u64);
}

#[test]
fn unique_rows_are_never_reused_and_running_out_ends_the_run() {
    let s = server(1000);
    let dir = temp_dir("unique");
    let rows = 60;
    let mut csv = String::from("id,word\n");
    for i in 0..rows {
        csv.push_str(&format!("{i},w{i}\n"));
    }
    write(&dir, "rows.csv", &csv);
    let plan = write(
        &dir,
        "unique.yaml",
        r#"
target: http://127.0.0.1:8080
data:
  rows: { file: rows.csv, order: unique }
load: { vus: 5, duration: 60s }
scenarios:
  - steps:
      - name: row
        get: /rows/{{ rows.id }}?w={{ rows.word }}
"#,
    );
    // Neither -i nor -z: the plan's 60 s would be the bound, but the data runs out first.
    let (doc, out) = json_run(&plan, &s, &[]);
    assert_exit(&out, 0);
    let warnings: Vec<&str> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with(&format!("data `rows` ran out after {rows} rows"))),
        "{warnings:?}"
    );
    let elapsed = doc["summary"]["duration_s"].as_f64().unwrap();
    assert!(
        elapsed < 30.0,
        "the run should end when the rows do: {elapsed} s"
    );
    assert_steps_conserved(&doc, &s);
    let seen = s.recent_requests();
    assert_eq!(seen.len(), rows);
    let ids: BTreeSet<String> = seen.iter().map(|r| r.target.clone()).collect();
    assert_eq!(ids.len(), rows, "a row was used twice");
    let want: BTreeSet<String> = (0..rows).map(|i| format!("/rows/{i}?w=w{i}")).collect();
    assert_eq!(ids, want);
    // The text report says it too.
    let out = run_plan(&plan, &s, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("data `rows` ran out after {rows} rows")),
        "{text}"
    );
}

#[test]
fn a_failed_threshold_exits_4_and_is_named() {
    let s = server(0);
    let dir = temp_dir("thresholds");
    let failing = write(
        &dir,
        "failing.yaml",
        r#"
target: http://127.0.0.1:8080
load: { vus: 2, duration: 20s }
scenarios:
  - steps:
      - name: slow
        get: /slow?delay=30ms
thresholds:
  - requests >= 1
  - "slow: p99 < 5ms"
"#,
    );
    let (doc, out) = json_run(&failing, &s, &["-i", "6"]);
    assert_exit(&out, 4);
    let outcomes: Vec<(String, bool)> = doc["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["expression"].as_str().unwrap().to_owned(),
                t["passed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("requests >= 1".to_owned(), true),
            ("slow: p99 < 5ms".to_owned(), false)
        ]
    );
    let junit = dir.join("junit.xml");
    let saved = dir.join("failing.jsonl");
    let out = run_plan(
        &failing,
        &s,
        &[
            "-i",
            "6",
            "--junit",
            junit.to_str().unwrap(),
            "--save",
            saved.to_str().unwrap(),
        ],
    );
    assert_exit(&out, 4);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("✗ slow: p99 < 5ms"), "{text}");
    assert!(text.contains("✓ requests >= 1"), "{text}");
    // The JUnit file for CI: each threshold a test case, the failed one a failure.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(r#"tests="2" failures="1""#), "{xml}");
    assert!(
        xml.contains(
            r#"<testcase classname="belier.thresholds" name="requests &gt;= 1" time="0"/>"#
        ),
        "{xml}"
    );
    assert!(
        xml.contains(r#"name="slow: p99 &lt; 5ms" time="0">"#),
        "{xml}"
    );
    assert!(xml.contains(r#"<failure message="actual "#), "{xml}");
    // The results file keeps the outcomes: its JUnit report has the same cases (it had only
    // `run`), and its JSON and text reports list them.
    let report = |args: &[&str]| {
        let out = belier()
            .arg("report")
            .args(args)
            .output()
            .expect("belier runs");
        assert_exit(&out, 0);
        String::from_utf8(out.stdout).unwrap()
    };
    let from_file = report(&[saved.to_str().unwrap(), "--type", "junit"]);
    assert_eq!(
        from_file, xml,
        "the same JUnit from the file as from the run"
    );
    let doc: Value =
        serde_json::from_str(&report(&[saved.to_str().unwrap(), "--type", "json"])).unwrap();
    assert_eq!(doc["thresholds"][1]["expression"], "slow: p99 < 5ms");
    assert_eq!(doc["thresholds"][1]["passed"], false);
    let text = report(&[saved.to_str().unwrap()]);
    assert!(text.contains("✗ slow: p99 < 5ms"), "{text}");
    // Per-step statistics as CSV: the step, then the run.
    let csv = report(&[saved.to_str().unwrap(), "--type", "csv-stats"]);
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows[0][..4],
        ["run", "name", "requests", "failures"],
        "{csv}"
    );
    assert_eq!(rows.len(), 3, "{csv}");
    assert_eq!(rows[1][..2], ["failing", "slow"], "{csv}");
    assert_eq!(rows[2][..2], ["failing", "Aggregated"], "{csv}");
    let requests = doc["summary"]["requests"].to_string();
    assert_eq!(rows[1][2], requests, "{csv}");
    assert_eq!(rows[2][2], requests, "{csv}");
    let p50_ms: f64 = rows[1][8].parse().unwrap();
    assert!(p50_ms >= 30.0, "the server held each request 30 ms: {csv}");
    // Over a window, the outcomes judged on the whole run are left out, and the report says so.
    let windowed = report(&[saved.to_str().unwrap(), "--type", "junit", "--to", "1s"]);
    assert!(windowed.contains(r#"name="run""#), "{windowed}");
    assert!(!windowed.contains("slow: p99"), "{windowed}");

    let passing = write(
        &dir,
        "passing.yaml",
        r#"
target: http://127.0.0.1:8080
load: { vus: 2, duration: 20s }
scenarios:
  - steps:
      - name: fast
        get: /
thresholds:
  - requests >= 6
  - error_rate < 1%
  - "fast: p99 < 10s"
"#,
    );
    let (doc, out) = json_run(&passing, &s, &["-i", "6"]);
    assert_exit(&out, 0);
    assert!(doc["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["passed"] == true));
}

/// Gaps between consecutive arrivals of each user's requests, in milliseconds.
fn gaps_ms(requests: &[&SeenRequest]) -> Vec<f64> {
    requests
        .windows(2)
        .map(|w| (w[1].arrived - w[0].arrived).as_secs_f64() * 1000.0)
        .collect()
}

#[test]
fn think_time_and_pacing_show_in_server_side_arrivals() {
    let s = server(100);
    let dir = temp_dir("timing");
    let think = write(
        &dir,
        "think.yaml",
        r#"
target: http://127.0.0.1:8080
headers: { X-VU: "{{ vu }}" }
load: { vus: 2, duration: 20s }
scenarios:
  - steps:
      - get: /before
      - pause: 200ms
      - get: /after
"#,
    );
    let (_, out) = json_run(&think, &s, &["-i", "6"]);
    assert_exit(&out, 0);
    let seen = s.recent_requests();
    for (vu, requests) in by_vu(&seen) {
        for pair in requests.windows(2) {
            if path(pair[0]) == "/before" {
                assert_eq!(path(pair[1]), "/after", "user {vu}");
                let gap = gaps_ms(pair)[0];
                assert!(
                    (195.0..450.0).contains(&gap),
                    "user {vu}: {gap} ms between the pause's two sides"
                );
            }
        }
    }

    let s = server(100);
    let paced = write(
        &dir,
        "paced.yaml",
        r#"
target: http://127.0.0.1:8080
headers: { X-VU: "{{ vu }}" }
load: { vus: 2, pacing: 300ms, duration: 20s }
scenarios:
  - steps:
      - get: /tick
"#,
    );
    let (doc, out) = json_run(&paced, &s, &["-i", "8"]);
    assert_exit(&out, 0);
    assert_eq!(doc["iterations"]["count"], 8);
    let seen = s.recent_requests();
    let users = by_vu(&seen);
    assert_eq!(users.len(), 2);
    for (vu, requests) in users {
        assert!(requests.len() >= 2, "user {vu}: {}", requests.len());
        for gap in gaps_ms(&requests) {
            // Iterations start 300 ms apart (the request itself takes well under that).
            assert!(
                (290.0..550.0).contains(&gap),
                "user {vu}: iterations {gap} ms apart"
            );
        }
    }
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

#[test]
fn every_example_is_accepted_and_runs_clean_against_the_test_server() {
    let mut plans: Vec<PathBuf> = std::fs::read_dir(examples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    plans.sort();
    let names: Vec<String> = plans
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "rest-crud.yaml",
            "search.yaml",
            "three-pages.yaml",
            "upload.yaml"
        ]
    );
    let dir = temp_dir("examples");
    for plan in plans {
        let name = plan.file_name().unwrap().to_string_lossy().into_owned();
        let out = belier().arg("check").arg(&plan).output().unwrap();
        assert_exit(&out, 0);
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("plan: "),
            "{name}"
        );

        // The three-page journey reads each page for 5 s; the run uses a copy with 50 ms
        // pauses so that the test stays short. Everything else is the example as written.
        let text = std::fs::read_to_string(&plan).unwrap();
        let plan = if text.contains("pause: 5s") {
            write(&dir, &name, &text.replace("pause: 5s", "pause: 50ms"))
        } else {
            plan
        };
        let s = server(0);
        let (doc, out) = json_run(&plan, &s, &["-i", "10"]);
        assert_exit(&out, 0);
        assert_eq!(doc["iterations"]["count"], 10, "{name}");
        assert!(doc["checks"].as_array().unwrap().len() > 1, "{name}");
        assert_eq!(failed_checks(&doc), 0, "{name}: {}", doc["checks"]);
        let thresholds = doc["thresholds"].as_array().unwrap();
        assert!(!thresholds.is_empty(), "{name}");
        assert!(
            thresholds.iter().all(|t| t["passed"] == true),
            "{name}: {thresholds:?}"
        );
        assert!(
            doc["steps"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["failures"] == 0),
            "{name}: {}",
            doc["steps"]
        );
        assert_steps_conserved(&doc, &s);
    }
}

#[test]
fn malformed_plans_exit_2_with_file_line_and_column() {
    let dir = temp_dir("malformed");
    let good_head = "target: http://127.0.0.1:8080\nscenarios:\n  - steps:\n";
    // (file, contents, ":LINE:COL:" or ":LINE:" where the column is the parser's business,
    // words of the message)
    let cases: [(&str, String, &str, &str); 7] = [
        (
            "unknown-key.yaml",
            format!("{good_head}      - get: /\n      - pauze: 1s\n"),
            ":5:9:",
            "unknown key `pauze` in a request step; did you mean `pause`?",
        ),
        (
            "bad-duration.yaml",
            format!("{good_head}      - get: /\n      - pause: 5 parsecs\n"),
            ":5:16:",
            "found `5 parsecs`",
        ),
        (
            "syntax.yaml",
            format!("{good_head}      - get: {{ /\n"),
            ":5:",
            "YAML syntax",
        ),
        (
            "missing-data.yaml",
            "target: http://127.0.0.1:8080\ndata:\n  rows: { file: nowhere.csv }\n\
             scenarios:\n  - steps:\n      - get: /{{ rows.id }}\n"
                .to_owned(),
            ":3:17:",
            "cannot read data file",
        ),
        // Request splitting (issue 28): CR/LF in a header or a path, refused at its line.
        (
            "header-crlf.yaml",
            format!("{good_head}      - get: /\n        headers:\n          X-A: \"a\\r\\nX: 1\"\n"),
            ":6:16:",
            "the value of header `X-A` holds a line break (CR, \\r)",
        ),
        (
            "path-crlf.yaml",
            format!("{good_head}      - get: \"/a\\r\\nX-Injected: 1\"\n"),
            ":4:14:",
            "the path `/a\\r\\nX-Injected: 1` holds a line break",
        ),
        (
            "content-length.yaml",
            format!("{good_head}      - post: /\n        body: hello\n        headers: {{ Content-Length: 100 }}\n"),
            ":6:36:",
            "`Content-Length: 100` does not match the body, which is 5 bytes",
        ),
    ];
    let s = server(0);
    for (name, text, line, words) in cases {
        let plan = write(&dir, name, &text);
        let shown = plan.display().to_string();
        for command in ["run", "check"] {
            let out = if command == "run" {
                run_plan(&plan, &s, &["-i", "1"])
            } else {
                belier().arg("check").arg(&plan).output().unwrap()
            };
            assert_exit(&out, 2);
            let err = stderr(&out);
            assert!(!err.contains("panicked"), "{name}: {err}");
            // FILE:LINE:COL: then the message.
            let at = err
                .find(&format!("{shown}{line}"))
                .unwrap_or_else(|| panic!("{name} ({command}): no {shown}{line} in {err}"));
            let rest = &err[at + shown.len() + 1..];
            let mut parts = rest.splitn(3, ':');
            let (l, c) = (parts.next().unwrap(), parts.next().unwrap());
            assert!(
                l.parse::<u32>().is_ok() && c.parse::<u32>().is_ok(),
                "{name} ({command}): {err}"
            );
            assert!(rest.contains(words), "{name} ({command}): {err}");
        }
    }
    // A length from -H for every step's body: refused before anything is sent.
    let plan = write(
        &dir,
        "good.yaml",
        &format!("{good_head}      - post: /\n        body: hello\n"),
    );
    let out = run_plan(&plan, &s, &["-i", "1", "-H", "Content-Length: 5"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("'Content-Length: 5' for '--header <'NAME: VALUE'>': cannot apply to every step of a plan"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.counts().requests, 0, "a bad plan sends nothing");
}

#[test]
fn every_request_is_counted_once_under_its_step_whatever_happened_to_it() {
    let s = server(0);
    let dir = temp_dir("conservation");
    let plan = write(
        &dir,
        "mixed.yaml",
        r#"
target: http://127.0.0.1:8080
load: { vus: 6, duration: 20s }
scenarios:
  - weight: 2
    steps:
      - name: fine
        get: /
      - name: unavailable
        get: /?status=503
      - name: reset
        get: /?fault=reset
  - steps:
      - name: slow
        get: /?delay=400ms
"#,
    );
    // Stopped by time while slow requests are in flight: those count too.
    let (doc, out) = json_run(&plan, &s, &["-z", "1s"]);
    assert_exit(&out, 0);
    assert_steps_conserved(&doc, &s);
    let failures = |name| step(&doc, name)["failures"].as_u64().unwrap();
    let requests = |name| step(&doc, name)["requests"].as_u64().unwrap();
    assert_eq!(failures("fine"), 0);
    assert!(requests("unavailable") > 0);
    assert_eq!(failures("unavailable"), requests("unavailable"));
    assert_eq!(failures("reset"), requests("reset"));
    assert!(requests("slow") > 0);
}

#[test]
fn http2_options_that_cannot_apply_exit_2_naming_the_plan() {
    let dir = temp_dir("http2-options");
    let steps = "scenarios:\n  - steps:\n      - get: /\n";
    let cases = [
        (
            "streams-without-h2.yaml",
            "max_streams: 4\n",
            "max_streams only applies to HTTP/2",
        ),
        (
            "h2-without-keepalive.yaml",
            "http2: true\nkeepalive: false\n",
            "`keepalive: false` does not apply to `http2: true`",
        ),
        (
            "too-many-streams.yaml",
            "http2: true\nmax_streams: 2000000\n",
            "max_streams: must be at most 1048576",
        ),
    ];
    let s = server(0);
    for (name, options, words) in cases {
        let plan = write(
            &dir,
            name,
            &format!("target: http://127.0.0.1:8080\n{options}{steps}"),
        );
        let out = run_plan(&plan, &s, &["-i", "1"]);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains(&plan.display().to_string()) && err.contains(words),
            "{name}: {err}"
        );
    }
    assert_eq!(s.counts().requests, 0, "a refused plan sends nothing");
}
