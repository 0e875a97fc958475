//! What `--http3` reads of a response beyond its status, as HTTP/2 does: streamed bodies cut
//! into events and tokens (`--stream sse`, `--llm`), bodies decoded (`--compressed`) and the
//! server's own time (`--server-timing`), against the built-in target over QUIC, which counts
//! what it sent, and Caddy gzipping its answers (`encode gzip`), which logs each.
//!
//! The Caddy test needs Go (scripts/install-test-deps); without it it says it was skipped,
//! except under CI, where it fails. The built-in target needs nothing.

use belier_testserver::{Config, Server, TlsConfig};
use belier_testsupport::h3::{Caddy, BIG_BODY_BYTES};
use serde_json::{json, Value};

belier_testsupport::binary!(BELIER);

/// The built-in target serving HTTPS and HTTP/3 on 127.0.0.1, and its CA's file for
/// `--cacert`.
fn target(name: &str) -> (Server, String) {
    let (tls, ca) = TlsConfig::self_signed(&["localhost", "127.0.0.1"]);
    let server = Server::start(Config {
        tls: Some(tls),
        http3: true,
        threads: 2,
        ..Config::default()
    })
    .expect("the target starts");
    let path = belier_testsupport::dirs::temp_dir(name).join("ca.pem");
    std::fs::write(&path, ca).unwrap();
    (server, path.display().to_string())
}

/// `belier ARGS --http3 --output json`: its JSON report, checked against the schema.
fn run(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--http3");
    let doc = BELIER.json(&all);
    assert_eq!(doc["run"]["protocol"], "HTTP/3", "{}", doc["run"]);
    assert_eq!(doc["errors"], json!([]), "{doc}");
    crate::cli::validate(&doc);
    doc
}

/// Percentile `p` of a figure of microseconds, in milliseconds.
fn p_ms(figure: &Value, p: &str) -> f64 {
    figure[p]
        .as_f64()
        .unwrap_or_else(|| panic!("no {p} in {figure}"))
        / 1e3
}

