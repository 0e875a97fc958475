//! `--compressed` against a real nginx with `gzip on`: the body nginx gzips is decoded and
//! its decoded bytes counted; wire bytes, requests and connections are checked against
//! nginx's own access log.
//!
//! Needs nginx (`apt-get install -y nginx-light`); without it each test says it was skipped,
//! except under CI, where a missing nginx fails the test.

use belier_testsupport::nginx as nginx_support;
use belier_testsupport::temp_dir;
use nginx_support::{compressible_page, Nginx, Options};

belier_testsupport::binary!(BELIER);

const REQUESTS: u64 = 200;

/// Runs belier on nginx's compressible page and checks the counts every run shares: every
/// request answered 200 in nginx's log, belier's wire bytes in the sum of nginx's
/// `$bytes_sent`. Returns belier's summary and nginx's bytes sent per request.
fn run(nginx: &Nginx, url: &str, extra: &[&str]) -> (serde_json::Value, Vec<u64>) {
    let n = REQUESTS.to_string();
    let mut args = vec!["-n", &n, "-c", "4"];
    args.extend_from_slice(extra);
    args.push(url);
    let doc = BELIER.json(&args);
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

/// `--compressed` with a targets file: the target without an Accept-Encoding of its own gets
/// belier's and is gzipped; the one that asks for `identity` is sent as is. Both decode to the
/// page, so the decoded total is exact; the wire total is nginx's.
#[test]
fn compressed_decodes_a_targets_files_answers() {
    let Some(nginx) = Nginx::start(false) else {
        return;
    };
    let page = compressible_page().len() as u64;
    let dir = temp_dir("targets");
    let file = dir.join("targets.txt");
    std::fs::write(
        &file,
        format!(
            "GET {}\n\nGET {}\nAccept-Encoding: identity\n",
            nginx.http_url("/static/page.txt?gz"),
            nginx.http_url("/static/page.txt?plain")
        ),
    )
    .unwrap();
    let n = REQUESTS.to_string();
    let doc = BELIER.json(&[
        "--targets",
        file.to_str().unwrap(),
        "--compressed",
        "-n",
        &n,
        "-c",
        "4",
    ]);
    let summary = &doc["summary"];
    assert_eq!(summary["requests"], REQUESTS, "{summary}");
    assert_eq!(summary["errors"], 0, "{summary}");
    let lines = nginx.requests();
    assert_eq!(lines.len() as u64, REQUESTS);
    let sent = |uri: &str| -> Vec<u64> {
        lines
            .iter()
            .filter(|l| l.uri == uri && l.status == 200)
            .map(|l| l.bytes_sent)
            .collect()
    };
    let (gz, plain) = (sent("/static/page.txt?gz"), sent("/static/page.txt?plain"));
    assert_eq!(
        (gz.len() as u64, plain.len() as u64),
        (REQUESTS / 2, REQUESTS / 2)
    );
    assert!(gz.iter().all(|&b| b < page / 4), "{gz:?}");
    assert!(plain.iter().all(|&b| b > page), "{plain:?}");
    let wire: u64 = gz.iter().chain(&plain).sum();
    assert_eq!(summary["bytes_in"], wire, "{summary}");
    assert_eq!(summary["bytes_decoded"], REQUESTS * page, "{summary}");
    // Keep-alive unaffected: the 4 connections carried every request.
    assert_eq!(nginx.connections_seen(), 4);
    let rows: Vec<u64> = doc["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["requests"].as_u64().unwrap())
        .collect();
    assert_eq!(rows, [REQUESTS / 2, REQUESTS / 2]);
    nginx.stop();
}

/// A plan's `compressed: true` (and `belier run --compressed` on a plan without it): every
/// step asks for compression and is decoded, the decoded total exact.
#[test]
fn a_compressed_plan_decodes_nginx_gzip() {
    let Some(nginx) = Nginx::start(false) else {
        return;
    };
    let page = compressible_page().len() as u64;
    let dir = temp_dir("plan");
    let steps = "scenarios:\n  - steps:\n      - get: /static/page.txt\n        \
                 check: { body_contains: belier }\n      - get: /static/page.txt?again\n";
    let target = nginx.http_url("");
    let target = target.trim_end_matches('/');
    for (name, compressed, flag) in [
        ("on.yaml", "compressed: true\n", None),
        ("flag.yaml", "", Some("--compressed")),
    ] {
        let plan = dir.join(name);
        std::fs::write(&plan, format!("target: {target}\n{compressed}{steps}")).unwrap();
        let mut args = vec!["-i", "50", "--vus", "2", "--output", "json"];
        args.extend(flag);
        let before = nginx.requests().len();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_belier"))
            .arg("run")
            .arg(&plan)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let summary = &doc["summary"];
        assert_eq!(summary["requests"], 100, "{summary}");
        assert_eq!(summary["errors"], 0, "{summary}");
        let lines = nginx.requests();
        let new = &lines[before..];
        assert_eq!(new.len(), 100);
        assert!(new.iter().all(|l| l.bytes_sent < page / 4), "{name}");
        let wire: u64 = new.iter().map(|l| l.bytes_sent).sum();
        assert_eq!(summary["bytes_in"], wire, "{summary}");
        assert_eq!(summary["bytes_decoded"], 100 * page, "{summary}");
        let failed: u64 = doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["failed"].as_u64().unwrap())
            .sum();
        assert_eq!(failed, 0, "{}", doc["checks"]);
    }
    nginx.stop();
}
