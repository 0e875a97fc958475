//! `belier capacity` through the real binary against targets of known capacity (belier's test
//! server with a fixed number of handlers, each holding a request for a service time, and a
//! real gunicorn whose app times itself): the capacity found against what the server served by
//! its own count, the behaviour past it, the recovery, the budget, the generator's own limit,
//! and bad input.

use std::io::Write as _;
use std::process::Command;
use std::time::Duration;

use belier_testserver::Server;
use belier_testsupport::capacity as capacity_support;
use belier_testsupport::gunicorn;
use belier_testsupport::prometheus as prometheus_support;
use capacity_support::{
    assert_goodput_within_sent, assert_recovery_is_its_step_s, best_served, capacity,
    capacity_timed, stderr, steps, target, validate,
};
use serde_json::Value;

belier_testsupport::binary!(BELIER);

/// A search of `s` (4 handlers: see the first test) for `p99<100ms` with `flags`, without
/// overload steps: its answer within 0.85–1.05 of the target's own capacity (4 over its mean
/// service time), limited by the SLO; the search's document.
fn found_at_its_own(s: &Server, flags: &[&str]) -> Value {
    let url = s.url("/");
    let mut args = flags.to_vec();
    args.extend([
        "--slo",
        "p99<100ms",
        "--start-rate",
        "100",
        "--warmup",
        "500ms",
        "--window",
        "2s",
        "--confirm-window",
        "2s",
        "--no-overload",
        &url,
    ]);
    let (out, doc) = capacity(BELIER, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    validate(&doc);
    let c = &doc["capacity"];
    let truth = 4.0 / s.pool_stats().unwrap().mean_service.unwrap().as_secs_f64();
    let found = c["max_rate"]
        .as_f64()
        .unwrap_or_else(|| panic!("no capacity: {c:#}"));
    assert!(
        (0.85..=1.05).contains(&(found / truth)),
        "found {found}/s against {truth:.1}/s\n{c:#}"
    );
    assert_eq!(c["limited_by"], "slo");
    doc
}

#[test]
fn the_capacity_found_is_the_target_s_own() {
    // 4 handlers of 20 ms: 200/s, a little less as the sleeps overshoot. Windows of 2 s: belier's
    // verdict on itself is its own lateness at p99, and of the 100-200 arrivals of a 1 s
    // window that is the one or two latest, one late wake-up of a loaded host (3 ms once).
    // Started at half the answer: a search started at 150/s (0.79 of it) failed its first step
    // on a host busy with builds (load 24: p99 148 ms), the server's own threads starved.
    let s = target(4, 20, None, false);
    let doc = found_at_its_own(&s, &[]);
    let c = &doc["capacity"];
    let found = c["max_rate"].as_f64().unwrap();
    assert!(c["failed_rate"].as_f64().unwrap() > found);
    let steps = c["steps"].as_array().unwrap();
    assert_eq!(steps[0]["kind"], "grow");
    assert_eq!(steps.last().unwrap()["kind"], "confirm");
    assert_eq!(steps.last().unwrap()["pass"], true);
    assert!(c["overload"].is_null());
}

#[test]
fn the_capacity_found_over_http3_is_the_target_s_own() {
    // The first test's target (4 handlers of 20 ms: about 200/s) over QUIC: the built-in
    // target serving HTTP/3 on its port's UDP side, every request through the same pool.
    let (tls, _) = belier_testserver::TlsConfig::self_signed(&["127.0.0.1"]);
    let s = capacity_support::ahead(|| {
        Server::start(belier_testserver::Config {
            threads: 2,
            tls: Some(tls),
            http3: true,
            record_requests: 64,
            handlers: Some(belier_testserver::Handlers {
                workers: 4,
                service_time: Duration::from_millis(20),
                queue: None,
                shed: false,
            }),
            ..belier_testserver::Config::default()
        })
    })
    .expect("target starts");
    found_at_its_own(&s, &["--http3", "-k"]);
    // Every request the search sent went over HTTP/3, by the target's own record.
    let seen = s.recent_requests();
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|r| r.version == "HTTP/3"), "{seen:?}");
}

