//! The built-in target over HTTP/2: belier `--http2` against it with prior knowledge (h2c) and
//! over TLS (ALPN `h2`), counted on the target's side, which records the protocol of every
//! request; curl as a second client; the knobs and faults in their HTTP/2 form; and
//! `belier demo --http2`.

use belier_testserver::{Config, Handlers, SeenRequest, Server, TlsConfig};
use belier_testsupport::curl;
use serde_json::Value;

use curl::{curl, have_curl};

belier_testsupport::binary!(BELIER);

/// Requests the target records, at most: every test here sends fewer.
const RECORDED: usize = 10_000;

fn target(tls: Option<TlsConfig>) -> Server {
    Server::start(Config {
        http2: true,
        tls,
        record_requests: RECORDED,
        threads: 2,
        ..Config::default()
    })
    .unwrap()
}

fn versions(seen: &[SeenRequest], version: &str) -> usize {
    seen.iter().filter(|r| r.version == version).count()
}

#[test]
fn h2c_run_is_counted_by_the_target_as_http2() {
    let s = target(None);
    let doc = BELIER.json(&[
        "--http2",
        "-n",
        "500",
        "-c",
        "20",
        "--max-streams",
        "10",
        &s.url("/?size=2000"),
    ]);
    assert_eq!(doc["summary"]["requests"], 500, "{}", doc["summary"]);
    assert_eq!(doc["status_codes"]["200"], 500, "{}", doc["status_codes"]);
    assert_eq!(doc["run"]["protocol"], "HTTP/2");
    assert!(doc["summary"]["bytes_in"].as_u64().unwrap() > 500 * 2000);
    let counts = s.counts();
    assert_eq!(counts.requests, 500);
    assert_eq!(counts.responses, 500);
    // 20 streams, 10 a connection.
    assert_eq!(counts.connections, 2);
    let seen = s.recent_requests();
    assert_eq!(seen.len(), 500);
    assert_eq!(versions(&seen, "HTTP/2"), 500);
    assert!(seen
        .iter()
        .all(|r| r.method == "GET" && r.target == "/?size=2000"));
}

#[test]
fn http1_still_served_beside_http2() {
    let s = target(None);
    let doc = BELIER.json(&["-n", "100", "-c", "4", &s.url("/")]);
    assert_eq!(doc["status_codes"]["200"], 100, "{}", doc["status_codes"]);
    let doc = BELIER.json(&["--http2", "-n", "50", "-c", "5", &s.url("/")]);
    assert_eq!(doc["status_codes"]["200"], 50, "{}", doc["status_codes"]);
    let seen = s.recent_requests();
    assert_eq!(seen.len(), 150);
    assert_eq!(versions(&seen, "HTTP/1.1"), 100);
    assert_eq!(versions(&seen, "HTTP/2"), 50);
    assert_eq!(s.counts().connections, 4 + 1);
}

