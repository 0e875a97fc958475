//! The built-in target on a Unix domain socket, and belier `--unix-socket` against it: HTTP/1.1,
//! h2c and HTTPS with ALPN h2 over the one socket, counted on the target's side; and
//! `belier target --unix-socket PATH` as a user runs it.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use belier_testserver::{Config, Server, TlsConfig};
use belier_testsupport::ok;
use belier_testsupport::temp_dir;
use serde_json::Value;

/// `belier --output json --unix-socket SOCKET ARGS...`, which must exit 0.
fn on_socket(socket: &Path, args: &[&str]) -> Value {
    let out = ok(Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(["--output", "json", "--unix-socket"])
        .arg(socket)
        .args(args));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn target(socket: &Path, tls: Option<TlsConfig>) -> Server {
    Server::start(Config {
        unix_socket: Some(socket.to_path_buf()),
        http2: true,
        tls,
        record_requests: 1000,
        ..Config::default()
    })
    .unwrap()
}

#[test]
fn http1_and_h2c_over_the_targets_unix_socket() {
    let dir = temp_dir("plain");
    let socket = dir.join("target.sock");
    let s = target(&socket, None);
    assert_eq!(s.url("/x"), "http://localhost/x");
    let doc = on_socket(&socket, &["-n", "200", "-c", "4", &s.url("/?size=300")]);
    assert_eq!(doc["status_codes"]["200"], 200, "{}", doc["status_codes"]);
    assert_eq!(doc["run"]["address"], socket.to_str().unwrap());
    let doc = on_socket(
        &socket,
        &["--http2", "-n", "100", "-c", "10", &s.url("/?delay=1ms")],
    );
    assert_eq!(doc["status_codes"]["200"], 100, "{}", doc["status_codes"]);
    // The rate is kept over a socket too.
    let doc = on_socket(&socket, &["--rate", "50", "-z", "1s", &s.url("/open")]);
    assert_eq!(doc["status_codes"]["200"], 50, "{}", doc["status_codes"]);
    let counts = s.counts();
    assert_eq!(counts.requests, 350);
    assert_eq!(counts.responses, 350);
    let seen = s.recent_requests();
    let over = |v: &str| seen.iter().filter(|r| r.version == v).count();
    assert_eq!(over("HTTP/1.1"), 250);
    assert_eq!(over("HTTP/2"), 100);
    // The Host header is the URL's: the socket has no name.
    assert!(seen
        .iter()
        .filter(|r| r.version == "HTTP/1.1")
        .all(|r| r.header("host") == Some("localhost")));
    s.stop();
    assert!(!socket.exists(), "the target removes its socket");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn https_with_alpn_h2_over_the_targets_unix_socket() {
    let dir = temp_dir("tls");
    let socket = dir.join("tls.sock");
    let (tls, ca) = TlsConfig::self_signed(&["localhost"]);
    let ca_path = dir.join("ca.pem");
    std::fs::write(&ca_path, ca).unwrap();
    let s = target(&socket, Some(tls));
    let ca = ca_path.to_str().unwrap();
    let url = s.url("/");
    assert_eq!(url, "https://localhost/");
    let doc = on_socket(
        &socket,
        &["--cacert", ca, "--http2", "-n", "60", "-c", "3", &url],
    );
    assert_eq!(doc["status_codes"]["200"], 60, "{}", doc["status_codes"]);
    let doc = on_socket(&socket, &["--cacert", ca, "-n", "40", "-c", "2", &url]);
    assert_eq!(doc["status_codes"]["200"], 40, "{}", doc["status_codes"]);
    let counts = s.counts();
    assert_eq!(counts.requests, 100);
    // One HTTP/2 connection for 3 streams, two HTTP/1.1 connections.
    assert_eq!(counts.tls_handshakes, 1 + 2);
    let seen = s.recent_requests();
    assert_eq!(seen.iter().filter(|r| r.version == "HTTP/2").count(), 60);
    assert_eq!(seen.iter().filter(|r| r.version == "HTTP/1.1").count(), 40);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn faults_over_a_unix_socket_land_in_their_kinds() {
    let dir = temp_dir("faults");
    let socket = dir.join("faults.sock");
    let s = target(&socket, None);
    let kind = |query: &str| -> Value {
        let doc = on_socket(
            &socket,
            &["-n", "3", "-c", "1", "--timeout", "1s", &s.url(query)],
        );
        assert_eq!(doc["summary"]["errors"], 3, "{}", doc["summary"]);
        doc["errors"][0]["kind"].clone()
    };
    // A Unix socket has no reset: the connection closes before the answer instead.
    assert_eq!(kind("/?fault=reset"), "closed_before_response");
    assert_eq!(kind("/?fault=close-mid-body"), "closed_mid_body");
    assert_eq!(kind("/?fault=malformed"), "malformed_response");
    assert_eq!(kind("/?fault=stall"), "timeout");
    assert_eq!(s.counts().requests, 12);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn belier_target_listens_on_a_unix_socket() {
    let dir = temp_dir("cli");
    let socket = dir.join("cli.sock");
    let mut child = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(["target", "--unix-socket"])
        .arg(&socket)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let banner = lines.next().expect("the banner").unwrap();
    assert!(
        banner.starts_with(&format!("belier target listening on {}", socket.display())),
        "{banner}"
    );
    let doc = on_socket(&socket, &["-n", "25", "-c", "5", "http://localhost/"]);
    assert_eq!(doc["status_codes"]["200"], 25, "{}", doc["status_codes"]);
    // A second target on the same path is refused, naming it.
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(["target", "--unix-socket"])
        .arg(&socket)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(socket.to_str().unwrap()), "{stderr}");

    // Ctrl-C: it prints what it counted and removes its socket.
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(child.wait().unwrap().success());
    let summary = rest.join("\n");
    assert!(
        summary.contains("served 25 requests on 5 connections"),
        "{summary}"
    );
    assert!(!socket.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
