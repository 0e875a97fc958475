//! Where connections come from: a source address has one local port per connection to a
//! destination, and a run that needs more than it has gets `ports_exhausted`, counted apart,
//! with the way out in its example. In a network namespace of the test's own, where
//! `net.ipv4.ip_local_port_range` can be narrowed to a few ports without touching the
//! machine's (needs root and iproute2; under CI nothing skips).

use std::io::{BufRead, BufReader};

use belier_testsupport::netns::Namespace;
use serde_json::Value;

belier_testsupport::binary!(BELIER);

/// The built-in target running in a namespace, and the reader of its standard error (kept:
/// a target whose stderr closed would end at its next line).
type Target = (std::process::Child, BufReader<std::process::ChildStderr>);

/// The namespace with ten local ports, 40000–40009, and the built-in target listening on
/// `127.0.0.1:18080` in it.
fn ten_ports(tag: &str) -> Option<(Namespace, Target)> {
    let ns = Namespace::loopback(tag)?;
    ns.sysctl("net.ipv4.ip_local_port_range", "40000 40009")
        .expect("the namespace's port range narrows");
    let mut target = ns.belier(&BELIER, &["target", "--listen", "127.0.0.1:18080"]);
    let mut err = BufReader::new(target.stderr.take().expect("piped"));
    let mut line = String::new();
    while !line.contains("listening on") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "the target ended");
    }
    Some((ns, (target, err)))
}

/// `belier ARGS --output json` in `ns`: its report.
fn run_in(ns: &Namespace, args: &[&str]) -> Value {
    let out = ns
        .command(&BELIER.path().to_string_lossy())
        .args(args)
        .args(["--output", "json"])
        .output()
        .expect("belier runs");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("no JSON report: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_run_needing_more_ports_than_its_source_has_counts_them_exhausted() {
    let Some((ns, (mut target, _err))) = ten_ports("ports") else {
        return;
    };
    // Twenty connections at once, each kept: ten get a port, ten find none.
    let doc = run_in(
        &ns,
        &["http://127.0.0.1:18080/", "-c", "20", "-n", "20", "-t", "1"],
    );
    assert_eq!(doc["status_codes"]["200"], 10, "{doc}");
    let errors = doc["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{doc}");
    assert_eq!(errors[0]["kind"], "ports_exhausted", "{doc}");
    assert_eq!(errors[0]["count"], 10, "{doc}");
    let example = errors[0]["example"].as_str().unwrap();
    assert!(example.contains("--local-address"), "{example}");
    let _ = target.kill();
}

#[test]
fn with_several_source_addresses_the_same_run_gets_every_port_it_needs() {
    let Some((ns, (mut target, _err))) = ten_ports("sources") else {
        return;
    };
    // Thirty connections from four sources of ten ports each: all of them connect.
    let args = [
        "http://127.0.0.1:18080/",
        "-c",
        "30",
        "-n",
        "30",
        "-t",
        "1",
        "--local-address",
        "127.0.1.0/30",
    ];
    let doc = run_in(&ns, &args);
    assert_eq!(doc["status_codes"]["200"], 30, "{doc}");
    assert_eq!(doc["errors"], serde_json::json!([]), "{doc}");
    let _ = target.kill();
}

#[test]
fn connections_spread_evenly_over_the_source_addresses_as_the_server_sees_them() {
    let server = belier_testserver::Server::start(belier_testserver::Config {
        record_requests: 400,
        ..belier_testserver::Config::default()
    })
    .expect("the target starts");
    let url = server.url("/");
    let doc = BELIER.json(&[
        &url,
        "-c",
        "32",
        "-n",
        "320",
        "--local-address",
        "127.0.1.0/28",
    ]);
    // The report's per-source table: 16 sources of 2 connections each, and each source's
    // requests as the server counted them by the peer of their connection.
    let rows = doc["sources"]["addresses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(rows.len(), 16, "{}", doc["sources"]);
    assert!(
        rows.iter().all(|r| r["connections"] == 2),
        "{}",
        doc["sources"]
    );
    let mut served = std::collections::BTreeMap::new();
    for request in server.recent_requests() {
        let peer = server.peer(request.connection).expect("a recorded peer");
        *served.entry(peer.ip().to_string()).or_insert(0u64) += 1;
    }
    assert_eq!(served.values().sum::<u64>(), 320);
    for row in &rows {
        let address = row["address"].as_str().unwrap();
        assert_eq!(
            row["requests"].as_u64(),
            served.get(address).copied(),
            "{address}"
        );
    }
    let mut by_source = std::collections::BTreeMap::new();
    for connection in 1..=32 {
        let peer = server.peer(connection).expect("a recorded peer");
        *by_source.entry(peer.ip()).or_insert(0) += 1;
    }
    assert_eq!(server.peer(33), None, "32 connections, no more");
    assert_eq!(by_source.len(), 16, "{by_source:?}");
    assert!(by_source.values().all(|&n| n == 2), "{by_source:?}");
    let from: Vec<_> = by_source.keys().map(ToString::to_string).collect();
    assert_eq!(from.first().map(String::as_str), Some("127.0.1.0"));
    assert_eq!(from.last().map(String::as_str), Some("127.0.1.15"));
}

#[test]
fn a_source_the_host_lacks_or_a_bad_range_is_refused_by_name() {
    let out = BELIER.output(&["http://127.0.0.1:1/", "--local-address", "10.0.0.0/15"]);
    belier_testsupport::binary::assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--local-address") && stderr.contains("65536"),
        "{stderr}"
    );
    // Two blocks each within the bound, more than it together.
    let out = BELIER.output(&[
        "http://127.0.0.1:1/",
        "--local-address",
        "10.0.0.0/16",
        "--local-address",
        "10.1.0.0/31",
    ]);
    belier_testsupport::binary::assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--local-address")
            && stderr.contains("10.1.0.0/31")
            && stderr.contains("in all"),
        "{stderr}"
    );
    // TEST-NET-1 (RFC 5737): no host has it.
    let out = BELIER.output(&["http://127.0.0.1:1/", "--local-address", "192.0.2.7"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("local address 192.0.2.7"), "{stderr}");
}
