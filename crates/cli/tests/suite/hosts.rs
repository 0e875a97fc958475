//! Several hosts in one run, through the real binary, against two of belier's test servers on
//! 127.0.0.1 (each on its own port, each counting what it saw): a plan whose `url:` steps go
//! to a second host, and redirects (`--follow`, a plan's `follow:`) from one host to the other.
//! Every count is the servers' own: requests per path, connections, and the headers that
//! must (or must not) have crossed from one host to the other.

use std::time::Duration;

use belier_testserver::{Config, SeenRequest, Server, TlsConfig};
use belier_testsupport::ok;
use belier_testsupport::temp_dir;
use serde_json::Value;

belier_testsupport::binary!();

/// A test server on 127.0.0.1:0 that keeps its last 1,000 requests.
fn server() -> Server {
    Server::start(Config {
        threads: 2,
        record_requests: 1000,
        ..Config::default()
    })
    .expect("test server starts")
}

/// Runs belier with `args`; its JSON report, once it exited 0.
fn json(args: &[&std::ffi::OsStr]) -> Value {
    let out = ok(belier().args(args).args(["--output", "json"]));
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// Requests the server saw for `path` (query included), once it is idle.
fn count(s: &Server, target: &str) -> usize {
    s.wait_idle(Duration::from_secs(5));
    s.recent_requests()
        .iter()
        .filter(|r| r.target == target)
        .count()
}

/// The rows of a report's `steps` (a plan's) as `(name, requests)`.
fn rows(doc: &Value, key: &str) -> Vec<(String, u64)> {
    doc[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {doc}"))
        .iter()
        .map(|r| {
            let name = r["name"].as_str().or(r["url"].as_str()).unwrap();
            (name.to_string(), r["requests"].as_u64().unwrap())
        })
        .collect()
}

/// Every request `a` saw carried the Authorization header meant for it; none of `b`'s did,
/// and each named `b` as its Host.
fn credentials_stayed_on(a: &Server, b: &Server) {
    assert!(a
        .recent_requests()
        .iter()
        .all(|r| r.header("authorization") == Some("Bearer for-a")));
    let host = b.addr().to_string();
    assert!(b
        .recent_requests()
        .iter()
        .all(|r| r.header("authorization").is_none() && r.header("host") == Some(&host)));
}

/// `http://127.0.0.1:PORT`.
fn base(s: &Server) -> String {
    format!("http://{}", s.addr())
}

/// A plan on host A with a step on host B: each host gets its requests, a connection per
/// user, and its own cookies; `belier check` lists both hosts.
#[test]
fn a_plan_sends_url_steps_to_another_host_on_connections_of_their_own() {
    let (a, b) = (server(), server());
    let dir = temp_dir("plan");
    let plan = dir.join("two-hosts.yaml");
    std::fs::write(
        &plan,
        format!(
            r#"
target: {a}
headers: {{ X-VU: "{{{{ vu }}}}" }}
load: {{ vus: 2, duration: 20s }}
scenarios:
  - steps:
      - get: /a?token=1
      - name: on b
        url: {b}/b?token=1
        extract: {{ session: {{ cookie: session }} }}
      - post: /c
        body: "b said {{{{ session }}}}"
"#,
            a = base(&a),
            b = base(&b),
        ),
    )
    .unwrap();

    let out = belier().arg("check").arg(&plan).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let hosts = format!("hosts: {} (the target's) and {}", base(&a), base(&b));
    assert!(text.contains(&hosts), "{text}");

    let doc = json(&["run".as_ref(), plan.as_ref(), "-i".as_ref(), "20".as_ref()]);
    assert_eq!(
        rows(&doc, "steps"),
        [
            ("GET /a?token=1".to_string(), 20),
            ("on b".to_string(), 20),
            ("POST /c".to_string(), 20)
        ]
    );
    assert_eq!(doc["summary"]["errors"], 0, "{}", doc["summary"]);
    assert_eq!(count(&a, "/a?token=1"), 20);
    assert_eq!(count(&a, "/c"), 20);
    assert_eq!(a.counts().requests, 40);
    assert_eq!(count(&b, "/b?token=1"), 20);
    assert_eq!(b.counts().requests, 20);
    // Two users, each with one kept-alive connection to each host.
    assert_eq!((a.counts().connections, b.counts().connections), (2, 2));
    assert_eq!(
        doc["summary"]["connections_opened"], 4,
        "{}",
        doc["summary"]
    );

    // Each host saw its own Host header and only its own cookies: B's session went back to B
    // (and into the next step's body, read from B's jar), never to A.
    let (on_a, on_b) = (a.recent_requests(), b.recent_requests());
    let host = |s: &Server| s.addr().to_string();
    assert!(on_a.iter().all(|r| r.header("host") == Some(&host(&a))));
    assert!(on_b.iter().all(|r| r.header("host") == Some(&host(&b))));
    // On A, connection `c` (one user's) carries /a, /c, /a, /c...: the /a at index 2k sets
    // A's session `t<c>-<2k>`, which the next two requests send back; B's session, though
    // named the same, never comes to A, and the /c of iteration k carries in its body B's
    // session of that iteration, `t<b>-<k>` on the user's connection `b` to B.
    let mut b_connection_of = std::collections::HashMap::new();
    for c in 1..=2u64 {
        let on: Vec<&SeenRequest> = on_a.iter().filter(|r| r.connection == c).collect();
        assert_eq!(on.len(), 20, "connection {c}");
        for (i, r) in on.iter().enumerate() {
            let want = (i > 0).then(|| format!("session=t{c}-{}", 2 * ((i - 1) / 2)));
            assert_eq!(r.header("cookie"), want.as_deref(), "{c}/{i} {}", r.target);
            if i % 2 == 1 {
                let body = String::from_utf8_lossy(&r.body).into_owned();
                let token = body.strip_prefix("b said t").expect("the step's body");
                let (b, k) = token.split_once('-').unwrap();
                assert_eq!(k, (i / 2).to_string(), "{body}");
                let first = b_connection_of.entry(c).or_insert_with(|| b.to_string());
                assert_eq!(first, b, "{body}");
            }
        }
    }
    assert_ne!(b_connection_of[&1], b_connection_of[&2]);
    // From its second request on, each user's requests to B carry B's session cookie.
    let with_cookie = on_b.iter().filter(|r| r.header("cookie").is_some()).count();
    assert_eq!(with_cookie, 18);
}

/// `--follow`: a redirect from host A to host B (one of the targets file's hosts) goes on the
/// user's connection to B, timed in its own row, without the Authorization header meant for A.
#[test]
fn follow_crosses_to_another_host_of_the_run_without_credentials() {
    let (a, b) = (server(), server());
    let dir = temp_dir("follow");
    let file = dir.join("targets.txt");
    let to = b.addr();
    std::fs::write(
        &file,
        format!(
            "GET {}\nAuthorization: Bearer for-a\n\nGET {}\n",
            a.url(&format!("/go?redirect=1&to={to}")),
            b.url("/ping")
        ),
    )
    .unwrap();
    let doc = json(&[
        "--targets".as_ref(),
        file.as_ref(),
        "--follow".as_ref(),
        "2".as_ref(),
        "-n".as_ref(),
        "30".as_ref(),
        "-c".as_ref(),
        "1".as_ref(),
    ]);
    let go = a.url(&format!("/go?redirect=1&to={to}"));
    let ping = b.url("/ping");
    assert_eq!(
        rows(&doc, "targets"),
        [
            (go.clone(), 10),
            (format!("{go} → redirect 1"), 10),
            (format!("{go} → redirect 2"), 0),
            (ping.clone(), 10),
            (format!("{ping} → redirect 1"), 0),
            (format!("{ping} → redirect 2"), 0),
        ]
    );
    assert_eq!(doc["status_codes"]["302"], 10);
    assert_eq!(doc["status_codes"]["200"], 20);
    // A saw the first hop only, with its credentials; B the second hop, without them.
    assert_eq!(a.counts().requests, 10);
    let hop = format!("/go?to={to}");
    assert_eq!(count(&b, &hop), 10);
    assert_eq!(count(&b, "/ping"), 10);
    credentials_stayed_on(&a, &b);
    // One user: one connection to each host, the hops reusing B's.
    assert_eq!((a.counts().connections, b.counts().connections), (1, 1));
}

/// A plan's `follow:`: a step's redirect chain from host A to host B, each hop in its own row,
/// the step's checks and extractions on the last answer (B's cookie, from B's jar), the
/// Authorization header left on A; a redirect to host C, which the plan does not name, is
/// followed too (C resolved when first met, one connection), without the step's Authorization.
#[test]
fn a_plan_follows_redirects_to_its_other_host() {
    let (a, b, c) = (server(), server(), server());
    let dir = temp_dir("plan-follow");
    let plan = dir.join("follow.yaml");
    let to = b.addr();
    std::fs::write(
        &plan,
        format!(
            r#"
target: {a}
follow: 3
load: {{ vus: 1, duration: 20s }}
scenarios:
  - steps:
      - name: go
        get: /go?redirect=2&to={to}&token=1
        headers: {{ Authorization: "Bearer for-a" }}
        extract: {{ session: {{ cookie: session }} }}
        check: {{ status: 200 }}
      - name: back
        url: {b}/again
      - name: elsewhere
        get: /x?redirect=1&to={c}
        headers: {{ Authorization: "Bearer for-a" }}
"#,
            a = base(&a),
            b = base(&b),
            c = c.addr(),
        ),
    )
    .unwrap();
    let doc = json(&["run".as_ref(), plan.as_ref(), "-i".as_ref(), "10".as_ref()]);
    let hops = |name: &'static str, counts: [u64; 4]| {
        (0..4).map(move |k| match k {
            0 => (name.to_string(), counts[0]),
            k => (format!("{name} → redirect {k}"), counts[k]),
        })
    };
    let want: Vec<(String, u64)> = hops("go", [10, 10, 10, 0])
        .chain(hops("back", [10, 0, 0, 0]))
        .chain(hops("elsewhere", [10, 10, 0, 0]))
        .collect();
    assert_eq!(rows(&doc, "steps"), want);
    let checks: Vec<(String, u64, u64)> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let n = |k: &str| c[k].as_u64().unwrap();
            (
                c["name"].as_str().unwrap().to_string(),
                n("passed"),
                n("failed"),
            )
        })
        .collect();
    assert_eq!(
        checks,
        [
            ("go: status in [200]".to_string(), 10, 0),
            ("go: extract session".to_string(), 10, 0)
        ]
    );
    assert_eq!(doc["status_codes"]["302"], 30, "{}", doc["status_codes"]);
    assert_eq!(doc["status_codes"]["200"], 30, "{}", doc["status_codes"]);
    assert_eq!(doc["summary"]["errors"], 0, "{}", doc["errors"]);

    // A: the first hops of `go` and `elsewhere`, on one connection, with the credentials.
    let to_c = c.addr();
    assert_eq!(count(&a, &format!("/go?redirect=2&to={to}&token=1")), 10);
    assert_eq!(count(&a, &format!("/x?redirect=1&to={to_c}")), 10);
    assert_eq!(a.counts().requests, 20);
    credentials_stayed_on(&a, &c);
    // C, found during the run: `elsewhere`'s second hop, on one connection.
    assert_eq!(count(&c, &format!("/x?to={to_c}")), 10);
    assert_eq!((c.counts().requests, c.counts().connections), (10, 1));
    // B: two hops and `back` per iteration, on one connection, never the credentials; the
    // last hop (index 3k+1 on B's connection) set the session that `back` then sends.
    assert_eq!(count(&b, &format!("/go?redirect=1&to={to}&token=1")), 10);
    assert_eq!(count(&b, &format!("/go?to={to}&token=1")), 10);
    assert_eq!(count(&b, "/again"), 10);
    assert_eq!(b.counts().requests, 30);
    let on_b = b.recent_requests();
    assert!(on_b.iter().all(|r| r.header("authorization").is_none()));
    for (k, r) in on_b.iter().filter(|r| r.target == "/again").enumerate() {
        let want = format!("session=t1-{}", 3 * k + 1);
        assert_eq!(r.header("cookie"), Some(want.as_str()), "iteration {k}");
    }
    assert_eq!((a.counts().connections, b.counts().connections), (1, 1));
}

