//! The real `belier` binary against an nginx that closes idle keep-alive connections after
//! 50 ms (`keepalive_timeout 50ms`), as every server and load balancer does after some time:
//! an open loop slower than that finds each connection closed before its next request. None of
//! those requests may be reported as the server's failure; nginx's access log is the witness.
//!
//! Needs nginx (`apt-get install -y nginx-light`); without it each test says it was skipped,
//! except under CI, where a missing nginx fails the test.

use belier_testsupport::nginx as nginx_support;
use nginx_support::{Nginx, Options};

belier_testsupport::binary!(BELIER);

#[test]
fn connections_nginx_closed_while_idle_cost_no_request() {
    let Some(nginx) = Nginx::start_with(Options {
        keepalive_timeout: "50ms".into(),
        ..Options::default()
    }) else {
        return;
    };
    // 100 ms between arrivals, one worker: every connection is idle twice nginx's timeout.
    let doc = BELIER.json(&["--rate", "10", "-z", "3s", "-t", "1", &nginx.http_url("/")]);
    let summary = &doc["summary"];
    assert_eq!(summary["requests"], 30, "{summary}");
    assert_eq!(summary["succeeded"], 30, "{summary}");
    assert_eq!(summary["errors"], 0, "{}", doc["errors"]);
    let lines = nginx.requests();
    assert_eq!(lines.len(), 30);
    assert!(lines.iter().all(|l| l.status == 200));
    // What belier did about it is in the report: the connections nginx ended, seen before
    // reuse or under a request that was then re-sent.
    let closes = summary["server_closes"].as_u64().unwrap();
    let resent = summary["resent"].as_u64().unwrap();
    assert!(closes >= 28, "{summary}");
    assert!(resent <= closes, "{summary}");
    // Every connection carried one request: nginx closed each before the next came.
    assert_eq!(nginx.connections_seen(), 30);
}

#[test]
fn over_tls_too() {
    // Over TLS the idle check must tell the server's close (a close_notify alert, then the end
    // of the stream) from the session tickets a TLS 1.3 server sends after the handshake.
    let Some(nginx) = Nginx::start_with(Options {
        tls: true,
        keepalive_timeout: "50ms".into(),
        ..Options::default()
    }) else {
        return;
    };
    let ca = nginx.ca_pem_path();
    let doc = BELIER.json(&[
        "--rate",
        "10",
        "-z",
        "2s",
        "-t",
        "1",
        "--cacert",
        ca.to_str().unwrap(),
        &nginx.https_url("/"),
    ]);
    let summary = &doc["summary"];
    assert_eq!(summary["requests"], 20, "{summary}");
    assert_eq!(summary["errors"], 0, "{}", doc["errors"]);
    assert_eq!(nginx.requests().len(), 20);
    assert_eq!(nginx.connections_seen(), 20);
    assert!(
        summary["server_closes"].as_u64().unwrap() >= 18,
        "{summary}"
    );
}
