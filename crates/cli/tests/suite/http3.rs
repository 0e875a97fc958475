//! `--http3` against real HTTP/3 servers on 127.0.0.1 that count on their own side: Caddy
//! (built from the Go module proxy, HTTP/3 only, its access log on) and quic-go's `http3`
//! server: every request in the server's count, each over HTTP/3, none an error, in a closed
//! loop and in an open one (2,000/s for 10 s, the rate within 0.5 %); a server whose idle
//! timeout ends connections between requests, or that sends GOAWAY after 100 requests, makes
//! no false error, and QUIC's figures say how each connection ended; a plan's users speak it;
//! what HTTP/3 cannot do is refused by name.
//!
//! Needs Go (scripts/install-test-deps); without it each test says it was skipped, except
//! under CI, where it fails.

use belier_testsupport::assert_exit;
use belier_testsupport::h3::{Caddy, Counts, QuicGo};
use serde_json::{json, Value};

belier_testsupport::binary!(BELIER);

/// The QUIC connections' ends in `doc`, all causes together, after checking that each
/// connection that opened ended once and that datagrams went both ways.
fn ends_add_up(doc: &Value) -> u64 {
    let quic = &doc["quic"];
    let handshakes = quic["handshakes"].as_u64().expect("QUIC figures");
    assert_eq!(
        Some(handshakes),
        doc["summary"]["connections_opened"].as_u64(),
        "{quic}"
    );
    let ended: u64 = quic["connections_ended"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(ended, handshakes, "{quic}");
    for (what, key) in [("datagrams", "sent"), ("datagrams", "received")] {
        assert!(quic[what][key].as_u64().unwrap() > 0, "{quic}");
    }
    let (calls, datagrams) = (&quic["datagrams"]["send_calls"], &quic["datagrams"]["sent"]);
    assert!(
        calls.as_u64().unwrap() <= datagrams.as_u64().unwrap(),
        "{quic}"
    );
    let (lost, sent) = (&quic["packets"]["lost"], &quic["packets"]["sent"]);
    assert!(lost.as_u64().unwrap() <= sent.as_u64().unwrap(), "{quic}");
    ended
}

/// `belier URL --http3 -k EXTRA --output json`; its JSON report.
fn run(url: &str, extra: &[&str]) -> Value {
    let mut args = vec![url, "--http3", "-k", "--output", "json"];
    args.extend_from_slice(extra);
    let out = BELIER.ok(&args);
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// Writes `text` to `plan` and runs it: `belier run PLAN --output json`'s report.
fn run_plan(plan: &std::path::Path, text: &str) -> Value {
    std::fs::write(plan, text).unwrap();
    let out = BELIER.ok(&[
        "run".as_ref(),
        plan.as_os_str(),
        "--output".as_ref(),
        "json".as_ref(),
    ]);
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

#[test]
fn caddy_logs_every_request_over_http3() {
    let Some(caddy) = Caddy::start() else {
        return;
    };
    let doc = run(&caddy.url("/"), &["-n", "20000", "-c", "50"]);
    let log = caddy.access_log();
    assert_eq!(log.len(), 20_000);
    assert!(log.iter().all(|l| l["request"]["proto"] == "HTTP/3.0"));
    assert!(log.iter().all(|l| l["status"] == 200));
    assert_eq!(doc["status_codes"], json!({"200": 20_000}), "{doc}");
    assert_eq!(doc["errors"], json!([]), "{doc}");
    assert_eq!(doc["run"]["protocol"], "HTTP/3", "{}", doc["run"]);
    crate::cli::validate(&doc);
    // Caddy keeps them: belier lets go of each at the run's end (its close is not the
    // server's).
    assert_eq!(doc["summary"]["server_closes"], 0, "{}", doc["summary"]);
    ends_add_up(&doc);
    let ended = &doc["quic"]["connections_ended"];
    assert_eq!(
        ended,
        &json!({"belier_closed": doc["quic"]["handshakes"]}),
        "{ended}"
    );
}

#[test]
fn an_open_loop_over_http3_sends_every_request_on_time() {
    let Some(caddy) = Caddy::start() else {
        return;
    };
    let doc = run(&caddy.url("/"), &["--rate", "2000", "-z", "10s"]);
    let log = caddy.access_log();
    let (open, s) = (&doc["open_loop"], &doc["summary"]);
    assert_eq!(doc["status_codes"], json!({"200": 20_000}), "{doc}");
    assert_eq!(doc["errors"], json!([]), "{doc}");
    assert_eq!(log.len(), 20_000);
    assert!(log.iter().all(|l| l["request"]["proto"] == "HTTP/3.0"));
    assert_eq!(
        (&open["scheduled"], &open["dropped"]),
        (&json!(20_000), &json!(0)),
        "{open}"
    );
    // Latency from when each request was due, not from when it went out.
    assert_eq!(doc["latency_us"]["measured_from"], "intended_start");
    assert_eq!(doc["latency_us"]["count"], 20_000);
    // The rate sent over the schedule, and over the whole run to its last answer.
    for rate in [&open["achieved_rps"], &s["attempted_rps"]] {
        let off = (rate.as_f64().unwrap() / 2000.0 - 1.0).abs();
        assert!(off <= 0.005, "{rate} requests/s: {open} {s}");
    }
}

#[test]
fn quic_go_counts_every_request_and_the_certificate_is_checked() {
    let Some(server) = QuicGo::start(&[]) else {
        return;
    };
    let ca = server.ca.display().to_string();
    let out = BELIER.ok(&[
        &server.url("/"),
        "--http3",
        "--cacert",
        &ca,
        "-n",
        "20000",
        "-c",
        "50",
        "--output",
        "json",
    ]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let counted = server.counts();
    assert_eq!(counted.requests, 20_000);
    assert_eq!(counted.h3, 20_000);
    assert_eq!(doc["status_codes"], json!({"200": 20_000}), "{doc}");
    assert_eq!(doc["errors"], json!([]), "{doc}");
    // 50 streams at once, 100 a connection by default: one connection per worker thread.
    assert!(counted.connections <= 2, "{counted:?}");
}

#[test]
fn a_server_that_ends_idle_connections_makes_no_false_error() {
    let Some(server) = QuicGo::start(&["-idle", "150ms"]) else {
        return;
    };
    // A request every 250 ms on one connection: each finds the last one's connection ended.
    let doc = run(&server.url("/"), &["--rate", "4", "-z", "3s", "-t", "1"]);
    let counted = server.counts();
    assert_eq!(doc["status_codes"], json!({"200": 12}), "{doc}");
    assert_eq!(doc["errors"], json!([]), "{doc}");
    assert_eq!(
        counted,
        Counts {
            requests: 12,
            h3: 12,
            connections: counted.connections,
            early: 0,
        }
    );
    // Without the idle timeout they would all go on one connection.
    assert!(counted.connections >= 3, "{counted:?}");
    // Each ended by the idle timeout, but perhaps the last, which the run's end may let go.
    assert_eq!(ends_add_up(&doc), counted.connections);
    let idle = doc["quic"]["connections_ended"]["idle_timeout"].as_u64();
    assert!(idle >= Some(counted.connections - 1), "{}", doc["quic"]);
}

#[test]
fn a_server_that_sends_goaway_makes_no_false_error_and_no_request_twice() {
    let Some(server) = QuicGo::start(&["-goaway", "100"]) else {
        return;
    };
    let doc = run(&server.url("/"), &["-n", "2000", "-c", "20"]);
    let counted = server.counts();
    // Each connection serves 100, then a GOAWAY: the streams above its id go again on a new
    // connection, counted as re-sent, and the server processed each request once.
    assert_eq!(counted.requests, 2000);
    assert_eq!(doc["status_codes"], json!({"200": 2000}), "{doc}");
    assert_eq!(doc["errors"], json!([]), "{doc}");
    assert!(counted.connections >= 19, "{counted:?}");
    let opened = doc["summary"]["connections_opened"].as_u64().unwrap();
    assert_eq!(opened, counted.connections, "{}", doc["summary"]);
    // Each connection ended by the server's doing: belier let go of it at the GOAWAY (or at
    // the streams above its id the server rejected), or the server closed it gracefully
    // (H3_NO_ERROR) first; the last one or two may still be open when the run ends.
    assert_eq!(ends_add_up(&doc), counted.connections);
    crate::cli::validate(&doc);
    let quic = &doc["quic"];
    let by_server = quic["ended_by_server"].as_u64().unwrap();
    assert!(by_server >= counted.connections - 2, "{quic}");
    let causes = ["goaway", "request_rejected", "H3_NO_ERROR", "belier_closed"];
    let ended = quic["connections_ended"].as_object().unwrap();
    assert!(ended.keys().all(|k| causes.contains(&k.as_str())), "{quic}");
}

#[test]
fn a_probe_over_http3_shows_the_quic_handshake_as_its_connect() {
    let Some(server) = QuicGo::start(&[]) else {
        return;
    };
    let ca = server.ca.display().to_string();
    let out = BELIER.ok(&[
        "probe",
        &server.url("/"),
        "--http3",
        "--cacert",
        &ca,
        "--output",
        "json",
    ]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(server.counts().h3, 1);
    assert_eq!(doc["status"], 200, "{doc}");
    assert!(
        doc["head"].as_str().unwrap().starts_with("HTTP/3 200\r\n"),
        "{doc}"
    );
    assert!(doc["connect_ms"].as_f64().unwrap() > 0.0, "{doc}");
    assert_eq!(doc["tls_ms"], Value::Null, "{doc}");
    assert!(doc["ttfb_ms"].as_f64().is_some(), "{doc}");
    let refused = BELIER.output(&["probe", "http://127.0.0.1:9/", "--http3"]);
    assert_exit(&refused, 2);
}

#[test]
fn what_http3_cannot_do_is_refused_by_name() {
    let reconnect = |http3| {
        [
            "https://127.0.0.1:9/",
            http3,
            "--stream",
            "sse",
            "--sse-reconnect",
        ]
    };
    let (always, auto) = (reconnect("--http3"), reconnect("--http3=auto"));
    let cases: [(&[&str], &str); 4] = [
        (&["http://127.0.0.1:9/", "--http3"], "https://"),
        (&["https://127.0.0.1:9/", "--http3", "--http2"], "--http2"),
        (&always, "--sse-reconnect does not apply with --http3"),
        (&auto, "--sse-reconnect does not apply with --http3"),
    ];
    for (args, named) in cases {
        let out = BELIER.output(args);
        assert_exit(&out, 2);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(named), "{args:?}: {err}");
    }
}

#[test]
fn a_plans_users_speak_http3_each_step_and_parallel_group_logged_by_caddy() {
    let Some(caddy) = Caddy::start() else {
        return;
    };
    let plan = belier_testsupport::dirs::temp_dir("plan-h3").join("plan.yaml");
    let text = format!(
        r#"
target: {}
http3: true
insecure: true
load: {{vus: 4, iterations: 40}}
scenarios:
  - steps:
      - name: home
        get: /
        check: {{status: 200, body_contains: ok}}
      - name: send
        post: /items
        json: {{n: "{{{{iteration}}}}"}}
      - parallel: assets
        steps:
          - get: /a.css
          - get: /b.js
"#,
        caddy.url("")
    );
    let doc = run_plan(&plan, &text);
    let log = caddy.access_log();
    assert_eq!(log.len(), 160);
    assert!(log.iter().all(|l| l["request"]["proto"] == "HTTP/3.0"));
    let posts = log
        .iter()
        .filter(|l| l["request"]["method"] == "POST")
        .count();
    assert_eq!(posts, 40);
    assert_eq!(doc["status_codes"], json!({"200": 160}), "{doc}");
    assert_eq!(doc["errors"], json!([]), "{doc}");
    let rows: Vec<(String, u64)> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["failures"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(rows.iter().all(|(_, failures)| *failures == 0), "{rows:?}");
    assert_eq!(doc["checks"][1]["passed"], 40, "{}", doc["checks"]);
}

#[test]
fn spawned_workers_speak_http3_and_their_quic_figures_merge() {
    let Some(server) = QuicGo::start(&[]) else {
        return;
    };
    let doc = run(
        &server.url("/"),
        &[
            "-n",
            "4000",
            "-c",
            "20",
            "--max-streams",
            "5",
            "--spawn",
            "2",
        ],
    );
    let counted = server.counts();
    assert_eq!(counted.requests, 4_000);
    assert_eq!(counted.h3, 4_000);
    assert_eq!(doc["status_codes"], json!({"200": 4_000}), "{doc}");
    assert_eq!(doc["errors"], json!([]), "{doc}");
    assert_eq!(doc["run"]["protocol"], "HTTP/3", "{}", doc["run"]);
    // Sent by the two workers, not here: each opened its own connections, 20 streams in all
    // at 5 a connection, and the merged figures count each of them once.
    let workers = doc["run"]["workers"].as_array().map(Vec::len);
    assert_eq!(workers, Some(2), "{}", doc["run"]);
    assert_eq!(ends_add_up(&doc), counted.connections);
    assert!(counted.connections >= 4, "{counted:?}");
}

#[test]
fn with_quic_0rtt_each_new_connection_sends_early_data_the_server_accepts() {
    let Some(server) = QuicGo::start(&["-idle", "150ms", "-0rtt"]) else {
        return;
    };
    // A request every 250 ms: each finds the last one's connection ended by the idle timeout
    // and opens a new one with the ticket the last one left.
    let doc = run(
        &server.url("/"),
        &["--rate", "4", "-z", "3s", "-t", "1", "--quic-0rtt"],
    );
    let counted = server.counts();
    assert_eq!(doc["status_codes"], json!({"200": 12}), "{doc}");
    assert_eq!(doc["errors"], json!([]), "{doc}");
    assert_eq!(counted.requests, 12, "{counted:?}");
    assert!(counted.connections >= 3, "{counted:?}");
    // The first connection had no ticket yet; every later one went 0-RTT, by the server's
    // count and belier's.
    assert_eq!(counted.early, counted.connections - 1, "{counted:?}");
    let quic = &doc["quic"];
    assert_eq!(
        quic["early_data"],
        json!({"accepted": counted.early, "refused": 0})
    );
    // (A request sent as the server's idle timer ran out is lost with its connection and goes
    // again on a new one, counted as re-sent: the server still counted each request once.)
    assert_eq!(ends_add_up(&doc), counted.connections);
}

/// A plan's `quic_0rtt: true` as `--quic-0rtt`: its users' GETs go as early data on each new
/// connection with a ticket, counted by the server and by belier alike.
#[test]
fn a_plans_quic_0rtt_sends_its_gets_as_early_data() {
    let Some(server) = QuicGo::start(&["-idle", "150ms", "-0rtt"]) else {
        return;
    };
    let plan = belier_testsupport::dirs::temp_dir("plan-0rtt").join("plan.yaml");
    let text = format!(
        "target: {}\nhttp3: true\nquic_0rtt: true\ncacert: {}\n\
         load: {{rate: 4, duration: 3s, max_vus: 4}}\n\
         scenarios:\n  - steps:\n      - get: /\n",
        server.url(""),
        server.ca.display()
    );
    let doc = run_plan(&plan, &text);
    let counted = server.counts();
    assert_eq!(doc["status_codes"], json!({"200": 12}), "{doc}");
    assert_eq!(counted.requests, 12, "{counted:?}");
    assert!(counted.connections >= 3, "{counted:?}");
    assert_eq!(counted.early, counted.connections - 1, "{counted:?}");
    assert_eq!(
        doc["quic"]["early_data"],
        json!({"accepted": counted.early, "refused": 0})
    );
}

#[test]
fn early_data_a_server_does_not_allow_is_never_sent() {
    let Some(server) = QuicGo::start(&["-idle", "150ms"]) else {
        return;
    };
    // Its tickets do not allow early data: each connection waits for its handshake (resumed).
    let url = server.url("/");
    let doc = run(&url, &["--rate", "4", "-z", "2s", "-t", "1", "--quic-0rtt"]);
    let counted = server.counts();
    assert_eq!(doc["status_codes"], json!({"200": 8}), "{doc}");
    assert_eq!((counted.requests, counted.early), (8, 0), "{counted:?}");
    assert_eq!(
        doc["quic"]["early_data"],
        json!({"accepted": 0, "refused": 0})
    );
    // A POST may not go as early data: refused by name before anything is sent.
    let refused = BELIER.output(&[&url, "--http3", "--quic-0rtt", "-m", "POST"]);
    assert_exit(&refused, 2);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("--quic-0rtt") && stderr.contains("POST"),
        "{stderr}"
    );
}
