//! `belier record` through the real binary, with real curl as the client: requests pass the
//! proxy to a local server, the plan written as they go replays with `belier run`, and the
//! server counts every request exactly (the client's and the replay's). HTTPS goes through
//! CONNECT with the recorder's CA trusted by curl `--cacert`. Off the loopback, the proxy
//! wants its token.
//!
//! Needs curl: outside CI a test without it prints that it skipped; with CI=true it fails.
#![allow(clippy::print_stderr)]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use belier_testserver::{Config, Server, TlsConfig};
use belier_testsupport::curl;
use belier_testsupport::hostile;
use belier_testsupport::shop;
use belier_testsupport::temp_dir;
use curl::{curl, have_curl};
use serde_json::Value;
use shop::Shop;

belier_testsupport::binary!();

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A recorder started with `--out PLAN --ca-dir DIR/ca`, the proxy address and CA it printed,
/// and its standard error, read by a thread as it comes.
struct Recorder {
    child: Child,
    proxy: String,
    ca: PathBuf,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Recorder {
    fn start(dir: &Path, plan: &Path, extra: &[&str]) -> Recorder {
        let mut child = belier()
            .args(["record", "--out"])
            .arg(plan)
            .arg("--ca-dir")
            .arg(dir.join("ca"))
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut said = String::new();
        let (mut proxy, mut ca) = (None, None);
        while proxy.is_none() || ca.is_none() {
            let line = lines
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("the recorder did not start: {said}"));
            if let Some(rest) = line.split("proxy listening on ").nth(1) {
                proxy = rest.split_whitespace().next().map(str::to_string);
            }
            if let Some(rest) = line.split("trust the CA ").nth(1) {
                ca = rest.split(" (").next().map(PathBuf::from);
            }
            said.push_str(&line);
            said.push('\n');
        }
        Recorder {
            child,
            proxy: proxy.unwrap(),
            ca: ca.unwrap(),
            lines,
        }
    }

    /// Waits for the recorder to end by itself (`--max-requests`), at most 10 s, and returns
    /// its exit code and what it said after starting.
    fn wait(mut self) -> (i32, String) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let said: Vec<String> = self.lines.iter().collect();
                return (status.code().unwrap_or(-1), said.join("\n"));
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the recorder did not stop");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Ctrl-C, then waits.
    fn interrupt(self) -> (i32, String) {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.wait()
    }
}

