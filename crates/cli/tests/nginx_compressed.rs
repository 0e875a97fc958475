//! `--compressed` against a real nginx with `gzip on`: the body nginx gzips is decoded and
//! its decoded bytes counted; wire bytes, requests and connections are checked against
//! nginx's own access log.
//!
//! Needs nginx (`apt-get install -y nginx-light`); without it each test says it was skipped,
//! except under CI, where a missing nginx fails the test.

#[path = "support/nginx.rs"]
mod nginx_support;

use nginx_support::{belier_json, compressible_page, Nginx, Options};

const REQUESTS: u64 = 200;

/// Runs belier on nginx's compressible page and checks the counts every run shares: every
/// request answered 200 in nginx's log, belier's wire bytes in the sum of nginx's
/// `$bytes_sent`. Returns belier's summary and nginx's bytes sent per request.
fn run(nginx: &Nginx, url: &str, extra: &[&str]) -> (serde_json::Value, Vec<u64>) {
    let n = REQUESTS.to_string();
    let mut args = vec!["-n", &n, "-c", "4"];
    args.extend_from_slice(extra);
    args.push(url);
    let doc = belier_json(&args);
    let summary = doc["summary"].clone();
    assert_eq!(summary["requests"], REQUESTS, "{summary}");
    assert_eq!(
        doc["status_codes"]["200"], REQUESTS,
        "{}",
        doc["status_codes"]
    );
    let lines = nginx.requests();
    assert_eq!(lines.len() as u64, REQUESTS);
    assert!(lines
        .iter()
        .all(|l| l.status == 200 && l.uri == "/static/page.txt"));
    let sent: Vec<u64> = lines.iter().map(|l| l.bytes_sent).collect();
    (summary, sent)
}

#[test]
fn compressed_decodes_nginx_gzip_and_keeps_connections() {
    let Some(nginx) = Nginx::start(false) else {
        return;
    };
    let page = compressible_page().len() as u64;
    let (summary, sent) = run(
        &nginx,
        &nginx.http_url("/static/page.txt"),
        &["--compressed"],
    );
    // nginx compressed every answer: each is far smaller on the wire than the page.
    assert!(sent.iter().all(|&b| b < page / 4), "{sent:?}");
    assert_eq!(summary["bytes_in"], sent.iter().sum::<u64>(), "{summary}");
    assert_eq!(summary["bytes_decoded"], REQUESTS * page, "{summary}");
    assert_eq!(summary["errors"], 0, "{summary}");
    // Keep-alive unaffected: the 4 connections carried every request.
    assert_eq!(summary["connections_opened"], 4, "{summary}");
    assert_eq!(nginx.connections_seen(), 4);
    nginx.stop();
}

#[test]
fn without_compressed_nginx_sends_the_page_as_is_and_nothing_is_decoded() {
    let Some(nginx) = Nginx::start(false) else {
        return;
    };
    let page = compressible_page().len() as u64;
    let (summary, sent) = run(&nginx, &nginx.http_url("/static/page.txt"), &[]);
    assert!(sent.iter().all(|&b| b > page), "{sent:?}");
    assert_eq!(summary["bytes_in"], sent.iter().sum::<u64>(), "{summary}");
    assert_eq!(summary["bytes_decoded"], 0, "{summary}");
    nginx.stop();
}

#[test]
fn compressed_decodes_nginx_gzip_over_http2() {
    let Some(nginx) = Nginx::start_with(Options {
        h2c: true,
        ..Options::default()
    }) else {
        return;
    };
    let page = compressible_page().len() as u64;
    let (summary, sent) = run(
        &nginx,
        &nginx.h2c_url("/static/page.txt"),
        &["--http2", "--compressed"],
    );
    assert!(sent.iter().all(|&b| b < page / 4), "{sent:?}");
    assert_eq!(summary["bytes_decoded"], REQUESTS * page, "{summary}");
    assert_eq!(summary["errors"], 0, "{summary}");
    assert!(nginx
        .requests()
        .iter()
        .all(|l| l.server_protocol == "HTTP/2.0"));
    nginx.stop();
}
