//! The target with a known capacity: a fixed number of handlers, a bounded queue, `503` or a
//! close beyond it, and its counters at `/metrics`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use belier_testserver::{Config, Handlers, Server};

fn server(queue: Option<usize>, shed: bool) -> Server {
    Server::start(Config {
        threads: 2,
        handlers: Some(Handlers {
            workers: 2,
            service_time: Duration::from_millis(100),
            queue,
            shed,
        }),
        ..Config::default()
    })
    .unwrap()
}

/// Sends `GET path` on a new connection; returns the response (empty if the server closed
/// without one) and how long it took.
fn get(s: &Server, path: &str) -> (String, Duration) {
    let start = Instant::now();
    let mut socket = TcpStream::connect(s.addr()).unwrap();
    socket
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .unwrap();
    let mut response = String::new();
    let _ = socket.read_to_string(&mut response);
    (response, start.elapsed())
}

/// Four requests at once against two handlers.
fn four_at_once(s: &Server) -> Vec<(String, Duration)> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| get(s, "/"))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn beyond_the_queue_requests_are_shed_at_once() {
    let s = server(Some(0), true);
    let results = four_at_once(&s);
    let served: Vec<_> = results
        .iter()
        .filter(|(r, _)| r.starts_with("HTTP/1.1 200"))
        .collect();
    let shed: Vec<_> = results
        .iter()
        .filter(|(r, _)| r.starts_with("HTTP/1.1 503"))
        .collect();
    assert_eq!((served.len(), shed.len()), (2, 2), "{results:?}");
    assert!(served
        .iter()
        .all(|(_, took)| *took >= Duration::from_millis(100)));
    assert!(shed
        .iter()
        .all(|(_, took)| *took < Duration::from_millis(100)));
    let stats = s.pool_stats().unwrap();
    assert_eq!((stats.served, stats.rejected), (2, 2));
    assert!(stats.mean_service.unwrap() >= Duration::from_millis(100));
}

#[test]
fn an_unbounded_queue_makes_requests_wait_their_turn() {
    let s = server(None, false);
    let mut results = four_at_once(&s);
    results.sort_by_key(|(_, took)| *took);
    assert!(results.iter().all(|(r, _)| r.starts_with("HTTP/1.1 200")));
    // Two served at once, two after them.
    assert!(results[3].1 >= Duration::from_millis(200), "{results:?}");
    assert_eq!(s.pool_stats().unwrap().served, 4);
}

#[test]
fn without_shedding_a_full_queue_closes_the_connection() {
    let s = server(Some(0), false);
    let results = four_at_once(&s);
    let closed = results.iter().filter(|(r, _)| r.is_empty()).count();
    assert_eq!(closed, 2, "{results:?}");
    assert_eq!(s.counts().requests, 4);
}

#[test]
fn metrics_serve_the_counters_in_prometheus_text() {
    let s = server(Some(0), true);
    four_at_once(&s);
    let (response, _) = get(&s, "/metrics");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    for line in [
        "belier_target_requests_total 5",
        "belier_target_served_total 2",
        "belier_target_shed_total 2",
        "belier_target_in_flight 0",
        "belier_target_queued 0",
        "# TYPE process_cpu_seconds_total counter",
    ] {
        assert!(response.contains(line), "{line} missing from {response}");
    }
    // /metrics itself does not wait for a handler.
    assert_eq!(s.pool_stats().unwrap().served, 2);
}

#[test]
fn server_timing_gives_the_handlers_time_without_the_wait_for_one() {
    let s = server(None, false);
    let results: Vec<(f64, f64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| get(&s, "/?timing=1")))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                let (response, took) = h.join().unwrap();
                let dur = response
                    .lines()
                    .find_map(|l| l.strip_prefix("Server-Timing: app;dur="))
                    .unwrap_or_else(|| panic!("no Server-Timing in {response:?}"));
                (dur.parse().unwrap(), took.as_secs_f64() * 1e3)
            })
            .collect()
    });
    // Each handler held its request for the 100 ms service time at least.
    assert!(results.iter().all(|(dur, _)| *dur >= 100.0), "{results:?}");
    // Two of the four waited for a handler first: outside the handler's own time.
    let waited = results
        .iter()
        .filter(|(dur, took)| took - dur >= 50.0)
        .count();
    assert!(waited >= 2, "{results:?}");
}