#[test]
fn alpn_h2_over_tls_is_counted_by_the_target() {
    let (tls, ca) = TlsConfig::self_signed(&["127.0.0.1", "localhost"]);
    let s = target(Some(tls));
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("target-h2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_path = dir.join("ca.pem");
    std::fs::write(&ca_path, ca).unwrap();
    let ca_path = ca_path.to_str().unwrap();
    let doc = BELIER.json(&[
        "--http2",
        "--cacert",
        ca_path,
        "-n",
        "300",
        "-c",
        "6",
        "--max-streams",
        "3",
        // A POST body goes out on each stream and is counted on the other side.
        "-m",
        "POST",
        "-d",
        "0123456789",
        &s.url("/?delay=2ms"),
    ]);
    assert_eq!(doc["status_codes"]["200"], 300, "{}", doc["status_codes"]);
    assert_eq!(doc["run"]["protocol"], "HTTP/2");
    // HTTP/1.1 over the same TLS port: the client that offers only http/1.1 gets it.
    let doc = BELIER.json(&["--cacert", ca_path, "-n", "40", "-c", "2", &s.url("/")]);
    assert_eq!(doc["status_codes"]["200"], 40, "{}", doc["status_codes"]);
    let counts = s.counts();
    assert_eq!(counts.requests, 340);
    assert_eq!(counts.body_bytes_received, 300 * 10);
    assert_eq!(counts.tls_handshakes, 2 + 2);
    let seen = s.recent_requests();
    assert_eq!(versions(&seen, "HTTP/2"), 300);
    assert_eq!(versions(&seen, "HTTP/1.1"), 40);
    assert!(seen
        .iter()
        .filter(|r| r.version == "HTTP/2")
        .all(|r| r.method == "POST" && r.body == b"0123456789"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn knobs_and_faults_over_http2_land_in_their_kinds() {
    let s = target(None);
    let run = |query: &str, n: &str| -> Value {
        BELIER.json(&[
            "--http2",
            "-n",
            n,
            "-c",
            "2",
            "--timeout",
            "1s",
            &s.url(query),
        ])
    };
    let doc = run("/?status=503", "10");
    assert_eq!(doc["status_codes"]["503"], 10, "{}", doc["status_codes"]);
    let doc = run("/?fault=reset", "6");
    assert_eq!(doc["summary"]["errors"], 6, "{}", doc["summary"]);
    assert_eq!(
        doc["errors"][0]["kind"], "stream_reset",
        "{}",
        doc["errors"]
    );
    let doc = run("/?fault=stall", "2");
    assert_eq!(doc["errors"][0]["kind"], "timeout", "{}", doc["errors"]);
    let doc = run("/?size=100000&chunked=1", "8");
    assert_eq!(doc["status_codes"]["200"], 8, "{}", doc["status_codes"]);
    assert!(doc["summary"]["bytes_in"].as_u64().unwrap() >= 8 * 100_000);
    // Gzip when asked, decoded by belier to the size asked for.
    let doc = BELIER.json(&[
        "--http2",
        "--compressed",
        "-n",
        "5",
        "-c",
        "1",
        &s.url("/?size=50000"),
    ]);
    assert_eq!(doc["status_codes"]["200"], 5, "{}", doc["status_codes"]);
    assert_eq!(
        doc["summary"]["bytes_decoded"],
        5 * 50_000,
        "{}",
        doc["summary"]
    );
    assert!(doc["summary"]["bytes_in"].as_u64().unwrap() < 5 * 50_000);
    assert_eq!(s.counts().requests, 10 + 6 + 2 + 8 + 5);
}

#[test]
fn the_handler_pool_and_its_metrics_over_http2() {
    // One handler, no queue, 503 beyond: of 4 concurrent streams, most are shed.
    let s = Server::start(Config {
        http2: true,
        handlers: Some(Handlers {
            workers: 1,
            service_time: std::time::Duration::from_millis(20),
            queue: Some(0),
            shed: true,
        }),
        ..Config::default()
    })
    .unwrap();
    let doc = BELIER.json(&["--http2", "-n", "40", "-c", "4", &s.url("/")]);
    let ok = doc["status_codes"]["200"].as_u64().unwrap_or(0);
    let shed = doc["status_codes"]["503"].as_u64().unwrap_or(0);
    assert_eq!(ok + shed, 40, "{}", doc["status_codes"]);
    let pool = s.pool_stats().unwrap();
    assert_eq!((pool.served, pool.rejected), (ok, shed));
    assert!(ok > 0 && shed > 0, "{}", doc["status_codes"]);
    // The counters, over HTTP/2 too.
    let doc = BELIER.json(&["--http2", "-n", "1", "-c", "1", &s.url("/metrics")]);
    assert_eq!(doc["status_codes"]["200"], 1);
    assert_eq!(s.counts().requests, 41);
    assert_eq!(
        s.pool_stats().unwrap().served,
        ok,
        "/metrics is not a handler's"
    );
}

#[test]
fn a_close_fault_ends_the_connection_under_its_streams() {
    let s = target(None);
    let doc = BELIER.json(&[
        "--http2",
        "-n",
        "4",
        "-c",
        "1",
        "--timeout",
        "2s",
        &s.url("/?fault=close-mid-body&size=1000"),
    ]);
    assert_eq!(doc["summary"]["errors"], 4, "{}", doc["summary"]);
    // Each request's connection was dropped under it, half its body read.
    assert_eq!(s.counts().requests, 4);
    assert_eq!(s.counts().connections, 4);
    let kinds: Vec<&str> = doc["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds
            .iter()
            .all(|k| matches!(*k, "closed_mid_body" | "connection_reset")),
        "{}",
        doc["errors"]
    );
}

#[test]
fn curl_speaks_http2_to_the_target() {
    if !have_curl("curl_speaks_http2_to_the_target") {
        return;
    }
    let plain = target(None);
    let format = ["-w", "%{http_version} %{http_code} %{size_download}"];
    let out = curl(&[
        "--http2-prior-knowledge",
        "-o",
        "/dev/null",
        format[0],
        format[1],
        &plain.url("/?size=70000&status=201"),
    ]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2 201 70000");
    let out = curl(&["--http2-prior-knowledge", "-i", &plain.url("/?token=1")]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.starts_with("HTTP/2 200"), "{text}");
    // The second connection's first request.
    assert!(text.contains("set-cookie: session=t2-0"), "{text}");
    assert!(text.ends_with(r#"{"token":"t2-0","user":0}"#), "{text}");
    let seen = plain.recent_requests();
    assert_eq!(versions(&seen, "HTTP/2"), 2);
    assert!(seen[0].header("user-agent").unwrap().starts_with("curl/"));

    let (tls, _) = TlsConfig::self_signed(&["127.0.0.1"]);
    let secure = target(Some(tls));
    let out = curl(&[
        "--http2",
        "-k",
        "-L",
        "-o",
        "/dev/null",
        format[0],
        format[1],
        &secure.url("/?redirect=3&size=10"),
    ]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2 200 10");
    let out = curl(&["--http1.1", "-k", &secure.url("/")]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n");
    let seen = secure.recent_requests();
    assert_eq!(versions(&seen, "HTTP/2"), 4, "{seen:?}");
    assert_eq!(versions(&seen, "HTTP/1.1"), 1);
    assert_eq!(secure.counts().tls_handshakes, 2);
}

#[test]
fn the_demo_runs_over_http2_and_tls() {
    for extra in [&["--http2"][..], &["--http2", "--tls"]] {
        let mut args = vec!["demo", "-z", "1s", "-c", "4"];
        args.extend_from_slice(extra);
        let out = BELIER.ok(&args);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(stderr.contains("over HTTP/2"), "{stderr}");
        assert!(stdout.contains(", HTTP/2, "), "{stdout}");
        assert!(stdout.contains("Errors\n  none"), "{stdout}");
        let counted: u64 = stdout
            .split("The target counted ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("the target's count");
        let succeeded: u64 = stdout
            .lines()
            .find(|l| l.trim_start().starts_with("Succeeded"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.replace(',', "").parse().ok())
            .expect("the report's successes");
        assert_eq!(counted, succeeded, "{stdout}");
    }
}
