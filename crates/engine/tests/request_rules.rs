//! Nothing that would split a request reaches the wire, whoever made the request: a raw TCP
//! listener on 127.0.0.1 keeps every byte the engine writes, and the tests feed the engine
//! every kind of request it takes (the run's request, a probe's, a scripted user's over
//! HTTP/1.1) with CR, LF or NUL in a header's value or name, the method or the path, and with
//! a `Content-Length` that is not the body's. The run's request is refused before a connection
//! opens; a user's fails unsent (counted `other_io`) while its good requests go as written.

mod common;

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use belier_engine::user::{Action, ErrorKind, Outgoing, Reply, User, Verdict};
use belier_engine::{Config, Load, Profile, StartError, StopWhen};
use common::scripted::{Script, Scripted};
use common::{config, run};

/// Bytes that must never be seen on the wire: what every bad request here tries to smuggle.
const INJECTED: &str = "X-Injected";

/// A listener that keeps every byte it reads and answers each request head with an empty
/// 200, keeping the connection.
struct RawServer {
    addr: SocketAddr,
    bytes: Arc<Mutex<Vec<u8>>>,
    connections: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl RawServer {
    fn start() -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (b, c, s) = (bytes.clone(), connections.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        c.fetch_add(1, Ordering::Relaxed);
                        let b = b.clone();
                        std::thread::spawn(move || serve(stream, &b));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        RawServer {
            addr,
            bytes,
            connections,
            stop,
            thread: Some(thread),
        }
    }

    fn received(&self) -> String {
        String::from_utf8_lossy(&self.bytes.lock().unwrap()).into_owned()
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads until the client closes, answering each complete head (bodies here carry a
/// Content-Length, which is read past).
fn serve(mut stream: TcpStream, all: &Mutex<Vec<u8>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut pending = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            return;
        }
        all.lock().unwrap().extend_from_slice(&buf[..n]);
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
            let body = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if pending.len() < end + 4 + body {
                break;
            }
            pending.drain(..end + 4 + body);
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        }
    }
}

/// A change that breaks a request.
type Breaker = fn(&mut Outgoing);

/// Ways to break a request, each trying to smuggle `X-Injected` onto the wire.
fn breakers() -> Vec<(&'static str, Breaker)> {
    vec![
        ("header value", |o| {
            o.headers.push(("X-A".into(), "a\r\nX-Injected: 1".into()))
        }),
        ("header value LF", |o| {
            o.headers.push(("X-A".into(), "a\nX-Injected: 1".into()))
        }),
        ("header value NUL", |o| {
            o.headers.push(("X-A".into(), "a\0X-Injected: 1".into()))
        }),
        ("header name", |o| {
            o.headers.push(("X-A: 1\r\nX-Injected".into(), "1".into()))
        }),
        ("method", |o| {
            o.method = "GET / HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET".into()
        }),
        ("path", |o| {
            o.path_and_query = "/ HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET /".into()
        }),
        ("content length", |o| {
            o.headers.push(("Content-Length".into(), "0".into()));
            o.body = b"GET /smuggled HTTP/1.1\r\nX-Injected: 1\r\n\r\n".to_vec();
        }),
    ]
}

fn good(step: usize) -> Outgoing {
    Outgoing {
        step,
        origin: 0,
        method: "GET".into(),
        path_and_query: "/ok".into(),
        headers: vec![("X-Good".into(), "yes".into())],
        body: vec![],
        keep_body: false,
        timeout: None,
        stream: None,
    }
}

#[test]
fn a_run_request_that_would_split_is_refused_before_any_connection() {
    let server = RawServer::start();
    for (what, breaker) in breakers() {
        let mut c = config(server.addr, "/ok");
        let mut o = good(0);
        breaker(&mut o);
        c.request.method = o.method;
        c.request.path_and_query = o.path_and_query;
        c.request.headers = o.headers;
        c.request.body = o.body;
        match belier_engine::start(&c) {
            Err(StartError::Request(e)) => assert!(!e.to_string().is_empty(), "{what}"),
            Err(e) => panic!("{what}: {e}"),
            Ok(_) => panic!("{what}: the run started"),
        }
        assert!(
            matches!(belier_engine::probe(&c), Err(StartError::Request(_))),
            "{what}: a probe refuses it too"
        );
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(server.connections.load(Ordering::Relaxed), 0);
    assert!(server.received().is_empty());
}

/// Each user sends a good request, then each broken one, then a good one again.
struct Breaking {
    steps: Vec<String>,
    made: AtomicU64,
    failures: Mutex<Vec<ErrorKind>>,
}

impl Script for Breaking {
    fn steps(&self) -> &[String] {
        &self.steps
    }

    fn made(&self) -> &AtomicU64 {
        &self.made
    }

    fn user(script: &Arc<Self>) -> Box<dyn User> {
        let mut plan = vec![good(0)];
        for (i, (_, breaker)) in breakers().into_iter().enumerate() {
            let mut o = good(i + 1);
            breaker(&mut o);
            plan.push(o);
        }
        plan.push(good(0));
        plan.reverse();
        Box::new(BreakingUser {
            script: Arc::clone(script),
            plan,
        })
    }
}

struct BreakingUser {
    script: Arc<Breaking>,
    plan: Vec<Outgoing>,
}

impl User for BreakingUser {
    fn next(&mut self) -> Action {
        match self.plan.pop() {
            Some(o) => Action::Send(o),
            None => Action::Stop,
        }
    }

    fn reply(&mut self, reply: &Reply<'_>, tally: &mut dyn FnMut(usize, bool)) -> Verdict {
        tally(0, reply.status == 200);
        Verdict { failed: false }
    }

    fn failed(&mut self, kind: ErrorKind) -> Verdict {
        self.script.failures.lock().unwrap().push(kind);
        Verdict { failed: true }
    }
}

#[test]
fn a_users_request_that_would_split_fails_unsent_and_the_good_ones_go() {
    let server = RawServer::start();
    let broken = breakers().len();
    let script = Arc::new(Breaking {
        steps: (0..=broken).map(|i| format!("step {i}")).collect(),
        made: AtomicU64::new(0),
        failures: Mutex::new(Vec::new()),
    });
    let mut c: Config = config(server.addr, "/");
    c.users = Some(Arc::new(Scripted::new(&script, &["status is 200"])));
    c.threads = 1;
    c.load = Load::Closed {
        connections: Profile::constant(1.0),
    };
    c.stop = StopWhen {
        requests: None,
        duration: Some(Duration::from_secs(10)),
        iterations: None,
    };
    let out = run(&c);
    assert_eq!(
        *script.failures.lock().unwrap(),
        vec![ErrorKind::OtherIo; broken]
    );
    assert_eq!(out.totals.errors_of(ErrorKind::OtherIo), broken as u64);
    assert!(
        out.totals
            .error_example(ErrorKind::OtherIo)
            .is_some_and(|m| m.starts_with("the request was not sent: ")),
        "{:?}",
        out.totals.error_example(ErrorKind::OtherIo)
    );
    assert_eq!(out.totals.succeeded(), 2);
    let wire = server.received();
    assert!(!wire.contains(INJECTED), "{wire}");
    assert_eq!(wire.matches("GET /ok HTTP/1.1\r\n").count(), 2, "{wire}");
    assert_eq!(
        wire.matches("\r\n\r\n").count(),
        2,
        "two heads, no more: {wire}"
    );
    // Every line on the wire is a request line or a well-formed header.
    for line in wire.split("\r\n").filter(|l| !l.is_empty()) {
        assert!(
            line == "GET /ok HTTP/1.1"
                || line.split_once(": ").is_some_and(|(n, v)| {
                    !n.is_empty()
                        && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                        && !v.contains(['\r', '\n', '\0'])
                }),
            "{line:?} in {wire}"
        );
    }
}
