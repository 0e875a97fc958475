//! Scripted virtual users against real local servers: exact counts per step, pauses and
//! pacing measured on the server side, open-loop iteration arrivals, ramps, kept bodies,
//! checks and step failures, refused connections, users that stop, and many pausing users.
//!
//! The users here are a small hand-written script (a list of requests and pauses), not a plan:
//! the engine's side of the interface is what is under test.

mod common;

use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use belier_engine::user::{Action, ErrorKind, Outgoing, Reply, User, Verdict};
use belier_engine::{Load, Profile, Stage, StopWhen};
use belier_stats::Metric;
use belier_testsupport::noise::beside;
use common::scripted::Scripted;
use common::{config, open, recording_server, run, server, Outcome};

/// Tests that measure timing on the server side run one at a time, so that the others do not
/// shift the arrival times they measure on a 2-core machine.
static TIMING: Mutex<()> = Mutex::new(());

fn timing() -> std::sync::MutexGuard<'static, ()> {
    TIMING.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Clone)]
enum Op {
    /// Request `path` under step `step`.
    Get {
        step: usize,
        path: &'static str,
    },
    Pause(Duration),
}

/// What a user saw of one reply.
#[derive(Clone, Debug)]
struct Seen {
    status: u16,
    body: Vec<u8>,
    truncated: bool,
    framing: Option<String>,
}

/// A script every user follows, and what the users saw.
struct Script {
    steps: Vec<String>,
    ops: Vec<Op>,
    keep_body: bool,
    /// Each user stops after this many iterations.
    stop_after: Option<u64>,
    made: AtomicU64,
    seen: Mutex<Vec<Seen>>,
    failures: Mutex<Vec<ErrorKind>>,
}

/// Checks every reply goes through: status 200, and a body of `x` bytes.
const CHECKS: [&str; 2] = ["status is 200", "body is all x"];

impl Script {
    fn new(ops: Vec<Op>) -> Script {
        let steps = ops
            .iter()
            .filter_map(|op| match op {
                Op::Get { step, .. } => Some(*step),
                Op::Pause(_) => None,
            })
            .max()
            .map_or(0, |m| m + 1);
        Script {
            steps: (0..steps).map(|i| format!("step {i}")).collect(),
            ops,
            keep_body: false,
            stop_after: None,
            made: AtomicU64::new(0),
            seen: Mutex::new(Vec::new()),
            failures: Mutex::new(Vec::new()),
        }
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
            iterations: 0,
        })
    }
}

struct ScriptUser {
    script: Arc<Script>,
    position: usize,
    iterations: u64,
}

impl User for ScriptUser {
    fn next(&mut self) -> Action {
        let Some(op) = self.script.ops.get(self.position) else {
            self.position = 0;
            self.iterations += 1;
            return match self.script.stop_after {
                Some(n) if self.iterations >= n => Action::Stop,
                _ => Action::EndIteration,
            };
        };
        self.position += 1;
        match op {
            Op::Get { step, path } => Action::Send(Outgoing {
                step: *step,
                origin: 0,
                method: "GET".into(),
                path_and_query: (*path).into(),
                headers: vec![("X-Step".into(), step.to_string())],
                body: vec![],
                keep_body: self.script.keep_body,
                timeout: None,
                stream: None,
            }),
            Op::Pause(d) => Action::Pause(*d),
        }
    }

    fn reply(&mut self, reply: &Reply<'_>, tally: &mut dyn FnMut(usize, bool)) -> Verdict {
        let ok = reply.status == 200;
        tally(0, ok);
        if self.script.keep_body {
            tally(
                1,
                !reply.body.is_empty() && reply.body.iter().all(|&b| b == b'x'),
            );
        }
        let framing = reply
            .header("transfer-encoding")
            .or_else(|| reply.header("content-length"))
            .map(|v| String::from_utf8_lossy(v).into_owned());
        self.script.seen.lock().unwrap().push(Seen {
            status: reply.status,
            body: reply.body.to_vec(),
            truncated: reply.body_truncated,
            framing,
        });
        Verdict { failed: !ok }
    }

    fn failed(&mut self, kind: ErrorKind) -> Verdict {
        self.script.failures.lock().unwrap().push(kind);
        Verdict { failed: true }
    }
}

