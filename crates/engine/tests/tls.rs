//! TLS connections against belier's test server with a certificate made in the test:
//! handshake counts, phase timings, faults and handshake failures.

mod common;

use belier_engine::{Config, TlsOptions};
use belier_stats::{ErrorKind, Metric};
use belier_testserver::{Config as ServerConfig, Server, TlsConfig};
use common::{config, requests, run};

fn tls_server() -> (Server, String) {
    let (tls, ca) = TlsConfig::self_signed(&["localhost", "127.0.0.1"]);
    let server = Server::start(ServerConfig {
        tls: Some(tls),
        ..ServerConfig::default()
    })
    .unwrap();
    (server, ca)
}

fn tls_config(server: &Server, ca: &str, path: &str) -> Config {
    let mut c = config(server.addr(), path);
    c.request.host = "localhost".into();
    c.connect_to = Some(server.addr());
    c.tls = Some(TlsOptions {
        ca_pem: Some(ca.as_bytes().to_vec()),
        alpn: vec![b"http/1.1".to_vec()],
        ..TlsOptions::default()
    });
    c
}

#[test]
fn keepalive_does_one_handshake_per_connection() {
    let (s, ca) = tls_server();
    let out = run(&requests(600, 6, tls_config(&s, &ca, "/")));
    assert_eq!(out.totals.succeeded(), 600);
    assert_eq!(s.counts().requests, 600);
    assert_eq!(s.counts().tls_handshakes, 6);
    assert_eq!(out.totals.histogram(Metric::Tls).len(), 6);
    assert_eq!(out.totals.connections_opened(), 6);
    let session = out.totals.tls_session().expect("a session description");
    assert!(
        session.contains("TLSv1.3") && session.contains("ALPN http/1.1"),
        "{session}"
    );
}

#[test]
fn without_keepalive_every_request_pays_a_handshake() {
    let (s, ca) = tls_server();
    let mut c = requests(200, 4, tls_config(&s, &ca, "/"));
    c.keepalive = false;
    let out = run(&c);
    assert_eq!(out.totals.succeeded(), 200);
    assert_eq!(s.counts().tls_handshakes, 200);
    assert_eq!(out.totals.histogram(Metric::Tls).len(), 200);
}

#[test]
fn a_server_delay_shows_in_ttfb_and_phases_add_up() {
    let (s, ca) = tls_server();
    // The delay shows in the time to first byte and not in the phases before it. Those are
    // work, not waiting: a debug build's handshake takes a few ms, and stretches with the
    // machine's load (33 ms at the median beside one CPU-bound process and a build), so the
    // delay is one no handshake comes near, 50 ms, not the 20 ms it was.
    let mut c = requests(40, 2, tls_config(&s, &ca, "/?delay=50ms"));
    c.keepalive = false;
    let out = run(&c);
    let t = &out.totals;
    let p50 = |m: Metric| t.histogram(m).value_at_quantile(0.5);
    assert!(p50(Metric::Ttfb) >= 50_000, "ttfb {}", p50(Metric::Ttfb));
    assert!(
        p50(Metric::Connect) < 50_000,
        "connect {}",
        p50(Metric::Connect)
    );
    assert!(p50(Metric::Tls) < 50_000, "tls {}", p50(Metric::Tls));
    // connect + TLS + TTFB + transfer make up the total (each histogram at 1 %, plus the gaps
    // between phases in belier itself).
    let parts = t.histogram(Metric::Connect).mean()
        + t.histogram(Metric::Tls).mean()
        + t.histogram(Metric::Ttfb).mean()
        + t.histogram(Metric::Transfer).mean();
    let total = t.latency_us().mean();
    assert!(
        (parts - total).abs() / total < 0.05,
        "parts {parts} vs total {total}"
    );
}

#[test]
fn faults_over_tls_keep_their_kinds() {
    let (s, ca) = tls_server();
    for (fault, kind) in common::FAULTS {
        let out = run(&requests(
            50,
            2,
            tls_config(&s, &ca, &format!("/?fault={fault}")),
        ));
        assert_eq!(
            out.totals.errors_of(kind),
            50,
            "{fault}: {:?}",
            out.totals.counters()
        );
    }
}

