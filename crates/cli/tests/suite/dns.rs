//! Every address behind a host: `--resolve HOST:PORT:ADDR,ADDR...` and `--dns-policy`, checked
//! on the side of four of belier's test servers, one on each of 127.0.0.11–14 and the same
//! port, each counting the connections and requests it saw.

use std::net::SocketAddr;
use std::process::Output;

use belier_testserver::{Config, Server};
use serde_json::Value;

belier_testsupport::binary!(BELIER);

/// Four servers on 127.0.0.11–14, one port: a host's four addresses as `--resolve` gives them.
fn four_servers() -> (Vec<Server>, u16) {
    for _ in 0..20 {
        let first = start(SocketAddr::from(([127, 0, 0, 11], 0))).expect("test server starts");
        let port = first.addr().port();
        // The port is free on 127.0.0.11; another process may hold it on the others: try anew.
        let rest: Option<Vec<Server>> = (12..=14)
            .map(|i| start(SocketAddr::from(([127, 0, 0, i], port))))
            .collect();
        if let Some(rest) = rest {
            let mut all = vec![first];
            all.extend(rest);
            return (all, port);
        }
    }
    panic!("no port free on all of 127.0.0.11–14");
}

fn start(listen: SocketAddr) -> Option<Server> {
    Server::start(Config {
        listen,
        ..Config::default()
    })
    .ok()
}

fn run(port: u16, policy: &str, connections: &str, requests: &str) -> Output {
    let url = format!("http://backends.test:{port}/");
    let entry = format!("backends.test:{port}:127.0.0.11,127.0.0.12,127.0.0.13,127.0.0.14");
    let out = BELIER.output(&[
        &url,
        "--resolve",
        &entry,
        "--dns-policy",
        policy,
        "-c",
        connections,
        "-n",
        requests,
        "--output",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn seen(servers: &[Server], what: impl Fn(&belier_testserver::Counts) -> u64) -> Vec<u64> {
    servers.iter().map(|s| what(&s.counts())).collect()
}

#[test]
fn round_robin_gives_each_address_a_quarter_of_the_connections_and_the_load() {
    let (servers, port) = four_servers();
    let out = run(port, "round-robin", "40", "40000");
    assert_eq!(seen(&servers, |c| c.connections), [10, 10, 10, 10]);
    let requests = seen(&servers, |c| c.requests);
    assert_eq!(requests.iter().sum::<u64>(), 40_000);
    for (i, &n) in requests.iter().enumerate() {
        assert!(
            (9_600..=10_400).contains(&n),
            "127.0.0.{} saw {n} of 40000 requests (25 % ± 1 % is 9600–10400): {requests:?}",
            11 + i
        );
    }
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["requests"], 40_000);
    assert_eq!(
        doc["run"]["address"],
        format!("127.0.0.11:{port},127.0.0.12:{port},127.0.0.13:{port},127.0.0.14:{port}")
    );
}

#[test]
fn first_sends_everything_to_the_first_address() {
    let (servers, port) = four_servers();
    run(port, "first", "8", "800");
    assert_eq!(seen(&servers, |c| c.connections), [8, 0, 0, 0]);
    assert_eq!(seen(&servers, |c| c.requests), [800, 0, 0, 0]);
}

#[test]
fn random_reaches_every_address_and_loses_nothing() {
    let (servers, port) = four_servers();
    run(port, "random", "40", "400");
    let connections = seen(&servers, |c| c.connections);
    assert_eq!(connections.iter().sum::<u64>(), 40);
    // Forty draws over four addresses miss one with odds 4 × (3/4)^40, about 1 in 25,000.
    assert!(connections.iter().all(|&n| n > 0), "{connections:?}");
    assert_eq!(seen(&servers, |c| c.requests).iter().sum::<u64>(), 400);
}

#[test]
fn a_bad_address_among_several_names_the_flag() {
    let out = BELIER.output(&[
        "http://backends.test:80/",
        "--resolve",
        "backends.test:80:127.0.0.11,backend-two",
        "-n",
        "1",
    ]);
    belier_testsupport::assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--resolve"), "{err}");
}
