//! `--unix-socket` (and a plan's `unix_socket:`) against a real nginx listening on Unix domain
//! sockets: every count is checked against nginx's access log, the protocol against what nginx
//! says it spoke, and the report's address is the socket's path.
//!
//! Needs nginx (`apt-get install -y nginx-light`); without it each test says it was skipped,
//! except under CI, where a missing nginx fails the test.

use std::path::Path;
use std::process::Command;

use belier_testsupport::nginx as nginx_support;
use belier_testsupport::ok;
use nginx_support::{LogLine, Nginx, Options};
use serde_json::Value;

belier_testsupport::binary!(BELIER);

/// `belier --output json --unix-socket SOCKET ARGS...`, which must exit 0.
fn on_socket(socket: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--unix-socket", socket.to_str().unwrap()];
    all.extend_from_slice(args);
    BELIER.json(&all)
}

fn start(tls: bool) -> Option<Nginx> {
    Nginx::start_with(Options {
        tls,
        unix: true,
        ..Options::default()
    })
}

/// `n` lines, each a `GET {uri}` answered 200 over `protocol`.
fn assert_lines(lines: &[LogLine], n: usize, uri: &str, protocol: &str) {
    assert_eq!(lines.len(), n, "{lines:?}");
    let odd: Vec<&LogLine> = lines
        .iter()
        .filter(|l| {
            l.status != 200 || l.method != "GET" || l.uri != uri || l.server_protocol != protocol
        })
        .collect();
    assert!(odd.is_empty(), "{} unexpected lines: {odd:?}", odd.len());
}

#[test]
fn closed_loop_over_a_unix_socket_matches_nginx_access_log() {
    let Some(nginx) = start(false) else {
        return;
    };
    let socket = nginx.unix_socket("http.sock");
    // The URL's host and port go nowhere: nothing listens on port 9, the socket is nginx.
    let doc = on_socket(&socket, &["-n", "400", "-c", "4", "http://localhost:9/"]);
    assert_eq!(doc["summary"]["requests"], 400, "{}", doc["summary"]);
    assert_eq!(doc["status_codes"]["200"], 400, "{}", doc["status_codes"]);
    assert_eq!(doc["summary"]["connections_opened"], 4);
    assert_eq!(
        doc["run"]["address"],
        socket.to_str().unwrap(),
        "{}",
        doc["run"]
    );
    assert_eq!(doc["run"]["protocol"], "HTTP/1.1");
    assert_lines(&nginx.requests(), 400, "/", "HTTP/1.1");
    assert_eq!(nginx.connections_seen(), 4);
}

#[test]
fn open_loop_over_a_unix_socket_sends_exactly_rate_times_duration() {
    let Some(nginx) = start(false) else {
        return;
    };
    let socket = nginx.unix_socket("http.sock");
    let doc = on_socket(
        &socket,
        &["--rate", "100", "-z", "2s", "http://localhost/open"],
    );
    assert_eq!(doc["summary"]["requests"], 200, "{}", doc["summary"]);
    assert_eq!(doc["status_codes"]["200"], 200, "{}", doc["status_codes"]);
    assert_lines(&nginx.requests(), 200, "/open", "HTTP/1.1");
}

#[test]
fn http2_prior_knowledge_over_a_unix_socket() {
    let Some(nginx) = start(false) else {
        return;
    };
    let socket = nginx.unix_socket("h2c.sock");
    let doc = on_socket(
        &socket,
        &["--http2", "-n", "300", "-c", "10", "http://localhost/h2"],
    );
    assert_eq!(doc["summary"]["requests"], 300, "{}", doc["summary"]);
    assert_eq!(doc["status_codes"]["200"], 300, "{}", doc["status_codes"]);
    assert_eq!(doc["run"]["protocol"], "HTTP/2");
    let lines = nginx.requests();
    assert_lines(&lines, 300, "/h2", "HTTP/2.0");
    assert!(lines.iter().all(|l| l.ssl_protocol == "-"));
    // 10 streams share one connection.
    assert_eq!(nginx.connections_seen(), 1);
}

