//! Where requests go: IPv6 literals in URLs and `--resolve HOST:PORT:ADDR`, checked on the
//! side of belier's test server (which records each request's Host header), on 127.0.0.1 and
//! ::1.

use std::net::{Ipv6Addr, SocketAddr};
use std::process::Output;

use belier_testserver::{Config, Server};
use serde_json::Value;

belier_testsupport::binary!(BELIER);

fn server(listen: SocketAddr) -> Server {
    Server::start(Config {
        listen,
        record_requests: 100,
        ..Config::default()
    })
    .expect("test server starts")
}

fn belier(args: &[&str]) -> Output {
    BELIER.output(args)
}

fn hosts(s: &Server) -> Vec<String> {
    s.recent_requests()
        .iter()
        .map(|r| r.header("Host").unwrap_or_default().to_string())
        .collect()
}

#[test]
fn an_ipv6_literal_url_reaches_the_server_on_the_ipv6_loopback() {
    let s = server(SocketAddr::from((Ipv6Addr::LOCALHOST, 0)));
    let port = s.addr().port();
    let url = format!("http://[::1]:{port}/v6");
    let out = belier(&[&url, "-n", "7", "-c", "2", "--output", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(hosts(&s), vec![format!("[::1]:{port}"); 7]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["requests"], 7);
    assert_eq!(doc["run"]["address"], format!("[::1]:{port}"));
}

#[test]
fn resolve_sends_a_hosts_requests_to_the_address_given() {
    let v4 = server(SocketAddr::from(([127, 0, 0, 1], 0)));
    let port = v4.addr().port();
    let url = format!("http://belier.test:{port}/r");
    let entry = format!("belier.test:{port}:127.0.0.1");
    let out = belier(&[&url, "-n", "5", "-c", "1", "--resolve", &entry]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(hosts(&v4), vec![format!("belier.test:{port}"); 5]);

    // To an IPv6 address, and for a targets file's host.
    let v6 = server(SocketAddr::from((Ipv6Addr::LOCALHOST, 0)));
    let port = v6.addr().port();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("addressing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let targets = dir.join("targets.txt");
    std::fs::write(&targets, format!("GET http://belier.test:{port}/t\n")).unwrap();
    let entry = format!("belier.test:{port}:[::1]");
    let out = belier(&[
        "--targets",
        targets.to_str().unwrap(),
        "-n",
        "4",
        "-c",
        "1",
        "--resolve",
        &entry,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(hosts(&v6), vec![format!("belier.test:{port}"); 4]);

    // An entry for another host or port would change nothing: exit 2, naming it.
    let out = belier(&[&url, "-n", "1", "--resolve", "other.test:80:127.0.0.1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--resolve") && err.contains("other.test:80"),
        "{err}"
    );
    let out = belier(&[&url, "-n", "1", "--resolve", "belier.test:x:127.0.0.1"]);
    assert_eq!(out.status.code(), Some(2));
}