fn with_users(mut c: belier_engine::Config, script: &Arc<Script>) -> belier_engine::Config {
    c.users = Some(Arc::new(Scripted::new(script, &CHECKS)));
    c
}

fn users(n: f64) -> Load {
    Load::Closed {
        connections: Profile::constant(n),
    }
}

fn bounded(iterations: Option<u64>, duration: Duration) -> StopWhen {
    StopWhen {
        requests: None,
        duration: Some(duration),
        iterations,
    }
}

fn step_requests(out: &Outcome) -> Vec<u64> {
    out.totals
        .steps()
        .iter()
        .map(|r| r.counts.requests)
        .collect()
}

#[test]
fn every_request_is_counted_under_its_step() {
    let s = server();
    let script = Arc::new(Script::new(vec![
        Op::Get {
            step: 0,
            path: "/a",
        },
        Op::Get {
            step: 1,
            path: "/b",
        },
        Op::Get {
            step: 1,
            path: "/c",
        },
    ]));
    let mut c = with_users(config(s.addr(), "/"), &script);
    c.load = users(4.0);
    c.stop = bounded(Some(50), Duration::from_secs(30));
    let out = run(&c);
    assert_eq!(out.totals.iterations(), 50);
    assert_eq!(step_requests(&out), [50, 100]);
    assert_eq!(out.totals.requests(), 150);
    assert_eq!(s.counts().requests, 150);
    assert_eq!(out.totals.succeeded(), 150);
    assert!(out.totals.steps().iter().all(|r| r.counts.failures == 0));
    assert_eq!(out.totals.steps()[1].values_us().len(), 100);
    // Checks: every reply passed check 0; check 1 is not evaluated without kept bodies.
    assert_eq!(out.totals.checks()[0].passed, 150);
    assert_eq!(out.totals.checks()[0].failed, 0);
    // Four users, each on one kept-alive connection.
    assert_eq!(script.made.load(Ordering::Relaxed), 4);
    assert_eq!(s.counts().connections, 4);
    assert_eq!(out.totals.connections_opened(), 4);
}

#[test]
fn a_pause_separates_two_steps_on_the_server() {
    let _serial = timing();
    let s = recording_server(100);
    let pause = Duration::from_millis(150);
    let script = Arc::new(Script::new(vec![
        Op::Get {
            step: 0,
            path: "/a",
        },
        Op::Pause(pause),
        Op::Get {
            step: 1,
            path: "/b",
        },
    ]));
    let mut c = with_users(config(s.addr(), "/"), &script);
    c.threads = 1;
    c.load = users(1.0);
    c.stop = bounded(Some(4), Duration::from_secs(30));
    let out = run(&c);
    assert_eq!(step_requests(&out), [4, 4]);
    let mut seen = s.recent_requests();
    seen.sort_by_key(|r| r.arrived);
    assert_eq!(seen.len(), 8);
    for pair in seen.chunks(2) {
        assert_eq!(
            (pair[0].target.as_str(), pair[1].target.as_str()),
            ("/a", "/b")
        );
        assert_eq!(pair[1].header("x-step"), Some("1"));
        let gap = pair[1].arrived - pair[0].arrived;
        assert!(
            gap >= pause && gap < pause + Duration::from_millis(100),
            "gap {gap:?}"
        );
    }
    // Back to back between iterations: no pause after /b.
    for w in seen.windows(2).skip(1).step_by(2) {
        assert!(w[1].arrived - w[0].arrived < Duration::from_millis(100));
    }
}