/// http and https in one run: a targets file and a plan on a plain server and a TLS one
/// (its certificate trusted through `--cacert` / `cacert:` and checked under its own
/// address); every request counted on its server, B's connections all TLS handshakes.
#[test]
fn one_run_speaks_http_to_one_host_and_https_to_another() {
    let a = server();
    let (tls, ca) = TlsConfig::self_signed(&["127.0.0.1"]);
    let b = Server::start(Config {
        threads: 2,
        record_requests: 1000,
        tls: Some(tls),
        ..Config::default()
    })
    .expect("TLS test server starts");
    assert!(b.url("/").starts_with("https://"));
    let dir = temp_dir("mixed");
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca).unwrap();

    let file = dir.join("targets.txt");
    std::fs::write(
        &file,
        format!("GET {}\n\nGET {}\n", a.url("/a"), b.url("/b")),
    )
    .unwrap();
    let doc = json(&[
        "--targets".as_ref(),
        file.as_ref(),
        "--cacert".as_ref(),
        ca_file.as_ref(),
        "-n".as_ref(),
        "40".as_ref(),
        "-c".as_ref(),
        "2".as_ref(),
    ]);
    assert_eq!(doc["summary"]["errors"], 0, "{}", doc["errors"]);
    assert_eq!(
        rows(&doc, "targets"),
        [(a.url("/a"), 20), (b.url("/b"), 20)]
    );
    assert_eq!((count(&a, "/a"), count(&b, "/b")), (20, 20));
    let (ca_, cb) = (a.counts(), b.counts());
    assert_eq!((ca_.connections, cb.connections), (2, 2));
    assert_eq!((ca_.tls_handshakes, cb.tls_handshakes), (0, 2));

    let plan = dir.join("mixed.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {}\ncacert: ca.pem\nload: {{ vus: 1, duration: 20s }}\nscenarios:\n  \
             - steps:\n      - get: /p\n      - url: {}\n",
            base(&a),
            b.url("/q")
        ),
    )
    .unwrap();
    let doc = json(&["run".as_ref(), plan.as_ref(), "-i".as_ref(), "15".as_ref()]);
    assert_eq!(doc["summary"]["errors"], 0, "{}", doc["errors"]);
    assert_eq!(
        rows(&doc, "steps"),
        [
            ("GET /p".to_string(), 15),
            (format!("GET {}", b.url("/q")), 15)
        ]
    );
    assert_eq!((count(&a, "/p"), count(&b, "/q")), (15, 15));
    let (ca_, cb) = (a.counts(), b.counts());
    assert_eq!((ca_.connections, cb.connections), (3, 3));
    assert_eq!((ca_.tls_handshakes, cb.tls_handshakes), (0, 3));
}

