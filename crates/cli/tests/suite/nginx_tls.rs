//! TLS against a real nginx: session resumption counted on both sides (nginx logs
//! `$ssl_session_reused`), and the usual self-signed certificate given with `--cacert`.
//!
//! Needs nginx (`apt-get install -y nginx-light`); without it each test says it was skipped,
//! except under CI, where a missing nginx fails the test.

use std::process::Command;

use belier_testsupport::nginx as nginx_support;
use nginx_support::{self_signed_ca, Nginx, Options};

belier_testsupport::binary!(BELIER);

fn tls_nginx(self_signed: bool) -> Option<Nginx> {
    Nginx::start_with(Options {
        tls: true,
        self_signed,
        ..Options::default()
    })
}

#[test]
fn a_connection_per_request_pays_a_full_handshake_unless_resumption_is_allowed() {
    let Some(nginx) = tls_nginx(false) else {
        return;
    };
    let ca = nginx.ca_pem_path();
    let ca = ca.to_str().unwrap();
    let url = nginx.https_url("/");
    let doc = BELIER.json(&[
        "--no-keepalive",
        "-n",
        "50",
        "-c",
        "1",
        "--cacert",
        ca,
        &url,
    ]);
    assert_eq!(doc["summary"]["succeeded"], 50, "{}", doc["summary"]);
    assert_eq!(doc["summary"]["tls_resumed"], 0);
    let lines = nginx.requests();
    assert_eq!(lines.len(), 50);
    assert!(
        lines.iter().all(|l| l.ssl_session_reused == "."),
        "{lines:?}"
    );

    // Allowed: nginx offers tickets, and resumes every connection after the first.
    let doc = BELIER.json(&[
        "--no-keepalive",
        "-n",
        "50",
        "-c",
        "1",
        "--tls-resume",
        "--cacert",
        ca,
        &url,
    ]);
    assert_eq!(doc["summary"]["succeeded"], 50, "{}", doc["summary"]);
    let lines = nginx.requests();
    let resumed_at_nginx = lines[50..]
        .iter()
        .filter(|l| l.ssl_session_reused == "r")
        .count() as u64;
    assert!(resumed_at_nginx > 0, "nginx resumed none");
    assert_eq!(doc["summary"]["tls_resumed"], resumed_at_nginx);
}

#[test]
fn a_self_signed_certificate_given_with_cacert_is_pinned() {
    let Some(nginx) = tls_nginx(true) else {
        return;
    };
    let ca = nginx.ca_pem_path();
    let doc = BELIER.json(&[
        "-n",
        "20",
        "-c",
        "2",
        "--cacert",
        ca.to_str().unwrap(),
        &nginx.https_url("/"),
    ]);
    assert_eq!(doc["summary"]["succeeded"], 20, "{}", doc["summary"]);
    let session = doc["summary"]["tls_session"].as_str().unwrap();
    assert!(session.contains("pinned by --cacert"), "{session}");
    assert_eq!(nginx.requests().len(), 20);

    // Another self-signed certificate proves nothing about this server.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let other = dir.join(format!("other-{}.pem", std::process::id()));
    std::fs::write(&other, self_signed_ca(&["localhost", "127.0.0.1"]).0).unwrap();
    let doc = BELIER.json(&[
        "-n",
        "5",
        "-c",
        "1",
        "--cacert",
        other.to_str().unwrap(),
        &nginx.https_url("/"),
    ]);
    assert_eq!(doc["summary"]["errors"], 5);
    assert_eq!(
        doc["errors"][0]["kind"], "tls_certificate",
        "{}",
        doc["errors"]
    );

    // The pinned certificate must still name the server.
    let doc = BELIER.json(&[
        "-n",
        "5",
        "-c",
        "1",
        "--sni",
        "elsewhere.test",
        "--cacert",
        ca.to_str().unwrap(),
        &nginx.https_url("/"),
    ]);
    assert_eq!(doc["summary"]["errors"], 5);
    assert_eq!(
        doc["errors"][0]["kind"], "tls_certificate",
        "{}",
        doc["errors"]
    );
}

#[test]
fn the_text_report_shows_the_session_and_resumptions() {
    let Some(nginx) = tls_nginx(false) else {
        return;
    };
    let ca = nginx.ca_pem_path();
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args([
            "-n",
            "10",
            "-c",
            "1",
            "--cacert",
            ca.to_str().unwrap(),
            &nginx.https_url("/"),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("handshakes resumed an earlier session, of 1 connections; TLSv1.3"),
        "{text}"
    );
}