#[test]
fn pacing_starts_an_iteration_every_interval() {
    let _serial = timing();
    let s = recording_server(100);
    let script = Arc::new(Script::new(vec![Op::Get { step: 0, path: "/" }]));
    let mut c = with_users(config(s.addr(), "/"), &script);
    c.threads = 1;
    c.load = users(1.0);
    c.pacing = Some(Duration::from_millis(200));
    c.stop = bounded(Some(5), Duration::from_secs(30));
    let t0 = Instant::now();
    let (out, noise) = beside(|| run(&c));
    let late = noise.quantile(1.0);
    assert_eq!(out.totals.iterations(), 5);
    assert_eq!(s.counts().requests, 5);
    // Each arrival is two wake-ups (belier's to send, the server's to read), each late by up
    // to the latest measured beside the run (each of four gaps, so the latest, not the 99th
    // percentile: 172 ms once, at 1.3 ms for the 99th): a gap shrinks by that much when the
    // arrival before it came late, and grows by as much when its own did.
    let jitter = 2 * late;
    for gap in common::arrival_gaps(&s) {
        assert!(
            gap + jitter >= Duration::from_millis(195) && gap < Duration::from_millis(300) + jitter,
            "gap {gap:?}, the machine's wake-ups {late:?} late"
        );
    }
    // Four pacing intervals at least, from the first iteration to the last.
    assert!(t0.elapsed() >= Duration::from_millis(800));
}

#[test]
fn open_loop_starts_rate_times_duration_iterations() {
    let _serial = timing();
    let s = recording_server(100);
    let script = Arc::new(Script::new(vec![
        Op::Get {
            step: 0,
            path: "/a",
        },
        Op::Get {
            step: 1,
            path: "/b",
        },
    ]));
    let mut c = with_users(config(s.addr(), "/"), &script);
    c.load = open(Profile::constant(20.0), 50, None);
    c.stop = bounded(None, Duration::from_secs(1));
    let out = run(&c);
    assert_eq!(out.totals.scheduled(), 20);
    assert_eq!(out.totals.iterations(), 20);
    assert_eq!(out.totals.dropped(), 0);
    assert_eq!(step_requests(&out), [20, 20]);
    assert_eq!(s.counts().requests, 40);
    // A free user takes each arrival (none waits for a connection): belier's own lateness is
    // recorded for every request, and is the whole lag.
    let (lag, own) = (
        out.totals.histogram(Metric::Lag),
        out.totals.histogram(Metric::Dispatch),
    );
    assert_eq!((lag.len(), own.len()), (40, 40));
    assert_eq!(lag.max(), own.max());
    // Iterations of 1 ms arriving every 50 ms: one user per worker is enough, and idle users
    // are reused (20 iterations would otherwise make 20). An iteration that a stalled machine
    // holds past the next arrival makes one more: a little room for that.
    assert!(script.made.load(Ordering::Relaxed) <= 4);
    // The first requests of iterations (/a) arrive on the schedule.
    let mut starts: Vec<Instant> = s
        .recent_requests()
        .iter()
        .filter(|r| r.target == "/a")
        .map(|r| r.arrived)
        .collect();
    starts.sort();
    let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    let m = common::median(gaps);
    assert!(
        (m.as_secs_f64() - 0.050).abs() < 0.005,
        "median gap between iterations {m:?}"
    );
}

#[test]
fn open_loop_drops_iterations_when_no_user_is_free() {
    let s = server();
    // Each iteration pauses 300 ms; at 20/s one user per worker cannot keep up.
    let script = Arc::new(Script::new(vec![
        Op::Get { step: 0, path: "/" },
        Op::Pause(Duration::from_millis(300)),
    ]));
    let mut c = with_users(config(s.addr(), "/"), &script);
    c.threads = 1;
    c.load = open(Profile::constant(20.0), 1, None);
    c.stop = bounded(None, Duration::from_secs(1));
    let out = run(&c);
    assert_eq!(out.totals.scheduled(), 20);
    assert_eq!(script.made.load(Ordering::Relaxed), 1);
    // Iterations every 300 ms from 0: 4 started (0, 0.3, 0.6, 0.9 s), the rest dropped.
    let started = out.totals.requests();
    assert!((3..=4).contains(&started), "{started} started");
    assert_eq!(out.totals.dropped(), 20 - started);
    assert_eq!(s.counts().requests, started);
}

