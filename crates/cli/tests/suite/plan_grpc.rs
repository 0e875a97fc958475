//! Plans with `grpc:` steps, through the real binary against real servers: the grpc-go test
//! server (which counts calls on its own side) and the built-in target's gRPC service (which
//! echoes a request's `message` and counts messages): every call counted on both sides and in
//! its own statistics row, an extracted response field feeding the next call's message, status
//! checks counted as checks, and a bad .proto named by FILE:LINE:COL with exit 2.
//!
//! The grpc-go tests need Go (see `suite/grpc.rs`); without it each says it was skipped,
//! except under CI, where it fails.

use std::path::{Path, PathBuf};

use belier_testserver::{Config, Server};
use belier_testsupport::assert_exit;
use belier_testsupport::dirs::temp_dir;
use belier_testsupport::grpc::{GrpcServer, GREETER_PROTO};
use serde_json::{json, Value};

belier_testsupport::binary!(BELIER);

/// Writes `plan` (its target `TARGET`, HOST:PORT, filled in) and `greeter.proto` beside it in
/// a directory of its own; returns the plan's path.
fn write_plan(test: &str, target: &str, plan: &str) -> PathBuf {
    let dir = temp_dir(test);
    std::fs::write(dir.join("greeter.proto"), GREETER_PROTO).unwrap();
    let path = dir.join("plan.yaml");
    std::fs::write(&path, plan.replace("TARGET", target)).unwrap();
    path
}

/// `belier run PLAN --output json`, exit 0 expected unless `code` says otherwise; the report.
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

/// The report's statistics row named `name`.
fn step<'a>(doc: &'a Value, name: &str) -> &'a Value {
    let rows = doc["steps"].as_array().expect("steps");
    rows.iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no step `{name}` in {}", doc["steps"]))
}

/// The report's check named `name`: (passed, failed).
fn check(doc: &Value, name: &str) -> (u64, u64) {
    let rows = doc["checks"].as_array().expect("checks");
    let row = rows
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no check `{name}` in {}", doc["checks"]));
    (
        row["passed"].as_u64().unwrap(),
        row["failed"].as_u64().unwrap(),
    )
}

const HELLO_TWICE: &str = r#"target: http://TARGET
proto: greeter.proto
load: { vus: 4, iterations: 300 }
scenarios:
  - name: greet
    steps:
      - grpc: helloworld.Greeter/SayHello
        message: { name: "ada" }
        extract: { greeting: message }
        check: { status: OK, field: { message: Hello ada } }
      - name: greet again
        grpc: helloworld.Greeter/SayHello
        message: { name: "{{ greeting }}" }
        metadata: { x-vu: "{{ vu }}" }
        timeout: 2s
        check: { field: { message: Hello Hello ada } }
      - grpc: helloworld.Greeter/Limited
        message: { name: belier }
        check: { status: [OK, RESOURCE_EXHAUSTED] }
"#;

#[test]
fn every_call_of_a_grpc_step_is_counted_and_an_extracted_field_feeds_the_next() {
    let Some(server) = GrpcServer::start() else {
        return;
    };
    let doc = run(
        &write_plan("plan-grpc-hello", &server.target(), HELLO_TWICE),
        0,
    );
    let calls = server.calls();
    assert_eq!((calls.say_hello, calls.limited), (600, 300));
    assert_eq!(doc["summary"]["requests"], 900, "{}", doc["summary"]);
    // Every 10th call of Limited is RESOURCE_EXHAUSTED.
    assert_eq!(
        doc["grpc_codes"],
        json!({"OK": 870, "RESOURCE_EXHAUSTED": 30})
    );
    // A row per method (and per step name).
    for name in [
        "helloworld.Greeter/SayHello",
        "greet again",
        "helloworld.Greeter/Limited",
    ] {
        assert_eq!(step(&doc, name)["requests"], 300, "{name}");
    }
    // The second call's message was the first call's answer: the server's answer to it says so.
    for (name, passed) in [
        ("helloworld.Greeter/SayHello: status in [OK]", 300),
        (
            "helloworld.Greeter/SayHello: json $.message == \"Hello ada\"",
            300,
        ),
        ("helloworld.Greeter/SayHello: extract greeting", 300),
        ("greet again: variables set", 300),
        ("greet again: json $.message == \"Hello Hello ada\"", 300),
    ] {
        assert_eq!(check(&doc, name), (passed, 0), "{name}");
    }
}

const LIMITED: &str = r#"target: http://TARGET
proto: greeter.proto
load: { vus: 2, iterations: 100 }
scenarios:
  - steps:
      - grpc: helloworld.Greeter/Limited
        message: { name: belier }
        CHECK
"#;

#[test]
fn a_status_check_counts_each_call_whose_code_it_does_not_list() {
    let Some(server) = GrpcServer::start() else {
        return;
    };
    let target = server.target();
    let row = "helloworld.Greeter/Limited";
    // Every 10th call the server takes is RESOURCE_EXHAUSTED: 10 of each run's 100.
    let runs = [
        (
            "check: { status: OK }",
            Some(("status in [OK]", 90, 10)),
            10,
        ),
        (
            "check: { status: [OK, RESOURCE_EXHAUSTED] }",
            Some(("status in [OK, RESOURCE_EXHAUSTED]", 100, 0)),
            0,
        ),
        // Without a status check, a call that is not OK fails its step.
        ("name: limited", None, 10),
    ];
    for (i, (check_yaml, expected, failed)) in runs.into_iter().enumerate() {
        let plan = write_plan(
            &format!("plan-grpc-limited-{i}"),
            &target,
            &LIMITED.replace("CHECK", check_yaml),
        );
        let doc = run(&plan, 0);
        assert_eq!(
            doc["grpc_codes"],
            json!({"OK": 90, "RESOURCE_EXHAUSTED": 10}),
            "{check_yaml}"
        );
        let name = if expected.is_some() { row } else { "limited" };
        assert_eq!(step(&doc, name)["requests"], 100, "{check_yaml}");
        assert_eq!(
            step(&doc, name)["failures"],
            failed,
            "{check_yaml}: {}",
            doc["steps"]
        );
        if let Some((label, passed, failed)) = expected {
            let name = format!("{row}: {label}");
            assert_eq!(check(&doc, &name), (passed, failed), "{check_yaml}");
        }
    }
    assert_eq!(server.calls().limited, 300);
}

