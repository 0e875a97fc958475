//! `--http3=auto`: one HEAD request over HTTP/2 reads the server's `Alt-Svc` first. Caddy serving
//! HTTP/1.1, HTTP/2 and HTTP/3 on one port advertises h3 there: the run goes over HTTP/3, every
//! one of its requests `HTTP/3.0` in Caddy's access log beside the one HEAD. The built-in
//! target over TLS sends no Alt-Svc: the run goes over HTTP/2 and says why, on stderr and
//! among the report's warnings; with `http3` on, it advertises h3 in its HTTP/2 answers, and
//! the run takes it.
//!
//! Caddy needs Go (scripts/install-test-deps); without it that test says it was skipped,
//! except under CI, where it fails.

use belier_testserver::{Config, Server, TlsConfig};
use belier_testsupport::h3::Caddy;
use serde_json::{json, Value};

belier_testsupport::binary!(BELIER);

#[test]
fn caddys_alt_svc_takes_the_run_to_http3() {
    let Some(caddy) = Caddy::with_alt_svc() else {
        return;
    };
    let out = BELIER.ok(&[
        &caddy.url("/"),
        "--http3=auto",
        "-k",
        "-n",
        "2000",
        "-c",
        "20",
        "--output",
        "json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    let port = caddy.port;
    assert!(
        err.contains(&format!(
            "Alt-Svc offers h3 on port {port}: the run goes over HTTP/3"
        )),
        "{err}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = caddy.access_log();
    assert_eq!(doc["run"]["protocol"], "HTTP/3", "{}", doc["run"]);
    assert_eq!(doc["status_codes"], json!({"200": 2000}), "{doc}");
    assert_eq!(doc["errors"], json!([]), "{doc}");
    assert_eq!(doc["warnings"], json!([]), "{doc}");
    let proto = |p: &str| log.iter().filter(|l| l["request"]["proto"] == p).count();
    assert_eq!(log.len(), 2001);
    assert_eq!(proto("HTTP/3.0"), 2000);
    // The question: one HEAD over HTTP/2.
    let asked: Vec<&Value> = log
        .iter()
        .filter(|l| l["request"]["proto"] != "HTTP/3.0")
        .collect();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["request"]["method"], "HEAD");
    assert_eq!(asked[0]["request"]["proto"], "HTTP/2.0");
}

/// The built-in target over TLS and HTTP/2 (and HTTP/3, advertised, with `http3`), each
/// request recorded; `belier URL --http3=auto --cacert CA -n N -c 10 --output json` run at
/// it: the server, belier's stderr and its JSON report.
fn auto_at_the_target(http3: bool, n: &str) -> (Server, String, Value) {
    let (tls, ca) = TlsConfig::self_signed(&["127.0.0.1"]);
    let server = Server::start(Config {
        tls: Some(tls),
        http2: true,
        http3,
        record_requests: 1000,
        ..Config::default()
    })
    .unwrap();
    let dir = belier_testsupport::dirs::temp_dir(&format!("h3-auto-{http3}"));
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca).unwrap();
    let url = server.url("/");
    let ca_file = ca_file.display().to_string();
    let args = [
        &url,
        "--http3=auto",
        "--cacert",
        &ca_file,
        "-n",
        n,
        "-c",
        "10",
    ];
    let out = BELIER.ok(&[&args[..], &["--output", "json"]].concat());
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (server, err, serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn the_built_in_target_advertises_its_http3_and_auto_takes_it() {
    let (server, err, doc) = auto_at_the_target(true, "500");
    let port = server.addr().port();
    assert!(
        err.contains(&format!("Alt-Svc offers h3 on port {port}")),
        "{err}"
    );
    assert_eq!(doc["run"]["protocol"], "HTTP/3", "{}", doc["run"]);
    assert_eq!(doc["status_codes"], json!({"200": 500}), "{doc}");
    assert_eq!(doc["errors"], json!([]), "{doc}");
    let seen = server.recent_requests();
    let over = |v: &str| seen.iter().filter(|r| r.version == v).count();
    assert_eq!((seen.len(), over("HTTP/3"), over("HTTP/2")), (501, 500, 1));
    assert_eq!(server.counts().requests, 501);
}

#[test]
fn a_server_without_alt_svc_is_loaded_over_http2_and_the_report_says_why() {
    let (server, err, doc) = auto_at_the_target(false, "300");
    let why = "the server sent no Alt-Svc header";
    assert!(
        err.contains(&format!("--http3=auto: {why}: the run goes over HTTP/2")),
        "{err}"
    );
    assert_eq!(doc["run"]["protocol"], "HTTP/2", "{}", doc["run"]);
    assert_eq!(doc["status_codes"], json!({"200": 300}), "{doc}");
    let warnings = doc["warnings"].to_string();
    assert!(warnings.contains(why), "{warnings}");
    // The run's 300, and the one HEAD that asked, all over HTTP/2.
    let seen = server.recent_requests();
    assert!(seen.iter().all(|r| r.version == "HTTP/2"), "{seen:?}");
    assert_eq!(server.counts().requests, 301);
}

#[test]
fn http3_auto_is_refused_where_it_cannot_decide() {
    let cases: [(&[&str], &str); 3] = [
        (&["http://127.0.0.1:9/", "--http3=auto"], "https://"),
        (&["https://127.0.0.1:9/", "--http3=nope"], "--http3"),
        (
            &["capacity", "https://127.0.0.1:9/", "--http3=auto"],
            "a capacity search",
        ),
    ];
    for (args, named) in cases {
        let out = BELIER.output(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(named), "{args:?}: {err}");
    }
}