#[test]
fn users_ramp_up_with_the_profile() {
    let s = recording_server(10_000);
    let script = Arc::new(Script::new(vec![
        Op::Get { step: 0, path: "/" },
        Op::Pause(Duration::from_millis(20)),
    ]));
    let mut c = with_users(config(s.addr(), "/"), &script);
    c.load = Load::Closed {
        connections: Profile::staged(
            0.0,
            vec![Stage {
                duration: Duration::from_millis(800),
                target: 4.0,
            }],
        )
        .then_hold(),
    };
    c.stop = bounded(None, Duration::from_millis(1_200));
    let out = run(&c);
    assert_eq!(script.made.load(Ordering::Relaxed), 4);
    assert_eq!(s.counts().requests, out.totals.requests());
    // User j joins at j·200 ms: the first 400 ms see at most two users, the last 400 ms four.
    let mut arrived: Vec<Instant> = s.recent_requests().iter().map(|r| r.arrived).collect();
    arrived.sort();
    let first = arrived[0];
    let early = arrived
        .iter()
        .filter(|&&t| t - first < Duration::from_millis(350))
        .count();
    let late = arrived
        .iter()
        .filter(|&&t| t - first >= Duration::from_millis(800))
        .count();
    assert!(late > 2 * early, "early {early}, late {late}");
}

#[test]
fn the_user_sees_status_headers_and_the_dechunked_body() {
    let s = server();
    let mut script = Script::new(vec![
        Op::Get {
            step: 0,
            path: "/?size=3000&chunked",
        },
        Op::Get {
            step: 1,
            path: "/?size=10",
        },
        Op::Get {
            step: 2,
            path: "/?status=503&size=4",
        },
    ]);
    script.keep_body = true;
    script.stop_after = Some(1);
    let script = Arc::new(script);
    let mut c = with_users(config(s.addr(), "/"), &script);
    c.threads = 1;
    c.load = users(1.0);
    c.stop = bounded(None, Duration::from_secs(30));
    let out = run(&c);
    let seen = script.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].status, 200);
    assert_eq!(seen[0].body, vec![b'x'; 3000]);
    assert_eq!(seen[0].framing.as_deref(), Some("chunked"));
    assert!(!seen[0].truncated);
    assert_eq!(seen[1].body, vec![b'x'; 10]);
    assert_eq!(seen[1].framing.as_deref(), Some("10"));
    assert_eq!(seen[2].status, 503);
    assert_eq!(seen[2].body.len(), 4);
    // The 503 failed its step and its status check; the other checks passed.
    let steps = out.totals.steps();
    assert_eq!(
        steps.iter().map(|r| r.counts.failures).collect::<Vec<_>>(),
        [0, 0, 1]
    );
    assert_eq!(out.totals.checks()[0].passed, 2);
    assert_eq!(out.totals.checks()[0].failed, 1);
    assert_eq!(out.totals.checks()[1].passed, 3);
    assert_eq!(out.totals.requests(), 3);
    assert_eq!(
        out.totals.iterations(),
        0,
        "a stopped user ends no iteration"
    );
}

#[test]
fn a_body_beyond_the_limit_is_cut_and_counted() {
    let s = server();
    let max = belier_engine::user::MAX_KEPT_BODY_BYTES;
    let path: &'static str = Box::leak(format!("/?size={}", max + 100).into_boxed_str());
    let mut script = Script::new(vec![Op::Get { step: 0, path }]);
    script.keep_body = true;
    script.stop_after = Some(1);
    let script = Arc::new(script);
    let mut c = with_users(config(s.addr(), "/"), &script);
    c.threads = 1;
    c.load = users(1.0);
    c.stop = bounded(None, Duration::from_secs(30));
    let out = run(&c);
    let seen = script.seen.lock().unwrap().clone();
    assert_eq!(seen[0].body.len(), max);
    assert!(seen[0].truncated);
    assert!(out.totals.bytes_in() > (max + 100) as u64);
}

#[test]
fn a_refused_connection_fails_the_step() {
    // A port nobody listens on: bind one, then let it go.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let script = Arc::new(Script::new(vec![Op::Get { step: 0, path: "/" }]));
    let mut c = with_users(config(addr, "/"), &script);
    c.load = users(2.0);
    c.stop = bounded(Some(10), Duration::from_secs(30));
    let out = run(&c);
    assert_eq!(out.totals.requests(), 10);
    assert_eq!(out.totals.errors_of(ErrorKind::ConnectRefused), 10);
    assert_eq!(out.totals.steps()[0].counts.failures, 10);
    let failures = script.failures.lock().unwrap();
    assert_eq!(failures.len(), 10);
    assert!(failures.iter().all(|&k| k == ErrorKind::ConnectRefused));
    assert!(script.seen.lock().unwrap().is_empty());
}

