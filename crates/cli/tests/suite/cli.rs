//! The real `belier` binary against belier's test server on 127.0.0.1: counts cross-checked
//! with the server, exit codes, signals, and the JSON schema.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use belier_testserver::{Config, Server};
use belier_testsupport::assert_exit;
use serde_json::Value;

belier_testsupport::binary!();

fn server() -> Server {
    Server::start(Config {
        threads: 2,
        ..Config::default()
    })
    .expect("test server starts")
}

fn run(args: &[&str]) -> Output {
    belier().args(args).output().expect("belier runs")
}

fn json_run(args: &[&str]) -> (Value, Output) {
    let mut all = vec!["--output", "json"];
    all.extend_from_slice(args);
    let out = run(&all);
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (doc, out)
}

/// How many requests of the JSON report `doc` failed with error kind `kind`.
pub(crate) fn error_count(doc: &Value, kind: &str) -> u64 {
    doc["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == kind)
        .map_or(0, |e| e["count"].as_u64().unwrap())
}

fn assert_conserved(doc: &Value) {
    let s = &doc["summary"];
    let errors: u64 = doc["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    let statuses: u64 = doc["status_codes"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(s["responses"].as_u64().unwrap(), statuses);
    assert_eq!(s["requests"].as_u64().unwrap(), statuses + errors, "{s}");
}

pub(crate) fn validate(doc: &Value) {
    let schema: Value = serde_json::from_str(belier_report::SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn keepalive_run_matches_the_server_and_validates() {
    let s = server();
    let (doc, out) = json_run(&["-n", "1000", "-c", "10", &s.url("/")]);
    assert_exit(&out, 0);
    validate(&doc);
    assert_conserved(&doc);
    assert_eq!(doc["summary"]["requests"], 1000);
    assert_eq!(doc["summary"]["succeeded"], 1000);
    assert_eq!(doc["summary"]["connections_opened"], 10);
    assert_eq!(doc["status_codes"]["200"], 1000);
    assert_eq!(s.counts().requests, 1000);
    assert_eq!(s.counts().connections, 10);
    // Not a terminal: no progress line, nothing on stderr.
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_open_loop_bounded_by_a_budget_reports_its_own_rate() {
    // 500 arrivals at 1,000/s are a 0.5 s schedule: the target and sent rates are 1,000/s,
    // not 500 over the run's elapsed time (which adds the last answer's latency).
    let s = server();
    let (doc, out) = json_run(&["--rate", "1000", "-n", "500", &s.url("/")]);
    assert_exit(&out, 0);
    validate(&doc);
    assert_eq!(doc["summary"]["requests"], 500);
    assert_eq!(s.counts().requests, 500);
    assert_eq!(doc["run"]["schedule_s"], 0.5);
    let open = &doc["open_loop"];
    assert_eq!(open["scheduled"], 500);
    for key in ["target_rps", "achieved_rps"] {
        let rate = open[key].as_f64().unwrap();
        assert!((rate - 1000.0).abs() < 1e-6, "{key} {rate}");
    }
}

#[test]
fn no_keepalive_opens_a_connection_per_request() {
    let s = server();
    let (doc, out) = json_run(&["-n", "1000", "-c", "10", "--no-keepalive", &s.url("/")]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(doc["summary"]["requests"], 1000);
    assert_eq!(doc["summary"]["connections_opened"], 1000);
    assert_eq!(doc["run"]["keepalive"], false);
    s.wait_idle(Duration::from_secs(5));
    assert_eq!(s.counts().requests, 1000);
    assert_eq!(s.counts().connections, 1000);
}

#[test]
fn no_keepalive_peak_counts_connections_not_threads() {
    // Each request holds its connection 50 ms: the 20 connection tasks of 2 threads (then of
    // 1) overlap, so 20 connections are open at once, not one per thread.
    let s = server();
    for threads in ["2", "1"] {
        let (doc, out) = json_run(&[
            "-n",
            "200",
            "-c",
            "20",
            "-t",
            threads,
            "--no-keepalive",
            &s.url("/?delay=50ms"),
        ]);
        assert_exit(&out, 0);
        assert_eq!(doc["summary"]["requests"], 200);
        assert_eq!(doc["summary"]["connections_opened"], 200);
        assert_eq!(doc["summary"]["connections_peak"], 20, "-t {threads}");
    }
    s.wait_idle(Duration::from_secs(5));
    assert_eq!(s.counts().connections, 400);
    let out = run(&[
        "-n",
        "40",
        "-c",
        "20",
        "-t",
        "1",
        "--no-keepalive",
        &s.url("/?delay=50ms"),
    ]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("at most 20 open at once"), "{text}");
    assert!(
        text.contains("on 1 thread,") || text.contains("on 1 thread\n"),
        "{text}"
    );
}

#[test]
fn habits_of_other_tools_are_named() {
    let s = server();
    // wrk's -d: the run goes on (a GET with that body), with a warning saying what -d is here.
    let out = run(&["-n", "3", "-d", "30s", &s.url("/")]);
    assert_exit(&out, 0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: -d 30s is the request body of each GET here, not a duration"),
        "{err}"
    );
    assert!(err.contains("use -z 30s"), "{err}");
    // ab's -t, as many threads as seconds.
    let out = run(&["-n", "3", "-c", "64", "-t", "64", &s.url("/")]);
    assert_exit(&out, 0);
    let err = String::from_utf8_lossy(&out.stderr);
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(
        err.contains("ab's -t is a time limit"),
        cores < 64,
        "{cores} cores: {err}"
    );
    // Several URLs: exit 2, pointing to a targets file.
    let out = run(&["-n", "3", &s.url("/a"), &s.url("/b")]);
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: several URLs given ("), "{err}");
    assert!(err.contains("--targets FILE"), "{err}");
    s.wait_idle(Duration::from_secs(5));
    assert_eq!(s.counts().requests, 6);
}

#[test]
fn faults_are_results_with_their_own_kind_and_exit_zero() {
    let s = server();
    for (fault, kind) in [
        ("reset", "connection_reset"),
        ("close-before-headers", "closed_before_response"),
        ("close-mid-body", "closed_mid_body"),
        ("malformed", "malformed_response"),
    ] {
        let before = s.counts().requests;
        let (doc, out) = json_run(&["-n", "200", "-c", "4", &s.url(&format!("/?fault={fault}"))]);
        assert_eq!(out.status.code(), Some(0), "{fault}");
        validate(&doc);
        assert_conserved(&doc);
        assert_eq!(doc["summary"]["requests"], 200, "{fault}");
        assert_eq!(error_count(&doc, kind), 200, "{fault}: {}", doc["errors"]);
        assert_eq!(s.counts().requests - before, 200, "{fault}");
    }
    // The text report names the kind and gives an example message.
    let out = run(&["-n", "20", "-c", "2", &s.url("/?fault=reset")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("connection reset by peer"), "{text}");
    assert!(text.contains("e.g."), "{text}");
}

#[test]
fn error_statuses_are_responses_not_successes() {
    let s = server();
    let (doc, _) = json_run(&["-n", "100", "-c", "5", &s.url("/?status=503")]);
    assert_eq!(doc["summary"]["responses"], 100);
    assert_eq!(doc["summary"]["succeeded"], 0);
    assert_eq!(doc["summary"]["success_ratio"], 0.0);
    assert_eq!(doc["status_codes"]["503"], 100);
}

#[test]
fn stalled_server_counts_timeouts_and_ends_on_time() {
    let s = server();
    let started = Instant::now();
    let (doc, out) = json_run(&[
        "-z",
        "1s",
        "-c",
        "4",
        "--timeout",
        "300ms",
        &s.url("/?fault=stall"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_conserved(&doc);
    let timeouts = error_count(&doc, "timeout");
    assert!(
        (8..=16).contains(&timeouts),
        "{timeouts} timeouts: {}",
        doc["errors"]
    );
    assert_eq!(doc["summary"]["responses"], 0);
}

#[test]
fn refused_connections_still_produce_a_report() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (doc, out) = json_run(&["-n", "30", "-c", "3", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(error_count(&doc, "connect_refused"), 30);
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} {pid}");
}

#[test]
fn ctrl_c_prints_a_complete_report_and_exits_130() {
    let s = server();
    let child = belier()
        .args([
            "-z",
            "60s",
            "-c",
            "8",
            "--output",
            "json",
            &s.url("/?delay=1ms"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1_500));
    let started = Instant::now();
    signal(child.id(), "-INT");
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_exit(&out, 130);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("a complete JSON report");
    validate(&doc);
    assert_conserved(&doc);
    assert_eq!(doc["interrupted"], true);
    let requests = doc["summary"]["requests"].as_u64().unwrap();
    assert!(requests > 100, "{requests}");
    s.wait_idle(Duration::from_secs(5));
    assert_eq!(
        s.counts().requests,
        requests,
        "the report counts every request the server saw"
    );
}

#[test]
fn a_second_ctrl_c_exits_at_once() {
    let s = server();
    // Stalled requests would hold the first Ctrl-C for the whole grace period.
    let child = belier()
        .args(["-z", "60s", "-c", "2", &s.url("/?fault=stall")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    signal(child.id(), "-INT");
    signal(child.id(), "-INT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
}

#[test]
fn text_report_has_every_section() {
    let s = server();
    let out = run(&["-n", "500", "-c", "5", "-H", "X-Run: text", &s.url("/")]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "belier ",
        "5 connections",
        "keep-alive on",
        "Requests",
        "500",
        "Succeeded",
        "100.00 % success",
        "Latency",
        "p50",
        "p99.99",
        "max",
        "stdev",
        "Bytes in",
        "Status codes",
        "200",
        "Errors",
        "none",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

#[test]
fn report_goes_to_the_out_file() {
    let s = server();
    let dir = std::env::temp_dir().join(format!("belier-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("report.json");
    let out = run(&[
        "-n",
        "50",
        "-c",
        "2",
        "--output",
        "json",
        "--out",
        path.to_str().unwrap(),
        &s.url("/"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(doc["summary"]["requests"], 50);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn body_from_file_is_sent() {
    let s = Server::start(Config {
        record_requests: 4,
        ..Config::default()
    })
    .unwrap();
    let path = std::env::temp_dir().join(format!("belier-body-{}", std::process::id()));
    std::fs::write(&path, b"{\"a\":1}").unwrap();
    let out = run(&[
        "-n",
        "3",
        "-c",
        "1",
        "-m",
        "PUT",
        "-D",
        path.to_str().unwrap(),
        &s.url("/x"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let seen = s.recent_requests();
    assert_eq!(seen.len(), 3);
    assert!(seen
        .iter()
        .all(|r| r.method == "PUT" && r.body == b"{\"a\":1}"));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn bad_input_exits_2_with_one_line_naming_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "<URL>"),
        (&["not a url"], "<URL>"),
        (&["gopher://x/"], "<URL>"),
        (&["http://127.0.0.1:1/", "-n", "0"], "--requests"),
        (&["http://127.0.0.1:1/", "-n", "lots"], "--requests"),
        (&["http://127.0.0.1:1/", "-c", "0"], "--connections"),
        (&["http://127.0.0.1:1/", "-c", "99999999"], "--connections"),
        (&["http://127.0.0.1:1/", "-t", "0"], "--threads"),
        (&["http://127.0.0.1:1/", "-z", "forever"], "--duration"),
        (&["http://127.0.0.1:1/", "--timeout", "0s"], "--timeout"),
        (&["http://127.0.0.1:1/", "-H", "no colon"], "--header"),
        (
            &["http://127.0.0.1:1/", "-D", "/no/such/file"],
            "--body-file",
        ),
        (
            &["http://127.0.0.1:1/", "-d", "x", "-D", "/etc/hostname"],
            "--body",
        ),
        (&["http://127.0.0.1:1/", "--output", "xml"], "--output"),
        (
            &["http://127.0.0.1:1/", "--http2", "--max-streams", "0"],
            "--max-streams",
        ),
        (
            &["http://127.0.0.1:1/", "--max-streams", "5"],
            "--max-streams",
        ),
        (&["http://127.0.0.1:1/", "--frobnicate"], "--frobnicate"),
        // Request splitting and false framing (issue 28): shown escaped, on one line.
        (
            &["http://127.0.0.1:1/", "-H", "X-A: a\r\nX-Injected: 1"],
            "'X-A: a\\r\\nX-Injected: 1' for '--header <'NAME: VALUE'>': the value of header `X-A` holds a line break",
        ),
        (
            &["http://127.0.0.1:1/", "-H", "X-A\r\nX-Injected: 1"],
            "the header name `X-A\\r\\nX-Injected` holds a line break",
        ),
        (&["http://127.0.0.1:1/", "-m", "GET\r\n"], "--method"),
        (
            &["http://127.0.0.1:1/a\r\nX-Injected: 1"],
            "'http://127.0.0.1:1/a\\r\\nX-Injected: 1' for '<URL>': holds a line break",
        ),
        (
            &["http://127.0.0.1:1/", "-H", "Content-Length: 100", "-d", "hello"],
            "'Content-Length: 100' for '--header <'NAME: VALUE'>': `Content-Length: 100` does not match the body, which is 5 bytes",
        ),
        (
            &["http://127.0.0.1:1/", "--proxy", "http://127.0.0.1:3128\r\nX: 1"],
            "for '--proxy <URL>': holds a line break",
        ),
        (
            &["http://127.0.0.1:1/", "-H", "Transfer-Encoding: chunked", "-d", "hello"],
            "`Transfer-Encoding: chunked` with a body of 5 bytes that is not chunk-encoded",
        ),
    ];
    for (argv, flag) in cases {
        let out = run(argv);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "{argv:?}: one line, got {stderr}"
        );
        assert!(stderr.contains(flag), "{argv:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{argv:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{argv:?}");
    }
}

#[test]
fn connections_beyond_the_file_limit_are_refused_before_starting() {
    let out = Command::new("sh")
        .args([
            "-c",
            &format!(
                "ulimit -Sn 256 && ulimit -Hn 256 && exec '{}' -c 1000 -n 1000 http://127.0.0.1:1/",
                env!("CARGO_BIN_EXE_belier")
            ),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ulimit -n"), "{stderr}");
    assert!(stderr.contains("256"), "{stderr}");
}

#[test]
fn help_documents_defaults_and_exit_codes() {
    let out = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for want in [
        "--requests",
        "10 s",
        "--no-keepalive",
        "Exit codes",
        "130",
        "[default: 50]",
    ] {
        assert!(help.contains(want), "missing {want:?}");
    }
}

#[test]
fn demo_runs_a_real_load_test() {
    let out = run(&["demo", "-z", "1s", "-c", "4"]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Latency"), "{text}");
    // The target's own count equals the report's request count.
    let report = text
        .lines()
        .find(|l| l.trim_start().starts_with("Requests"))
        .unwrap();
    let reported: String = report.split_whitespace().nth(1).unwrap().replace(',', "");
    let seen = text
        .lines()
        .find(|l| l.starts_with("The target counted"))
        .unwrap();
    assert!(
        seen.contains(&format!("counted {reported} requests")),
        "{report} / {seen}"
    );
}

#[test]
fn probe_shows_phases_status_and_head() {
    let s = server();
    let out = run(&["probe", &s.url("/?delay=20ms&status=201")]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "dns",
        "connect",
        "ttfb",
        "total",
        "status   201",
        "HTTP/1.1 201",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    let ttfb_ms: f64 = text
        .lines()
        .find(|l| l.trim_start().starts_with("ttfb"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap();
    assert!(ttfb_ms >= 20.0, "{text}");
    assert_eq!(s.counts().requests, 1);
    // No response: exit 1 with the error kind.
    let out = run(&["probe", &s.url("/?fault=reset")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("connection reset"));
}

#[test]
fn probe_names_the_phase_a_timeout_ran_out_in_and_speaks_json() {
    let s = server();
    // The server accepts and reads the request, then never answers: the connect was done,
    // the time ran out waiting for the first byte (it said "connect timeout").
    let stall = s.url("/?fault=stall");
    let out = run(&["probe", "--timeout", "300ms", &stall]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("timed out in the first byte phase"), "{text}");
    assert!(!text.contains("connect timeout"), "{text}");
    let json = |args: &[&str]| -> Value {
        let out = run(args);
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
    };
    let doc = json(&["probe", "--output", "json", "--timeout", "300ms", &stall]);
    assert_eq!(doc["error"]["kind"], "timeout");
    assert_eq!(doc["error"]["timed_out_in"], "first byte");
    assert!(doc["connect_ms"].as_f64().is_some(), "{doc}");
    assert!(doc["ttfb_ms"].is_null() && doc["status"].is_null(), "{doc}");
    let doc = json(&[
        "probe",
        "--output",
        "json",
        &s.url("/?delay=20ms&status=201"),
    ]);
    assert_eq!(doc["status"], 201);
    assert!(doc["error"].is_null());
    assert!(doc["ttfb_ms"].as_f64().unwrap() >= 20.0, "{doc}");
    assert!(
        doc["head"].as_str().unwrap().starts_with("HTTP/1.1 201"),
        "{doc}"
    );
    s.wait_idle(Duration::from_secs(5));
    assert_eq!(s.counts().requests, 3);
}
