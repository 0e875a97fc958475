//! `--metrics-out` (#16): after a run, real Prometheus (remote-write receiver), Pushgateway and
//! InfluxDB servers started here hold the report's request totals exactly and its p99 within
//! 1 %; killing Prometheus mid-run costs the run nothing but the intervals not delivered, which
//! the report counts; bad values exit 2 and an unreachable endpoint is a warning.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use belier_outputs::BUCKETS_S;
use belier_testserver::{Config, Server};
use belier_testsupport::daemons;
use belier_testsupport::prometheus as prometheus_support;
use daemons::Daemon;
use prometheus_support::Prometheus;
use serde_json::Value;

/// Longest any wait in these tests may take.
const BOUND: Duration = Duration::from_secs(60);

fn belier(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(args)
        .env_remove("BELIER_INFLUX_TOKEN")
        .stdin(Stdio::null())
        .output()
        .expect("belier runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `GET url?query`: the body as JSON.
fn get_json(url: &str, query: &[(&str, &str)]) -> Value {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.get(url);
    for (k, v) in query {
        request = request.query(*k, *v);
    }
    let body = request
        .call()
        .and_then(|mut r| r.body_mut().read_to_string())
        .unwrap_or_default();
    serde_json::from_str(&body).unwrap_or(Value::Null)
}

/// The first value of a PromQL instant query.
fn promql(prometheus: &Prometheus, query: &str) -> Option<f64> {
    let doc = get_json(
        &format!("{}/api/v1/query", prometheus.url()),
        &[("query", query)],
    );
    doc["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

/// The sum over every series of an InfluxQL query's single value column.
fn influxql(influx: &Daemon, query: &str) -> Option<f64> {
    let doc = get_json(
        &format!("{}/query", influx.url()),
        &[("db", "belier"), ("q", query)],
    );
    let series = doc["results"][0]["series"].as_array()?;
    Some(
        series
            .iter()
            .filter_map(|s| s["values"][0][1].as_f64())
            .sum(),
    )
}

/// The sum of the text-format samples whose line starts with `prefix` and contains `with`.
fn pushed(page: &str, prefix: &str, with: &str) -> f64 {
    page.lines()
        .filter(|l| l.starts_with(prefix) && l.contains(with))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// What the report says: requests, responses and p99 in seconds.
fn figures(report: &Value) -> (f64, f64, f64) {
    (
        report["summary"]["requests"].as_f64().unwrap(),
        report["summary"]["responses"].as_f64().unwrap(),
        report["latency_us"]["percentiles"]["p99"].as_f64().unwrap() / 1e6,
    )
}

fn within_one_percent(exported: f64, reported: f64) -> bool {
    reported > 0.0 && (exported - reported).abs() <= 0.01 * reported
}

/// The bucket of [`BUCKETS_S`] that holds `seconds`, as (lower, upper) bounds.
fn bucket_of(seconds: f64) -> (f64, f64) {
    let upper = BUCKETS_S
        .iter()
        .position(|&b| seconds <= b)
        .expect("within the buckets");
    (
        upper.checked_sub(1).map_or(0.0, |i| BUCKETS_S[i]),
        BUCKETS_S[upper],
    )
}

/// `(not delivered, offered)` from a warning "--metrics-out …: N of M intervals not delivered".
fn undelivered(warning: &str) -> (u64, u64) {
    warning
        .split_once(": ")
        .and_then(|(_, rest)| rest.split_once(" intervals"))
        .and_then(|(n, _)| n.split_once(" of "))
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .unwrap_or_else(|| panic!("no count in {warning:?}"))
}

#[test]
fn prometheus_pushgateway_and_influxdb_hold_the_reports_totals() {
    let prometheus = Prometheus::start_with(&[], &["--web.enable-remote-write-receiver"]);
    let pushgateway = Daemon::pushgateway();
    let influx = Daemon::influxdb();
    let mut outs = Vec::new();
    if let Some(p) = &prometheus {
        outs.push(format!("prometheus-rw={}/api/v1/write", p.url()));
    }
    if let Some(p) = &pushgateway {
        outs.push(format!("pushgateway={}", p.url()));
    }
    if let Some(i) = &influx {
        outs.push(format!("influx={}/write?db=belier", i.url()));
    }
    if outs.is_empty() {
        return;
    }
    let server = Server::start(Config::default()).unwrap();
    // 3 ms of server delay: latencies in one bucket of the histogram, (2.5 ms, 5 ms].
    let url = server.url("/?delay=3ms");
    let mut args = vec![
        url.as_str(),
        "--rate",
        "300",
        "-z",
        "3s",
        "--interval",
        "250ms",
        "--name",
        "acceptance",
        "--output",
        "json",
    ];
    for o in &outs {
        args.extend(["--metrics-out", o.as_str()]);
    }
    let out = belier(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let (requests, responses, p99) = figures(&report);
    // What the report counts is what the server saw (an arrival the loaded machine could
    // not send in time is the report's business, not the outputs').
    assert!(requests > 800.0, "{requests}");
    assert_eq!(server.counts().requests as f64, requests);
    assert_eq!(
        report["warnings"].as_array().map(Vec::len),
        Some(0),
        "every interval delivered: {report:#}"
    );

    if let Some(p) = &prometheus {
        let run = r#"run="acceptance""#;
        let total = promql(p, &format!("sum(belier_requests_total{{{run}}})"));
        assert_eq!(total, Some(requests));
        let count = promql(
            p,
            &format!("belier_request_duration_seconds_count{{{run}}}"),
        );
        assert_eq!(count, Some(responses));
        let quantile = promql(
            p,
            &format!(r#"belier_request_duration_quantile_seconds{{{run},quantile="0.99"}}"#),
        )
        .unwrap();
        assert!(within_one_percent(quantile, p99), "{quantile} vs {p99}");
        // The histogram's own p99 lies in the bucket that holds the report's.
        let from_buckets = promql(
            p,
            &format!(
                "histogram_quantile(0.99, sum by (le) \
                 (belier_request_duration_seconds_bucket{{{run}}}))"
            ),
        )
        .unwrap();
        let (low, high) = bucket_of(p99);
        assert!(
            (low..=high).contains(&from_buckets),
            "{from_buckets} not in ({low}, {high}] with p99 {p99}"
        );
    }
    if let Some(g) = &pushgateway {
        let (status, page) = g.request("GET", "/metrics");
        assert_eq!(status, 200);
        let run = r#"run="acceptance""#;
        assert_eq!(
            pushed(&page, "belier_requests_total{", run),
            requests,
            "{page}"
        );
        assert!(
            page.contains(r#"instance="acceptance",job="belier""#),
            "{page}"
        );
        let quantile = pushed(
            &page,
            "belier_request_duration_quantile_seconds{",
            r#"quantile="0.99""#,
        );
        assert!(within_one_percent(quantile, p99), "{quantile} vs {p99}");
    }
    if let Some(i) = &influx {
        let where_run = "WHERE run = 'acceptance'";
        let total = influxql(
            i,
            &format!("SELECT last(value) FROM belier_requests_total {where_run} GROUP BY *"),
        );
        assert_eq!(total, Some(requests));
        let count = influxql(
            i,
            &format!("SELECT last(value) FROM belier_request_duration_seconds_count {where_run}"),
        );
        assert_eq!(count, Some(responses));
        let quantile = influxql(
            i,
            &format!(
                "SELECT last(value) FROM belier_request_duration_quantile_seconds \
                 {where_run} AND quantile = '0.99'"
            ),
        )
        .unwrap();
        assert!(within_one_percent(quantile, p99), "{quantile} vs {p99}");
    }
    server.stop();
}

#[test]
fn killing_prometheus_mid_run_costs_only_the_intervals_not_delivered() {
    let Some(mut prometheus) = Prometheus::start_with(&[], &["--web.enable-remote-write-receiver"])
    else {
        return;
    };
    let server = Server::start(Config::default()).unwrap();
    let dir = std::env::temp_dir().join(format!("belier-outputs-kill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let results = dir.join("run.jsonl");
    let write = format!("prometheus-rw={}/api/v1/write", prometheus.url());
    let child = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args([
            &server.url("/"),
            "--rate",
            "200",
            "-z",
            "5s",
            "--interval",
            "250ms",
            "--name",
            "killed",
            "--output",
            "json",
            "--save",
            results.to_str().unwrap(),
            "--metrics-out",
            &write,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Killed once it has taken some intervals.
    let deadline = Instant::now() + BOUND;
    while promql(&prometheus, r#"sum(belier_requests_total{run="killed"})"#).unwrap_or(0.0) == 0.0 {
        assert!(Instant::now() < deadline, "Prometheus never got a sample");
        std::thread::sleep(Duration::from_millis(100));
    }
    prometheus.kill();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let requests = report["summary"]["requests"].as_u64().unwrap();
    assert!(requests > 900, "{requests}");
    assert_eq!(server.counts().requests, requests);
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let missing = warnings
        .iter()
        .find(|w| w.contains("intervals not delivered"))
        .unwrap_or_else(|| panic!("no count of undelivered intervals: {warnings:?}"));
    let (not_delivered, offered) = undelivered(missing);
    assert!(
        not_delivered >= 1 && not_delivered < offered,
        "some delivered, some not: {missing}"
    );

    // The results file lost nothing, and keeps the count.
    let again = belier(&["report", results.to_str().unwrap(), "--type", "json"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let saved: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(saved["summary"]["requests"].as_u64(), Some(requests));
    for counter in ["requests", "responses", "errors", "bytes_in", "bytes_out"] {
        assert_eq!(
            saved["summary"][counter], report["summary"][counter],
            "{counter}"
        );
    }
    assert_eq!(saved["status_codes"], report["status_codes"]);
    assert_eq!(
        saved["latency_us"]["percentiles"],
        report["latency_us"]["percentiles"]
    );
    assert!(
        saved["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str() == Some(missing)),
        "{saved:#}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    server.stop();
}

#[test]
fn bad_values_exit_2_and_an_unreachable_endpoint_is_counted() {
    let server = Server::start(Config::default()).unwrap();
    let url = server.url("/");
    for (value, says) in [
        (
            "graphite=http://127.0.0.1:2003",
            "unknown output 'graphite'",
        ),
        ("prometheus-rw=not a url", "not a URL"),
        ("prometheus-rw", "KIND=URL"),
        (
            "influx=http://me:hunter2@127.0.0.1:8086/write",
            "?db=DATABASE",
        ),
        ("statsd=udp://127.0.0.1", "port"),
    ] {
        let out = belier(&[&url, "-n", "5", "--metrics-out", value]);
        let printed = text(&out);
        assert_eq!(out.status.code(), Some(2), "{value}: {printed}");
        assert!(printed.contains("--metrics-out"), "{printed}");
        assert!(printed.contains(says), "{value}: {printed}");
        assert!(!printed.contains("hunter2"), "{printed}");
    }
    assert_eq!(
        server.counts().requests,
        0,
        "refused before sending anything"
    );

    // Nothing listens there: a warning at start, the run goes on, every interval counted.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let influx = format!("influx=http://:tok3n@127.0.0.1:{port}/api/v2/write?org=o&bucket=b");
    let out = belier(&[
        &url,
        "-n",
        "50",
        "-c",
        "2",
        "--output",
        "json",
        "--metrics-out",
        &influx,
    ]);
    let printed = text(&out);
    assert_eq!(out.status.code(), Some(0), "{printed}");
    assert!(printed.contains("cannot reach it now"), "{printed}");
    assert!(!printed.contains("tok3n"), "{printed}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary"]["requests"].as_u64(), Some(50));
    assert_eq!(server.counts().requests, 50);
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("not delivered"), "{warnings}");
    server.stop();
}

#[test]
fn a_plans_steps_reach_the_pushgateway_with_their_names() {
    let Some(gateway) = Daemon::pushgateway() else {
        return;
    };
    let server = Server::start(Config::default()).unwrap();
    let dir = std::env::temp_dir().join(format!("belier-outputs-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan = dir.join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {}\nload:\n  vus: 2\n  duration: 1s\nscenarios:\n  - name: loop\n    \
             steps:\n      - name: home\n        get: /\n      - name: missing\n        \
             get: /?status=404\n",
            server.url("")
        ),
    )
    .unwrap();
    let out = belier(&[
        "run",
        plan.to_str().unwrap(),
        "--name",
        "planned",
        "--output",
        "json",
        "--metrics-out",
        &format!("pushgateway={}", gateway.url()),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (status, page) = gateway.request("GET", "/metrics");
    assert_eq!(status, 200);
    let steps = report["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for step in steps {
        let name = step["name"].as_str().unwrap();
        let of = |outcome: &str| {
            pushed(
                &page,
                "belier_step_requests_total{",
                &format!(r#"outcome="{outcome}",run="planned",step="{name}""#),
            )
        };
        let requests = step["requests"].as_f64().unwrap();
        let failures = step["failures"].as_f64().unwrap();
        assert!(requests > 0.0);
        assert_eq!(of("failed"), failures, "{name}: {page}");
        assert_eq!(of("ok"), requests - failures, "{name}: {page}");
        let count = pushed(
            &page,
            "belier_step_request_duration_seconds_count{",
            &format!(r#"step="{name}""#),
        );
        assert_eq!(count, step["latency_us"]["count"].as_f64().unwrap());
    }
    assert_eq!(
        pushed(&page, "belier_requests_total{", r#"run="planned""#),
        report["summary"]["requests"].as_f64().unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
    server.stop();
}

#[test]
fn an_endpoint_that_never_answers_slows_nothing_and_every_interval_is_counted() {
    // Takes connections and never answers: each delivery waits for its timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming() {
            held.push(stream);
        }
    });
    let server = Server::start(Config::default()).unwrap();
    let started = Instant::now();
    let out = belier(&[
        &server.url("/"),
        "--rate",
        "200",
        "-z",
        "2s",
        "--interval",
        "100ms",
        "--output",
        "json",
        "--metrics-out",
        &format!("pushgateway=http://{addr}"),
    ]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let requests = report["summary"]["requests"].as_u64().unwrap();
    assert!(requests > 350, "{requests}");
    assert_eq!(server.counts().requests, requests);
    // Retrying every interval in turn would take minutes; the run ends with its drain time.
    assert!(
        took < Duration::from_secs(2) + belier_outputs::DRAIN + Duration::from_secs(10),
        "{took:?}"
    );
    let warnings = report["warnings"].to_string();
    let line = warnings
        .split("\",\"")
        .find(|w| w.contains("intervals not delivered"))
        .unwrap_or_else(|| panic!("{warnings}"));
    let (missing, offered) = undelivered(line);
    assert_eq!(missing, offered, "nothing was delivered: {line}");
    assert!(offered >= 20, "{line}");
    assert!(!line.contains(" 0 dropped with the queue full"), "{line}");
    server.stop();
}