#[test]
fn users_that_stop_end_the_run_early() {
    let s = server();
    let mut script = Script::new(vec![Op::Get { step: 0, path: "/" }]);
    script.stop_after = Some(3);
    let script = Arc::new(script);
    let mut c = with_users(config(s.addr(), "/"), &script);
    c.load = users(5.0);
    c.stop = bounded(None, Duration::from_secs(30));
    let out = run(&c);
    assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
    assert_eq!(s.counts().requests, 15);
    assert_eq!(out.totals.requests(), 15);
    // The third pass through the script stops instead of ending an iteration.
    assert_eq!(out.totals.iterations(), 10);
}

#[test]
fn the_request_budget_bounds_users_too() {
    let s = server();
    let script = Arc::new(Script::new(vec![
        Op::Get { step: 0, path: "/" },
        Op::Get { step: 1, path: "/" },
    ]));
    let mut c = with_users(config(s.addr(), "/"), &script);
    c.load = users(3.0);
    c.stop = StopWhen {
        requests: Some(31),
        duration: Some(Duration::from_secs(30)),
        iterations: None,
    };
    let out = run(&c);
    assert_eq!(out.totals.requests(), 31);
    assert_eq!(s.counts().requests, 31);
    assert_eq!(step_requests(&out).iter().sum::<u64>(), 31);
}

/// Resident memory of this process, from /proc (Linux only).
fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[test]
fn two_thousand_pausing_users_finish_and_stay_small() {
    let _serial = timing();
    let s = server();
    let script = Arc::new(Script::new(vec![
        Op::Get { step: 0, path: "/" },
        Op::Pause(Duration::from_secs(1)),
    ]));
    let mut c = with_users(config(s.addr(), "/"), &script);
    c.load = users(2_000.0);
    // Two iterations each (a request, then a second's pause), counted rather than timed:
    // bounded by 2.5 s instead, the third requests, due at about 2 s, fell either side of the
    // end once the machine was loaded (3,963 and 3,982 requests beside one CPU-bound process,
    // against a band from 4,000).
    c.stop = bounded(Some(4_000), Duration::from_secs(30));
    let before = rss_bytes();
    let out = run(&c);
    let sent = out.totals.requests();
    assert_eq!(sent, 4_000, "{sent} requests");
    assert_eq!(s.counts().requests, sent);
    assert_eq!(out.totals.steps()[0].counts.requests, sent);
    assert_eq!(script.made.load(Ordering::Relaxed), 2_000);
    assert_eq!(out.totals.connections_opened(), 2_000);
    assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
    if let (Some(before), Some(after)) = (before, rss_bytes()) {
        let grown = after.saturating_sub(before);
        assert!(grown < 200 << 20, "grew by {} MiB", grown >> 20);
    }
}

/// belier's test server over TLS, and a run of `script`'s users against it.
fn over_tls(script: &Arc<Script>) -> (belier_testserver::Server, belier_engine::Config) {
    use belier_engine::TlsOptions;
    use belier_testserver::{Config as ServerConfig, Server, TlsConfig};
    let (tls, ca) = TlsConfig::self_signed(&["localhost"]);
    let s = Server::start(ServerConfig {
        tls: Some(tls),
        ..ServerConfig::default()
    })
    .unwrap();
    let mut c = with_users(config(s.addr(), "/"), script);
    c.request.host = "localhost".into();
    c.connect_to = Some(s.addr());
    c.tls = Some(TlsOptions {
        ca_pem: Some(ca.into_bytes()),
        alpn: vec![b"http/1.1".to_vec()],
        ..TlsOptions::default()
    });
    (s, c)
}

#[test]
fn users_speak_tls_with_one_handshake_each() {
    let script = Arc::new(Script::new(vec![
        Op::Get {
            step: 0,
            path: "/a",
        },
        Op::Get {
            step: 1,
            path: "/b",
        },
    ]));
    let (s, mut c) = over_tls(&script);
    c.load = users(3.0);
    c.stop = bounded(Some(30), Duration::from_secs(30));
    let out = run(&c);
    assert_eq!(step_requests(&out), [30, 30]);
    assert_eq!(out.totals.succeeded(), 60);
    assert_eq!(s.counts().tls_handshakes, 3);
    assert!(out.totals.tls_session().is_some());
}

