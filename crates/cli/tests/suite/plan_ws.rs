//! Plans with `ws:` steps, through the real binary against the gorilla/websocket server of
//! `suite/websocket.rs`, which counts sockets and messages on its own side: a chat-like
//! scenario (connect with a subprotocol, a reply matched by a JSON field and extracted, an
//! echo checked, a message sent alone then received, a ping, a close) counted exactly on both
//! sides and in each step's row; a refused upgrade under its status, a socket the server
//! closes abnormally under its code and kind, a wait in vain as a failed step that leaves the
//! socket open; plan errors named with their line.
//!
//! Needs Go (see `suite/websocket.rs`); without it each test says it was skipped, except
//! under CI, where it fails.

use std::path::{Path, PathBuf};

use belier_testsupport::assert_exit;
use belier_testsupport::dirs::temp_dir;
use belier_testsupport::ws::{Counts, WsServer};
use serde_json::{json, Value};

belier_testsupport::binary!(BELIER);

/// Writes `plan` with `PORT` replaced; returns its path.
fn write_plan(test: &str, port: u16, plan: &str) -> PathBuf {
    let path = temp_dir(test).join("plan.yaml");
    std::fs::write(&path, plan.replace("PORT", &port.to_string())).unwrap();
    path
}

/// `belier run PLAN --output json` with exit `code`; the report.
fn run(plan: &Path, code: i32) -> Value {
    let out = BELIER.output(&[
        "run".as_ref(),
        plan.as_os_str(),
        "--output".as_ref(),
        "json".as_ref(),
    ]);
    assert_exit(&out, code);
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// Each step's row: name → (requests, failures).
fn rows(doc: &Value) -> Vec<(String, u64, u64)> {
    doc["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["requests"].as_u64().unwrap(),
                r["failures"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Each check: name → (passed, failed).
fn checks(doc: &Value) -> Vec<(String, u64, u64)> {
    doc["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["passed"].as_u64().unwrap(),
                r["failed"].as_u64().unwrap(),
            )
        })
        .collect()
}

const CHAT: &str = r#"
target: http://127.0.0.1:PORT
load:
  vus: 4
  iterations: 200
scenarios:
  - name: chat
    steps:
      - ws: {connect: /echo, subprotocols: [chat]}
        check: {status: 101, header: {Sec-WebSocket-Protocol: chat}}
      - name: ask
        ws: {send: '{"id": "{{vu}}-{{iteration}}", "mood": "calm"}', reply: {json: $.id, equals: '{{vu}}-{{iteration}}'}}
        extract: {mood: {json: $.mood}}
      - name: repeat
        ws: {send: 'still {{mood}}', reply: echo}
        check: {body_contains: still calm}
      - name: tell
        ws: {send: 'news for {{vu}}'}
      - name: hear
        ws: {receive: {contains: 'news for {{vu}}'}}
      - name: ping
        ws: {ping: hello}
      - name: bye
        ws: {close: 1000, reason: done}
"#;

#[test]
fn a_plans_ws_steps_are_counted_exactly_by_the_server_and_by_each_row() {
    let Some(server) = WsServer::go() else {
        return;
    };
    let plan = write_plan("plan-ws-chat", server.port, CHAT);
    let doc = run(&plan, 0);
    assert_eq!(
        server.counts(),
        Counts {
            sockets: 200,
            messages_in: 600,
            messages_out: 600,
            deflated: 0
        }
    );
    assert_eq!(doc["status_codes"], json!({"101": 200}), "{doc}");
    assert_eq!(doc["errors"], json!([]), "{doc}");
    let m = &doc["messages"];
    assert_eq!(
        [&m["calls"], &m["sent"], &m["received"], &m["close_codes"]],
        [&json!(200), &json!(600), &json!(600), &json!({"1000": 200})],
        "{m}"
    );
    // Two replies answer a message each (the told news is heard, answering none).
    assert_eq!(m["round_trip_us"]["count"], 400, "{m}");
    let expected: Vec<(String, u64, u64)> = [
        "ws connect /echo",
        "ask",
        "repeat",
        "tell",
        "hear",
        "ping",
        "bye",
    ]
    .iter()
    .map(|n| (n.to_string(), 200, 0))
    .collect();
    assert_eq!(rows(&doc), expected);
    assert_eq!(
        checks(&doc),
        vec![
            ("ws connect /echo: status in [101]".into(), 200, 0),
            (
                "ws connect /echo: header Sec-WebSocket-Protocol == \"chat\"".into(),
                200,
                0
            ),
            ("ask: extract mood".into(), 200, 0),
            ("repeat: variables set".into(), 200, 0),
            ("repeat: body contains \"still calm\"".into(), 200, 0),
        ]
    );
    assert_eq!(doc["iterations"]["count"], 200, "{}", doc["iterations"]);
}

const FAILURES: &str = r#"
target: http://127.0.0.1:PORT
load:
  vus: 2
  iterations: 10
scenarios:
  - name: refused
    weight: 1
    steps:
      - ws: {connect: /refuse}
      - name: after a refusal
        ws: {send: lost}
  - name: broken
    weight: 1
    steps:
      - ws: {connect: '/close?after=1&code=1011'}
      - name: first
        ws: {send: one, reply: echo}
      - name: second
        ws: {send: two, reply: echo}
  - name: waiting
    weight: 1
    steps:
      - ws: {connect: /echo}
      - name: in vain
        ws: {receive: {contains: never}}
        timeout: 200ms
      - name: still open
        ws: {send: three, reply: echo}
"#;

#[test]
fn ws_steps_fail_under_their_kind_and_the_socket_under_its_code() {
    let Some(server) = WsServer::go() else {
        return;
    };
    let plan = write_plan("plan-ws-failures", server.port, FAILURES);
    let doc = run(&plan, 0);
    let counted = server.counts();
    let row = |name: &str| {
        rows(&doc)
            .into_iter()
            .find(|(n, _, _)| n == name)
            .unwrap_or_else(|| panic!("no row {name}: {}", doc["steps"]))
    };
    let (_, refused, refused_failed) = row("ws connect /refuse");
    let (_, broken, _) = row("ws connect /close?after=1&code=1011");
    let (_, waiting, _) = row("ws connect /echo");
    assert_eq!(refused + broken + waiting, 10);
    assert_eq!(refused_failed, refused, "a 403 fails its connect");
    // A step after the refusal finds no socket.
    assert_eq!(
        row("after a refusal"),
        ("after a refusal".into(), refused, refused)
    );
    // The server closes with 1011 after one echo: the second send fails, the socket with it.
    assert_eq!(row("first"), ("first".into(), broken, 0));
    assert_eq!(row("second"), ("second".into(), broken, broken));
    // A wait in vain fails its step as a timeout; the socket goes on.
    assert_eq!(row("in vain"), ("in vain".into(), waiting, waiting));
    assert_eq!(row("still open"), ("still open".into(), waiting, 0));
    let codes: Value = doc["status_codes"].clone();
    let mut expected_codes = serde_json::Map::new();
    if refused > 0 {
        expected_codes.insert("403".into(), json!(refused));
    }
    if waiting > 0 {
        expected_codes.insert("101".into(), json!(waiting));
    }
    assert_eq!(codes, Value::Object(expected_codes), "{doc}");
    let mut closes = serde_json::Map::new();
    if broken > 0 {
        closes.insert("1011".into(), json!(broken));
    }
    if waiting > 0 {
        closes.insert("1000".into(), json!(waiting));
    }
    assert_eq!(
        doc["messages"]["close_codes"],
        Value::Object(closes),
        "{doc}"
    );
    let errors = doc["errors"].as_array().unwrap();
    let closed_mid_body: u64 = errors
        .iter()
        .filter(|e| e["kind"] == "closed_mid_body")
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert_eq!(closed_mid_body, broken, "{}", doc["errors"]);
    assert_eq!(counted.sockets, broken + waiting);
    // One echo on each broken socket (the server closes before it reads the second), one on
    // each waiting one.
    assert_eq!(counted.messages_in, broken + waiting);
    assert_eq!(counted.messages_out, broken + waiting);
}

#[test]
fn a_ws_steps_mistakes_are_named_with_their_line() {
    let cases = [
        (
            "ws: {shout: hi}",
            "expected a mapping whose first key is the action",
            4,
        ),
        ("ws: {receive: echo}", "`echo` answers a message", 4),
        (
            "ws: {close: 1006}",
            "expected a close code a client may send",
            4,
        ),
        ("ws: {send: hi, count: 2}", "`count` goes with `reply:`", 4),
        (
            "ws: {connect: chat}",
            "expected a path starting with `/`",
            4,
        ),
        (
            "ws: {send: hi}\n        headers: {X-A: b}",
            "`headers` go with a `ws: {connect: …}` step",
            5,
        ),
    ];
    for (step, message, line) in cases {
        let plan = format!("target: http://127.0.0.1:9\nscenarios:\n  - steps:\n      - {step}\n");
        let path = temp_dir("plan-ws-errors").join("plan.yaml");
        std::fs::write(&path, plan).unwrap();
        let out = BELIER.output(&["check".as_ref(), path.as_os_str()]);
        assert_exit(&out, 2);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(message), "{step}: {err}");
        assert!(err.contains(&format!("plan.yaml:{line}:")), "{step}: {err}");
    }
}

#[test]
fn a_connect_step_offers_permessage_deflate_and_the_report_counts_what_was_agreed() {
    let Some(server) = WsServer::go_deflating() else {
        return;
    };
    let plan = r#"
target: http://127.0.0.1:PORT
load: {vus: 2, iterations: 20}
scenarios:
  - steps:
      - ws: {connect: /echo, deflate: true}
      - name: ask
        ws: {send: 'the same words, the same words, the same words again', reply: echo}
      - ws: {close: 1000}
"#;
    let doc = run(&write_plan("plan-ws-deflate", server.port, plan), 0);
    assert_eq!(
        server.counts(),
        Counts {
            sockets: 20,
            messages_in: 20,
            messages_out: 20,
            deflated: 20
        }
    );
    let agreed = "permessage-deflate; client_no_context_takeover; server_no_context_takeover";
    assert_eq!(
        doc["messages"]["extensions"],
        json!({ agreed: 20 }),
        "{doc}"
    );
    assert_eq!(doc["errors"], json!([]), "{doc}");
    assert_eq!(rows(&doc)[1], ("ask".to_string(), 20, 0));
}
