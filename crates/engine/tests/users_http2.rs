//! Scripted virtual users over HTTP/2, against a server written here with h2's server API
//! (prior-knowledge h2c and TLS with ALPN h2) that counts connections and requests per path on
//! its own side: what the users see of each reply, exact per-step counts, how users share
//! connections (closed loop: `max_streams` per connection; open loop: a new connection only
//! once every stream slot of the existing ones has a user), and reset streams.

mod common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use belier_engine::user::{Action, ErrorKind, Outgoing, Reply, User, Verdict};
use belier_engine::{Config, Load, Profile, StopWhen};
use belier_testsupport::noise::beside;
use bytes::Bytes;
use common::scripted::Scripted;
use common::{config, open, run, Outcome};

/// What the server saw, on its own side.
#[derive(Default)]
struct Seen {
    /// Requests per path.
    paths: Mutex<HashMap<String, u64>>,
    /// Of the last request: its `:authority`, `user-agent` and `x-step`.
    last: Mutex<Option<(String, String, String)>>,
}

type H2Server = common::h2_server::H2Server<Seen>;

/// The body the server sends for `path`: long enough to span several DATA frames.
fn body_for(path: &str) -> Vec<u8> {
    format!("body of {path};").repeat(2_000).into_bytes()
}

impl H2Server {
    fn start() -> H2Server {
        H2Server::listen(serve)
    }

    /// A server over TLS with a fresh certificate for `localhost`; returns it and its CA (PEM).
    fn start_tls() -> (H2Server, String) {
        H2Server::listen_tls(serve)
    }

    fn requests_of(&self, path: &str) -> u64 {
        self.state
            .paths
            .lock()
            .unwrap()
            .get(path)
            .copied()
            .unwrap_or(0)
    }
}

/// Answers `/reset` with RST_STREAM(INTERNAL_ERROR), `/slow` after 50 ms, and anything else at
/// once with 200, two headers and [`body_for`] its path.
async fn serve<T>(io: T, seen: Arc<Seen>)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let Ok(mut conn) = h2::server::handshake(io).await else {
        return;
    };
    while let Some(Ok((request, mut respond))) = conn.accept().await {
        let path = request.uri().path().to_string();
        *seen.paths.lock().unwrap().entry(path.clone()).or_default() += 1;
        let header = |name: &str| {
            request
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap_or("").to_string())
                .unwrap_or_default()
        };
        let authority = request
            .uri()
            .authority()
            .map(|a| a.to_string())
            .unwrap_or_default();
        *seen.last.lock().unwrap() = Some((authority, header("user-agent"), header("x-step")));
        tokio::spawn(async move {
            if path == "/reset" {
                respond.send_reset(h2::Reason::INTERNAL_ERROR);
                return;
            }
            if path == "/slow" {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let response = http::Response::builder()
                .status(200)
                .header("content-type", "text/plain")
                .header("x-path", path.as_str())
                .body(())
                .unwrap();
            if let Ok(mut send) = respond.send_response(response, false) {
                let _ = send.send_data(Bytes::from(body_for(&path)), true);
            }
        });
    }
}

/// A step of the script: a request to `path`, or a pause.
#[derive(Clone, Copy)]
enum Op {
    Get(&'static str),
    Pause(Duration),
}

/// What a user saw of one reply.
#[derive(Debug)]
struct Reading {
    head_start: String,
    content_type: Option<String>,
}

/// The script every user follows (step `i` is the `i`-th request), and what users saw.
struct Script {
    steps: Vec<String>,
    ops: Vec<Op>,
    made: AtomicU64,
    readings: Mutex<Vec<Reading>>,
    failures: Mutex<Vec<ErrorKind>>,
}

const CHECKS: [&str; 3] = ["status is 200", "x-path is the path", "body is the path's"];

impl Script {
    fn new(ops: Vec<Op>) -> Arc<Script> {
        let steps = ops
            .iter()
            .filter_map(|op| match op {
                Op::Get(path) => Some(format!("GET {path}")),
                Op::Pause(_) => None,
            })
            .collect();
        Arc::new(Script {
            steps,
            ops,
            made: AtomicU64::new(0),
            readings: Mutex::new(Vec::new()),
            failures: Mutex::new(Vec::new()),
        })
    }
}

impl common::scripted::Script for Script {
    fn steps(&self) -> &[String] {
        &self.steps
    }

    fn made(&self) -> &AtomicU64 {
        &self.made
    }

