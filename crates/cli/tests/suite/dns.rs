//! Every address behind a host: `--resolve HOST:PORT:ADDR,ADDR...` and `--dns-policy`, checked
//! on the side of four of belier's test servers, one on each of 127.0.0.11–14 and the same
//! port, each counting the connections and requests it saw.

use std::net::SocketAddr;
use std::process::Output;

use std::time::Duration;

use belier_testserver::{Config, Server};
use belier_testsupport::dnsmasq::Dnsmasq;
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

fn run(port: u16, policy: &str, load: &[&str]) -> Output {
    let url = format!("http://backends.test:{port}/");
    let entry = format!("backends.test:{port}:127.0.0.11,127.0.0.12,127.0.0.13,127.0.0.14");
    let mut args = vec![
        url.as_str(),
        "--resolve",
        &entry,
        "--dns-policy",
        policy,
        "--output",
        "json",
    ];
    args.extend_from_slice(load);
    let out = BELIER.output(&args);
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

/// The report's per-backend table: `field` of each address's row, in address order.
fn table(out: &Output, field: &str) -> Vec<u64> {
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = doc["backends"]["addresses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    rows.iter().map(|r| r[field].as_u64().unwrap()).collect()
}

#[test]
fn round_robin_gives_each_address_a_quarter_of_the_connections() {
    let (servers, port) = four_servers();
    let out = run(port, "round-robin", &["-c", "40", "-n", "40000"]);
    assert_eq!(seen(&servers, |c| c.connections), [10, 10, 10, 10]);
    // How many requests each connection carries is each server's speed (a faster backend
    // answers more over its ten): their sum is exact, their split is the backends'.
    assert_eq!(seen(&servers, |c| c.requests).iter().sum::<u64>(), 40_000);
    // The report's per-backend table is what each server counted.
    assert_eq!(table(&out, "requests"), seen(&servers, |c| c.requests));
    assert_eq!(table(&out, "connections"), [10, 10, 10, 10]);
    assert_eq!(table(&out, "errors"), [0, 0, 0, 0]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (largest, smallest) = (
        &doc["backends"]["largest_share"],
        &doc["backends"]["smallest_share"],
    );
    assert!(largest.as_f64() >= smallest.as_f64(), "{}", doc["backends"]);
    assert_eq!(doc["summary"]["requests"], 40_000);
    assert_eq!(
        doc["run"]["address"],
        format!("127.0.0.11:{port},127.0.0.12:{port},127.0.0.13:{port},127.0.0.14:{port}")
    );
}

#[test]
fn round_robin_with_a_connection_per_request_gives_each_address_a_quarter_exactly() {
    let (servers, port) = four_servers();
    let out = run(
        port,
        "round-robin",
        &["-c", "40", "-n", "4000", "--no-keepalive"],
    );
    assert_eq!(seen(&servers, |c| c.requests), [1000, 1000, 1000, 1000]);
    assert_eq!(table(&out, "requests"), [1000, 1000, 1000, 1000]);
    assert_eq!(table(&out, "connections"), [1000, 1000, 1000, 1000]);
    assert_eq!(seen(&servers, |c| c.connections), [1000, 1000, 1000, 1000]);
}

#[test]
fn spawned_workers_go_round_the_addresses_as_one_process() {
    let (servers, port) = four_servers();
    // -c 6 over 3 workers: connections 0,3 | 1,4 | 2,5 go to addresses 0,3 | 1,0 | 2,1.
    let out = run(
        port,
        "round-robin",
        &["-c", "6", "-n", "600", "--spawn", "3"],
    );
    assert_eq!(seen(&servers, |c| c.connections), [2, 2, 1, 1]);
    assert_eq!(seen(&servers, |c| c.requests).iter().sum::<u64>(), 600);
    // The workers' tables merge by address into the servers' counts.
    assert_eq!(table(&out, "connections"), [2, 2, 1, 1]);
    assert_eq!(table(&out, "requests"), seen(&servers, |c| c.requests));
}

#[test]
fn first_sends_everything_to_the_first_address() {
    let (servers, port) = four_servers();
    run(port, "first", &["-c", "8", "-n", "800"]);
    assert_eq!(seen(&servers, |c| c.connections), [8, 0, 0, 0]);
    assert_eq!(seen(&servers, |c| c.requests), [800, 0, 0, 0]);
}

#[test]
fn random_reaches_every_address_and_loses_nothing() {
    let (servers, port) = four_servers();
    run(port, "random", &["-c", "40", "-n", "400"]);
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

/// The four backends' addresses.
fn backends(range: std::ops::RangeInclusive<u8>) -> Vec<std::net::IpAddr> {
    range
        .map(|i| std::net::IpAddr::from([127, 0, 0, i]))
        .collect()
}

/// dnsmasq answering `backends.test` with `answer`, the four backends, the URL to load and the
/// `--dns-server` value; `None` when dnsmasq is missing (and the test skips).
fn dns_and_backends(
    test: &str,
    answer: &[std::net::IpAddr],
) -> Option<(Dnsmasq, Vec<Server>, String, String)> {
    let dns = Dnsmasq::start(&belier_testsupport::temp_dir(test), "backends.test", answer)?;
    let (servers, port) = four_servers();
    let url = format!("http://backends.test:{port}/");
    let server = dns.addr.to_string();
    Some((dns, servers, url, server))
}

#[test]
fn a_dns_servers_four_addresses_get_a_quarter_each_under_round_robin() {
    let Some((_dns, servers, url, server)) =
        dns_and_backends("dns-round-robin", &backends(11..=14))
    else {
        return;
    };
    let run = |policy: &str| {
        BELIER.ok(&[
            &url,
            "--dns-server",
            &server,
            "--dns-policy",
            policy,
            "-c",
            "40",
            "-n",
            "4000",
        ])
    };
    run("round-robin");
    assert_eq!(seen(&servers, |c| c.connections), [10, 10, 10, 10]);
    assert_eq!(seen(&servers, |c| c.requests).iter().sum::<u64>(), 4000);
    run("first");
    // The first address dnsmasq answers with: its order is its own, so whichever one it is.
    let after = seen(&servers, |c| c.connections);
    let grown: Vec<u64> = after.iter().map(|n| n - 10).collect();
    assert_eq!(grown.iter().filter(|&&n| n == 40).count(), 1, "{after:?}");
    assert_eq!(grown.iter().sum::<u64>(), 40, "{after:?}");
}

#[test]
fn a_changed_answer_moves_new_connections_within_the_ttl() {
    let Some((dns, servers, url, server)) = dns_and_backends("dns-ttl", &backends(11..=11)) else {
        return;
    };
    // A new connection per request, so that every request follows the answer of its moment.
    let belier = BELIER.spawn(&[
        &url,
        "--dns-server",
        &server,
        "--dns-ttl",
        "1s",
        "--no-keepalive",
        "--rate",
        "100",
        "-z",
        "6s",
    ]);
    assert!(
        servers[0].wait_for(Duration::from_secs(5), |c| c.requests >= 50),
        "the run starts on 127.0.0.11"
    );
    dns.answer("backends.test", &backends(12..=12));
    std::thread::sleep(Duration::from_secs(2));
    let old_at_two_seconds = servers[0].counts().requests;
    let new_at_two_seconds = servers[1].counts().requests;
    let (code, report, stderr) = belier.finish();
    assert_eq!(code, Some(0), "{stderr}");
    // The report says the addresses changed, and its table has both.
    assert!(
        report.contains("the target's addresses changed 1 time(s)"),
        "{report}"
    );
    assert!(report.contains("\nBackends  (2 addresses;"), "{report}");
    // Two seconds after the change no request reaches the old address any more; the new
    // one has had some by then and the rest of the run's after.
    assert_eq!(servers[0].counts().requests, old_at_two_seconds);
    assert!(
        new_at_two_seconds > 0,
        "nothing reached 127.0.0.12 within 2 s"
    );
    assert!(servers[1].counts().requests > new_at_two_seconds);
    assert_eq!(seen(&servers[2..], |c| c.requests), [0, 0]);
}

#[test]
fn a_backend_that_refuses_shows_its_refusals_in_its_own_row() {
    let (mut servers, port) = four_servers();
    // The third address has nothing listening any more.
    servers.remove(2).stop();
    let out = run(
        port,
        "round-robin",
        &["-c", "8", "-n", "400", "--no-keepalive"],
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        table(&out, "requests"),
        [100, 100, 100, 100],
        "{}",
        doc["backends"]
    );
    assert_eq!(table(&out, "errors"), [0, 0, 100, 0], "{}", doc["backends"]);
    assert_eq!(seen(&servers, |c| c.requests), [100, 100, 100]);
    let refused = &doc["errors"][0];
    assert_eq!(
        (&refused["kind"], &refused["count"]),
        (&"connect_refused".into(), &100.into())
    );
}