#[test]
fn handshake_failures_have_their_own_kinds() {
    // An untrusted certificate.
    let (s, _) = tls_server();
    let (_, other_ca) = TlsConfig::self_signed(&["localhost"]);
    let out = run(&requests(10, 2, tls_config(&s, &other_ca, "/")));
    assert_eq!(
        out.totals.errors_of(ErrorKind::TlsCertificate),
        10,
        "{:?}",
        out.totals.counters()
    );
    assert_eq!(s.counts().requests, 0);

    // The wrong name.
    let (s, ca) = tls_server();
    let mut c = requests(5, 1, tls_config(&s, &ca, "/"));
    c.tls.as_mut().unwrap().server_name = Some("elsewhere.test".into());
    let out = run(&c);
    assert_eq!(out.totals.errors_of(ErrorKind::TlsCertificate), 5);

    // A plain HTTP server behind an https URL.
    let plain = Server::start(ServerConfig::default()).unwrap();
    let mut c = requests(5, 1, tls_config(&plain, &ca, "/"));
    c.connect_to = Some(plain.addr());
    let out = run(&c);
    assert_eq!(
        out.totals.errors_of(ErrorKind::TlsProtocol),
        5,
        "{:?}",
        out.totals.counters()
    );
    assert!(out.totals.error_example(ErrorKind::TlsProtocol).is_some());
}

#[test]
fn insecure_skips_verification_but_still_handshakes() {
    let (s, _) = tls_server();
    let mut c = requests(20, 2, config(s.addr(), "/"));
    c.tls = Some(TlsOptions {
        insecure: true,
        ..TlsOptions::default()
    });
    let out = run(&c);
    assert_eq!(out.totals.succeeded(), 20);
    assert_eq!(s.counts().tls_handshakes, 2);
}

#[test]
fn http2_needs_the_server_to_agree_in_alpn() {
    // A server that ignores ALPN: the handshake succeeds, HTTP/2 was never agreed.
    let (mut tls, ca) = TlsConfig::self_signed(&["localhost", "127.0.0.1"]);
    tls.alpn.clear();
    let s = Server::start(ServerConfig {
        tls: Some(tls),
        ..ServerConfig::default()
    })
    .unwrap();
    let mut c = requests(10, 2, tls_config(&s, &ca, "/"));
    c.http2 = true;
    let out = run(&c);
    assert_eq!(
        out.totals.errors_of(ErrorKind::TlsProtocol),
        10,
        "{:?}",
        out.totals.counters()
    );
    let example = out.totals.error_example(ErrorKind::TlsProtocol).unwrap();
    assert!(
        example.contains("server did not agree to HTTP/2 (ALPN"),
        "{example}"
    );
    assert_eq!(s.counts().requests, 0);
}

#[test]
fn http2_to_an_http1_only_server_fails_the_handshake() {
    // belier's test server accepts ALPN http/1.1 only and refuses a client offering just h2.
    let (s, ca) = tls_server();
    let mut c = requests(10, 2, tls_config(&s, &ca, "/"));
    c.http2 = true;
    let out = run(&c);
    assert_eq!(
        out.totals.errors_of(ErrorKind::TlsAlert),
        10,
        "{:?}",
        out.totals.counters()
    );
}

#[test]
fn an_open_loop_over_tls_carries_its_rate_on_the_connections_opened_ahead() {
    // 5,000/s on one worker: 50 connections are opened ahead of the schedule (10 ms of
    // arrivals), handshakes included (slow in a debug build), and they carry every request.
    // A late start used to open a connection, and a handshake, for each late arrival.
    // Bounded by count, not by 400 ms of wall time: on a machine busy with other tests the
    // worker runs late, and arrivals due before a time bound but not yet sent when it came
    // were never sent (1,976 of 2,000 with one other CPU-bound process): the count is exact
    // however late belier runs.
    let (s, ca) = tls_server();
    let mut c = tls_config(&s, &ca, "/");
    c.stop = belier_engine::StopWhen {
        requests: Some(2000),
        duration: None,
        iterations: None,
    };
    c.threads = 1;
    c.load = common::open(belier_engine::Profile::constant(5000.0), 1000, None);
    let out = run(&c);
    let t = &out.totals;
    assert_eq!(
        t.succeeded(),
        2000,
        "{:?}, dropped {}, server {}",
        t.counters(),
        t.dropped(),
        s.counts().requests
    );
    assert_eq!(s.counts().requests, 2000);
    // A few more when the test server, sharing the machine with the other tests, holds all
    // 50 for a moment while belier is on time (CI once saw 108); without the rule, up to the
    // cap of 1,000.
    let opened = t.connections_opened();
    assert!((50..=150).contains(&opened), "{opened} connections");
    assert_eq!(s.counts().tls_handshakes, opened);
}
