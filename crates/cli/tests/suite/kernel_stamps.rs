//! `--kernel-stamps`: an open loop against belier's test server with a 1 ms injected delay,
//! at 500/s and 5,000/s, with the kernel's receive stamps on and forced off. Counts are exact
//! against the server; with stamps on every response is timed by them, with them off none;
//! and no response reads faster than the delay the server holds it for. Over TLS and HTTP/2
//! (h2c and h2 over TLS) and HTTP/3 too.
//!
//! #17's acceptance band, p50 within 1.00–1.08 ms, is not asserted: the p50s are printed
//! (`--nocapture`). Latency counts from each request's intended start, so the band leaves
//! 80 µs for belier's wake-up at the arrival, the server's wake-up for the request and its
//! wake-up when the delay ends. On the shared 2-core VM this was written on, release builds
//! read p50 1098 µs at 500/s with stamps on (1138 off), and a request with no delay at all 80
//! µs; debug builds, which this test runs, 1250-1400 µs (see bench/README.md, "A 1 ms server
//! delay read back").

#![allow(clippy::print_stderr)] // the p50s are printed, see above

use std::time::Duration;

use belier_testserver::{Config, Server, TlsConfig};
use serde_json::Value;

belier_testsupport::binary!(BELIER);

fn open_loop(server: &Server, rate: u64, stamps: &str, extra: &[&str]) -> Value {
    let requests = rate * 2;
    let (rate, requests) = (rate.to_string(), requests.to_string());
    let mut args = vec!["--rate", &rate, "-n", &requests, "--kernel-stamps", stamps];
    args.extend_from_slice(extra);
    let url = server.url("/?delay=1ms");
    args.extend_from_slice(&["--output", "json", &url]);
    serde_json::from_slice(&BELIER.ok(&args).stdout).expect("a JSON report")
}

/// Runs the open loop at each of `rates`, stamps on and off, with `extra` flags: counts
/// exact against the server, every response stamped when on and none when off, no p50
/// under the delay.
fn stamped_unless_off(server: &Server, rates: &[u64], extra: &[&str]) {
    let mut seen = server.counts().requests;
    for &rate in rates {
        for stamps in ["on", "off"] {
            let doc = open_loop(server, rate, stamps, extra);
            let requests = rate * 2;
            let summary = &doc["summary"];
            let what = format!("{rate}/s, stamps {stamps}, {extra:?}");
            assert_eq!(summary["requests"], requests, "{what}");
            assert_eq!(summary["succeeded"], requests, "{what}");
            let stamped = if stamps == "on" { requests } else { 0 };
            assert_eq!(summary["kernel_stamped"], stamped, "{what}");
            let p50 = doc["latency_us"]["percentiles"]["p50"].as_u64().unwrap();
            eprintln!("{what}: p50 {p50} µs");
            assert!(p50 >= 1_000, "{what}: p50 {p50} µs");
            assert!(server.wait_idle(Duration::from_secs(5)));
            seen += requests;
            assert_eq!(
                server.counts().requests,
                seen,
                "the server saw every request"
            );
        }
    }
}

#[test]
fn responses_are_timed_by_the_kernels_receive_stamps_unless_forced_off() {
    let server = Server::start(Config {
        threads: 2,
        ..Config::default()
    })
    .expect("test server starts");
    stamped_unless_off(&server, &[500, 5_000], &[]);
}

/// Over TLS the stamp is that of the socket read that completed the TLS record; HTTP/1.1,
/// then HTTP/2 (ALPN `h2`), whose streams take the stamps of the reads that brought their
/// frames.
#[test]
fn tls_responses_are_timed_by_the_kernels_receive_stamps() {
    let (tls, ca) = TlsConfig::self_signed(&["127.0.0.1"]);
    let server = Server::start(Config {
        threads: 2,
        tls: Some(tls),
        http2: true,
        ..Config::default()
    })
    .expect("test server starts");
    let ca_file = std::env::temp_dir().join(format!("belier-stamps-{}.pem", std::process::id()));
    std::fs::write(&ca_file, ca).unwrap();
    let cacert = ["--cacert", ca_file.to_str().unwrap()];
    stamped_unless_off(&server, &[500], &cacert);
    stamped_unless_off(&server, &[500], &[&cacert[..], &["--http2"]].concat());
    let _ = std::fs::remove_file(&ca_file);
}

/// HTTP/2 with prior knowledge (h2c), many streams on a connection.
#[test]
fn h2c_responses_are_timed_by_the_kernels_receive_stamps() {
    let server = Server::start(Config {
        threads: 2,
        http2: true,
        ..Config::default()
    })
    .expect("test server starts");
    stamped_unless_off(&server, &[500, 5_000], &["--http2"]);
}

/// HTTP/3: each QUIC connection's UDP socket keeps the kernel's stamp of the last datagram
/// it read, which times a response's head and end (the datagram that brought it or a later
/// one of the same connection).
#[test]
fn http3_responses_are_timed_by_the_kernels_receive_stamps() {
    let (tls, ca) = TlsConfig::self_signed(&["127.0.0.1"]);
    let server = Server::start(Config {
        threads: 2,
        tls: Some(tls),
        http3: true,
        ..Config::default()
    })
    .expect("test server starts");
    let ca_file = belier_testsupport::dirs::temp_dir("stamps-h3").join("ca.pem");
    std::fs::write(&ca_file, ca).unwrap();
    let cacert = ["--cacert", ca_file.to_str().unwrap(), "--http3"];
    stamped_unless_off(&server, &[500, 5_000], &cacert);
}
