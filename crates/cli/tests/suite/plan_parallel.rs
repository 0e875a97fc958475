//! Browser-like users: a plan's `parallel:` group sent at once over up to
//! `connections_per_host` connections, and `connection: per-iteration` (a new visitor each
//! iteration), through the real binary against belier's test server on 127.0.0.1, whose
//! connection, handshake and request counts are the truth.

use std::path::Path;
use std::time::Duration;

use belier_testserver::{Config, Server, TlsConfig};
use belier_testsupport::temp_dir;
use serde_json::Value;

belier_testsupport::binary!(BELIER);

/// A plan whose one scenario fetches a page, then six resources in a `parallel:` group, each
/// answered after its own delay: 10, 20, ..., 60 ms.
fn parallel_plan(url: &str, per_host: usize, vus: u64, iterations: u64) -> String {
    let mut resources = String::new();
    for k in 1..=6 {
        resources.push_str(&format!(
            "          - name: r{k}\n            get: /r{k}?delay={}ms\n",
            10 * k
        ));
    }
    format!(
        "target: {url}\nconnections_per_host: {per_host}\nload: {{ vus: {vus}, iterations: {iterations} }}\n\
scenarios:\n  - name: visit\n    steps:\n      - name: page\n        get: /page\n      - parallel: assets\n        steps:\n{resources}"
    )
}

fn server(tls: Option<TlsConfig>) -> Server {
    Server::start(Config {
        threads: 2,
        tls,
        ..Config::default()
    })
    .expect("test server starts")
}

/// `belier run PLAN ARGS... --output json`: the report.
fn run(dir: &Path, plan: &str, args: &[&str]) -> Value {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, plan).unwrap();
    let mut all = vec!["run", path.to_str().unwrap(), "--output", "json"];
    all.extend_from_slice(args);
    let out = BELIER.ok(&all);
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

fn row<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no step row {name}: {}", doc["steps"]))
}

/// The group row's fastest and slowest group, in milliseconds.
fn group_ms(doc: &Value) -> (u64, u64) {
    let latency = &row(doc, "assets")["latency_us"];
    (
        latency["min"].as_u64().unwrap() / 1000,
        latency["max"].as_u64().unwrap() / 1000,
    )
}

/// Six resources over six connections: each user opens six (its page goes on the first),
/// every request is counted in its own row, and the group takes as long as its slowest
/// request (60 ms), not the sum of the six (210 ms).
#[test]
fn a_parallel_group_of_six_opens_six_connections_and_lasts_its_slowest_request() {
    let s = server(None);
    let dir = temp_dir("parallel-six");
    let doc = run(&dir, &parallel_plan(&s.url(""), 6, 2, 4), &[]);
    s.wait_idle(Duration::from_secs(5));
    let counts = s.counts();
    assert_eq!(counts.requests, 4 * 7, "{counts:?}");
    assert_eq!(counts.connections, 2 * 6, "{counts:?}");
    assert_eq!(doc["summary"]["requests"], 28, "{}", doc["summary"]);
    assert_eq!(
        doc["summary"]["connections_opened"], 12,
        "{}",
        doc["summary"]
    );
    assert_eq!(row(&doc, "assets")["requests"], 4);
    assert_eq!(row(&doc, "assets")["failures"], 0);
    for k in 1..=6 {
        assert_eq!(row(&doc, &format!("r{k}"))["requests"], 4);
    }
    let (fastest, slowest) = group_ms(&doc);
    assert!(
        fastest >= 60,
        "a group ends with its slowest request: {fastest} ms"
    );
    assert!(slowest < 210, "the six were sent one by one: {slowest} ms");
}

/// Two connections per host: six resources share them, three in line on each, so the user
/// opens two connections and the group lasts at least its longer line (20 + 40 + 60 ms).
#[test]
fn a_group_larger_than_connections_per_host_queues_on_them() {
    let s = server(None);
    let dir = temp_dir("parallel-two");
    let doc = run(&dir, &parallel_plan(&s.url(""), 2, 1, 3), &[]);
    s.wait_idle(Duration::from_secs(5));
    let counts = s.counts();
    assert_eq!(
        (counts.requests, counts.connections),
        (3 * 7, 2),
        "{counts:?}"
    );
    assert_eq!(row(&doc, "assets")["requests"], 3);
    let (fastest, _) = group_ms(&doc);
    assert!(fastest >= 120, "the longer line is 120 ms: {fastest} ms");
}

/// A failing request fails its own row and the group's; the others still count as passed.
#[test]
fn a_failed_request_fails_the_group() {
    let s = server(None);
    let dir = temp_dir("parallel-fail");
    let plan = format!(
        "target: {}\nload: {{ vus: 1, iterations: 2 }}\nscenarios:\n  - steps:\n      - parallel: assets\n        steps:\n          - name: ok\n            get: /ok\n          - name: missing\n            get: /missing?status=404\n",
        s.url("")
    );
    let doc = run(&dir, &plan, &[]);
    assert_eq!(row(&doc, "assets")["failures"], 2, "{}", doc["steps"]);
    assert_eq!(row(&doc, "missing")["failures"], 2, "{}", doc["steps"]);
    assert_eq!(row(&doc, "ok")["failures"], 0, "{}", doc["steps"]);
    assert_eq!(s.counts().requests, 4);
}

