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
