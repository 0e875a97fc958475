//! `belier ws --deflate` (permessage-deflate, RFC 7692) against real servers on 127.0.0.1 that
//! count on their own side: gorilla/websocket with its compression on (no context takeover
//! either way) and Python's `websockets` with its default (12-bit windows, context kept both
//! ways). Every message counted on both sides, the extension agreed on every socket as each
//! server counts it and as the report says with its parameters, and the wire's bytes each way
//! well below an uncompressed run's; a server that declines: the socket goes on uncompressed,
//! counted as declined (and merged so across spawned workers).
//!
//! Needs Go and Python's websockets (scripts/install-test-deps); without them each test says
//! it was skipped, except under CI, where it fails.

use belier_testsupport::ws::{Counts, WsServer};
use serde_json::{json, Value};

use crate::cli::validate;
use crate::websocket::{messages, run};

/// 20 sockets of 50 messages each: 1,000 messages each way.
const LOAD: [&str; 6] = ["-c", "20", "-n", "20", "--messages", "50"];

/// A message that compresses well, as JSON of a load test's often does.
fn message() -> String {
    let quote = r#"{"symbol":"BELR","side":"bid","price":101.25,"venue":"loopback"}"#;
    format!("[{}]", [quote; 10].join(","))
}

/// A run of LOAD with the message and `extra`; its JSON report.
fn echoes(server: &WsServer, path: &str, extra: &[&str]) -> Value {
    let message = message();
    let mut args = LOAD.to_vec();
    args.extend_from_slice(&["--message", &message]);
    args.extend_from_slice(extra);
    run(&server.url(path), &args)
}

/// LOAD's messages counted on both sides, every socket upgraded and closed normally.
fn all_counted(doc: &Value, counted: Counts, deflated: u64) {
    let want = Counts {
        sockets: 20,
        messages_in: 1_000,
        messages_out: 1_000,
        deflated,
    };
    assert_eq!(counted, want);
    assert_eq!(doc["status_codes"], json!({"101": 20}), "{doc}");
    assert_eq!(doc["errors"], json!([]), "{doc}");
    assert_eq!(messages(doc), json!([20, 1_000, 1_000, 20, 980, 1_000]));
    assert_eq!(doc["messages"]["close_codes"], json!({"1000": 20}), "{doc}");
}

/// The wire's bytes (in, out) of a run.
fn wire_bytes(doc: &Value) -> (u64, u64) {
    let bytes = |key: &str| {
        doc["summary"][key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key} in {doc}"))
    };
    (bytes("bytes_in"), bytes("bytes_out"))
}

/// Against `deflating` (and an uncompressed `plain` run against the same server's kind):
/// every socket agreed to `agreed`, every message counted, and the wire's bytes each way less
/// than a third of the uncompressed run's.
fn compressed_both_ways(deflating: WsServer, plain: WsServer, path: &str, agreed: &str) {
    let doc = echoes(&deflating, path, &["--deflate"]);
    all_counted(&doc, deflating.counts(), 20);
    assert_eq!(
        doc["messages"]["extensions"],
        json!({ agreed: 20 }),
        "{doc}"
    );
    validate(&doc);
    let uncompressed = echoes(&plain, path, &[]);
    all_counted(&uncompressed, plain.counts(), 0);
    assert_eq!(uncompressed["messages"].get("extensions"), None);
    let (deflated, plain) = (wire_bytes(&doc), wire_bytes(&uncompressed));
    assert!(
        deflated.0 * 3 < plain.0 && deflated.1 * 3 < plain.1,
        "wire bytes (in, out) with --deflate {deflated:?}, without {plain:?}"
    );
}

#[test]
fn a_gorilla_server_agrees_and_every_message_goes_compressed_both_ways() {
    let (Some(deflating), Some(plain)) = (WsServer::go_deflating(), WsServer::go()) else {
        return;
    };
    let agreed = "permessage-deflate; client_no_context_takeover; server_no_context_takeover";
    compressed_both_ways(deflating, plain, "/echo", agreed);
}

#[test]
fn a_python_websockets_server_agrees_with_12_bit_windows_and_context_kept() {
    let (Some(deflating), Some(plain)) = (WsServer::python_deflating(), WsServer::python()) else {
        return;
    };
    let agreed = "permessage-deflate; client_max_window_bits=12; server_max_window_bits=12";
    compressed_both_ways(deflating, plain, "/", agreed);
}

#[test]
fn a_server_that_declines_is_counted_and_its_messages_go_uncompressed() {
    let Some(server) = WsServer::go() else {
        return;
    };
    // Spawned workers: their sockets' agreements merge exactly in the report.
    let doc = echoes(&server, "/echo", &["--deflate", "--spawn", "2"]);
    all_counted(&doc, server.counts(), 0);
    assert_eq!(
        doc["messages"]["extensions"],
        json!({"declined": 20}),
        "{doc}"
    );
    validate(&doc);
}