#[test]
fn sse_and_llm_streams_over_http3_count_every_event_and_token_the_target_sent() {
    let (server, ca) = target("h3-streams");
    let sse = server.url("/sse?events=20&first=30ms&gap=5ms");
    let doc = run(&[
        "-n", "6", "-c", "3", "--stream", "sse", "--cacert", &ca, &sse,
    ]);
    let m = &doc["messages"];
    assert_eq!(
        (&m["received"], &m["calls"]),
        (&json!(120), &json!(6)),
        "{m}"
    );
    assert_eq!(m["unit"], "events", "{m}");
    // The first event waits 30 ms on the target's side: never seen before it. Each stream's
    // 19 gaps are timed.
    assert!(p_ms(&m["first_message_us"], "min") >= 30.0, "{m}");
    assert_eq!(m["gap_us"]["count"], 6 * 19, "{m}");

    let llm = server.url("/v1/chat/completions?tokens=12&ttft=20&itl=4");
    let args = ["-n", "3", "--llm", "-d", "{}", "--cacert", &ca, &llm];
    let doc = run(&args);
    let m = &doc["messages"];
    // The role chunk without content is no token; the usage chunk gives the count.
    assert_eq!(
        (&m["received"], &m["tokens"], &m["unit"]),
        (&json!(36), &json!(36), &json!("tokens")),
        "{m}"
    );
    assert!(p_ms(&m["first_message_us"], "min") >= 20.0, "{m}");
    assert_eq!(m["gap_us"]["count"], 3 * 11, "{m}");
    let out = BELIER.ok(&[
        "--http3", "-n", "2", "--llm", "-d", "{}", "--cacert", &ca, &llm,
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("ttft") && text.contains("output tokens"),
        "{text}"
    );
    let counts = server.counts();
    assert_eq!((counts.requests, counts.responses), (11, 11));
}

#[test]
fn compressed_decodes_the_targets_gzip_bodies_over_http3() {
    let (server, ca) = target("h3-compressed");
    let url = server.url("/?size=20000");
    let doc = run(&["--compressed", "-n", "60", "-c", "3", "--cacert", &ca, &url]);
    let summary = &doc["summary"];
    assert_eq!(doc["status_codes"], json!({"200": 60}), "{doc}");
    assert_eq!(summary["bytes_decoded"], 60 * 20_000, "{summary}");
    // 20,000 identical bytes gzip to a few dozen: the datagrams carried far less, QUIC's
    // handshakes and acknowledgements included.
    let gzipped = summary["bytes_in"].as_u64().unwrap();
    assert!(gzipped < 60 * 20_000 / 10, "{summary}");
    // Without it the same bodies come as they are, and nothing is decoded.
    let plain = run(&["-n", "60", "-c", "3", "--cacert", &ca, &url]);
    assert_eq!(plain["summary"]["bytes_decoded"], 0, "{plain}");
    assert!(
        plain["summary"]["bytes_in"].as_u64().unwrap() > 60 * 20_000,
        "{plain}"
    );
    let counts = server.counts();
    assert_eq!((counts.requests, counts.responses), (120, 120));
}

#[test]
fn compressed_decodes_caddys_gzip_over_http3_as_its_log_says_it_sent() {
    let Some(caddy) = Caddy::gzipping() else {
        return;
    };
    let url = caddy.url("/big");
    let doc = run(&["--compressed", "-k", "-n", "50", "-c", "5", &url]);
    let summary = &doc["summary"];
    assert_eq!(doc["status_codes"], json!({"200": 50}), "{doc}");
    let decoded = 50 * BIG_BODY_BYTES as u64;
    assert_eq!(summary["bytes_decoded"], decoded, "{summary}");
    assert!(summary["bytes_in"].as_u64().unwrap() < decoded, "{summary}");
    let log = caddy.access_log();
    assert_eq!(log.len(), 50);
    for line in &log {
        assert_eq!(line["request"]["proto"], "HTTP/3.0", "{line}");
        assert_eq!(
            line["resp_headers"]["Content-Encoding"],
            json!(["gzip"]),
            "{line}"
        );
    }
}

#[test]
fn the_targets_server_timing_is_read_over_http3() {
    let (server, ca) = target("h3-timing");
    let url = server.url("/?timing=1&delay=3ms");
    let doc = run(&[
        "-n",
        "40",
        "-c",
        "4",
        "--server-timing",
        "--cacert",
        &ca,
        &url,
    ]);
    let st = &doc["server_timing"];
    assert_eq!(
        (&st["timed"], &st["missing"]),
        (&json!(40), &json!(0)),
        "{st}"
    );
    // Each handler slept its 3 ms delay at least, and said so.
    let app = &st["metrics_us"]["app"];
    assert!(app["min"].as_u64().unwrap() >= 3_000, "{app}");
    assert_eq!(app["count"], 40, "{app}");
    assert_eq!(server.counts().responses, 40);
}

#[test]
fn a_plans_stream_and_timed_steps_over_http3_count_what_the_target_sent() {
    // Each iteration: a timed request read whole, then a chat completion cut into tokens.
    let (server, _) = target("h3-plan");
    let dir = belier_testsupport::dirs::temp_dir("h3-plan-file");
    let plan = dir.join("plan.yaml");
    let text = format!(
        r#"target: {}
http3: true
insecure: true
server_timing: true
load: {{ vus: 2, iterations: 10 }}
scenarios:
  - steps:
      - name: timed
        get: /?timing=1&delay=1ms
      - name: chat
        post: /v1/chat/completions?tokens=6&ttft=5&itl=1
        json: {{ model: m, stream: true }}
        stream: llm
"#,
        server.url("")
    );
    std::fs::write(&plan, text).unwrap();
    let out = BELIER.ok(&["run", plan.to_str().unwrap(), "--output", "json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(doc["run"]["protocol"], "HTTP/3", "{}", doc["run"]);
    assert_eq!(doc["errors"], json!([]), "{doc}");
    let m = &doc["messages"];
    assert_eq!(
        (&m["calls"], &m["received"], &m["tokens"]),
        (&json!(10), &json!(60), &json!(60)),
        "{m}"
    );
    // Of each iteration's two requests, the first sent the header and the stream did not.
    let st = &doc["server_timing"];
    assert_eq!(
        (&st["timed"], &st["missing"]),
        (&json!(10), &json!(10)),
        "{st}"
    );
    let counts = server.counts();
    assert_eq!((counts.requests, counts.responses), (20, 20));
}
