//! `Config::start_at`: an engine started ahead of an agreed instant sends nothing before it,
//! in a closed loop and in an open one.

mod common;

use std::time::{Duration, Instant};

use belier_engine::Profile;
use common::{config, lasting, open, recording_server, requests, run};

#[test]
fn nothing_is_sent_before_the_agreed_instant() {
    for open_loop in [false, true] {
        let s = recording_server(100);
        let base = config(s.addr(), "/");
        let mut c = if open_loop {
            let mut c = lasting(base, Duration::from_millis(500));
            c.load = open(Profile::constant(100.0), 4, None);
            c
        } else {
            requests(20, 2, base)
        };
        let at = Instant::now() + Duration::from_millis(300);
        c.start_at = Some(at);
        let out = run(&c);
        let seen = s.recent_requests();
        assert!(!seen.is_empty() && out.totals.requests() > 0);
        let first = seen.iter().map(|r| r.arrived).min().unwrap();
        assert!(
            first >= at,
            "open loop {open_loop}: a request before the instant"
        );
        assert!(
            first - at < Duration::from_secs(1),
            "open loop {open_loop}: the first request came {:?} after the instant",
            first - at
        );
    }
}
