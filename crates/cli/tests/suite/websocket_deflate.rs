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

/// A server that upgrades every socket and answers as its first argument says: `garbage`
/// agrees to permessage-deflate, then sends a compressed message that does not inflate;
/// `bomb` agrees, then sends one that inflates to 2 MiB; `unknown` agrees to an extension
/// belier did not offer. Each socket it upgrades adds a line to the file its second argument
/// names.
const HOSTILE: &str = r#"
import base64, hashlib, socketserver, struct, sys, zlib
MODE, LOG = sys.argv[1], sys.argv[2]
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

def frame(payload):
    return bytes([0xc1, 127]) + struct.pack(">Q", len(payload)) + payload

class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        key = ""
        while True:
            line = self.rfile.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode().partition(":")
            if name.strip().lower() == "sec-websocket-key":
                key = value.strip()
        accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        extension = "x-unknown" if MODE == "unknown" else "permessage-deflate"
        self.wfile.write((
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Extensions: {extension}\r\n\r\n"
        ).encode())
        with open(LOG, "a") as log:
            log.write("upgraded\n")
        if MODE == "garbage":
            self.wfile.write(frame(b"\xff\xff\xff\xff"))
        elif MODE == "bomb":
            packer = zlib.compressobj(9, zlib.DEFLATED, -15)
            packed = packer.compress(bytes(2 << 20)) + packer.flush(zlib.Z_SYNC_FLUSH)
            self.wfile.write(frame(packed[:-4]))
        self.rfile.read()
"#;

/// `belier ws --deflate` with 3 sockets against the hostile server in `mode`: its JSON report
/// and how many sockets the server upgraded.
fn against_hostile(mode: &str) -> (Value, usize) {
    let log = belier_testsupport::temp_dir("ws-hostile").join("upgraded");
    let log = log.to_str().unwrap();
    let server = belier_testsupport::python::PythonServer::start(HOSTILE, &[mode, log]);
    let url = format!("ws://127.0.0.1:{}/", server.port);
    let doc = run(&url, &["-n", "3", "--deflate", "--reply-timeout", "5s"]);
    drop(server);
    let upgraded = std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .count();
    (doc, upgraded)
}

/// The report's only error: its kind, count and example.
fn only_error(doc: &Value) -> (String, u64, String) {
    let errors = doc["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{doc}");
    let e = &errors[0];
    let text = |key: &str| e[key].as_str().unwrap_or_default().to_string();
    (text("kind"), e["count"].as_u64().unwrap(), text("example"))
}

#[test]
fn a_message_that_does_not_inflate_or_inflates_too_far_is_a_malformed_response_naming_it() {
    for (mode, names) in [
        ("garbage", "does not inflate"),
        ("bomb", "inflates past 1 MiB"),
    ] {
        let (doc, upgraded) = against_hostile(mode);
        assert_eq!(upgraded, 3);
        let (kind, count, example) = only_error(&doc);
        assert_eq!((kind.as_str(), count), ("malformed_response", 3), "{doc}");
        assert!(example.contains(names), "{example}");
        assert_eq!(doc["messages"]["close_codes"], json!({"1006": 3}), "{doc}");
        assert_eq!(doc["messages"]["received"], 0, "{doc}");
    }
}

#[test]
fn an_extension_belier_did_not_offer_fails_the_socket_naming_it() {
    let (doc, upgraded) = against_hostile("unknown");
    assert_eq!(upgraded, 3);
    let (kind, count, example) = only_error(&doc);
    assert_eq!((kind.as_str(), count), ("malformed_response", 3), "{doc}");
    assert!(example.contains("did not offer"), "{example}");
}
