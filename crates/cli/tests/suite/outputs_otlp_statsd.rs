//! `--metrics-out otlp=` and `statsd=` (#16): an OTLP/HTTP receiver in the test, decoding with
//! the official opentelemetry-proto definitions, and a UDP socket summing StatsD counters get
//! the report's request totals exactly and its p99 within 1 %.

use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use belier_testserver::{Config, Server};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
use opentelemetry_proto::tonic::metrics::v1::{AggregationTemporality, Metric};
use prost::Message as _;
use serde_json::Value;

type Received = Arc<Mutex<Vec<ExportMetricsServiceRequest>>>;

/// An OTLP/HTTP receiver on the loopback keeping every request it could decode (400 for the
/// others), on its own thread for the rest of the test.
fn otlp_receiver() -> (SocketAddr, Received) {
    let received = Received::default();
    let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    socket.set_nonblocking(true).unwrap();
    let addr = socket.local_addr().unwrap();
    let state = Arc::clone(&received);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(socket).unwrap();
            let app = Router::new()
                .route("/v1/metrics", post(export))
                .with_state(state);
            axum::serve(listener, app).await.unwrap();
        });
    });
    (addr, received)
}

async fn export(State(received): State<Received>, body: Bytes) -> StatusCode {
    match ExportMetricsServiceRequest::decode(body) {
        Ok(request) => {
            received.lock().unwrap().push(request);
            StatusCode::OK
        }
        Err(_) => StatusCode::BAD_REQUEST,
    }
}

/// A StatsD socket: every line it receives until `stop`, then a short drain.
fn statsd_socket() -> (
    SocketAddr,
    Arc<AtomicBool>,
    std::thread::JoinHandle<Vec<String>>,
) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let addr = socket.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    let lines = std::thread::spawn(move || {
        let mut lines = Vec::new();
        let mut buf = [0u8; 65_536];
        loop {
            match socket.recv(&mut buf) {
                Ok(n) => lines.extend(
                    String::from_utf8_lossy(&buf[..n])
                        .lines()
                        .map(str::to_string),
                ),
                Err(_) if stopped.load(Ordering::Relaxed) => return lines,
                Err(_) => {}
            }
        }
    });
    (addr, stop, lines)
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attributes.iter().find(|kv| kv.key == key).and_then(|kv| {
        match kv.value.as_ref()?.value.as_ref()? {
            Any::StringValue(s) => Some(s.as_str()),
            _ => None,
        }
    })
}

fn number(v: Option<&Number>) -> f64 {
    match v {
        Some(Number::AsDouble(d)) => *d,
        Some(Number::AsInt(i)) => *i as f64,
        None => f64::NAN,
    }
}

fn within_one_percent(exported: f64, reported: f64) -> bool {
    reported > 0.0 && (exported - reported).abs() <= 0.01 * reported
}

#[test]
fn an_otlp_receiver_and_a_statsd_socket_get_the_reports_totals() {
    let (otlp, received) = otlp_receiver();
    let (statsd, stop, lines) = statsd_socket();
    let server = Server::start(Config::default()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args([
            &server.url("/?delay=3ms"),
            "--rate",
            "300",
            "-z",
            "2s",
            "--interval",
            "250ms",
            "--name",
            "pushed",
            "--output",
            "json",
            "--metrics-out",
            &format!("otlp=http://{otlp}"),
            "--metrics-out",
            &format!("statsd=udp://{statsd}"),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let lines = lines.join().unwrap();
    let printed = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{printed}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let requests = report["summary"]["requests"].as_f64().unwrap();
    let responses = report["summary"]["responses"].as_f64().unwrap();
    let p99 = report["latency_us"]["percentiles"]["p99"].as_f64().unwrap() / 1e6;
    assert!(requests > 500.0, "{requests}");
    assert_eq!(server.counts().requests as f64, requests);
    assert_eq!(report["warnings"], serde_json::json!([]), "{report:#}");

    // OTLP: cumulative, so the last request holds the totals.
    let received = received.lock().unwrap();
    assert!(
        received.len() >= 4,
        "one request per interval: {}",
        received.len()
    );
    let last = received.last().unwrap();
    let metrics: Vec<&Metric> = last
        .resource_metrics
        .iter()
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .collect();
    let metric = |name: &str| {
        metrics
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let Some(Data::Sum(sum)) = &metric("belier_requests_total").data else {
        panic!("belier_requests_total is not a sum");
    };
    assert!(sum.is_monotonic);
    assert_eq!(
        sum.aggregation_temporality,
        AggregationTemporality::Cumulative as i32
    );
    let total: f64 = sum
        .data_points
        .iter()
        .map(|p| number(p.value.as_ref()))
        .sum();
    assert_eq!(total, requests);
    assert!(sum
        .data_points
        .iter()
        .all(|p| attribute(&p.attributes, "run") == Some("pushed")));
    let Some(Data::Histogram(h)) = &metric("belier_request_duration_seconds").data else {
        panic!("the latency is not a histogram");
    };
    let point = &h.data_points[0];
    assert_eq!(point.count as f64, responses);
    assert_eq!(point.bucket_counts.iter().sum::<u64>(), point.count);
    assert_eq!(point.bucket_counts.len(), point.explicit_bounds.len() + 1);
    let Some(Data::Gauge(g)) = &metric("belier_request_duration_quantile_seconds").data else {
        panic!("the quantiles are not a gauge");
    };
    let exported = g
        .data_points
        .iter()
        .find(|p| attribute(&p.attributes, "quantile") == Some("0.99"))
        .map(|p| number(p.value.as_ref()))
        .unwrap();
    assert!(within_one_percent(exported, p99), "{exported} vs {p99}");

    // StatsD: the increments add up to the totals.
    let counted = |name: &str| -> f64 {
        lines
            .iter()
            .filter_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .filter_map(|rest| {
                let (value, kind) = rest.split_once('|')?;
                kind.starts_with("c|")
                    .then(|| value.parse::<f64>().ok())
                    .flatten()
            })
            .sum()
    };
    assert_eq!(counted("belier_requests_total"), requests, "{lines:?}");
    assert_eq!(counted("belier_request_duration_seconds_count"), responses);
    assert!(lines
        .iter()
        .filter(|l| l.starts_with("belier_requests_total:"))
        .all(|l| l.contains("run:pushed")));
    let gauge = lines
        .iter()
        .rev()
        .filter(|l| l.ends_with(",quantile:0.99") && l.contains("|g|"))
        .find_map(|l| {
            l.strip_prefix("belier_request_duration_quantile_seconds:")?
                .split_once('|')?
                .0
                .parse::<f64>()
                .ok()
        })
        .unwrap();
    assert!(within_one_percent(gauge, p99), "{gauge} vs {p99}");
    server.stop();
}
