//! `belier grpc` against a real grpc-go server (built from crates/testsupport/grpc-server with
//! the Go toolchain), which counts calls and streamed messages on its own side: every call
//! counted on both sides, each status code by name, a deadline as DEADLINE_EXCEEDED, a bad
//! .proto as FILE:LINE:COL; server, client and bidirectional streams' messages counted on both
//! sides.
//!
//! Needs Go 1.26 or later (grpc-go v1.85's go.mod); without it each test says it was skipped,
//! except under CI, where it fails.

use belier_testsupport::dirs::temp_dir;
use belier_testsupport::grpc::{GrpcServer, GREETER_PROTO, STREAMER_PROTO};
use serde_json::Value;

belier_testsupport::binary!(BELIER);

fn proto(name: &str) -> String {
    let path = temp_dir(name).join("greeter.proto");
    std::fs::write(&path, GREETER_PROTO).unwrap();
    path.display().to_string()
}

fn calls(server: &GrpcServer, method: &str, proto: &str, extra: &[&str]) -> Value {
    let message = ["-d", r#"{"name": "belier"}"#];
    let call = format!("helloworld.Greeter/{method}");
    run(
        &server.target(),
        &call,
        proto,
        &[&message[..], extra].concat(),
    )
}

/// A run of `call` on `target` (HOST:PORT) with `extra` flags after the call and the .proto;
/// its JSON report.
fn run(target: &str, call: &str, proto: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "grpc",
        target,
        "--plaintext",
        "--call",
        &call,
        "--proto",
        proto,
        "--output",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = BELIER.ok(&args);
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

#[test]
fn every_unary_call_is_counted_by_the_server_and_by_belier() {
    let Some(server) = GrpcServer::start() else {
        return;
    };
    let doc = calls(
        &server,
        "SayHello",
        &proto("unary"),
        &["-n", "20000", "-c", "50"],
    );
    let calls = server.calls();
    assert_eq!(calls.say_hello, 20_000);
    let s = &doc["summary"];
    assert_eq!(s["requests"], 20_000, "{s}");
    assert_eq!(s["errors"], 0, "{}", doc["errors"]);
    assert_eq!(doc["grpc_codes"], serde_json::json!({"OK": 20_000}));
}

#[test]
fn a_non_ok_status_is_counted_by_its_code() {
    let Some(server) = GrpcServer::start() else {
        return;
    };
    let doc = calls(
        &server,
        "Limited",
        &proto("limited"),
        &["-n", "2000", "-c", "20"],
    );
    assert_eq!(server.calls().limited, 2000);
    assert_eq!(
        doc["grpc_codes"],
        serde_json::json!({"OK": 1800, "RESOURCE_EXHAUSTED": 200})
    );
    assert_eq!(doc["errors"], serde_json::json!([]));
}

#[test]
fn a_call_past_its_deadline_is_deadline_exceeded() {
    let Some(server) = GrpcServer::start() else {
        return;
    };
    let args = ["-n", "20", "-c", "10", "--timeout", "200ms"];
    let doc = calls(&server, "Slow", &proto("deadline"), &args);
    // What the server saw is told before it is asserted: a failure says which side differed.
    let slow = server.calls().slow;
    let codes = &doc["grpc_codes"];
    let expected = serde_json::json!({"DEADLINE_EXCEEDED": 20});
    assert_eq!(*codes, expected, "server saw {slow}; {doc}");
    assert_eq!(slow, 20, "{doc}");
    assert_eq!(doc["errors"], serde_json::json!([]), "{doc}");
}

#[test]
fn a_bad_proto_is_exit_2_naming_its_file_line_and_column() {
    // Refused before anything is sent: no server is needed.
    let path = temp_dir("bad-proto").join("bad.proto");
    std::fs::write(
        &path,
        "syntax = \"proto3\";\npackage p;\nmessage A {\n  string a = 1\n}\n",
    )
    .unwrap();
    let proto = path.display().to_string();
    let out = BELIER.output(&[
        "grpc",
        "127.0.0.1:1",
        "--plaintext",
        "--call",
        "p.S/M",
        "--proto",
        &proto,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{proto}:5:1: ")), "{stderr}");
    // A method the schema does not have, and a message that is not the method's.
    let greeter = self::proto("bad-call");
    for (call, body, says) in [
        ("helloworld.Greeter/Nope", "{}", "--call"),
        ("helloworld.Greeter/SayHello", r#"{"nom": 1}"#, "nom"),
    ] {
        let out = BELIER.output(&[
            "grpc",
            "127.0.0.1:1",
            "--plaintext",
            "--call",
            call,
            "--proto",
            &greeter,
            "-d",
            body,
        ]);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains(says));
    }
}

fn streamer_proto(name: &str) -> String {
    let path = temp_dir(name).join("streamer.proto");
    std::fs::write(&path, STREAMER_PROTO).unwrap();
    path.display().to_string()
}

/// A run of helloworld.Streamer's `method` with `extra` flags; its JSON report.
fn streams(server: &GrpcServer, method: &str, extra: &[&str]) -> Value {
    let call = format!("helloworld.Streamer/{method}");
    run(&server.target(), &call, &streamer_proto(method), extra)
}

/// The report's messages: calls, sent, received, and how many first messages, gaps and round
/// trips were timed (null: none).
fn messages(doc: &Value) -> Value {
    let m = &doc["messages"];
    let timed = |times: &str| m[times]["count"].clone();
    serde_json::json!([
        m["calls"],
        m["sent"],
        m["received"],
        timed("first_message_us"),
        timed("gap_us"),
        timed("round_trip_us"),
    ])
}

#[test]
fn every_message_of_a_server_stream_is_counted_by_the_server_and_by_belier() {
    let Some(server) = GrpcServer::start() else {
        return;
    };
    let args = ["-d", r#"{"count": 100}"#, "-n", "200", "-c", "20"];
    let doc = streams(&server, "ServerStream", &args);
    let calls = server.calls();
    assert_eq!(
        (calls.server_stream, calls.server_stream_out),
        (200, 20_000)
    );
    assert_eq!(doc["grpc_codes"], serde_json::json!({"OK": 200}), "{doc}");
    // A hundred answers to one message do not correlate: no round trips.
    let counted = serde_json::json!([200, 200, 20_000, 200, 19_800, null]);
    assert_eq!(messages(&doc), counted, "{doc}");
    assert_eq!(doc["messages"]["received_per_call"], 100.0);
    assert_eq!(doc["errors"], serde_json::json!([]));
}

#[test]
fn every_message_of_a_client_stream_is_counted_by_the_server_and_by_belier() {
    let Some(server) = GrpcServer::start() else {
        return;
    };
    let args = [
        "-d",
        r#"[{"text": "a"}, {"text": "b"}, {"text": "c"}]"#,
        "--stream-call-count",
        "10",
        "--stream-interval",
        "1ms",
        "-n",
        "100",
        "-c",
        "10",
    ];
    let doc = streams(&server, "ClientStream", &args);
    let calls = server.calls();
    assert_eq!((calls.client_stream, calls.client_stream_in), (100, 1_000));
    assert_eq!(doc["grpc_codes"], serde_json::json!({"OK": 100}), "{doc}");
    // One answer a call: no gap between answers to time, no round trips.
    let counted = serde_json::json!([100, 1_000, 100, 100, null, null]);
    assert_eq!(messages(&doc), counted, "{doc}");
    // Nine intervals of 1 ms between ten messages.
    assert!(doc["latency_us"]["min"].as_u64().unwrap() >= 9_000, "{doc}");
}

/// `calls` bidirectional calls of `each` messages on 10 connections, with `extra` flags,
/// against a grpc-go server of their own: the report, and the server's count of calls and of
/// messages in and out.
fn bidi(calls: u64, each: u64, extra: &[&str]) -> Option<(Value, [u64; 3])> {
    let server = GrpcServer::start()?;
    let (calls, each) = (calls.to_string(), each.to_string());
    let load = ["--stream-call-count", &each, "-n", &calls, "-c", "10"];
    let args = [&["-d", r#"{"text": "x"}"#][..], &load, extra].concat();
    let doc = streams(&server, "Bidi", &args);
    let counted = server.calls();
    Some((doc, [counted.bidi, counted.bidi_in, counted.bidi_out]))
}

#[test]
fn every_message_of_a_bidirectional_stream_is_counted_by_the_server_and_by_belier() {
    let Some((doc, server)) = bidi(100, 20, &[]) else {
        return;
    };
    assert_eq!(server, [100, 2_000, 2_000]);
    assert_eq!(doc["grpc_codes"], serde_json::json!({"OK": 100}), "{doc}");
    // An answer to each message, in turn: a round trip each.
    let counted = serde_json::json!([100, 2_000, 2_000, 100, 1_900, 2_000]);
    assert_eq!(messages(&doc), counted, "{doc}");
}

#[test]
fn streaming_flags_and_message_arrays_are_for_methods_whose_client_streams() {
    // Refused before anything is sent: no server is needed.
    let proto = streamer_proto("stream-flags");
    for (method, extra, says) in [
        (
            "ServerStream",
            &["--stream-call-count", "5"][..],
            "--stream-call-count",
        ),
        ("ServerStream", &["-d", "[{}, {}]"][..], "JSON array"),
        (
            "ServerStream",
            &["--stream-interval", "1ms"][..],
            "--stream-interval",
        ),
        (
            "ClientStream",
            &["--stream-call-count", "0"][..],
            "stream-call-count",
        ),
    ] {
        let call = format!("helloworld.Streamer/{method}");
        let mut args = vec!["grpc", "127.0.0.1:1", "--plaintext", "--call", &call];
        args.extend_from_slice(&["--proto", &proto]);
        args.extend_from_slice(extra);
        let out = BELIER.output(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{extra:?}: {stderr}");
    }
}

#[test]
fn spawned_workers_streams_messages_merge_in_the_report() {
    let Some((doc, server)) = bidi(200, 10, &["--spawn", "2"]) else {
        return;
    };
    assert_eq!(server, [200, 2_000, 2_000]);
    let workers = doc["run"]["workers"].as_array().map(Vec::len);
    assert_eq!(workers, Some(2), "{}", doc["run"]);
    // Each worker's share of the calls, their messages and times, as one run's.
    let counted = serde_json::json!([200, 2_000, 2_000, 200, 1_800, 2_000]);
    assert_eq!(messages(&doc), counted, "{doc}");
}

#[test]
fn every_kind_of_stream_is_counted_by_the_built_in_target_and_by_belier() {
    let server = belier_testserver::Server::start(belier_testserver::Config {
        http2: true,
        ..belier_testserver::Config::default()
    })
    .expect("the target starts");
    let target = server.addr().to_string();
    let proto = temp_dir("stream-target").join("target.proto");
    std::fs::write(&proto, BELIER.ok(&["target", "--print-proto"]).stdout).unwrap();
    let proto = proto.display().to_string();
    let stream = |method: &str, extra: &[&str]| {
        let doc = run(
            &target,
            &format!("belier.target.Target/{method}"),
            &proto,
            extra,
        );
        let counts = server.counts();
        let target = [counts.grpc_messages_received, counts.grpc_messages_sent];
        (doc, target)
    };
    let load = ["-n", "100", "-c", "10"];
    // 100 replies each; then 50 requests each, sent at once (a burst of small frames);
    // then 20 each way. The target's counts add up over the three runs.
    let server_stream = [&["-d", r#"{"count": 100}"#][..], &load].concat();
    let (doc, counted) = stream("ServerStream", &server_stream);
    assert_eq!(counted, [100, 10_000]);
    let expected = serde_json::json!([100, 100, 10_000, 100, 9_900, null]);
    assert_eq!(messages(&doc), expected, "{doc}");
    let client_stream = [&["-d", "{}", "--stream-call-count", "50"][..], &load].concat();
    let (doc, counted) = stream("ClientStream", &client_stream);
    assert_eq!(counted, [100 + 5_000, 10_000 + 100]);
    assert_eq!(doc["grpc_codes"], serde_json::json!({"OK": 100}), "{doc}");
    let bidi = [&["-d", "{}", "--stream-call-count", "20"][..], &load].concat();
    let (doc, counted) = stream("Bidi", &bidi);
    assert_eq!(counted, [5_100 + 2_000, 10_100 + 2_000]);
    let expected = serde_json::json!([100, 2_000, 2_000, 100, 1_900, 2_000]);
    assert_eq!(messages(&doc), expected, "{doc}");
}