#[test]
fn a_grpc_step_past_its_timeout_is_deadline_exceeded() {
    let Some(server) = GrpcServer::start() else {
        return;
    };
    let plan = r#"target: http://TARGET
proto: greeter.proto
load: { vus: 2, iterations: 4 }
scenarios:
  - steps:
      - grpc: helloworld.Greeter/Slow
        message: { name: belier }
        timeout: 200ms
"#;
    let doc = run(&write_plan("plan-grpc-slow", &server.target(), plan), 0);
    assert_eq!(doc["grpc_codes"], json!({"DEADLINE_EXCEEDED": 4}));
    assert_eq!(step(&doc, "helloworld.Greeter/Slow")["failures"], 4);
    assert_eq!(server.calls().slow, 4);
}

#[test]
fn the_built_in_target_echoes_an_extracted_field_and_a_checked_status_passes() {
    // Setup extracts `ping` from its call; each iteration sends it, extracts the echo and
    // sends it again with `!`, then asks for RESOURCE_EXHAUSTED and checks it got it.
    let target = Server::start(Config {
        http2: true,
        ..Config::default()
    })
    .expect("the target starts");
    let dir = temp_dir("plan-grpc-target");
    std::fs::write(dir.join("target.proto"), belier_testserver::TARGET_PROTO).unwrap();
    let plan = dir.join("plan.yaml");
    let text = format!(
        r#"target: http://{}
proto: [target.proto]
load: {{ vus: 3, iterations: 90 }}
setup:
  - grpc: belier.target.Target/Unary
    message: {{ message: ping }}
    extract: {{ seed: message }}
scenarios:
  - steps:
      - grpc: belier.target.Target/Unary
        message: {{ message: "{{{{ seed }}}}" }}
        extract: {{ echoed: {{ field: message }} }}
      - name: echo again
        grpc: belier.target.Target/Unary
        message: {{ message: "{{{{ echoed }}}}!", code: 0 }}
        check: {{ status: OK, json: {{ $.message: ping! }} }}
      - name: refused
        grpc: belier.target.Target/Unary
        message: {{ code: 8 }}
        check: {{ status: RESOURCE_EXHAUSTED }}
"#,
        target.addr()
    );
    std::fs::write(&plan, text).unwrap();
    let doc = run(&plan, 0);
    for name in ["belier.target.Target/Unary", "echo again", "refused"] {
        assert_eq!(step(&doc, name)["requests"], 90, "{name}");
        assert_eq!(step(&doc, name)["failures"], 0, "{name}: {}", doc["steps"]);
    }
    assert_eq!(
        doc["grpc_codes"],
        json!({"OK": 180, "RESOURCE_EXHAUSTED": 90})
    );
    for name in [
        "belier.target.Target/Unary: extract echoed",
        "echo again: json $.message == \"ping!\"",
        "refused: status in [RESOURCE_EXHAUSTED]",
    ] {
        assert_eq!(check(&doc, name), (90, 0), "{name}");
    }
    target.wait_idle(std::time::Duration::from_secs(5));
    // Setup's call, then three a user's iteration.
    assert_eq!(target.counts().grpc_messages_received, 271);
}

#[test]
fn a_bad_proto_in_a_plan_is_exit_2_naming_its_file_line_and_column() {
    let dir = temp_dir("plan-grpc-bad-proto");
    let bad = dir.join("bad.proto");
    std::fs::write(
        &bad,
        "syntax = \"proto3\";\nmessage A {\n  string name = ;\n}\n",
    )
    .unwrap();
    let plan = dir.join("plan.yaml");
    let text =
        "target: http://127.0.0.1:1\nproto: bad.proto\nscenarios:\n  - steps:\n      - get: /\n";
    std::fs::write(&plan, text).unwrap();
    for command in ["run", "check"] {
        let out = BELIER.output(&[command.as_ref(), plan.as_os_str()]);
        assert_exit(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("{}:3:17:", bad.display())),
            "{command}: {stderr}"
        );
    }
}

#[test]
fn a_setup_call_that_is_not_ok_fails_the_setup_by_its_code() {
    let target = Server::start(Config {
        http2: true,
        ..Config::default()
    })
    .expect("the target starts");
    let dir = temp_dir("plan-grpc-setup");
    std::fs::write(dir.join("target.proto"), belier_testserver::TARGET_PROTO).unwrap();
    let plan = dir.join("plan.yaml");
    let text = format!(
        "target: http://{}\nproto: target.proto\nsetup:\n  - name: login\n    grpc: belier.target.Target/Unary\n    message: {{ code: 8 }}\nscenarios:\n  - steps:\n      - get: /\n",
        target.addr()
    );
    std::fs::write(&plan, text).unwrap();
    let out = BELIER.output(&[
        "run".as_ref(),
        plan.as_os_str(),
        "-i".as_ref(),
        "5".as_ref(),
    ]);
    assert_exit(&out, 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("setup failed (login: status RESOURCE_EXHAUSTED (expected OK))"),
        "{stderr}"
    );
    target.wait_idle(std::time::Duration::from_secs(5));
    assert_eq!(target.counts().grpc_messages_received, 1);
}