#[test]
fn a_connection_the_server_closes_is_reopened_and_keepalive_off_opens_one_per_request() {
    let s = server();
    let script = Arc::new(Script::new(vec![
        Op::Get {
            step: 0,
            path: "/?close",
        },
        Op::Get { step: 1, path: "/" },
    ]));
    let mut c = with_users(config(s.addr(), "/"), &script);
    c.load = users(2.0);
    c.stop = bounded(Some(10), Duration::from_secs(30));
    let out = run(&c);
    assert_eq!(out.totals.succeeded(), 20);
    assert!(out.totals.steps().iter().all(|r| r.counts.failures == 0));
    // The server closes after every /?close, so the / after it opens a connection, which the
    // next iteration's /?close reuses: one per iteration, plus each user's first.
    assert_eq!(s.counts().connections, 10 + 2);
    assert_eq!(out.totals.server_closes(), 10);

    let s = server();
    let mut c = with_users(config(s.addr(), "/"), &script);
    c.keepalive = false;
    c.load = users(2.0);
    c.stop = bounded(Some(10), Duration::from_secs(30));
    let out = run(&c);
    assert_eq!(out.totals.succeeded(), 20);
    assert_eq!(s.counts().connections, 20);
    assert_eq!(out.totals.connections_opened(), 20);
}

#[test]
fn requests_abandoned_at_the_end_count_under_their_steps() {
    let s = server();
    let script = Arc::new(Script::new(vec![
        Op::Get { step: 0, path: "/" },
        Op::Get {
            step: 1,
            path: "/?delay=5s",
        },
    ]));
    let mut c = with_users(config(s.addr(), "/"), &script);
    c.load = users(3.0);
    c.grace = Duration::from_millis(100);
    c.stop = bounded(None, Duration::from_millis(400));
    let out = run(&c);
    assert_eq!(out.totals.errors_of(ErrorKind::Cancelled), 3);
    assert_eq!(step_requests(&out), [3, 3]);
    assert_eq!(out.totals.steps()[1].counts.failures, 3);
    assert_eq!(
        step_requests(&out).iter().sum::<u64>(),
        out.totals.requests()
    );
    assert_eq!(s.counts().requests, out.totals.requests());
}

#[test]
fn users_behind_their_schedule_do_not_start_a_user_per_late_arrival() {
    // Scripted users over TLS at 5,000 iterations/s for 0.4 s, up to 1,000 users: each new
    // user opens a connection and pays a handshake (slow in a debug build). A worker that
    // fell behind used to start a user for nearly every late arrival; now the late
    // iterations wait for the next user to finish.
    let _serial = timing();
    let script = Arc::new(Script::new(vec![Op::Get { step: 0, path: "/" }]));
    let (s, mut c) = over_tls(&script);
    c.threads = 1;
    c.load = open(Profile::constant(5000.0), 1000, None);
    c.stop = bounded(None, Duration::from_millis(400));
    let out = run(&c);
    let made = script.made.load(Ordering::Relaxed);
    let t = &out.totals;
    assert_eq!(t.scheduled(), 2000);
    // Every iteration ran here; a machine too busy to run them all before the deadline
    // counts the rest as dropped (iterations still queued then never started).
    assert_eq!(t.iterations() + t.dropped(), 2000);
    assert_eq!(s.counts().requests, t.iterations());
    // One handshake per user, never more. A user made as the run reached its deadline may
    // be stopped while connecting, before the server completed its handshake (seen once in
    // CI under load: 12 users, 11 handshakes, every request served): a few at most, as users
    // are made one arrival at a time.
    let handshakes = s.counts().tls_handshakes;
    assert!(
        handshakes <= made && made - handshakes <= 5,
        "{handshakes} handshakes for {made} users"
    );
    // 13–18 users here, against the cap of 1,000 (and 900 iterations dropped) before: a
    // bound with room for a slower machine, far below the cap.
    assert!(made <= 100, "{made} users");
}