/// Over HTTP/2 (h2c) the group's six requests are streams at once on the user's one
/// connection: one connection for two users (they share it, as `max_streams` says), and the
/// group still lasts its slowest request, not the sum.
#[test]
fn over_http2_a_group_is_concurrent_streams_on_one_connection() {
    let s = Server::start(Config {
        threads: 2,
        http2: true,
        ..Config::default()
    })
    .expect("test server starts");
    let dir = temp_dir("parallel-h2");
    let plan = parallel_plan(&s.url(""), 6, 2, 4).replacen("\n", "\nhttp2: true\n", 1);
    let doc = run(&dir, &plan, &[]);
    s.wait_idle(Duration::from_secs(5));
    let counts = s.counts();
    assert_eq!((counts.requests, counts.connections), (28, 1), "{counts:?}");
    assert_eq!(row(&doc, "assets")["requests"], 4, "{}", doc["steps"]);
    let (fastest, slowest) = group_ms(&doc);
    assert!(
        fastest >= 60,
        "a group ends with its slowest request: {fastest} ms"
    );
    assert!(slowest < 210, "the six were sent one by one: {slowest} ms");
}

/// Over two spawned workers the same plan sends the same requests on the same number of
/// connections, and the merged report has the group's row.
#[test]
fn spawned_workers_run_parallel_groups() {
    let s = server(None);
    let dir = temp_dir("parallel-spawn");
    let doc = run(&dir, &parallel_plan(&s.url(""), 6, 2, 4), &["--spawn", "2"]);
    s.wait_idle(Duration::from_secs(5));
    let counts = s.counts();
    assert_eq!(
        (counts.requests, counts.connections),
        (28, 12),
        "{counts:?}"
    );
    assert_eq!(row(&doc, "assets")["requests"], 4, "{}", doc["steps"]);
    assert_eq!(row(&doc, "r6")["requests"], 4, "{}", doc["steps"]);
}

/// `connection: per-iteration` over TLS: five iterations are five new visitors, each with a
/// connection and a full handshake of its own (TLS resumption stays off); the default reuses
/// one connection for all five.
#[test]
fn per_iteration_connections_make_every_iteration_a_new_visitor() {
    for (connection, want) in [("per-iteration", 5), ("reuse", 1)] {
        let (tls, ca) = TlsConfig::self_signed(&["127.0.0.1"]);
        let s = server(Some(tls));
        let dir = temp_dir("per-iteration");
        std::fs::write(dir.join("ca.pem"), ca).unwrap();
        let plan = format!(
            "target: {}\ncacert: ca.pem\nconnection: {connection}\nload: {{ vus: 1, iterations: 5 }}\nscenarios:\n  - steps:\n      - get: /a\n      - get: /b\n",
            s.url("")
        );
        let doc = run(&dir, &plan, &[]);
        s.wait_idle(Duration::from_secs(5));
        let counts = s.counts();
        assert_eq!(counts.requests, 10, "{connection}: {counts:?}");
        assert_eq!(counts.connections, want, "{connection}: {counts:?}");
        assert!(
            s.wait_for(Duration::from_secs(5), |c| c.tls_handshakes == want),
            "{connection}: {:?}",
            s.counts()
        );
        assert_eq!(doc["summary"]["connections_opened"], want, "{connection}");
        assert_eq!(doc["summary"]["tls_handshakes"], want, "{connection}");
        assert_eq!(doc["summary"]["tls_resumed"], 0, "{connection}");
    }
}

/// Bad values are refused before anything runs, naming the plan's file and line.
#[test]
fn bad_connection_options_name_their_line() {
    let dir = temp_dir("parallel-bad");
    let head = "target: http://127.0.0.1:9\n";
    let steps = "scenarios:\n  - steps:\n      - get: /\n";
    let cases = [
        (
            format!("{head}connections_per_host: 0\n{steps}"),
            "plan.yaml:2",
            "connections_per_host from 1 to 256",
        ),
        (
            format!("{head}connection: sometimes\n{steps}"),
            "plan.yaml:2",
            "`connection: per-iteration`, found `sometimes`",
        ),
        (
            format!("{head}http2: true\nconnection: per-iteration\n{steps}"),
            "plan.yaml:3",
            "needs HTTP/1.1",
        ),
        (
            format!("{head}scenarios:\n  - steps:\n      - parallel: assets\n        steps:\n          - get: /a\n          - pause: 1s\n"),
            "plan.yaml:7",
            "request steps only, not `pause`",
        ),
    ];
    for (plan, at, says) in cases {
        let path = dir.join("plan.yaml");
        std::fs::write(&path, &plan).unwrap();
        let out = BELIER.output(&["check", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && !err.contains("panicked"), "{err}");
        assert!(err.contains(at) && err.contains(says), "{plan}\n{err}");
    }
}
