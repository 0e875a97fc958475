//! The real `belier` binary against a real nginx on 127.0.0.1: what belier reports is checked
//! against nginx's own access log, line by line, so neither side's bookkeeping is trusted alone.
//!
//! Needs nginx (`apt-get install -y nginx-light`); without it each test says it was skipped,
//! except under CI, where a missing nginx fails the test.

use std::process::{Command, Output};

use belier_testsupport::nginx as nginx_support;
use nginx_support::{LogLine, Nginx, Options};

belier_testsupport::binary!(BELIER);

/// Every logged request was a `GET /` answered 200 by nginx.
fn assert_all_ok(lines: &[LogLine]) {
    let odd: Vec<&LogLine> = lines
        .iter()
        .filter(|l| l.status != 200 || l.method != "GET" || l.uri != "/")
        .collect();
    assert!(odd.is_empty(), "{} unexpected lines: {odd:?}", odd.len());
}

#[test]
fn keepalive_run_matches_nginx_access_log() {
    let Some(nginx) = Nginx::start(false) else {
        return;
    };
    let doc = BELIER.json(&["-n", "1000", "-c", "10", &nginx.http_url("/")]);
    assert_eq!(doc["summary"]["requests"], 1000, "{}", doc["summary"]);
    assert_eq!(doc["summary"]["succeeded"], 1000, "{}", doc["summary"]);
    assert_eq!(doc["status_codes"]["200"], 1000, "{}", doc["status_codes"]);
    assert_eq!(doc["summary"]["connections_opened"], 10);

    let lines = nginx.requests();
    assert_eq!(lines.len(), 1000);
    assert_all_ok(&lines);
    assert!(lines.iter().all(|l| l.server_protocol == "HTTP/1.1"));
    assert_eq!(doc["run"]["protocol"], "HTTP/1.1", "{}", doc["run"]);
    assert_eq!(nginx.connections_seen(), 10);
    // nginx's counters agree with its log (plus the status request itself).
    assert_eq!(nginx.stub_status().requests, 1000 + 1);
    nginx.stop();
}

#[test]
fn no_keepalive_uses_a_connection_per_request_at_nginx() {
    let Some(nginx) = Nginx::start(false) else {
        return;
    };
    let doc = BELIER.json(&[
        "--no-keepalive",
        "-n",
        "300",
        "-c",
        "5",
        &nginx.http_url("/"),
    ]);
    assert_eq!(doc["summary"]["requests"], 300, "{}", doc["summary"]);
    assert_eq!(doc["status_codes"]["200"], 300, "{}", doc["status_codes"]);
    assert_eq!(doc["summary"]["connections_opened"], 300);

    let lines = nginx.requests();
    assert_eq!(lines.len(), 300);
    assert_all_ok(&lines);
    assert!(lines.iter().all(|l| l.connection_requests == 1));
    assert_eq!(nginx.connections_seen(), 300);
}

#[test]
fn open_loop_sends_exactly_rate_times_duration() {
    let Some(nginx) = Nginx::start(false) else {
        return;
    };
    let doc = BELIER.json(&["--rate", "200", "-z", "2s", &nginx.http_url("/")]);
    assert_eq!(doc["summary"]["requests"], 400, "{}", doc["summary"]);
    assert_eq!(doc["status_codes"]["200"], 400, "{}", doc["status_codes"]);

    let lines = nginx.requests();
    assert_eq!(lines.len(), 400);
    assert_all_ok(&lines);
}

#[test]
fn tls_run_matches_nginx_access_log() {
    let Some(nginx) = Nginx::start(true) else {
        return;
    };
    let ca = nginx.ca_pem_path();
    let doc = BELIER.json(&[
        "-n",
        "500",
        "-c",
        "5",
        "--cacert",
        ca.to_str().unwrap(),
        &nginx.https_url("/"),
    ]);
    assert_eq!(doc["summary"]["requests"], 500, "{}", doc["summary"]);
    assert_eq!(doc["status_codes"]["200"], 500, "{}", doc["status_codes"]);
    assert_eq!(doc["summary"]["connections_opened"], 5);

    let lines = nginx.requests();
    assert_eq!(lines.len(), 500);
    assert_all_ok(&lines);
    let odd: Vec<&LogLine> = lines
        .iter()
        .filter(|l| {
            !matches!(l.ssl_protocol.as_str(), "TLSv1.3" | "TLSv1.2")
                || l.server_protocol != "HTTP/1.1"
        })
        .collect();
    assert!(odd.is_empty(), "not HTTP/1.1 over TLS: {odd:?}");
    assert_eq!(nginx.connections_seen(), 5);
}

