//! The closed-loop engine against belier's test server over real sockets: every count is
//! cross-checked with what the server saw.

mod common;

use std::time::Duration;

use belier_engine::StopWhen;
use belier_stats::ErrorKind;
use common::{closed, config, requests, run, run_with, server};

#[test]
fn keepalive_counts_match_the_server() {
    let s = server();
    let out = run(&requests(1000, 10, config(s.addr(), "/")));
    let seen = s.counts();
    assert_eq!(seen.requests, 1000);
    assert_eq!(seen.connections, 10);
    assert_eq!(out.totals.requests(), 1000);
    assert_eq!(out.totals.succeeded(), 1000);
    assert_eq!(
        out.totals.status_counts().collect::<Vec<_>>(),
        [(200, 1000)]
    );
    assert_eq!(out.totals.connections_opened(), 10);
    assert_eq!(out.totals.latency_us().len(), 1000);
    // Series points add up to the totals.
    assert_eq!(
        out.series.points().iter().map(|p| p.requests).sum::<u64>(),
        1000
    );
    // Wire bytes: every request was written whole, every response read whole.
    let request_len = belier_engine::request::encode(&config(s.addr(), "/").request, true)
        .unwrap()
        .len() as u64;
    assert_eq!(out.totals.bytes_out(), 1000 * request_len);
    assert!(out.totals.bytes_in() > 1000 * 6);
}

#[test]
fn without_keepalive_every_request_opens_a_connection() {
    let s = server();
    let mut c = requests(300, 10, config(s.addr(), "/"));
    c.keepalive = false;
    let out = run(&c);
    assert_eq!(s.counts().requests, 300);
    assert_eq!(s.counts().connections, 300);
    assert_eq!(out.totals.connections_opened(), 300);
    assert_eq!(out.totals.succeeded(), 300);
    let seen = s.recent_requests();
    assert!(seen.iter().all(|r| r.header("connection") == Some("close")));
}

#[test]
fn fewer_requests_than_connections_opens_only_what_is_needed() {
    let s = server();
    let out = run(&requests(3, 50, config(s.addr(), "/")));
    assert_eq!(out.totals.requests(), 3);
    assert_eq!(s.counts().requests, 3);
    assert_eq!(s.counts().connections, 3);
}

#[test]
fn method_headers_and_body_reach_the_server() {
    let s = server();
    let mut c = requests(5, 1, config(s.addr(), "/submit?x=1"));
    c.request.method = "POST".into();
    c.request.headers = vec![("X-Test".into(), "yes".into())];
    c.request.body = b"payload".to_vec();
    let out = run(&c);
    assert_eq!(out.totals.succeeded(), 5);
    let seen = s.recent_requests();
    assert_eq!(seen.len(), 5);
    for r in seen {
        assert_eq!(r.method, "POST");
        assert_eq!(r.target, "/submit?x=1");
        assert_eq!(r.header("x-test"), Some("yes"));
        assert_eq!(r.body, b"payload");
    }
    assert_eq!(s.counts().body_bytes_received, 5 * 7);
}

#[test]
fn statuses_sizes_and_chunked_bodies_are_framed_right() {
    let s = server();
    for (path, status) in [
        ("/?status=503&size=10000", 503),
        ("/?chunked=1&size=70000", 200),
        ("/?status=204", 204),
        ("/?close=1", 200),
    ] {
        let before = s.counts().requests;
        let out = run(&requests(200, 4, config(s.addr(), path)));
        assert_eq!(out.totals.requests(), 200, "{path}");
        assert_eq!(out.totals.errors(), 0, "{path}: {:?}", out.totals);
        assert_eq!(
            out.totals.status_counts().collect::<Vec<_>>(),
            [(status, 200)],
            "{path}"
        );
        assert_eq!(s.counts().requests - before, 200, "{path}");
    }
    // A HEAD response announces a length but carries no body.
    let mut c = requests(50, 2, config(s.addr(), "/?size=5000"));
    c.request.method = "HEAD".into();
    let out = run(&c);
    assert_eq!(out.totals.succeeded(), 50);
}

