//! `belier grpc` against the grpc-go test server started with one of its options, each call
//! counted on the server's side too: the schema asked of the server (reflection) gives the
//! same run as the .proto; TLS with and without --cacert; connections closed by the server
//! with GOAWAY (MaxConnectionAge) fail no call and are opened again; an open loop sends
//! exactly its rate.
//!
//! Needs Go 1.26 or later, as tests/suite/grpc.rs does.

use belier_testsupport::dirs::temp_dir;
use belier_testsupport::grpc::{GrpcServer, GREETER_PROTO};
use belier_testsupport::nginx::self_signed_ca;
use serde_json::{json, Value};

belier_testsupport::binary!(BELIER);

/// `belier grpc SERVER --call helloworld.Greeter/METHOD -d … ARGS --output json`.
fn args(server: &GrpcServer, method: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["grpc", &server.target(), "--call"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push(format!("helloworld.Greeter/{method}"));
    args.extend(["-d", r#"{"name": "belier"}"#, "--output", "json"].map(String::from));
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn report(server: &GrpcServer, method: &str, extra: &[&str]) -> Value {
    let out = BELIER.ok(&args(server, method, extra));
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// A server started with `flags` and reflection, called at SayHello by belier with `extra`
/// (the schema reflected): belier's report and the server's count; `None` without Go.
fn say_hello(flags: &[&str], extra: &[&str]) -> Option<(Value, u64)> {
    let server = GrpcServer::start_with(&[&["-reflection"], flags].concat())?;
    let doc = report(&server, "SayHello", extra);
    Some((doc, server.calls().say_hello))
}

fn proto(name: &str) -> String {
    let path = temp_dir(name).join("greeter.proto");
    std::fs::write(&path, GREETER_PROTO).unwrap();
    path.display().to_string()
}

#[test]
fn reflection_gives_the_same_run_as_the_proto() {
    let Some(server) = GrpcServer::start_with(&["-reflection"]) else {
        return;
    };
    let load = ["--plaintext", "-n", "2000", "-c", "20"];
    let from_proto = report(
        &server,
        "Limited",
        &[&load[..], &["--proto", &proto("reflect-same")]].concat(),
    );
    let reflected = report(&server, "Limited", &load);
    // Each run of 2000 starts on a multiple of ten: 200 RESOURCE_EXHAUSTED each.
    assert_eq!(server.calls().limited, 4000);
    for doc in [&from_proto, &reflected] {
        assert_eq!(doc["summary"]["requests"], 2000, "{doc}");
        assert_eq!(doc["errors"], json!([]), "{doc}");
        assert_eq!(
            doc["grpc_codes"],
            json!({"OK": 1800, "RESOURCE_EXHAUSTED": 200})
        );
    }
    assert_eq!(from_proto["run"]["url"], reflected["run"]["url"]);
}

#[test]
fn a_server_with_only_v1alpha_reflection_is_asked_under_that_name() {
    let load = ["--plaintext", "-n", "100", "-c", "5"];
    let Some((doc, counted)) = say_hello(&["-reflection-v1alpha-only"], &load) else {
        return;
    };
    assert_eq!(counted, 100);
    assert_eq!(doc["grpc_codes"], json!({"OK": 100}), "{doc}");
}

#[test]
fn reflection_errors_say_what_to_do() {
    let Some(plain) = GrpcServer::start() else {
        return;
    };
    let out = BELIER.output(&args(&plain, "SayHello", &["--plaintext", "-n", "1"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("does not serve reflection") && stderr.contains("--proto"),
        "{stderr}"
    );
    assert_eq!(plain.calls().say_hello, 0);

    let Some(server) = GrpcServer::start_with(&["-reflection"]) else {
        return;
    };
    for (call, says) in [
        (
            "helloworld.Greeter/Nope",
            "has no method Nope; it has SayHello, Limited, Slow",
        ),
        (
            "helloworld.Nope/SayHello",
            "no service helloworld.Nope; it serves",
        ),
    ] {
        let target = server.target();
        let out = BELIER.output(&["grpc", &target, "--plaintext", "--call", call, "-n", "1"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(stderr.contains("helloworld.Greeter"), "{stderr}");
    }
}

#[test]
fn tls_with_cacert_counts_every_call_and_without_it_each_fails_as_tls() {
    let dir = temp_dir("grpc-tls");
    let (cert, key) = self_signed_ca(&["localhost", "127.0.0.1"]);
    let (cert_path, key_path) = (dir.join("server.pem"), dir.join("server.key"));
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    let (cert_path, key_path) = (
        cert_path.display().to_string(),
        key_path.display().to_string(),
    );
    let Some(server) = GrpcServer::start_with(&[
        "-reflection",
        "-tls-cert",
        &cert_path,
        "-tls-key",
        &key_path,
    ]) else {
        return;
    };
    // The schema asked over TLS too (reflection's own connection).
    let trusted = report(
        &server,
        "SayHello",
        &["--cacert", &cert_path, "-n", "500", "-c", "10"],
    );
    let proto = proto("grpc-tls");
    let untrusted = report(
        &server,
        "SayHello",
        &["--proto", &proto, "-n", "50", "-c", "5"],
    );
    assert_eq!(server.calls().say_hello, 500);
    assert_eq!(trusted["grpc_codes"], json!({"OK": 500}), "{trusted}");
    assert_eq!(trusted["errors"], json!([]), "{trusted}");
    // No call got an answer; each is a TLS error, of the certificate's kind.
    let s = &untrusted["summary"];
    assert_eq!(
        (&s["requests"], &s["responses"]),
        (&json!(50), &json!(0)),
        "{s}"
    );
    assert!(untrusted["grpc_codes"].is_null(), "{untrusted}");
    let errors = untrusted["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        (&errors[0]["kind"], &errors[0]["count"]),
        (&json!("tls_certificate"), &json!(50))
    );
}

#[test]
fn connections_the_server_ages_out_with_goaway_fail_no_call() {
    let age = [
        "-max-connection-age",
        "500ms",
        "-max-connection-age-grace",
        "1s",
    ];
    let load = ["--plaintext", "-z", "5s", "-c", "20"];
    let Some((doc, counted)) = say_hello(&age, &load) else {
        return;
    };
    let s = &doc["summary"];
    assert_eq!(doc["errors"], json!([]), "{doc}");
    assert_eq!(doc["grpc_codes"], json!({"OK": counted}), "{s}");
    assert_eq!(s["requests"], counted, "{s}");
    // Each connection lives at most 0.55 s (the age, jitter included) and the 1 s grace before
    // the server drops it: at least three in 5 s, each but the last closed by the server.
    // (Here: 10 opened, 9 closed by the server.)
    let opened = s["connections_opened"].as_u64().unwrap();
    assert!(opened >= 3, "{s}");
    assert!(s["server_closes"].as_u64().unwrap() >= 2, "{s}");
}

#[test]
fn an_open_loop_at_2000_calls_a_second_sends_them_all_on_time() {
    let load = ["--plaintext", "--rate", "2000", "-z", "10s"];
    let Some((doc, counted)) = say_hello(&[], &load) else {
        return;
    };
    let (open, s) = (&doc["open_loop"], &doc["summary"]);
    assert_eq!(counted, 20_000, "{open} {s} {}", doc["errors"]);
    assert_eq!(
        (&open["scheduled"], &open["dropped"]),
        (&json!(20_000), &json!(0)),
        "{open}"
    );
    assert_eq!(s["requests"], 20_000, "{s}");
    assert_eq!(doc["grpc_codes"], json!({"OK": 20_000}), "{s}");
    assert_eq!(doc["errors"], json!([]), "{doc}");
    // Latency from when each call was due, not from when it went out.
    assert_eq!(doc["latency_us"]["measured_from"], "intended_start");
    assert_eq!(doc["latency_us"]["count"], 20_000);
    // The rate sent over the schedule, and over the whole run to its last answer (here
    // 2000.0 and 1997.7: the run ends a last call's latency after its schedule).
    for rate in [&open["achieved_rps"], &s["attempted_rps"]] {
        let off = (rate.as_f64().unwrap() / 2000.0 - 1.0).abs();
        assert!(off <= 0.005, "{rate} calls/s: {open} {s}");
    }
}