/// A short search for the latency SLO `slo` (and the errors<1% in force beside it) with
/// overload steps, bounded by --max-time, against a target of 8 handlers of 20 ms (about
/// 380/s), bisected to 5 % (the bisection's arithmetic is the search's unit tests'; here two
/// fewer steps near the boundary, each a chance for a loaded host to fail it below capacity). (8 handlers of 20 ms: a quarter of the rate, and of the unoptimised belier's and
/// server's CPU, of 8 of 5 ms, the same shape; the machine's millisecond wake-up noise a
/// smaller share of a service time.)
fn short_search(url: &str, start_rate: &str, slo: &str) -> Value {
    let (out, doc) = capacity(
        BELIER,
        &[
            "--slo",
            slo,
            "--start-rate",
            start_rate,
            "--warmup",
            "500ms",
            "--window",
            "2s",
            "--confirm-window",
            "2s",
            "--overload-window",
            "1s",
            "--max-time",
            "90s",
            "--precision",
            "5%",
            url,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    validate(&doc);
    assert_eq!(
        doc["capacity"]["slos"],
        serde_json::json!([slo, "errors<1%"])
    );
    // (No bound on goodput against sent here: on a loaded host the built-in target, stalled
    // in a step's warm-up, serves that backlog in its window.)
    assert_recovery_is_its_step_s(&doc);
    doc
}

/// The short search for `slo` against `s`: its answer within 0.85–1.05 of the most the
/// target served in any second of it, by its own count.
fn found_at_what_it_serves(s: &Server, what: &str, slo: &str) -> Value {
    let (doc, best) = best_served(s, || short_search(&s.url("/"), "100", slo));
    let c = &doc["capacity"];
    let found = c["max_rate"]
        .as_f64()
        .unwrap_or_else(|| panic!("no capacity: {c:#}"));
    let ratio = found / best;
    let _ = writeln!(
        std::io::stderr(),
        "{what} target: served at best {best:.0}/s, found {found:.0}/s: {ratio:.3}"
    );
    assert!((0.85..=1.05).contains(&ratio), "{ratio:.3}\n{c:#}");
    doc
}

/// Found on main: against 8 handlers of 5 ms that answer 503 at once beyond them, `--slo
/// 'p99<30ms'` answered 57,760/s (fast 503s met the latency SLO) and called it a collapse.
///
/// The target holds up to 8 requests waiting (at most 20 ms more each: 40 ms in all, well
/// within the SLO's 100 ms, so errors<1% decides) before it sheds; its 503s leave at once,
/// faster than the SLO's latency even when a loaded host delays them by tens of ms (against
/// p99<60ms, a host loaded by builds and two stress-ng once called them slow). With no
/// room at all it is a loss system whose refusals below its saturation depend on how bunched
/// the arrivals are: on CI's busy host 0.75 % were refused at 800/s (two thirds of what it
/// served at best), so `errors<1%` rightly stopped at 720/s, and the test's measure of
/// truth (the best second served) was the wrong one for it.
#[test]
fn a_target_that_sheds_is_found_at_what_it_serves_and_classified_sheds() {
    let s = target(8, 20, Some(8), true);
    let doc = found_at_what_it_serves(&s, "shedding", "p99<100ms");
    let c = &doc["capacity"];
    assert_eq!(c["overload"]["behaviour"], "sheds", "{c:#}");
    let shed: u64 = steps(&doc)
        .iter()
        .filter(|s| s["kind"] == "overload")
        .map(|s| s["rejected"].as_u64().unwrap())
        .sum();
    assert!(shed > 0 && s.pool_stats().unwrap().rejected >= shed);
}

#[test]
fn a_target_that_queues_is_found_at_what_it_serves_and_classified_slows() {
    // p99<60ms, three service times: a queue 2 % past the target's capacity for a step's 3 s
    // waits longer (at 100 ms it would take 4 %).
    let s = target(8, 20, None, false);
    let doc = found_at_what_it_serves(&s, "queueing", "p99<60ms");
    let c = &doc["capacity"];
    assert_eq!(c["overload"]["behaviour"], "slows", "{c:#}");
    // What the overload left queued was waited out before the next step.
    assert!(
        steps(&doc)
            .iter()
            .filter(|s| s["kind"] == "overload")
            .all(|s| s["drained"] == true),
        "{c:#}"
    );
}

/// Found on main: against gunicorn a failed step left its listen backlog to the next, which
/// served it (goodput above what it sent) and failed; the answer came out at 0.88 of the
/// truth, a passing recovery step said `recovered: false`, and `--max-time 300s` ran 305 s.
#[test]
fn gunicorn_is_found_at_the_capacity_it_measures_itself() {
    let Some(g) = gunicorn::Gunicorn::start("gunicorn", 4, Duration::from_millis(40)) else {
        return;
    };
    let saved = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("capacity-gunicorn-{}.json", std::process::id()));
    let budget = 100.0;
    let search = capacity_timed(
        BELIER,
        &[
            "--slo",
            "p99<100ms",
            "--start-rate",
            "50",
            "--warmup",
            "500ms",
            "--window",
            "2s",
            "--confirm-window",
            "3s",
            "--overload-window",
            "2s",
            "--max-time",
            "100s",
            "--precision",
            "2%",
            "--save",
            saved.to_str().unwrap(),
            &g.url(),
        ],
    );
    // From belier's start, not from the wait for the searches before it.
    let took = search.took.as_secs_f64();
    let (out, doc) = (search.out, search.doc);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    validate(&doc);
    let c = &doc["capacity"];
    let served = g.served();
    let mean_s = served.iter().map(|(a, b)| b - a).sum::<f64>() / served.len() as f64;
    let measured = g.workers as f64 / mean_s;
    let ends: Vec<f64> = served.iter().map(|s| s.1).collect();
    let best = gunicorn::best_rate(&ends, 1.0);
    let found = c["max_rate"]
        .as_f64()
        .unwrap_or_else(|| panic!("no capacity: {c:#}"));
    let _ = writeln!(
        std::io::stderr(),
        "gunicorn: {} served, the app's capacity {measured:.0}/s (4 / its mean {:.2} ms), at best \
         {best:.0}/s in a second; found {found:.0}/s: {:.3} of its capacity, {:.3} of its best; \
         {took:.0} s",
        served.len(),
        mean_s * 1000.0,
        found / measured,
        found / best
    );
    // The app's capacity is what it served at its best by its own count. Four workers over
    // the mean time in the handler (`measured`) leaves out gunicorn's own work per request
    // (accept, parse, answer, close: about 1 ms), so the server never serves quite that much.
    // The handler waits 40 ms, not 10: at 10 ms gunicorn's ~1 ms of Python per request on
    // the two cores belier also uses made its latency near saturation wander (p99 of 97 ms
    // and 189 ms at the same 337/s in one search), so the p99<100ms boundary sat 0.82-0.97
    // below its best second from run to run (CI: 0.893, 0.819) and the best second was not the
    // truth of that SLO. At 40 ms the server is a wait, as the built-in targets are, and its
    // best second is its capacity. Searched to 2 %, as the built-in targets are.
    assert!(
        (0.90..=1.05).contains(&(found / best)),
        "{found} against {best:.0}\n{c:#}"
    );
    assert_goodput_within_sent(&doc);
    assert_recovery_is_its_step_s(&doc);
    // --max-time bounds the search, its waits included; the process adds its start and report.
    assert!(c["elapsed_s"].as_f64().unwrap() <= budget, "{c:#}");
    assert!(took <= budget + 5.0, "{took} s");
    // The text shows the cancelled requests apart from the failed.
    let text = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(["report", "--type", "text", saved.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let head = text
        .lines()
        .find(|l| l.contains("goodput/s"))
        .expect("a table");
    assert!(head.contains("failed cancelled"), "{text}");
    for (i, step) in steps(&doc).iter().enumerate() {
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{} ", i + 1)))
            .unwrap();
        let cancelled = step["cancelled"].as_u64().unwrap();
        assert!(
            row.contains(&format!("% {cancelled:>9}  ")),
            "{row}\n{text}"
        );
    }
}

/// The budget holds with short steps whose waits and grace would have run over it: 9 s hold
/// two steps of 3 s and their grace, and a third would run past it. (The budget's arithmetic, each step's
/// overhead and drain wait included, is the search's unit tests' on a simulated clock; here
/// its wiring. The SLO is far from the target's latency so that no step fails on a loaded
/// host's stall: a failed first step ended the search before its budget, as did one at
/// 400-800/s against 8 handlers of 5 ms on belier's own lag.)
#[test]
fn the_time_allowed_bounds_the_search() {
    let s = target(8, 20, None, false);
    // Timed from belier's start: the searches of other tests run first, one at a time.
    let search = capacity_timed(
        BELIER,
        &[
            "--slo",
            "p99<500ms",
            "--start-rate",
            "50",
            "--warmup",
            "1s",
            "--window",
            "2s",
            "--max-time",
            "9s",
            &s.url("/"),
        ],
    );
    let (out, doc) = (&search.out, &search.doc);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    validate(doc);
    let c = &doc["capacity"];
    assert_eq!(c["limited_by"], "time", "{c:#}");
    assert!(c["elapsed_s"].as_f64().unwrap() <= 12.0, "{c:#}");
    // The process adds its start and its report (3 s), each as late as the machine wakes it.
    let took = search.took.as_secs_f64();
    let late = search.wake_late.as_secs_f64();
    assert!(
        took <= 12.0 + 3.0 + 2.0 * late,
        "{took} s ({late} s late wake-ups)"
    );
}

#[test]
fn a_target_that_closes_on_the_excess_collapses() {
    // 2 handlers of 20 ms, 2 requests waiting at most, and the excess is not answered: the
    // connection closes. Far past capacity most requests break. (With nobody waiting, a loss
    // system refuses below its capacity when arrivals bunch: on a busy host belier's late
    // wake-ups made 19 % of a start at 40/s refused, so no rate met errors<5%; with 4
    // handlers started at 20/s, 11 % at 80/s, and its overload steps, 3 and 4 times that
    // answer, came out too close to its capacity for most requests to break.)
    let s = target(2, 20, Some(2), false);
    let (out, doc) = capacity(
        BELIER,
        &[
            "--slo",
            "errors<5%",
            "--start-rate",
            "40",
            "--precision",
            "50%",
            "--warmup",
            "500ms",
            "--window",
            "1s",
            "--confirm-window",
            "1s",
            "--overload",
            "3,4",
            "--overload-window",
            "1s",
            &s.url("/"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    validate(&doc);
    let c = &doc["capacity"];
    assert_eq!(c["overload"]["behaviour"], "collapses", "{c:#}");
    let broken: u64 = c["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "overload")
        .map(|s| s["errors"]["closed_before_response"].as_u64().unwrap_or(0))
        .sum();
    assert!(broken > 0, "{c:#}");
}

#[test]
fn a_rate_the_generator_cannot_drive_claims_no_capacity() {
    // Two requests in flight at most: at 2,000/s most arrivals are dropped by belier itself.
    let s = target(64, 1, None, false);
    let (out, doc) = capacity(
        BELIER,
        &[
            "--start-rate",
            "2000",
            "--max-in-flight",
            "2",
            "--warmup",
            "0s",
            "--window",
            "1s",
            &s.url("/"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    validate(&doc);
    let c = &doc["capacity"];
    assert_eq!(c["limited_by"], "generator", "{c:#}");
    assert!(c["max_rate"].is_null());
    // The voided step ran again at the same rate, voided again, and both are in the report.
    let steps = c["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{c:#}");
    for s in steps {
        assert_eq!(s["target_rate"], 2000.0, "{c:#}");
        assert!(s["pass"].is_null(), "{c:#}");
        assert!(s["why"].as_str().unwrap().contains("dropped"), "{c:#}");
    }
    assert!(
        c["generator"].as_str().unwrap().contains("dropped"),
        "{c:#}"
    );
}

#[test]
fn a_server_that_holds_every_connection_fails_the_step_itself() {
    // 2 handlers of 20 ms (100/s) and 4 times that offered on at most 20 connections: every
    // connection waits in the server's queue, arrivals wait at belier for one, and those
    // still waiting at the end were never sent. The requests that did go out waited for the
    // server (p50 ~200 ms): the failure is the server's, not the generator's.
    let s = target(2, 20, None, false);
    let (out, doc) = capacity(
        BELIER,
        &[
            "--slo",
            "p99<100ms",
            "--start-rate",
            "400",
            "--max-connections",
            "20",
            "--warmup",
            "0s",
            "--window",
            "2s",
            &s.url("/"),
        ],
    );
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    validate(&doc);
    let c = &doc["capacity"];
    assert_eq!(c["limited_by"], "slo", "{c:#}");
    assert!(c["generator"].is_null(), "{c:#}");
    assert_eq!(c["steps"][0]["pass"], false, "{c:#}");
}

#[test]
fn no_rate_meeting_the_slo_exits_5_and_the_saved_search_reports_again() {
    // Every request takes 50 ms: p99<10ms never holds.
    let s = target(8, 50, None, false);
    let saved = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("capacity-{}.json", std::process::id()));
    let out = capacity_support::prioritized(BELIER)
        .args([
            "capacity",
            "--slo",
            "p99<10ms",
            "--warmup",
            "0s",
            "--window",
            "1s",
            "--save",
            saved.to_str().unwrap(),
            &s.url("/"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("No rate met p99<10ms, errors<1%, not even the start rate"),
        "{text}"
    );
    assert!(text.contains("grow"), "{text}");

    // The saved search reports again, as text and as JSON that follows the schema.
    let report = |kind: &str| {
        Command::new(env!("CARGO_BIN_EXE_belier"))
            .args(["report", "--type", kind, saved.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let again = report("text");
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(String::from_utf8_lossy(&again.stdout), text);
    let json = report("json");
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
    validate(&doc);
    assert_eq!(doc["capacity"]["steps"].as_array().unwrap().len(), 1);
    // And as the HTML page with its charts.
    let html = report("html");
    assert_eq!(html.status.code(), Some(0), "{}", stderr(&html));
    let page = String::from_utf8_lossy(&html.stdout);
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    assert!(page.contains("No rate met p99&lt;10ms"), "{page}");
    assert_eq!(report("csv").status.code(), Some(2));
    let stats = report("csv-stats");
    assert_eq!(stats.status.code(), Some(2));
    assert!(
        stderr(&stats).contains("invalid value 'csv-stats' for '--type <TYPE>'"),
        "{}",
        stderr(&stats)
    );
}

/// An SLO on a server stream's time to first message: the target waits 40 ms before each
/// stream's first reply, so `ttft p99<10ms` holds at no rate, and the search says so by the
/// SLO's name (the step read the figure from its window's messages).
#[test]
fn a_message_time_slo_is_judged_on_each_step_s_streams() {
    let s = Server::start(belier_testserver::Config {
        http2: true,
        ..belier_testserver::Config::default()
    })
    .expect("the target starts");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let proto = dir.join(format!("capacity-target-{}.proto", std::process::id()));
    let printed = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(["target", "--print-proto"])
        .output()
        .unwrap();
    std::fs::write(&proto, &printed.stdout).unwrap();
    let out = capacity_support::prioritized(BELIER)
        .args([
            "capacity",
            "--slo",
            "ttft p99<10ms",
            "--start-rate",
            "20",
            "--warmup",
            "0s",
            "--window",
            "1s",
            "--call",
            "belier.target.Target/ServerStream",
            "--plaintext",
            "--proto",
            proto.to_str().unwrap(),
            "-d",
            r#"{"count": 3, "delay_ms": 40, "gap_ms": 5}"#,
            &s.addr().to_string(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("No rate met ttft p99<10ms, errors<1%"),
        "{text}"
    );
    assert!(text.contains("fail: ttft p99 = "), "{text}");
}

#[test]
fn bad_slos_and_bounds_exit_2_naming_them() {
    for (args, words) in [
        (&["--slo", "p99<50"][..], "p99<50"),
        (&["--slo", "rate>5/s"][..], "not an SLO"),
        (&["--slo", "ttft<1s"][..], "needs a statistic"),
        (
            &["--start-rate", "100", "--max-rate", "50"][..],
            "--max-rate",
        ),
        (&["--growth", "1"][..], "--growth"),
        (&["--warmup", "250ms"][..], "--warmup"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_belier"))
            .arg("capacity")
            .args(args)
            .arg("http://127.0.0.1:9/")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(words), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_prometheus_slo_on_the_server_s_own_metrics_bounds_the_capacity() {
    // 8 handlers of 20 ms serve about 380/s; the SLO on the target's own served rate, as
    // Prometheus scrapes it from /metrics every second, holds only below 150/s. The steps
    // (90, 180, 135, 157.5/s: to 20 %) stay off 150/s itself, where the SLO's verdict on
    // a served 149.7/s is a coin toss.
    let s = target(8, 20, None, false);
    let Some(prometheus) = prometheus_support::Prometheus::start(&[s.addr()]) else {
        return;
    };
    let (out, doc) = capacity(
        BELIER,
        &[
            "--prometheus",
            &prometheus.url(),
            "--slo",
            "errors<1%",
            "--slo",
            "prom:rate(belier_target_served_total[3s]) < 150",
            "--start-rate",
            "90",
            "--precision",
            "20%",
            "--warmup",
            "500ms",
            "--window",
            "3s",
            "--confirm-window",
            "3s",
            "--no-overload",
            &s.url("/"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    validate(&doc);
    let c = &doc["capacity"];
    let found = c["max_rate"]
        .as_f64()
        .unwrap_or_else(|| panic!("no capacity: {c:#}"));
    assert!((120.0..150.0).contains(&found), "{found}\n{c:#}");
    assert!(
        c["failed_why"]
            .as_str()
            .unwrap()
            .contains("prom:rate(belier_target_served_total"),
        "{c:#}"
    );
}

#[test]
fn a_prometheus_slo_needs_a_prometheus() {
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(["capacity", "--slo", "prom:up<1", "http://127.0.0.1:9/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--prometheus"), "{}", stderr(&out));
}

/// Apache with the prefork MPM gives each open connection a worker process of its own for as
/// long as it stays open; with 50 of them, a load of 100/s over a few connections meets its
/// SLO beside up to about 46-49 held connections, and not beside 50.
#[test]
fn apache_prefork_holds_what_its_workers_allow_beside_the_load() {
    let Some(apache) = belier_testsupport::apache::Apache::start("capacity", 50) else {
        return;
    };
    let (out, doc) = capacity(
        BELIER,
        &[
            "--dimension",
            "held-connections",
            "--rate",
            "100",
            "--slo",
            "p99<200ms",
            "--start-rate",
            "40",
            "--warmup",
            "2s",
            "--window",
            "4s",
            "--no-overload",
            &apache.url(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    validate(&doc);
    let c = &doc["capacity"];
    assert_eq!(c["dimension"], "held_connections", "{c:#}");
    let found = c["max_rate"]
        .as_f64()
        .unwrap_or_else(|| panic!("no capacity: {c:#}"));
    assert!((45.0..=50.0).contains(&found), "{found} held\n{c:#}");
    // What failed past it is said: the first failing level above it, with the SLO it broke.
    let failed = steps(&doc)
        .iter()
        .filter(|s| s["pass"] == false && s["target_rate"].as_f64().unwrap() > found)
        .map(|s| s["target_rate"].as_f64().unwrap())
        .fold(f64::MAX, f64::min);
    assert!(failed <= 50.0, "{c:#}");
    assert_eq!(c["failed_rate"].as_f64(), Some(failed), "{c:#}");
    let why = c["failed_why"].as_str().unwrap_or_default();
    assert!(why.contains("p99"), "{c:#}");
}