#[test]
fn http2_run_matches_nginx_access_log() {
    let Some(nginx) = Nginx::start(true) else {
        return;
    };
    let ca = nginx.ca_pem_path();
    // 20 concurrent requests, 5 streams per connection: 4 connections at nginx.
    let doc = BELIER.json(&[
        "--http2",
        "-n",
        "500",
        "-c",
        "20",
        "--max-streams",
        "5",
        "--cacert",
        ca.to_str().unwrap(),
        &nginx.https_url("/"),
    ]);
    assert_eq!(doc["summary"]["requests"], 500, "{}", doc["summary"]);
    assert_eq!(doc["status_codes"]["200"], 500, "{}", doc["status_codes"]);
    assert_eq!(
        doc["summary"]["connections_opened"], 4,
        "{}",
        doc["summary"]
    );
    assert_eq!(doc["run"]["protocol"], "HTTP/2", "{}", doc["run"]);
    let session = doc["summary"]["tls_session"].as_str().unwrap_or_default();
    assert!(session.contains("ALPN h2"), "{session}");

    let lines = nginx.requests();
    assert_eq!(lines.len(), 500);
    assert_all_ok(&lines);
    let odd: Vec<&LogLine> = lines
        .iter()
        .filter(|l| l.server_protocol != "HTTP/2.0" || l.ssl_protocol == "-")
        .collect();
    assert!(odd.is_empty(), "not HTTP/2 over TLS: {odd:?}");
    assert_eq!(nginx.connections_seen(), 4);
    // Every request went on one of the four connections belier counted.
    let mut per_connection = std::collections::BTreeMap::<u64, u64>::new();
    for l in &lines {
        *per_connection.entry(l.connection).or_default() += 1;
    }
    assert_eq!(per_connection.len(), 4, "{per_connection:?}");
}

#[test]
fn h2c_run_matches_nginx_access_log() {
    let Some(nginx) = Nginx::start_with(Options {
        h2c: true,
        ..Options::default()
    }) else {
        return;
    };
    let doc = BELIER.json(&["--http2", "-n", "300", "-c", "10", &nginx.h2c_url("/")]);
    assert_eq!(doc["summary"]["requests"], 300, "{}", doc["summary"]);
    assert_eq!(doc["status_codes"]["200"], 300, "{}", doc["status_codes"]);
    let lines = nginx.requests();
    assert_eq!(lines.len(), 300);
    assert_all_ok(&lines);
    assert!(lines
        .iter()
        .all(|l| l.server_protocol == "HTTP/2.0" && l.ssl_protocol == "-"));
    assert_eq!(nginx.connections_seen(), 1);
}

#[test]
fn http2_prior_knowledge_to_an_http1_server_fails_every_request() {
    // The plain port speaks HTTP/1.1 only: prior-knowledge h2c gets no HTTP/2 answer.
    let Some(nginx) = Nginx::start(false) else {
        return;
    };
    let doc = BELIER.json(&["--http2", "-n", "20", "-c", "2", &nginx.http_url("/")]);
    assert_eq!(doc["summary"]["requests"], 20, "{}", doc["summary"]);
    assert_eq!(doc["summary"]["succeeded"], 0, "{}", doc["summary"]);
    assert_eq!(doc["summary"]["errors"], 20, "{}", doc["summary"]);
    // nginx answers the connection preface with an HTTP/1.1 400, which is no HTTP/2 frame.
    assert_eq!(
        doc["errors"][0]["kind"], "malformed_response",
        "{}",
        doc["errors"]
    );
}

#[test]
fn plan_over_http2_matches_nginx_access_log() {
    let Some(nginx) = Nginx::start(true) else {
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("nginx-h2-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan = dir.join("h2.yaml");
    // 10 users, 5 streams per connection: 2 connections at nginx. The checks read the status,
    // a header and the body, which over HTTP/2 come from the stream's HEADERS and DATA.
    std::fs::write(
        &plan,
        format!(
            "target: {target}\n\
             cacert: {ca}\n\
             http2: true\n\
             max_streams: 5\n\
             load:\n  vus: 10\n  iterations: 40\n\
             scenarios:\n\
             \x20 - steps:\n\
             \x20     - name: one\n\
             \x20       get: /one\n\
             \x20       check: {{ status: 200, header: Content-Type, body_contains: hello }}\n\
             \x20     - name: two\n\
             \x20       get: /two\n",
            target = nginx.https_url(""),
            ca = nginx.ca_pem_path().display(),
        ),
    )
    .unwrap();
    let out: Output = Command::new(env!("CARGO_BIN_EXE_belier"))
        .arg("run")
        .arg(&plan)
        .args(["--output", "json"])
        .output()
        .expect("belier runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(doc["iterations"]["count"], 40, "{}", doc["iterations"]);
    assert_eq!(doc["summary"]["requests"], 80, "{}", doc["summary"]);
    assert_eq!(doc["status_codes"]["200"], 80, "{}", doc["status_codes"]);
    assert_eq!(doc["summary"]["connections_opened"], 2);
    assert_eq!(doc["run"]["protocol"], "HTTP/2", "{}", doc["run"]);
    let steps = doc["steps"].as_array().unwrap();
    let rows: Vec<(&str, u64, u64)> = steps
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["requests"].as_u64().unwrap(),
                s["failures"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(rows, [("one", 40, 0), ("two", 40, 0)]);
    let checks = doc["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 3, "{}", doc["checks"]);
    assert!(
        checks.iter().all(|c| c["passed"] == 40 && c["failed"] == 0),
        "{}",
        doc["checks"]
    );

    let lines = nginx.requests();
    assert_eq!(lines.len(), 80);
    let count = |uri: &str| lines.iter().filter(|l| l.uri == uri).count();
    assert_eq!((count("/one"), count("/two")), (40, 40));
    assert!(lines
        .iter()
        .all(|l| l.status == 200 && l.server_protocol == "HTTP/2.0" && l.ssl_protocol != "-"));
    assert_eq!(nginx.connections_seen(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}
