//! `--compressed` against belier's own target (which gzips bodies when asked) and against a
//! tiny server whose gzip bodies are corrupt: decoded bytes are counted exactly, and a body
//! that does not decode is counted under its own error kind, one per request the server saw.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use belier_testserver::{Config, Server};
use serde_json::Value;

fn belier(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(["--output", "json"])
        .args(args)
        .output()
        .expect("belier runs")
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn compressed_decodes_the_targets_gzip_bodies_and_keeps_connections() {
    let s = Server::start(Config::default()).expect("test server starts");
    let out = belier(&[
        "--compressed",
        "-n",
        "60",
        "-c",
        "3",
        &s.url("/?size=20000"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = report(&out);
    let summary = &doc["summary"];
    assert_eq!(summary["requests"], 60, "{summary}");
    assert_eq!(doc["status_codes"]["200"], 60, "{}", doc["status_codes"]);
    assert_eq!(summary["bytes_decoded"], 60 * 20_000, "{summary}");
    // 20,000 identical bytes gzip to a few dozen: the wire carried far less.
    assert!(
        summary["bytes_in"].as_u64().unwrap() < 60 * 1000,
        "{summary}"
    );
    let counts = s.counts();
    assert_eq!((counts.requests, counts.connections), (60, 3));
    assert_eq!(summary["connections_opened"], 3, "{summary}");
}

#[test]
fn a_target_that_ignores_accept_encoding_is_counted_as_is() {
    let s = Server::start(Config::default()).expect("test server starts");
    // An explicit Accept-Encoding wins over --compressed's: identity bodies, counted as sent.
    let out = belier(&[
        "--compressed",
        "-H",
        "Accept-Encoding: identity",
        "-n",
        "10",
        &s.url("/?size=5000"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = report(&out);
    assert_eq!(
        doc["summary"]["bytes_decoded"],
        10 * 5000,
        "{}",
        doc["summary"]
    );
    assert!(doc["summary"]["bytes_in"].as_u64().unwrap() > 10 * 5000);
}

/// A server that answers every request with a `Content-Encoding: gzip` body that is not gzip,
/// counting the requests it read.
fn corrupt_gzip_server() -> (u16, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(AtomicU64::new(0));
    let counter = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let counter = counter.clone();
            std::thread::spawn(move || answer_corrupt(conn, &counter));
        }
    });
    (port, seen)
}

fn answer_corrupt(mut conn: TcpStream, seen: &AtomicU64) {
    let body = b"\x1f\x8b\x08\x00 this is no deflate stream at all";
    let mut buf = Vec::new();
    let mut piece = [0u8; 4096];
    loop {
        let Ok(n) = conn.read(&mut piece) else { return };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&piece[..n]);
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            seen.fetch_add(1, Ordering::SeqCst);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            if conn.write_all(head.as_bytes()).is_err() || conn.write_all(body).is_err() {
                return;
            }
        }
    }
}

#[test]
fn a_body_that_does_not_decode_is_an_error_of_its_own() {
    let (port, seen) = corrupt_gzip_server();
    let url = format!("http://127.0.0.1:{port}/");
    let out = belier(&["--compressed", "-n", "8", "-c", "2", &url]);
    let doc = report(&out);
    let summary = &doc["summary"];
    assert_eq!(summary["requests"], 8, "{summary}");
    assert_eq!(summary["errors"], 8, "{summary}");
    assert_eq!(seen.load(Ordering::SeqCst), 8);
    let errors = doc["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["kind"], "body_decode");
    assert_eq!(errors[0]["count"], 8);
    // The same through a targets file: its request asks for compression and fails to decode.
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("corrupt-{}.txt", std::process::id()));
    std::fs::write(&file, format!("GET {url}\n")).unwrap();
    let out = belier(&[
        "--compressed",
        "--targets",
        file.to_str().unwrap(),
        "-n",
        "6",
        "-c",
        "2",
    ]);
    let doc = report(&out);
    assert_eq!(seen.load(Ordering::SeqCst), 14);
    assert_eq!(doc["errors"][0]["kind"], "body_decode", "{}", doc["errors"]);
    assert_eq!(doc["errors"][0]["count"], 6);
    assert_eq!(doc["targets"][0]["requests"], 6);
    assert_eq!(doc["targets"][0]["failures"], 6, "{}", doc["targets"]);
    let _ = std::fs::remove_file(&file);
    // Without --compressed the same answers are plain 200s: nothing is decoded.
    let out = belier(&["-n", "4", &url]);
    let doc = report(&out);
    assert_eq!(doc["status_codes"]["200"], 4, "{}", doc["summary"]);
    assert_eq!(doc["summary"]["bytes_decoded"], 0);
}