fn run_plan(plan: &Path, extra: &[&str]) -> Value {
    let out = belier()
        .arg("run")
        .arg(plan)
        .args(["--output", "json"])
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Ann's login at the shop with curl through `proxy` (and `extra` curl options): the token.
fn log_in(proxy: &[&str], shop: &Shop, extra: &[&str]) -> String {
    let login = curl(
        &[
            proxy,
            extra,
            &[
                "-H",
                "Content-Type: application/json",
                "--data-raw",
                r#"{"user":"ann","password":"correct horse"}"#,
                &format!("{}/api/login", shop.url()),
            ],
        ]
        .concat(),
    );
    serde_json::from_slice::<Value>(&login.stdout).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Waits for `recorder` to stop after 3 requests, the first the shop's login whose token the
/// other two use; what it said.
fn recorded_login_and_two(recorder: Recorder, shop: &Shop) -> String {
    let (code, said) = recorder.wait();
    assert_eq!(code, 0, "{said}");
    assert!(
        said.contains(&format!("recorded 3 requests to {}", shop.url())),
        "{said}"
    );
    assert!(
        said.contains("extracted `token` from the response of request 1, used by request 2, 3"),
        "{said}"
    );
    said
}

#[test]
fn a_login_flow_through_the_proxy_replays_with_a_fresh_token() {
    if !have_curl("a_login_flow_through_the_proxy_replays_with_a_fresh_token") {
        return;
    }
    let dir = temp_dir("plain");
    let plan = dir.join("plan.yaml");
    let shop = Shop::start();
    let recorder = Recorder::start(
        &dir,
        &plan,
        &["--listen", "127.0.0.1:0", "--max-requests", "3"],
    );
    let proxy = ["--proxy", recorder.proxy.as_str()];
    let token = log_in(&proxy, &shop, &["--compressed"]);
    let bearer = format!("Authorization: Bearer {token}");
    for path in ["/api/items?page=1", "/api/items/42"] {
        let out = curl(
            &[
                &proxy[..],
                &["-f", "-H", &bearer, &format!("{}{path}", shop.url())],
            ]
            .concat(),
        );
        assert!(!out.stdout.is_empty());
    }
    let said = recorded_login_and_two(recorder, &shop);
    assert!(
        !said.contains(&token),
        "the token is printed nowhere: {said}"
    );
    let yaml = std::fs::read_to_string(&plan).unwrap();
    assert!(!yaml.contains(&token), "{yaml}");
    assert_eq!(shop.seen().len(), 3, "every request passed the proxy once");
    assert!(shop.seen().iter().all(|s| s.status == 200));
    assert!(shop
        .seen()
        .iter()
        .all(|s| s.header("proxy-connection").is_none()));
    // Asked for uncompressed answers, so the token in the login's could be read.
    assert_eq!(shop.seen()[0].header("accept-encoding"), None);

    let doc = run_plan(&plan, &[]);
    assert_eq!(doc["summary"]["requests"], 3);
    let seen = shop.seen();
    assert_eq!(seen.len(), 6, "3 recorded, 3 replayed");
    let tokens = shop.tokens();
    assert_eq!(tokens.len(), 2);
    let replayed: Vec<(&str, &str, u16)> = seen[3..]
        .iter()
        .map(|s| (s.method.as_str(), s.target.as_str(), s.status))
        .collect();
    assert_eq!(
        replayed,
        [
            ("POST", "/api/login", 200),
            ("GET", "/api/items?page=1", 200),
            ("GET", "/api/items/42", 200)
        ]
    );
    for s in &seen[4..] {
        assert_eq!(
            s.header("authorization"),
            Some(format!("Bearer {}", tokens[1]).as_str())
        );
    }
}

/// A client on two hosts (the shop's login and items, a test server's catalog) through the
/// proxy makes one plan: the shop is its target, the catalog a `url:` step, and the token the
/// shop issued goes to both hosts in the replay.
#[test]
fn two_hosts_through_the_proxy_make_one_plan() {
    if !have_curl("two_hosts_through_the_proxy_make_one_plan") {
        return;
    }
    let dir = temp_dir("two-hosts");
    let plan = dir.join("plan.yaml");
    let shop = Shop::start();
    let catalog = Server::start(Config {
        threads: 1,
        record_requests: 100,
        ..Config::default()
    })
    .unwrap();
    let catalog_url = format!("http://{}/catalog?page=2", catalog.addr());
    let recorder = Recorder::start(
        &dir,
        &plan,
        &["--listen", "127.0.0.1:0", "--max-requests", "3"],
    );
    let proxy = ["--proxy", recorder.proxy.as_str()];
    let token = log_in(&proxy, &shop, &[]);
    let bearer = format!("Authorization: Bearer {token}");
    for url in [catalog_url.clone(), format!("{}/api/items/42", shop.url())] {
        curl(&[&proxy[..], &["-f", "-H", &bearer, &url]].concat());
    }
    let said = recorded_login_and_two(recorder, &shop);
    assert!(!said.contains(&token), "{said}");
    let yaml = std::fs::read_to_string(&plan).unwrap();
    assert!(yaml.contains(&format!("url: \"{catalog_url}\"")), "{yaml}");
    assert!(catalog.wait_idle(Duration::from_secs(5)));
    assert_eq!(catalog.recent_requests().len(), 1);

    let doc = run_plan(&plan, &["-i", "2"]);
    assert_eq!(doc["summary"]["requests"], 6);
    let shop_seen: Vec<(String, String, u16)> = shop.seen()[2..]
        .iter()
        .map(|s| (s.method.clone(), s.target.clone(), s.status))
        .collect();
    let login = ("POST".to_string(), "/api/login".to_string(), 200);
    let item = ("GET".to_string(), "/api/items/42".to_string(), 200);
    assert_eq!(shop_seen, [login.clone(), item.clone(), login, item]);
    assert!(catalog.wait_idle(Duration::from_secs(5)));
    let replayed = &catalog.recent_requests()[1..];
    assert_eq!(replayed.len(), 2);
    // Each iteration logs in again and sends its own token to both hosts.
    let tokens = shop.tokens();
    assert_eq!(tokens.len(), 3);
    for (seen, token) in replayed.iter().zip(&tokens[1..]) {
        assert_eq!(seen.target, "/catalog?page=2");
        assert_eq!(
            seen.header("authorization"),
            Some(format!("Bearer {token}").as_str())
        );
    }
}

#[test]
fn https_through_connect_with_the_recorders_ca() {
    if !have_curl("https_through_connect_with_the_recorders_ca") {
        return;
    }
    let dir = temp_dir("tls");
    let plan = dir.join("plan.yaml");
    let (tls, origin_ca) = TlsConfig::self_signed(&["localhost"]);
    let origin_ca_file = dir.join("origin-ca.pem");
    std::fs::write(&origin_ca_file, origin_ca).unwrap();
    let server = Server::start(Config {
        threads: 1,
        tls: Some(tls),
        ..Config::default()
    })
    .unwrap();
    let url = format!("https://localhost:{}", server.addr().port());
    let recorder = Recorder::start(
        &dir,
        &plan,
        &[
            "--listen",
            "127.0.0.1:0",
            "--upstream-cacert",
            origin_ca_file.to_str().unwrap(),
        ],
    );
    let ca = recorder.ca.to_str().unwrap().to_string();
    for path in ["/hello", "/items?json=1"] {
        let out = curl(&[
            "--proxy",
            &recorder.proxy,
            "--cacert",
            &ca,
            "-f",
            &format!("{url}{path}"),
        ]);
        assert_eq!(out.status.code(), Some(0));
    }
    // Without the CA, curl refuses the minted certificate: the tunnel really is TLS by belier.
    let refused = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "10",
            "--proxy",
            &recorder.proxy,
            &format!("{url}/hello"),
        ])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let (code, said) = recorder.interrupt();
    assert_eq!(code, 0, "{said}");
    assert!(
        said.contains(&format!("recorded 2 requests to {url}")),
        "{said}"
    );
    assert_eq!(server.counts().requests, 2);

    let doc = run_plan(&plan, &["-k", "--connect-to", &server.addr().to_string()]);
    assert_eq!(doc["summary"]["requests"], 2);
    server.wait_idle(Duration::from_secs(5));
    assert_eq!(server.counts().requests, 4);
}

