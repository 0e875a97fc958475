//! Held connections (`--hold`): connections kept open beside the load, counted apart from it,
//! against real servers that count them on their own side. nginx (its access log and
//! `stub_status`) for what is held and what the server ends; Apache with the prefork MPM, whose
//! workers a held connection occupies, for what holding costs the load.

use std::time::Duration;

use belier_testsupport::apache::Apache;
use belier_testsupport::nginx::{Nginx, Options};
use serde_json::Value;

belier_testsupport::binary!(BELIER);

/// The report's `held` object.
fn held(doc: &Value) -> &Value {
    doc.get("held")
        .unwrap_or_else(|| panic!("no held connections in the report: {doc}"))
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn held_idle_connections_stay_open_beside_the_load_and_the_server_counts_them() {
    let Some(nginx) = Nginx::start_with(Options::default()) else {
        return;
    };
    let url = nginx.http_url("/");
    let run = {
        let url = url.clone();
        std::thread::spawn(move || {
            BELIER.json(&["--rate", "50", "-z", "3s", "-t", "2", "--hold", "30", &url])
        })
    };
    // Mid-run, nginx has them all open: 30 held, the load's, and this request's own.
    std::thread::sleep(Duration::from_millis(1500));
    let active = nginx.stub_status().active;
    let doc = run.join().unwrap();
    assert!(active >= 32, "nginx had {active} connections open mid-run");
    let h = held(&doc);
    assert_eq!(count(&h["opened"]), 30, "{h}");
    assert_eq!(count(&h["closed_by_server"]), 0, "{h}");
    assert_eq!(h["failed"], serde_json::json!({}), "{h}");
    assert_eq!(count(&h["at_end"]), 30, "{h}");
    assert_eq!(count(&h["most"]), 30, "{h}");
    // The load's figures are the load's alone: 150 requests over its own connections.
    let summary = &doc["summary"];
    assert_eq!(summary["requests"], 150, "{summary}");
    assert_eq!(summary["succeeded"], 150, "{summary}");
    let load_connections = count(&summary["connections_opened"]);
    // nginx served each held connection's one request besides the load's, each on a
    // connection of its own.
    let lines = nginx.requests();
    assert_eq!(lines.len(), 150 + 30);
    assert!(lines.iter().all(|l| l.status == 200));
    assert_eq!(nginx.connections_seen() as u64, load_connections + 30);
}

#[test]
fn held_connections_the_server_ends_are_counted_and_opened_again() {
    // nginx ends an idle keep-alive connection after 300 ms: each held connection is ended
    // several times in the run, and opened again each time.
    let Some(nginx) = Nginx::start_with(Options {
        keepalive_timeout: "300ms".into(),
        ..Options::default()
    }) else {
        return;
    };
    let doc = BELIER.json(&[
        "--rate",
        "20",
        "-z",
        "2500ms",
        "-t",
        "1",
        "--hold",
        "10",
        &nginx.http_url("/"),
    ]);
    let h = held(&doc);
    let (opened, closed) = (count(&h["opened"]), count(&h["closed_by_server"]));
    assert!(closed >= 40, "{h}");
    assert_eq!(h["failed"], serde_json::json!({}), "{h}");
    // Each one opened was ended by nginx but those still held at the end.
    let at_end = count(&h["at_end"]);
    assert!(at_end <= 10 && opened - closed <= 10, "{h}");
    // nginx served one request per held connection opened, and the load's: the held
    // requests answered as the run ended, before belier counted them, are at most one each.
    let served = nginx.requests().len() as u64;
    let load = count(&doc["summary"]["requests"]);
    assert_eq!(load, 50, "{doc}");
    assert!(
        (load + opened..=load + opened + 10).contains(&served),
        "nginx served {served}, the load {load}, held connections opened {opened}"
    );
}

#[test]
fn slow_held_connections_trickle_until_the_server_times_them_out() {
    // nginx gives a request head 500 ms, then ends the connection and logs a 408: a held
    // connection trickling a byte every 100 ms never finishes its request.
    let Some(nginx) = Nginx::start_with(Options {
        client_header_timeout: "500ms".into(),
        ..Options::default()
    }) else {
        return;
    };
    let doc = BELIER.json(&[
        "--rate",
        "20",
        "-z",
        "3s",
        "-t",
        "1",
        "--hold",
        "10",
        "--hold-mode",
        "slow",
        "--hold-interval",
        "100ms",
        &nginx.http_url("/"),
    ]);
    let h = held(&doc);
    let (opened, closed) = (count(&h["opened"]), count(&h["closed_by_server"]));
    assert!(closed >= 30, "{h}");
    assert!(opened - closed <= 10, "{h}");
    assert_eq!(h["failed"], serde_json::json!({}), "{h}");
    // nginx logged a 408 for every one it ended; those it ended as the run did are at most
    // one a connection.
    let timed_out = nginx.requests().iter().filter(|l| l.status == 408).count() as u64;
    assert!(
        (closed..=closed + 10).contains(&timed_out),
        "nginx timed out {timed_out}, belier saw {closed} ended"
    );
    // The load went on beside them, untouched.
    assert_eq!(doc["summary"]["succeeded"], 60, "{}", doc["summary"]);
}

/// `belier URL --rate 100 --hold N` against `apache` for 8 s: its report.
fn beside_apache(apache: &Apache, held: &str) -> Value {
    BELIER.json(&[
        "--rate",
        "100",
        "-z",
        "8s",
        "--max-connections",
        "4",
        "--hold",
        held,
        &apache.url(),
    ])
}

#[test]
fn apache_prefork_holds_40_beside_the_load_and_not_80() {
    // 50 worker processes, each taken by a connection for as long as it stays open.
    let Some(apache) = Apache::start("hold", 50) else {
        return;
    };
    let doc = beside_apache(&apache, "40");
    let h = held(&doc);
    assert_eq!(count(&h["most"]), 40, "{h}");
    assert_eq!(h["failed"], serde_json::json!({}), "{h}");
    let summary = &doc["summary"];
    assert_eq!(summary["requests"], 800, "{summary}");
    assert_eq!(summary["succeeded"], 800, "{summary}");
    let p99_ms = doc["latency_us"]["percentiles"]["p99"].as_f64().unwrap() / 1000.0;
    assert!(p99_ms < 200.0, "p99 {p99_ms} ms beside 40 held");
    // Apache served every request of the load and one per held connection opened.
    let opened = count(&h["opened"]);
    assert_eq!(apache.requests_served() as u64, 800 + opened);

    // 80: the workers run out. Apache serves at most 50 connections at once, so held
    // connections wait unanswered, and the load's new connections queue behind them until
    // the keep-alive timeout frees a worker.
    let doc = beside_apache(&apache, "80");
    let h = held(&doc);
    assert!(count(&h["most"]) <= 50, "{h}");
    let p99_ms = doc["latency_us"]["percentiles"]["p99"].as_f64().unwrap() / 1000.0;
    let errors = count(&doc["summary"]["errors"]);
    assert!(
        p99_ms >= 200.0 || errors > 0,
        "beside 80 held connections the load met p99 {p99_ms} ms with {errors} errors"
    );
}

#[test]
fn spawned_workers_hold_their_shares_and_the_report_adds_them_up() {
    let Some(nginx) = Nginx::start_with(Options::default()) else {
        return;
    };
    let doc = BELIER.json(&[
        "--rate",
        "40",
        "-z",
        "2s",
        "--spawn",
        "3",
        "--hold",
        "20",
        &nginx.http_url("/"),
    ]);
    // Shares of 7, 7 and 6, each worker's figures merged into one report.
    let h = held(&doc);
    assert_eq!(count(&h["opened"]), 20, "{h}");
    assert_eq!(count(&h["most"]), 20, "{h}");
    assert_eq!(count(&h["closed_by_server"]), 0, "{h}");
    let summary = &doc["summary"];
    assert_eq!(summary["requests"], 80, "{summary}");
    let lines = nginx.requests();
    assert_eq!(lines.len(), 80 + 20);
    assert_eq!(
        nginx.connections_seen() as u64,
        count(&summary["connections_opened"]) + 20
    );
}