#[test]
fn every_fault_lands_in_its_own_error_kind() {
    let s = server();
    for (fault, kind) in common::FAULTS {
        let before = s.counts().requests;
        let out = run(&requests(
            100,
            5,
            config(s.addr(), &format!("/?fault={fault}")),
        ));
        assert_eq!(out.totals.requests(), 100, "{fault}");
        assert_eq!(out.totals.errors_of(kind), 100, "{fault}: {:?}", out.totals);
        assert_eq!(out.totals.responses(), 0, "{fault}");
        assert!(out.totals.error_example(kind).is_some(), "{fault}");
        assert_eq!(s.counts().requests - before, 100, "{fault}");
    }
}

#[test]
fn a_stalled_server_gives_timeouts_and_the_run_ends_on_time() {
    let s = server();
    let mut c = config(s.addr(), "/?fault=stall");
    c.load = closed(4.0);
    c.timeout = Duration::from_millis(200);
    c.stop = StopWhen {
        requests: None,
        duration: Some(Duration::from_millis(900)),
        iterations: None,
    };
    let out = run(&c);
    let timeouts = out.totals.errors_of(ErrorKind::Timeout);
    // 4 connections × ⌊900 / 200⌋ = 16 full timeouts, and the rest were cancelled at the end.
    assert!((12..=20).contains(&timeouts), "{timeouts} timeouts");
    assert_eq!(
        out.totals.requests(),
        timeouts + out.totals.errors_of(ErrorKind::Cancelled)
    );
    assert_eq!(s.counts().requests, out.totals.requests());
    // Bounded by the deadline plus the grace period (not a performance assertion).
    assert!(out.elapsed < Duration::from_secs(4), "{:?}", out.elapsed);
}

#[test]
fn refused_connections_are_counted() {
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let out = run(&requests(50, 5, config(addr, "/")));
    assert_eq!(out.totals.requests(), 50);
    assert_eq!(out.totals.errors_of(ErrorKind::ConnectRefused), 50);
    assert_eq!(out.totals.connections_opened(), 0);
}

#[test]
fn a_server_dying_mid_run_loses_no_statistics() {
    let s = server();
    let addr = s.addr();
    let mut c = config(addr, "/?delay=5ms");
    c.load = closed(8.0);
    c.stop = StopWhen {
        requests: None,
        duration: Some(Duration::from_millis(1_500)),
        iterations: None,
    };
    let cell = std::sync::Mutex::new(Some(s));
    let kill = |_: &belier_engine::Run| {
        if let Some(s) = cell.lock().unwrap().take() {
            let seen = s.counts();
            s.stop();
            *SEEN.lock().unwrap() = Some(seen);
        }
    };
    static SEEN: std::sync::Mutex<Option<belier_testserver::Counts>> = std::sync::Mutex::new(None);
    let out = run_with(&c, Some((Duration::from_millis(500), &kill)));
    let seen_before_stop = SEEN.lock().unwrap().expect("server was stopped");
    assert!(out.totals.succeeded() > 0);
    assert!(out.totals.succeeded() <= seen_before_stop.requests);
    // After the server died every further attempt was refused and counted.
    assert!(
        out.totals.errors_of(ErrorKind::ConnectRefused) > 0,
        "{:?}",
        out.totals
    );
    assert_eq!(
        out.totals.requests(),
        out.totals.responses() + out.totals.errors()
    );
}

#[test]
fn stop_ends_the_run_and_keeps_everything() {
    let s = server();
    let mut c = config(s.addr(), "/?delay=2ms");
    c.stop = StopWhen {
        requests: None,
        duration: Some(Duration::from_secs(30)),
        iterations: None,
    };
    let out = run_with(
        &c,
        Some((Duration::from_millis(400), &|r: &belier_engine::Run| {
            r.stop()
        })),
    );
    assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
    assert!(out.totals.succeeded() > 0);
    s.wait_idle(Duration::from_secs(2));
    assert_eq!(s.counts().requests, out.totals.requests());
}

#[test]
fn intervals_tile_the_run() {
    let s = server();
    let mut c = config(s.addr(), "/");
    c.load = closed(4.0);
    c.interval = Duration::from_millis(100);
    c.stop = StopWhen {
        requests: None,
        duration: Some(Duration::from_millis(550)),
        iterations: None,
    };
    let out = run(&c);
    let points = out.series.points();
    assert!((5..=7).contains(&points.len()), "{} points", points.len());
    for w in points.windows(2) {
        assert_eq!(w[0].offset + w[0].width, w[1].offset);
    }
    assert_eq!(
        points.iter().map(|p| p.requests).sum::<u64>(),
        out.totals.requests()
    );
}