/// A web page reaches a loopback proxy as a server, in origin form (`POST /path`), with its own
/// `Origin`, a `text/plain` body and any `Host` a rebinding name gives it: the proxy forwards
/// none of it anywhere, and records nothing.
#[test]
fn a_web_page_cannot_use_the_loopback_proxy() {
    let dir = temp_dir("hostile");
    let plan = dir.join("plan.yaml");
    let shop = Shop::start();
    let recorder = Recorder::start(&dir, &plan, &["--max-requests", "1"]);
    let proxy = recorder.proxy.trim_start_matches("http://").to_string();
    let shop_host = shop.url().trim_start_matches("http://").to_string();
    for host in [
        proxy.as_str(),
        shop_host.as_str(),
        "rebound.attacker.example",
    ] {
        let reply = hostile::send(
            &proxy,
            "POST",
            "/api/upload",
            &[
                ("Host", host),
                ("Origin", "http://attacker.example"),
                ("Content-Type", "text/plain"),
            ],
            "stolen",
        );
        assert_eq!(reply.status, 400, "Host {host}: {}", reply.body);
    }
    assert!(shop.seen().is_empty());
    let Recorder { mut child, .. } = recorder;
    let _ = child.kill();
    let _ = child.wait();
    let written = std::fs::read_to_string(&plan).unwrap_or_default();
    assert!(!written.contains("upload"), "{written}");
}

