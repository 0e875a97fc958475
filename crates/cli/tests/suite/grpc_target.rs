//! `belier grpc` against the built-in target's gRPC service (`belier.target.Target`, its
//! .proto from `belier target --print-proto`): every call and message counted on the target's
//! side, and its known capacity (`--workers` handlers, `--shed`) turning calls away as
//! UNAVAILABLE, each counted by code on both sides.

use std::time::Duration;

use belier_testserver::{Config, Handlers, Server};
use belier_testsupport::dirs::temp_dir;
use serde_json::{json, Value};

belier_testsupport::binary!(BELIER);

fn target(handlers: Option<Handlers>) -> Server {
    Server::start(Config {
        http2: true,
        handlers,
        ..Config::default()
    })
    .expect("the target starts")
}

/// The target's .proto, as `belier target --print-proto` prints it, in a file.
fn proto() -> String {
    let out = BELIER.ok(&["target", "--print-proto"]);
    let path = temp_dir("grpc-target").join("target.proto");
    std::fs::write(&path, &out.stdout).unwrap();
    path.display().to_string()
}

fn unary(server: &Server, message: &str, extra: &[&str]) -> Value {
    let target = server.addr().to_string();
    let proto = proto();
    let mut args = vec![
        "grpc",
        &target,
        "--plaintext",
        "--call",
        "belier.target.Target/Unary",
        "--proto",
        &proto,
        "-d",
        message,
        "--output",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = BELIER.ok(&args);
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

#[test]
fn every_call_and_message_is_counted_by_the_target_and_by_belier() {
    let server = target(None);
    let doc = unary(&server, r#"{"size": 64}"#, &["-n", "5000", "-c", "20"]);
    let counts = server.counts();
    assert_eq!(counts.requests, 5_000);
    assert_eq!(counts.responses, 5_000);
    assert_eq!(counts.grpc_messages_received, 5_000);
    assert_eq!(counts.grpc_messages_sent, 5_000);
    assert_eq!(doc["summary"]["requests"], 5_000, "{}", doc["summary"]);
    assert_eq!(doc["grpc_codes"], json!({"OK": 5_000}));
}

#[test]
fn a_templated_message_is_made_for_each_call() {
    // `code` is the user's iteration: one user asks for the statuses 0, 1, 2, … in turn, and
    // the target answers each call with the one it asked for.
    let server = target(None);
    let message = r#"{"code": "{{ iteration }}", "message": "{{ uuid }}"}"#;
    let doc = unary(&server, message, &["-n", "5", "-c", "1"]);
    assert_eq!(server.counts().grpc_messages_received, 5);
    let codes = json!({"OK": 1, "CANCELLED": 1, "UNKNOWN": 1, "INVALID_ARGUMENT": 1,
        "DEADLINE_EXCEEDED": 1});
    assert_eq!(doc["grpc_codes"], codes, "{doc:#}");
    assert_eq!(doc["summary"]["requests"], 5, "{}", doc["summary"]);
}

#[test]
fn a_known_capacity_sheds_calls_as_unavailable_counted_alike_on_both_sides() {
    let server = target(Some(Handlers {
        workers: 2,
        service_time: Duration::from_millis(20),
        queue: Some(0),
        shed: true,
    }));
    let doc = unary(&server, "{}", &["-n", "400", "-c", "8"]);
    let pool = server.pool_stats().expect("the target has handlers");
    assert!(
        pool.rejected > 0,
        "8 calls at once on 2 handlers: some shed"
    );
    assert_eq!(pool.served + pool.rejected, 400);
    assert_eq!(
        doc["grpc_codes"],
        json!({"OK": pool.served, "UNAVAILABLE": pool.rejected})
    );
}

/// A server stream of the target saved as results, judged on its messages: a plan's
/// thresholds (`belier report --thresholds-from`, exit 4 when one fails) and compare's
/// `--fail-if` (exit 3 when one holds) read the time to first message and the gaps, and a
/// figure the run did not record (round trips) fails by name.
#[test]
fn thresholds_and_fail_if_judge_a_server_stream_s_messages() {
    let server = target(None);
    let (addr, proto) = (server.addr().to_string(), proto());
    let dir = temp_dir("grpc-stream-conditions");
    let saved = dir.join("stream.json");
    let saved = saved.to_str().unwrap();
    let ask = r#"{"count": 4, "delay_ms": 30, "gap_ms": 5}"#;
    let call = "belier.target.Target/ServerStream";
    BELIER.ok(&[
        "grpc",
        &addr,
        "--plaintext",
        "--call",
        call,
        "--proto",
        &proto,
        "-d",
        ask,
        "-n",
        "12",
        "-c",
        "4",
        "--save",
        saved,
    ]);
    let judge = |thresholds: &str| {
        let plan = dir.join("plan.yaml");
        let text = format!(
            "target: http://127.0.0.1:8080\nthresholds:\n{thresholds}\nscenarios:\n  - name: s\n    steps:\n      - get: /\n"
        );
        std::fs::write(&plan, text).unwrap();
        let plan = plan.to_str().unwrap();
        let out = BELIER.output(&["report", "--type", "json", "--thresholds-from", plan, saved]);
        let doc: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
        (out.status.code(), doc["thresholds"].clone())
    };
    let (code, verdicts) =
        judge("  - ttft p99 < 5s\n  - itl p99 < 5s\n  - messages_received == 48");
    assert_eq!(code, Some(0), "{verdicts}");
    // The target waits 30 ms before its first reply: the time to it is no shorter.
    let first = verdicts[0]["actual"].as_str().unwrap();
    let ms: f64 = first
        .strip_prefix("ttft p99 = ")
        .and_then(|v| v.strip_suffix(" ms"))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{verdicts}"));
    assert!(ms >= 30.0, "{verdicts}");
    let (code, verdicts) = judge("  - ttft p99 < 10ms\n  - ws_rtt p99 < 20ms");
    assert_eq!(code, Some(4), "{verdicts}");
    assert_eq!(verdicts[0]["passed"], false);
    assert_eq!(
        verdicts[1]["actual"],
        "ws_rtt p99 = no data (no reply answered a message one for one)"
    );
    let gate = |condition: &str| {
        BELIER
            .output(&["compare", saved, saved, "--fail-if", condition])
            .status
            .code()
    };
    assert_eq!(gate("ttft p99>5s,itl_p99>5s"), Some(0));
    assert_eq!(gate("ttft p99>10ms"), Some(3));
    assert_eq!(gate("ttft p90>10ms"), Some(2));
}

#[test]
fn a_capacity_search_of_a_call_refuses_a_streamed_body_flag_by_name() {
    // A call's messages are gRPC's own: --stream and --llm would be dropped, so they are
    // refused before anything connects.
    let proto = proto();
    for (flag, value) in [("--stream", Some("sse")), ("--llm", None)] {
        let mut args = vec![
            "capacity",
            "127.0.0.1:1",
            "--plaintext",
            "--proto",
            &proto,
            "--call",
            "belier.target.Target/Unary",
            "--slo",
            "p99<1s",
            flag,
        ];
        args.extend(value);
        let out = BELIER.output(&args);
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(flag) && stderr.contains("gRPC method"),
            "{flag}: {stderr}"
        );
    }
}