/// `belier URL --follow N`: a redirect to a host the run did not start with opens a connection
/// to it (resolved when first met) and goes on it, timed in its hop's row, without the
/// Authorization header meant for the first host; later iterations reuse that connection.
#[test]
fn a_flag_run_follows_a_redirect_to_a_host_it_did_not_know() {
    let (a, b) = (server(), server());
    let to = b.addr();
    let url = a.url(&format!("/go?redirect=1&to={to}"));
    let doc = json(&[
        url.as_ref(),
        "--follow".as_ref(),
        "3".as_ref(),
        "-H".as_ref(),
        "Authorization: Bearer for-a".as_ref(),
        "-n".as_ref(),
        "20".as_ref(),
        "-c".as_ref(),
        "1".as_ref(),
    ]);
    assert_eq!(
        rows(&doc, "targets"),
        [
            (url.clone(), 10),
            (format!("{url} → redirect 1"), 10),
            (format!("{url} → redirect 2"), 0),
            (format!("{url} → redirect 3"), 0),
        ]
    );
    assert_eq!(doc["summary"]["errors"], 0, "{}", doc["errors"]);
    assert_eq!(doc["status_codes"]["302"], 10);
    assert_eq!(doc["status_codes"]["200"], 10);
    assert_eq!(a.counts().requests, 10);
    assert_eq!(count(&b, &format!("/go?to={to}")), 10);
    assert_eq!(b.counts().requests, 10);
    credentials_stayed_on(&a, &b);
    assert_eq!((a.counts().connections, b.counts().connections), (1, 1));
    assert_eq!(
        doc["summary"]["connections_opened"], 2,
        "{}",
        doc["summary"]
    );
}

