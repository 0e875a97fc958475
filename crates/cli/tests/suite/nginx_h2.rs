//! HTTP/2 against a real nginx that ends every connection after 10 streams with a graceful
//! GOAWAY (`keepalive_requests 10`), over h2c and over TLS: the streams nginx did not process
//! are sent again, nothing is reported as the server's failure, nginx's access log has every
//! request once, and belier counts the connections nginx ended. Bytes are HTTP/2 frames on the
//! wire, checked against nginx's own per-request counts.
//!
//! Needs nginx (`apt-get install -y nginx-light`); without it each test says it was skipped,
//! except under CI, where a missing nginx fails the test.

use std::collections::BTreeMap;

use belier_testsupport::nginx as nginx_support;
use nginx_support::{LogLine, Nginx, Options};
use serde_json::Value;

belier_testsupport::binary!(BELIER);

fn nginx_ending_connections_after(requests: u64) -> Option<Nginx> {
    Nginx::start_with(Options {
        tls: true,
        h2c: true,
        keepalive_requests: requests,
        ..Options::default()
    })
}

/// Requests per connection, from the access log.
fn per_connection(lines: &[LogLine]) -> BTreeMap<u64, u64> {
    let mut counts = BTreeMap::new();
    for l in lines {
        *counts.entry(l.connection).or_default() += 1;
    }
    counts
}

/// Runs 2,000 requests over 20 streams and checks them against nginx's log.
fn goaway_run(nginx: &Nginx, args: &[&str]) -> Value {
    let mut all = vec!["--http2", "-n", "2000", "-c", "20"];
    all.extend_from_slice(args);
    let doc = BELIER.json(&all);
    let s = &doc["summary"];
    assert_eq!(s["requests"], 2000, "{s}");
    assert_eq!(s["errors"], 0, "{}", doc["errors"]);
    assert_eq!(doc["status_codes"]["200"], 2000);
    let lines = nginx.requests();
    assert_eq!(lines.len(), 2000, "nginx saw every request once");
    assert!(lines.iter().all(|l| l.server_protocol == "HTTP/2.0"));
    // nginx ends a connection once it has carried 10 requests; belier ends the rest.
    let connections = per_connection(&lines);
    assert!(connections.values().all(|&n| n <= 10), "{connections:?}");
    let ended_by_nginx = connections.values().filter(|&&n| n == 10).count() as u64;
    assert_eq!(s["server_closes"], ended_by_nginx, "{s}");
    assert_eq!(s["connections_opened"], connections.len() as u64, "{s}");
    // With 20 streams in flight, every GOAWAY leaves some above its last stream id.
    assert!(s["resent"].as_u64().unwrap() > 0, "{s}");
    assert!(s["connections_peak"].as_u64().unwrap() > 0, "{s}");
    doc
}

#[test]
fn goaway_streams_are_sent_again_over_h2c() {
    let Some(nginx) = nginx_ending_connections_after(10) else {
        return;
    };
    goaway_run(&nginx, &[&nginx.h2c_url("/")]);
}

#[test]
fn goaway_streams_are_sent_again_over_tls() {
    let Some(nginx) = nginx_ending_connections_after(10) else {
        return;
    };
    let ca = nginx.ca_pem_path();
    goaway_run(
        &nginx,
        &["--cacert", ca.to_str().unwrap(), &nginx.https_url("/")],
    );
}

#[test]
fn http2_bytes_are_frames_on_the_wire() {
    let Some(nginx) = Nginx::start_with(Options {
        h2c: true,
        ..Options::default()
    }) else {
        return;
    };
    let doc = BELIER.json(&["--http2", "-n", "200", "-c", "1", &nginx.h2c_url("/")]);
    let s = &doc["summary"];
    assert_eq!(s["requests"], 200, "{s}");
    let lines = nginx.requests();
    // nginx counts, per HTTP/2 request, the frames it sent for it (HEADERS and DATA with their
    // frame headers) and the frames it read for it. belier's totals also hold what belongs to
    // the connection (preface, SETTINGS, WINDOW_UPDATE, PING acks): a little more, never less.
    let sent_by_nginx: u64 = lines.iter().map(|l| l.bytes_sent).sum();
    let read_by_nginx: u64 = lines.iter().map(|l| l.request_length).sum();
    let bytes_in = s["bytes_in"].as_u64().unwrap();
    let bytes_out = s["bytes_out"].as_u64().unwrap();
    assert!(
        bytes_in >= sent_by_nginx && bytes_in <= sent_by_nginx + 200,
        "in {bytes_in}, nginx sent {sent_by_nginx}"
    );
    // nginx's request length is the HEADERS frame's payload, without its 9-byte frame header.
    let read_with_headers = read_by_nginx + 9 * 200;
    assert!(
        bytes_out >= read_with_headers && bytes_out <= read_with_headers + 200,
        "out {bytes_out}, nginx read {read_by_nginx} + 9 per frame header"
    );
    // Each response is a HEADERS frame and a DATA frame of 6 bytes ("hello\n"): more than the
    // body, unlike before, when bytes were the body alone.
    assert!(bytes_in > 200 * (9 + 9 + 6), "{s}");
    assert!(s["connections_peak"].as_u64().unwrap() >= 1, "{s}");
}