    fn user(script: &Arc<Script>) -> Box<dyn User> {
        Box::new(ScriptUser {
            script: Arc::clone(script),
            position: 0,
            path: "",
        })
    }
}

struct ScriptUser {
    script: Arc<Script>,
    position: usize,
    /// The path of the request in flight.
    path: &'static str,
}

impl User for ScriptUser {
    fn next(&mut self) -> Action {
        let Some(&op) = self.script.ops.get(self.position) else {
            self.position = 0;
            return Action::EndIteration;
        };
        self.position += 1;
        match op {
            Op::Get(path) => {
                self.path = path;
                let step = self.script.ops[..self.position]
                    .iter()
                    .filter(|op| matches!(op, Op::Get(_)))
                    .count()
                    - 1;
                Action::Send(Outgoing {
                    step,
                    origin: 0,
                    method: "GET".into(),
                    path_and_query: path.into(),
                    // Connection-specific headers have no place in HTTP/2: they are left out
                    // rather than making the request malformed.
                    headers: vec![
                        ("X-Step".into(), step.to_string()),
                        ("Connection".into(), "keep-alive".into()),
                    ],
                    body: vec![],
                    keep_body: true,
                    timeout: None,
                    stream: None,
                })
            }
            Op::Pause(d) => Action::Pause(d),
        }
    }

    fn reply(&mut self, reply: &Reply<'_>, tally: &mut dyn FnMut(usize, bool)) -> Verdict {
        let status_ok = reply.status == 200;
        let path_ok = reply.header("x-path") == Some(self.path.as_bytes());
        let body_ok = reply.body == body_for(self.path) && !reply.body_truncated;
        tally(0, status_ok);
        tally(1, path_ok);
        tally(2, body_ok);
        let head = String::from_utf8_lossy(reply.head);
        self.script.readings.lock().unwrap().push(Reading {
            head_start: head.lines().next().unwrap_or("").to_string(),
            content_type: reply
                .header("Content-Type")
                .map(|v| String::from_utf8_lossy(v).into_owned()),
        });
        Verdict {
            failed: !(status_ok && path_ok && body_ok),
        }
    }