/// A server on 127.0.0.1:0 that answers every request (keep-alive) with `302` to `location`:
/// the test server's own redirects are to http only.
fn redirector(location: String) -> std::net::SocketAddr {
    use std::io::{BufRead as _, BufReader, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let location = location.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut conn = conn;
                let mut line = String::new();
                loop {
                    line.clear();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) if line == "\r\n" => {
                            let answer = format!(
                                "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n"
                            );
                            if conn.write_all(answer.as_bytes()).is_err() {
                                return;
                            }
                        }
                        Ok(_) => {}
                    }
                }
            });
        }
    });
    addr
}

/// A plan's `follow:` to an https host it does not name speaks TLS with the plan's `cacert:`:
/// with it every hop is answered; without it the certificate is refused and nothing reaches
/// the host.
#[test]
fn a_plan_follows_to_an_unnamed_https_host_with_its_tls_options() {
    let (tls, ca) = TlsConfig::self_signed(&["127.0.0.1"]);
    let c = Server::start(Config {
        threads: 1,
        record_requests: 100,
        tls: Some(tls),
        ..Config::default()
    })
    .expect("TLS test server starts");
    let from = redirector(c.url("/landed"));
    let dir = temp_dir("follow-https");
    std::fs::write(dir.join("ca.pem"), ca).unwrap();
    for (cacert, ok) in [("cacert: ca.pem\n", 5), ("", 0)] {
        let plan = dir.join("plan.yaml");
        std::fs::write(
            &plan,
            format!(
                "target: http://{from}\n{cacert}follow: 1\nload: {{ vus: 1, duration: 20s }}\n\
                 scenarios:\n  - steps:\n      - name: go\n        get: /start\n"
            ),
        )
        .unwrap();
        let out = belier()
            .arg("run")
            .arg(&plan)
            .args(["-i", "5", "--output", "json"])
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
        assert_eq!(
            rows(&doc, "steps"),
            [("go".to_string(), 5), ("go → redirect 1".to_string(), 5)],
            "{cacert}"
        );
        assert_eq!(
            doc["summary"]["errors"],
            5 - ok,
            "{cacert}{}",
            doc["errors"]
        );
        assert_eq!(doc["status_codes"]["200"].as_u64().unwrap_or(0), ok);
    }
    assert_eq!(count(&c, "/landed"), 5);
    assert_eq!(c.counts().requests, 5);
}
