//! `--kernel-stamps`: an open loop against belier's test server with a 1 ms injected delay,
//! at 500/s and 5,000/s, with the kernel's receive stamps on and forced off. Counts are exact
//! against the server; with stamps on every response is timed by them, with them off none;
//! and no response reads faster than the delay the server holds it for.
//!
//! #17's acceptance band, p50 within 1.00–1.08 ms, is not asserted: the p50s are printed
//! (`--nocapture`). Latency counts from each request's intended start, so the band leaves
//! 80 µs for belier's wake-up at the arrival, the server's wake-up for the request and its
//! wake-up when the delay ends; on the shared 2-core VM this was written on, a request with
//! no delay at all read a p50 of 177 µs at 500/s (load average 14).

#![allow(clippy::print_stderr)] // the p50s are printed, see above

#[path = "support/run.rs"]
mod run;

use std::time::Duration;

use belier_testserver::{Config, Server};
use serde_json::Value;

fn open_loop(server: &Server, rate: u64, stamps: &str) -> Value {
    let requests = rate * 2;
    let out = run::belier_ok(&[
        "--rate",
        &rate.to_string(),
        "-n",
        &requests.to_string(),
        "--kernel-stamps",
        stamps,
        "--output",
        "json",
        &server.url("/?delay=1ms"),
    ]);
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

#[test]
fn responses_are_timed_by_the_kernels_receive_stamps_unless_forced_off() {
    let server = Server::start(Config {
        threads: 2,
        ..Config::default()
    })
    .expect("test server starts");
    let mut seen = 0;
    for rate in [500, 5_000] {
        for stamps in ["on", "off"] {
            let doc = open_loop(&server, rate, stamps);
            let requests = rate * 2;
            let summary = &doc["summary"];
            assert_eq!(summary["requests"], requests, "{rate}/s, stamps {stamps}");
            assert_eq!(summary["succeeded"], requests, "{rate}/s, stamps {stamps}");
            let stamped = if stamps == "on" { requests } else { 0 };
            assert_eq!(
                summary["kernel_stamped"], stamped,
                "{rate}/s, stamps {stamps}"
            );
            let p50 = doc["latency_us"]["percentiles"]["p50"].as_u64().unwrap();
            eprintln!("{rate}/s, stamps {stamps}: p50 {p50} µs");
            assert!(p50 >= 1_000, "{rate}/s, stamps {stamps}: p50 {p50} µs");
            assert!(server.wait_idle(Duration::from_secs(5)));
            seen += requests;
            assert_eq!(
                server.counts().requests,
                seen,
                "the server saw every request"
            );
        }
    }
}