    fn failed(&mut self, kind: ErrorKind) -> Verdict {
        self.script.failures.lock().unwrap().push(kind);
        Verdict { failed: true }
    }
}

/// A closed loop of `vus` users over HTTP/2 with `max_streams` streams per connection, ending
/// after `iterations`.
fn h2_users(
    addr: SocketAddr,
    script: &Arc<Script>,
    vus: f64,
    max_streams: usize,
    iterations: u64,
) -> Config {
    let mut c = config(addr, "/");
    c.http2 = true;
    c.max_streams = max_streams;
    c.users = Some(Arc::new(Scripted::new(script, &CHECKS)));
    c.load = Load::Closed {
        connections: Profile::constant(vus),
    };
    c.stop = StopWhen {
        requests: None,
        duration: Some(Duration::from_secs(30)),
        iterations: Some(iterations),
    };
    c
}

fn step_counts(out: &Outcome) -> Vec<(u64, u64)> {
    out.totals
        .steps()
        .iter()
        .map(|r| (r.counts.requests, r.counts.failures))
        .collect()
}

#[test]
fn users_over_h2c_see_status_headers_and_body() {
    let s = H2Server::start();
    let script = Script::new(vec![Op::Get("/a"), Op::Get("/b")]);
    let out = run(&h2_users(s.addr, &script, 4.0, 10, 40));
    let t = &out.totals;
    assert_eq!(t.iterations(), 40);
    assert_eq!(step_counts(&out), [(40, 0), (40, 0)]);
    assert_eq!(t.requests(), 80);
    assert_eq!(t.succeeded(), 80, "{:?}", t.counters());
    assert_eq!((s.requests_of("/a"), s.requests_of("/b")), (40, 40));
    // Four users, streams of one connection.
    assert_eq!(script.made.load(Ordering::Relaxed), 4);
    assert_eq!(s.connections(), 1);
    assert_eq!(t.connections_opened(), 1);
    for (i, check) in t.checks().iter().enumerate() {
        assert_eq!((check.passed, check.failed), (80, 0), "check {i}");
    }
    let readings = script.readings.lock().unwrap();
    assert_eq!(readings.len(), 80);
    assert!(readings
        .iter()
        .all(|r| r.head_start == "HTTP/2 200" && r.content_type.as_deref() == Some("text/plain")));
    // Bytes in are frames on the wire: the bodies, and the frames that carry them and the
    // heads (at least a DATA and a HEADERS frame header each, 18 bytes).
    let bodies = 40 * (body_for("/a").len() + body_for("/b").len()) as u64;
    let bytes_in = t.bytes_in();
    assert!(
        bytes_in >= bodies + 80 * 18 && bytes_in < bodies + 80 * 100,
        "{bytes_in} for {bodies} of bodies"
    );
    let (authority, agent, step) = s.state.last.lock().unwrap().clone().unwrap();
    assert_eq!(authority, s.addr.to_string());
    assert!(agent.starts_with("belier/"), "{agent}");
    assert!(step == "0" || step == "1", "{step}");
}

#[test]
fn twenty_users_with_ten_streams_each_use_two_connections() {
    let s = H2Server::start();
    let script = Script::new(vec![Op::Get("/slow"), Op::Get("/a")]);
    let mut c = h2_users(s.addr, &script, 20.0, 10, 100);
    c.threads = 4;
    let out = run(&c);
    let t = &out.totals;
    assert_eq!(t.iterations(), 100);
    assert_eq!(step_counts(&out), [(100, 0), (100, 0)]);
    assert_eq!((s.requests_of("/slow"), s.requests_of("/a")), (100, 100));
    assert_eq!(script.made.load(Ordering::Relaxed), 20);
    assert_eq!(s.connections(), 2);
    assert_eq!(t.connections_opened(), 2);
}

#[test]
fn a_stream_reset_by_the_server_fails_the_step() {
    let s = H2Server::start();
    let script = Script::new(vec![Op::Get("/a"), Op::Get("/reset")]);
    let out = run(&h2_users(s.addr, &script, 2.0, 10, 10));
    let t = &out.totals;
    assert_eq!(t.iterations(), 10);
    assert_eq!(step_counts(&out), [(10, 0), (10, 10)]);
    assert_eq!(
        t.errors_of(ErrorKind::StreamReset),
        10,
        "{:?}",
        t.counters()
    );
    assert_eq!(t.succeeded(), 10);
    assert_eq!(s.requests_of("/reset"), 10);
    let failures = script.failures.lock().unwrap();
    assert_eq!(*failures, vec![ErrorKind::StreamReset; 10]);
    // A reset stream leaves the connection up for the next requests.
    assert_eq!(s.connections(), 1);
}

#[test]
fn users_over_tls_with_alpn_h2() {
    let (s, ca) = H2Server::start_tls();
    let script = Script::new(vec![Op::Get("/a"), Op::Get("/b")]);
    let mut c = h2_users(s.addr, &script, 4.0, 2, 20);
    c.request.host = "localhost".into();
    c.connect_to = Some(s.addr);
    c.tls = Some(belier_engine::TlsOptions {
        ca_pem: Some(ca.into_bytes()),
        ..belier_engine::TlsOptions::default()
    });
    let out = run(&c);
    let t = &out.totals;
    assert_eq!(step_counts(&out), [(20, 0), (20, 0)]);
    assert_eq!(t.succeeded(), 40, "{:?}", t.counters());
    assert_eq!((s.requests_of("/a"), s.requests_of("/b")), (20, 20));
    // Four users, two streams per connection.
    assert_eq!(s.connections(), 2);
    assert_eq!(t.connections_opened(), 2);
    assert_eq!(t.histogram(belier_stats::Metric::Tls).len(), 2);
    let session = t.tls_session().unwrap();
    assert!(session.contains("ALPN h2"), "{session}");
    let (authority, _, _) = s.state.last.lock().unwrap().clone().unwrap();
    assert_eq!(authority, format!("localhost:{}", s.addr.port()));
    assert!(t.checks().iter().all(|c| c.failed == 0 && c.passed == 40));
}

#[test]
fn open_loop_opens_a_connection_once_every_stream_has_a_user() {
    let s = H2Server::start();
    // Iterations of 300 ms arriving every 50 ms: the six users allowed are all needed at once;
    // two streams per connection make them three connections, each opened once the streams of
    // the previous ones had users.
    let script = Script::new(vec![Op::Get("/a"), Op::Pause(Duration::from_millis(300))]);
    let mut c = h2_users(s.addr, &script, 1.0, 2, 1);
    c.threads = 1;
    c.load = open(Profile::constant(20.0), 6, None);
    c.stop = StopWhen {
        requests: None,
        duration: Some(Duration::from_secs(1)),
        iterations: None,
    };
    let (out, noise) = beside(|| run(&c));
    let t = &out.totals;
    assert_eq!(t.scheduled(), 20);
    // Users over connections, two streams each, whatever the machine: a connection for each
    // two users, none more.
    let made = script.made.load(Ordering::Relaxed);
    assert!(made <= 6, "{made} users");
    assert_eq!(s.connections(), made.div_ceil(2));
    assert_eq!(t.connections_opened(), s.connections());
    // All six are needed when the arrivals keep to their 50 ms; a stall of more than half
    // that, which holds an arrival until the user of an earlier one came free (its pause
    // fired in the same wake-up), may leave one unneeded (5 users once at a load of 10).
    if noise.quantile(1.0) < Duration::from_millis(25) {
        assert_eq!(
            made,
            6,
            "the machine's wake-ups up to {:?} late",
            noise.quantile(1.0)
        );
    }
    let started = t.requests();
    assert_eq!(s.requests_of("/a"), started);
    assert_eq!(t.dropped(), 20 - started);
    assert!((6..=18).contains(&started), "{started} started");
}
