//! `--proxy`: belier's requests through a real HTTP proxy, Debian's tinyproxy on 127.0.0.1,
//! to belier's test server, which records what reached it (tinyproxy adds its `Via`). Without
//! tinyproxy the test says it skipped, and fails under CI.

use std::io::Write as _;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use belier_testserver::{Config, Server};
use belier_testsupport::ok;

struct Tinyproxy {
    child: Child,
    port: u16,
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Tinyproxy {
    /// A tinyproxy with `extra` lines of configuration.
    fn start(extra: &str) -> Option<Tinyproxy> {
        let binary = ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"]
            .into_iter()
            .find(|p| Path::new(p).exists());
        let Some(binary) = binary else {
            assert!(
                std::env::var("CI").map_or(true, |v| v != "true"),
                "tinyproxy is not installed, and CI must run the proxy test: \
                 scripts/install-test-deps (apt-get install -y tinyproxy-bin)"
            );
            let _ = writeln!(
                std::io::stderr(),
                "skipped: tinyproxy not installed (apt-get install -y tinyproxy-bin)"
            );
            return None;
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("tinyproxy-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("tinyproxy.conf");
        std::fs::write(
            &conf,
            format!(
                "User nobody\nGroup nogroup\nPort {port}\nListen 127.0.0.1\nTimeout 30\n\
                 Allow 127.0.0.1\nMaxClients 64\nLogLevel Critical\nViaProxyName \"belier-test\"\n{extra}"
            ),
        )
        .unwrap();
        let child = Command::new(binary)
            .arg("-d")
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tinyproxy starts");
        let proxy = Tinyproxy { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "tinyproxy did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(proxy)
    }
}

fn server() -> Server {
    Server::start(Config {
        record_requests: 1000,
        ..Config::default()
    })
    .unwrap()
}

/// belier with `args` through `--proxy proxy_url`, with no NO_PROXY from the environment;
/// fails the test unless it exits 0.
fn via_proxy(args: &[&str], proxy_url: &str) -> Output {
    ok(Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(args)
        .args(["--proxy", proxy_url])
        .env_remove("NO_PROXY")
        .env_remove("no_proxy"))
}

#[test]
fn requests_go_through_the_proxy_unless_no_proxy_names_the_host() {
    let Some(proxy) = Tinyproxy::start("") else {
        return;
    };
    let proxy_url = format!("http://127.0.0.1:{}", proxy.port);
    let s = server();
    let url = s.url("/through?x=1");
    // tinyproxy serves one request per client connection and closes it without saying so
    // (no `Connection: close`): a kept connection's next request would be counted as closed
    // before its response. One connection per request, then.
    via_proxy(&[&url, "-n", "20", "-c", "2", "--no-keepalive"], &proxy_url);
    let seen = s.recent_requests();
    assert_eq!(seen.len(), 20);
    for r in &seen {
        assert_eq!(r.target, "/through?x=1");
        assert!(
            r.header("Via").is_some_and(|v| v.contains("belier-test")),
            "{r:?}"
        );
    }

    // NO_PROXY names the host: straight to the server.
    let s = server();
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args([
            &s.url("/direct"),
            "-n",
            "5",
            "-c",
            "1",
            "--proxy",
            &proxy_url,
        ])
        .env("NO_PROXY", "localhost,127.0.0.1")
        .output()
        .unwrap();
    assert!(out.status.success());
    let seen = s.recent_requests();
    assert_eq!(seen.len(), 5);
    assert!(seen.iter().all(|r| r.header("Via").is_none()));
}

#[test]
fn the_proxys_credentials_go_as_proxy_authorization() {
    let Some(proxy) = Tinyproxy::start("BasicAuth belier s3cret\n") else {
        return;
    };
    let s = server();
    let run = |proxy_url: &str| {
        let url = s.url("/auth");
        let args = [
            &url,
            "-n",
            "5",
            "-c",
            "1",
            "--no-keepalive",
            "--output",
            "json",
        ];
        let out = via_proxy(&args, proxy_url);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(!String::from_utf8_lossy(&out.stdout).contains("s3cret"));
        doc["status_codes"].clone()
    };
    // Without credentials the proxy answers 407 itself; nothing reaches the server.
    let refused = run(&format!("http://127.0.0.1:{}", proxy.port));
    assert_eq!(refused["407"], 5, "{refused}");
    assert_eq!(s.counts().requests, 0);
    let passed = run(&format!("http://belier:s3cret@127.0.0.1:{}", proxy.port));
    assert_eq!(passed["200"], 5, "{passed}");
    assert_eq!(s.counts().requests, 5);
    // The proxy took its own header: the server never sees it.
    assert!(s
        .recent_requests()
        .iter()
        .all(|r| r.header("Proxy-Authorization").is_none()));
}

#[test]
fn https_goes_through_a_connect_tunnel_with_keep_alive_inside() {
    let Some(proxy) = Tinyproxy::start("BasicAuth belier s3cret\n") else {
        return;
    };
    let (tls, ca) = belier_testserver::TlsConfig::self_signed(&["127.0.0.1"]);
    let s = Server::start(Config {
        tls: Some(tls),
        record_requests: 100,
        ..Config::default()
    })
    .unwrap();
    let ca_file = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tunnel-ca-{}.pem", std::process::id()));
    std::fs::write(&ca_file, ca).unwrap();
    let run = |proxy_url: &str| {
        let url = s.url("/secure");
        let ca = ca_file.to_str().unwrap();
        let args = [
            &url, "-n", "20", "-c", "2", "-t", "1", "--cacert", ca, "--output", "json",
        ];
        let out = via_proxy(&args, proxy_url);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(!String::from_utf8_lossy(&out.stdout).contains("s3cret"));
        doc
    };
    // Without credentials the proxy refuses the tunnel: every request fails to connect.
    let refused = run(&format!("http://127.0.0.1:{}", proxy.port));
    assert_eq!(refused["summary"]["requests"], 20, "{refused}");
    let errors = &refused["errors"];
    assert_eq!(errors[0]["kind"], "connect_refused", "{errors}");
    assert_eq!(errors[0]["count"], 20, "{errors}");
    assert!(
        errors[0]["example"].as_str().unwrap().contains("407"),
        "{errors}"
    );
    assert_eq!(s.counts().requests, 0);
    // With them: 20 requests in 2 tunnels, each kept alive (one TLS handshake each).
    let passed = run(&format!("http://belier:s3cret@127.0.0.1:{}", proxy.port));
    assert_eq!(passed["status_codes"]["200"], 20, "{passed}");
    let c = s.counts();
    assert_eq!((c.requests, c.connections, c.tls_handshakes), (20, 2, 2));
    assert!(s.recent_requests().iter().all(|r| r.target == "/secure"));
}
