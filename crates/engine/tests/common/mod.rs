//! Test harness shared by the engine's integration tests: a counting server, configurations,
//! and a loop that runs the engine to the end the way the CLI does; the frame of the HTTP/2
//! servers written with h2 ([`h2_server`]) and the `Users` of hand-written scripts ([`scripted`]).
#![allow(dead_code)]

pub mod h2_server;
pub mod scripted;

use std::time::{Duration, Instant};

use belier_engine::{start, Config, Load, Next, Profile, RequestSpec, StopWhen};
use belier_stats::{Collector, ErrorKind, Recorder, Series};
use belier_testserver::{Config as ServerConfig, Server};

pub fn server() -> Server {
    Server::start(ServerConfig {
        record_requests: 16,
        ..ServerConfig::default()
    })
    .expect("test server starts")
}

pub fn config(server_addr: std::net::SocketAddr, path: &str) -> Config {
    let mut c = Config::new(RequestSpec {
        method: "GET".into(),
        host: server_addr.ip().to_string(),
        port: server_addr.port(),
        path_and_query: path.into(),
        headers: vec![],
        body: vec![],
    });
    c.threads = 2;
    c.timeout = Duration::from_secs(5);
    c
}

pub fn closed(connections: f64) -> Load {
    Load::Closed {
        connections: Profile::constant(connections),
    }
}

pub fn requests(n: u64, connections: usize, mut c: Config) -> Config {
    c.load = closed(connections as f64);
    c.stop = StopWhen {
        requests: Some(n),
        duration: Some(Duration::from_secs(30)),
        iterations: None,
    };
    c
}

pub struct Outcome {
    pub totals: Recorder,
    pub series: Series,
    pub elapsed: Duration,
}

/// Something to do to a running test once, after a delay.
pub type Action<'a> = (Duration, &'a dyn Fn(&belier_engine::Run));

/// Runs to the end, doing `action` once on the way.
pub fn run_with(config: &Config, action: Option<Action>) -> Outcome {
    let t0 = Instant::now();
    let run = start(config).expect("run starts");
    let mut collector = Collector::new(run.workers(), config.interval);
    let mut pending = action;
    loop {
        if let Some((at, f)) = pending {
            if t0.elapsed() >= at {
                f(&run);
                pending = None;
            }
        }
        match run.next_event(Duration::from_millis(20)) {
            Next::Event(event) => event.collect_into(&mut collector),
            Next::Idle => {}
            Next::Ended => break,
        }
    }
    assert_eq!(run.join(), 0, "no worker panicked");
    let (totals, series) = collector.finish();
    Outcome {
        totals,
        series,
        elapsed: t0.elapsed(),
    }
}

pub fn run(config: &Config) -> Outcome {
    run_with(config, None)
}

/// A test server that keeps the last `n` requests, with their arrival instants.
pub fn recording_server(n: usize) -> Server {
    Server::start(ServerConfig {
        record_requests: n,
        ..ServerConfig::default()
    })
    .expect("test server starts")
}

/// An open-loop load at a constant `rate`.
pub fn open(rate: Profile, max_connections: usize, max_in_flight: Option<u64>) -> Load {
    Load::Open {
        rate,
        spacing: belier_engine::Spacing::Even,
        max_connections,
        max_in_flight,
    }
}

/// Bounds a run by time only.
pub fn lasting(mut c: Config, d: Duration) -> Config {
    c.stop = StopWhen {
        requests: None,
        duration: Some(d),
        iterations: None,
    };
    c
}

/// Gaps between the arrivals the server recorded, in order.
pub fn arrival_gaps(server: &Server) -> Vec<Duration> {
    let mut arrived: Vec<Instant> = server.recent_requests().iter().map(|r| r.arrived).collect();
    arrived.sort();
    arrived.windows(2).map(|w| w[1] - w[0]).collect()
}

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The test server's faults (`?fault=`) and the error kind each must be counted under.
pub const FAULTS: [(&str, ErrorKind); 4] = [
    ("reset", ErrorKind::ConnectionReset),
    ("close-before-headers", ErrorKind::ClosedBeforeResponse),
    ("close-mid-body", ErrorKind::ClosedMidBody),
    ("malformed", ErrorKind::MalformedResponse),
];