#[test]
fn off_the_loopback_the_proxy_wants_its_token() {
    let dir = temp_dir("token");
    let plan = dir.join("plan.yaml");
    let out = belier()
        .args(["record", "--listen", "0.0.0.0:0", "--out"])
        .arg(&plan)
        .env_remove("BELIER_RECORD_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stderr);
    assert!(
        said.contains("'--listen <ADDR>'") && said.contains("--token"),
        "{said}"
    );
    // A token anyone could guess is no better than none.
    let out = belier()
        .args([
            "record",
            "--listen",
            "0.0.0.0:0",
            "--token",
            "s3cret-42",
            "--out",
        ])
        .arg(&plan)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stderr);
    assert!(
        said.contains("'--token <TOKEN>'") && said.contains("at least 16 characters"),
        "{said}"
    );
    assert!(!said.contains("s3cret-42"), "{said}");
    if !have_curl("off_the_loopback_the_proxy_wants_its_token") {
        return;
    }
    let shop = Shop::start();
    let recorder = Recorder::start(
        &dir,
        &plan,
        &[
            "--listen",
            "0.0.0.0:0",
            "--token",
            "s3cret-42-long-enough",
            "--max-requests",
            "1",
        ],
    );
    let port = recorder.proxy.rsplit(':').next().unwrap().to_string();
    let proxy = format!("http://127.0.0.1:{port}");
    let status = |extra: &[&str]| {
        let out = Command::new("curl")
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--proxy",
                &proxy,
            ])
            .args(extra)
            .arg(shop.url())
            .output()
            .unwrap();
        text(&out.stdout)
    };
    assert_eq!(status(&[]), "407");
    assert_eq!(status(&["--proxy-user", "me:wrong"]), "407");
    assert!(shop.seen().is_empty());
    curl(&[
        "--proxy",
        &proxy,
        "--proxy-user",
        "me:s3cret-42-long-enough",
        "-f",
        // A body large enough that curl asks for 100 Continue first.
        "-H",
        "Expect: 100-continue",
        "--data-binary",
        &"x".repeat(2000),
        &format!("{}/api/upload", shop.url()),
    ]);
    let (code, said) = recorder.wait();
    assert_eq!(code, 0, "{said}");
    assert!(!said.contains("s3cret-42"), "{said}");
    assert_eq!(shop.seen().len(), 1);
    let seen = &shop.seen()[0];
    assert!(seen.header("proxy-authorization").is_none());
    assert!(seen.header("expect").is_none());
    assert_eq!((seen.method.as_str(), seen.body.len()), ("POST", 2000));
    let yaml = std::fs::read_to_string(&plan).unwrap();
    let lower = yaml.to_ascii_lowercase();
    assert!(
        !yaml.contains("s3cret")
            && !lower.contains("proxy-authorization")
            && !lower.contains("expect"),
        "{yaml}"
    );
    assert!(yaml.contains(&"x".repeat(2000)), "{yaml}");
}

/// A recorded plan keeps no credential (issue 28): a client's Basic `Authorization` and its
/// cookie go through the proxy to the server, but the plan reads the Authorization value from
/// `BELIER_AUTHORIZATION` (said in its comment and by the recorder), leaves the cookie to the
/// jar, and is its owner's only (0600). Replayed with the variable set, the server sees it.
#[test]
fn a_recorded_plan_keeps_no_credential_and_is_its_owners_only() {
    if !have_curl("a_recorded_plan_keeps_no_credential_and_is_its_owners_only") {
        return;
    }
    let dir = temp_dir("credentials");
    let plan = dir.join("plan.yaml");
    let shop = Shop::start();
    let recorder = Recorder::start(
        &dir,
        &plan,
        &["--listen", "127.0.0.1:0", "--max-requests", "1"],
    );
    curl(&[
        "--proxy",
        &recorder.proxy,
        "-u",
        "ann:s3cret-pw",
        "-b",
        "sid=s3cret-sid",
        &format!("{}/api/items/42", shop.url()),
    ]);
    let (code, said) = recorder.wait();
    assert_eq!(code, 0, "{said}");
    assert!(
        said.contains(
            "credentials were not recorded: the plan reads them from BELIER_AUTHORIZATION"
        ),
        "{said}"
    );
    let basic = "Basic YW5uOnMzY3JldC1wdw==";
    assert_eq!(shop.seen()[0].header("authorization"), Some(basic));
    let yaml = std::fs::read_to_string(&plan).unwrap();
    for secret in ["YW5uOnMzY3JldC1wdw", "s3cret"] {
        assert!(!yaml.contains(secret), "{yaml}");
    }
    assert!(
        yaml.contains("authorization: \"{{ env.BELIER_AUTHORIZATION }}\"")
            && yaml.contains("# Credentials were not recorded: set BELIER_AUTHORIZATION"),
        "{yaml}"
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&plan).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");

    // Without the variable the plan says what it needs; with it, the server gets it.
    let check = belier()
        .arg("check")
        .arg(&plan)
        .env_remove("BELIER_AUTHORIZATION")
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(2));
    assert!(
        text(&check.stderr).contains("environment variable `BELIER_AUTHORIZATION` is not set"),
        "{}",
        text(&check.stderr)
    );
    let out = belier()
        .arg("run")
        .arg(&plan)
        .args(["--output", "json"])
        .env("BELIER_AUTHORIZATION", basic)
        .output()
        .unwrap();
    assert_eq!(shop.seen().len(), 2, "{}", text(&out.stderr));
    assert_eq!(shop.seen()[1].header("authorization"), Some(basic));
    assert_eq!(shop.seen()[1].header("cookie"), None);
}