#[test]
fn kept_samples_cover_every_request_in_time_order() {
    let s = server();
    let mut c = requests(3_000, 6, config(s.addr(), "/?fault=reset&status=200"));
    c.request.path_and_query = "/".into();
    c.keep_samples = true;
    let run = belier_engine::start(&c).unwrap();
    let mut collector = belier_stats::Collector::new(run.workers(), c.interval);
    let mut samples = Vec::new();
    loop {
        match run.next_event(Duration::from_millis(20)) {
            belier_engine::Next::Event(belier_engine::Event::Samples {
                samples: batch, ..
            }) => samples.extend(batch),
            belier_engine::Next::Event(e) => e.collect_into(&mut collector),
            belier_engine::Next::Idle => {}
            belier_engine::Next::Ended => break,
        }
    }
    run.join();
    let (totals, _) = collector.finish();
    assert_eq!(samples.len() as u64, totals.requests());
    assert_eq!(samples.len(), 3_000);
    for x in &samples {
        assert!(x.intended <= x.dispatched && x.dispatched <= x.sent && x.sent <= x.done);
        assert!(x.first_byte.is_some_and(|f| f >= x.sent && f <= x.done));
    }
}

#[test]
fn connection_stages_ramp_users_up_and_down() {
    use belier_engine::{Load, Profile, Stage};
    // 0 → 4 connections over 1 s, hold 4 for 1 s, 4 → 0 over 1 s; 5 ms responses.
    let s = server();
    let mut c = config(s.addr(), "/?delay=5ms");
    c.stop = StopWhen {
        requests: None,
        duration: None,
        iterations: None,
    };
    c.interval = Duration::from_millis(250);
    c.load = Load::Closed {
        connections: Profile::staged(
            0.0,
            vec![
                Stage {
                    duration: Duration::from_secs(1),
                    target: 4.0,
                },
                Stage {
                    duration: Duration::from_secs(1),
                    target: 4.0,
                },
                Stage {
                    duration: Duration::from_secs(1),
                    target: 0.0,
                },
            ],
        ),
    };
    let out = run(&c);
    assert!(out.elapsed < Duration::from_secs(6), "{:?}", out.elapsed);
    // Each user opened one connection and closed it when it left.
    assert_eq!(out.totals.connections_opened(), 4);
    assert_eq!(s.counts().connections, 4);
    assert_eq!(s.counts().requests, out.totals.requests());
    let per: Vec<u64> = out.series.points().iter().map(|p| p.requests).collect();
    // Quarter-second intervals: 1 user, then 2, 3, 4 during the ramp; 4 while holding.
    let hold = per[4..8].iter().sum::<u64>() as f64 / 4.0;
    let first = per[0] as f64;
    // One user against four: a quarter of the hold, or more when a loaded machine, not the
    // server, caps what four users get done; without a ramp it would be the same.
    assert!(first < hold * 0.6, "first {first} vs hold {hold}: {per:?}");
    assert!(per[1] < per[3], "{per:?}");
    let last = *per.last().unwrap() as f64;
    assert!(last < hold * 0.5, "{per:?}");
}

#[test]
fn connection_metrics_count_peaks_and_server_closes() {
    // Ten connections kept busy: ten open at once, none ended by the server.
    let s = server();
    let mut c = requests(2_000, 10, config(s.addr(), "/?delay=1ms"));
    c.threads = 1;
    let out = run(&c);
    assert_eq!(out.totals.server_closes(), 0);
    let peak = out
        .series
        .points()
        .iter()
        .map(|p| p.connections_peak)
        .max()
        .unwrap();
    assert_eq!(peak, 10);
    assert_eq!(
        out.series
            .points()
            .iter()
            .map(|p| p.connections_opened)
            .sum::<u64>(),
        10
    );

    // The server closes after every response: each is counted, and a new connection follows.
    let out = run(&requests(300, 3, config(s.addr(), "/?close=1")));
    assert_eq!(out.totals.server_closes(), 300);
    assert_eq!(out.totals.connections_opened(), 300);

    // Without keep-alive belier closes by its own choice: nothing is the server's doing.
    let mut c = requests(100, 2, config(s.addr(), "/"));
    c.keepalive = false;
    assert_eq!(run(&c).totals.server_closes(), 0);
}