#[test]
fn https_over_a_unix_socket_verifies_the_urls_name() {
    let Some(nginx) = start(true) else {
        return;
    };
    let socket = nginx.unix_socket("tls.sock");
    let ca = nginx.ca_pem_path();
    let ca = ca.to_str().unwrap();
    // HTTP/1.1 then HTTP/2 (ALPN h2), TLS on the socket; the certificate names localhost.
    let doc = on_socket(
        &socket,
        &[
            "--cacert",
            ca,
            "-n",
            "100",
            "-c",
            "2",
            "https://localhost/tls",
        ],
    );
    assert_eq!(doc["status_codes"]["200"], 100, "{}", doc["status_codes"]);
    let doc = on_socket(
        &socket,
        &[
            "--cacert",
            ca,
            "--http2",
            "-n",
            "100",
            "-c",
            "2",
            "https://localhost/tls",
        ],
    );
    assert_eq!(doc["status_codes"]["200"], 100, "{}", doc["status_codes"]);
    let lines = nginx.requests();
    assert_eq!(lines.len(), 200);
    let (h1, h2): (Vec<LogLine>, Vec<LogLine>) = lines
        .into_iter()
        .partition(|l| l.server_protocol == "HTTP/1.1");
    assert_lines(&h1, 100, "/tls", "HTTP/1.1");
    assert_lines(&h2, 100, "/tls", "HTTP/2.0");
    assert!(h1
        .iter()
        .chain(&h2)
        .all(|l| l.ssl_protocol.starts_with("TLSv1.")));

    // A name the certificate does not carry fails the handshake: the URL's name is the one
    // checked, though the socket has no name at all.
    let doc = on_socket(
        &socket,
        &[
            "--cacert",
            ca,
            "-n",
            "3",
            "-c",
            "1",
            "https://elsewhere.test/tls",
        ],
    );
    assert_eq!(doc["summary"]["errors"], 3, "{}", doc["summary"]);
    assert_eq!(doc["errors"][0]["kind"], "tls_certificate");
    assert_eq!(nginx.requests().len(), 200);
}

#[test]
fn a_missing_socket_is_a_refused_connect_naming_the_path() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("unix-missing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("nobody-here.sock");
    let doc = on_socket(&missing, &["-n", "5", "-c", "1", "http://localhost/"]);
    assert_eq!(doc["summary"]["requests"], 5, "{}", doc["summary"]);
    assert_eq!(doc["summary"]["errors"], 5, "{}", doc["summary"]);
    assert_eq!(doc["errors"][0]["kind"], "connect_refused");
    let example = doc["errors"][0]["example"].as_str().unwrap();
    assert!(example.contains("nobody-here.sock"), "{example}");
}

#[test]
fn a_socket_the_user_may_not_open_is_an_io_error_counted_as_such() {
    let Some(nginx) = start(false) else {
        return;
    };
    let socket = nginx.unix_socket("http.sock");
    // Connecting needs write permission on the socket. Root ignores permissions, so as root
    // belier runs as `nobody` (setpriv, util-linux) instead.
    let mut belier = if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_belier"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_belier"))
    };
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o000)).unwrap();
    let out = ok(belier
        .args(["--output", "json", "--unix-socket"])
        .arg(&socket)
        .args(["-n", "4", "-c", "1", "http://localhost/"]));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["errors"], 4, "{}", doc["summary"]);
    assert_eq!(doc["errors"][0]["kind"], "other_io", "{}", doc["errors"]);
    let example = doc["errors"][0]["example"].as_str().unwrap();
    assert!(
        example.contains("http.sock") && example.contains("ermission"),
        "{example}"
    );
    assert!(nginx.requests().is_empty());
}

/// Whether this process runs as root (from `/proc`, without a libc binding).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2))
        == Some("0")
}

#[test]
fn probe_over_a_unix_socket_shows_the_path() {
    let Some(nginx) = start(false) else {
        return;
    };
    let socket = nginx.unix_socket("http.sock");
    let out = ok(Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(["probe", "--output", "json", "--unix-socket"])
        .arg(&socket)
        .arg("http://localhost/probe"));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], 200, "{doc}");
    assert_eq!(doc["address"], socket.to_str().unwrap());
    assert_lines(&nginx.requests(), 1, "/probe", "HTTP/1.1");
}

#[test]
fn a_plans_unix_socket_option_sends_its_steps_there() {
    let Some(nginx) = start(false) else {
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("unix-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan = dir.join("unix.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: http://localhost:9\n\
             unix_socket: {}\n\
             load: {{ vus: 3 }}\n\
             scenarios:\n  - steps:\n      - {{ name: a, get: /a }}\n      - {{ name: b, get: /b }}\n",
            nginx.unix_socket("http.sock").display()
        ),
    )
    .unwrap();
    let out = ok(Command::new(env!("CARGO_BIN_EXE_belier"))
        .arg("run")
        .arg(&plan)
        .args(["--output", "json", "-i", "30"]));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["requests"], 60, "{}", doc["summary"]);
    let lines = nginx.requests();
    let a: Vec<LogLine> = lines.iter().filter(|l| l.uri == "/a").cloned().collect();
    let b: Vec<LogLine> = lines.iter().filter(|l| l.uri == "/b").cloned().collect();
    assert_lines(&a, 30, "/a", "HTTP/1.1");
    assert_lines(&b, 30, "/b", "HTTP/1.1");
    assert_eq!(lines.len(), 60);
    let _ = std::fs::remove_dir_all(&dir);
}
