//! Trace context (`--trace-sample`) and the slowest requests' exemplars, checked from the
//! server's side: nginx logs the `traceparent` of every request it serves (HTTP/1.1, h2c, a
//! plan's steps), and a Python server that makes every 1,000th request 200 ms slow logs the
//! trace of each slow one, which must then be among its interval's exemplars in the results
//! file and among the report's slowest requests.
//!
//! Needs nginx and python3; without them a test says it was skipped (in CI nothing skips).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use belier_stats::Trace;
use belier_testsupport::assert_exit;
use belier_testsupport::nginx::{Nginx, Options};
use belier_testsupport::python::PythonServer;
use serde_json::Value;

belier_testsupport::binary!(BELIER);

/// Each traced request's trace context as nginx logged it, and how many came untraced.
/// Every logged header must be a valid, sampled `traceparent` of version 00.
fn logged_traces(nginx: &Nginx) -> (Vec<(String, Trace)>, usize) {
    let mut traced = Vec::new();
    let mut untraced = 0;
    for line in nginx.requests() {
        if line.traceparent == "-" {
            untraced += 1;
            continue;
        }
        let (trace, sampled) = Trace::parse_traceparent(&line.traceparent)
            .unwrap_or_else(|| panic!("an invalid traceparent: {:?}", line.traceparent));
        assert!(sampled, "{}", line.traceparent);
        traced.push((line.uri, trace));
    }
    (traced, untraced)
}

fn distinct_traces(traced: &[(String, Trace)]) -> usize {
    traced
        .iter()
        .map(|(_, t)| t.trace_id)
        .collect::<BTreeSet<_>>()
        .len()
}

/// Runs belier with `args` against `nginx`, which must log `total` requests of which 2,000
/// ± 150 traced (the tests draw 2,000 in expectation, a standard deviation of 42 at most),
/// each with its own trace and span ids; returns the report and the traced requests.
fn share_traced(nginx: &Nginx, args: &[&str], total: u64) -> (Value, Vec<(String, Trace)>) {
    let doc = BELIER.json(args);
    assert_eq!(doc["summary"]["requests"], total, "{doc}");
    let (traced, untraced) = logged_traces(nginx);
    assert_eq!((traced.len() + untraced) as u64, total);
    assert!(
        (1_850..=2_150).contains(&traced.len()),
        "{} of {total} traced",
        traced.len()
    );
    assert_eq!(distinct_traces(&traced), traced.len(), "trace ids repeat");
    let spans: BTreeSet<_> = traced.iter().map(|(_, t)| t.span_id).collect();
    assert_eq!(spans.len(), traced.len(), "span ids repeat");
    (doc, traced)
}

#[test]
fn a_tenth_of_twenty_thousand_requests_carry_a_new_trace_and_the_rest_none() {
    let Some(nginx) = Nginx::start(false) else {
        return;
    };
    let url = nginx.http_url("/");
    let args = [
        &url,
        "-n",
        "20000",
        "-c",
        "8",
        "--trace-sample",
        "10%",
        "-H",
        "tracestate: belier=t61rcWkgMzE",
    ];
    let (doc, traced) = share_traced(&nginx, &args, 20_000);
    // The user's tracestate goes along on every request, traced or not.
    assert!(nginx
        .requests()
        .iter()
        .all(|l| l.tracestate == "belier=t61rcWkgMzE"));
    // The report's slowest requests, some of them maybe traced ones.
    let slowest = doc["slowest"].as_array().expect("the slowest requests");
    assert_eq!(slowest.len(), 5, "{doc}");
    for e in slowest {
        assert_eq!(e["status"], 200, "{e}");
        if let Some(id) = e["trace_id"].as_str() {
            assert!(
                traced.iter().any(|(_, t)| t.trace_id.to_string() == id),
                "exemplar trace {id} was not sent"
            );
        }
    }
}

#[test]
fn the_open_loop_over_http2_traces_its_share_and_only_it() {
    let Some(nginx) = Nginx::start_with(Options {
        h2c: true,
        ..Options::default()
    }) else {
        return;
    };
    let url = nginx.h2c_url("/");
    let args = [
        &url,
        "--http2",
        "--rate",
        "2000",
        "-z",
        "2s",
        "--trace-sample",
        "0.5",
    ];
    share_traced(&nginx, &args, 4_000);
}

#[test]
fn a_traced_iteration_is_one_trace_with_a_span_per_request() {
    let Some(nginx) = Nginx::start(false) else {
        return;
    };
    let dir = belier_testsupport::dirs::temp_dir("traced-iterations");
    let plan = dir.join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {}\nload: {{ vus: 3, duration: 20s }}\nscenarios:\n  - steps:\n      \
             - {{ name: first, get: /a }}\n      - {{ name: second, get: /b }}\n",
            nginx.http_url("")
        ),
    )
    .unwrap();
    let out = BELIER
        .command()
        .arg("run")
        .arg(&plan)
        .args(["-i", "60", "--trace-sample", "100%", "--output", "json"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let (traced, untraced) = logged_traces(&nginx);
    assert_eq!((traced.len(), untraced), (120, 0));
    let mut by_trace: BTreeMap<_, Vec<(String, _)>> = BTreeMap::new();
    for (uri, t) in &traced {
        by_trace
            .entry(t.trace_id)
            .or_default()
            .push((uri.clone(), t.span_id));
    }
    assert_eq!(by_trace.len(), 60, "one trace per iteration");
    for (trace, mut spans) in by_trace {
        spans.sort();
        let uris: Vec<&str> = spans.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(uris, ["/a", "/b"], "trace {trace:?}");
        assert_ne!(
            spans[0].1, spans[1].1,
            "trace {trace:?}: one span per request"
        );
    }
}

#[test]
fn a_traceparent_of_the_requests_own_or_a_share_past_all_is_refused() {
    let out = BELIER
        .command()
        .args([
            "http://127.0.0.1:9/",
            "-n",
            "1",
            "--trace-sample",
            "5%",
            "-H",
            "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--trace-sample") && err.contains("traceparent header of its own"),
        "{err}"
    );
    for bad in ["150%", "-0.1", "half"] {
        let out = BELIER
            .command()
            .args([
                "http://127.0.0.1:9/",
                "-n",
                "1",
                &format!("--trace-sample={bad}"),
            ])
            .output()
            .unwrap();
        assert_exit(&out, 2);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--trace-sample"), "{bad}: {err}");
    }
}

/// A server (see [`belier_testsupport::python::SERVE`]) that counts the requests it reads
/// and makes every 1,000th (the 1,000th, the 2,000th, …) wait 200 ms before it answers,
/// logging that request's `traceparent` to the file given as its argument.
const SLOW_EVERY_THOUSANDTH: &str = r#"
import socketserver, sys, threading, time
log = sys.argv[1]
lock, seen = threading.Lock(), [0]

class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            line = self.rfile.readline()
            if not line:
                return
            trace = "-"
            while line not in (b"\r\n", b"\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "traceparent":
                    trace = value.strip()
                line = self.rfile.readline()
            with lock:
                seen[0] += 1
                slow = seen[0] % 1000 == 0
            if slow:
                time.sleep(0.2)
                with lock, open(log, "a") as f:
                    f.write(trace + "\n")
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
"#;

#[test]
fn every_slow_request_is_among_its_intervals_exemplars_with_the_trace_the_server_logged() {
    let dir = belier_testsupport::dirs::temp_dir("slow-exemplars");
    let log = dir.join("slow.log");
    let server = PythonServer::start(SLOW_EVERY_THOUSANDTH, &[log.display().to_string()]);
    let results = dir.join("run.jsonl");
    let out = BELIER
        .command()
        .arg(server.url("/"))
        .args(["--rate", "1000", "-z", "5s", "--trace-sample", "100%"])
        .arg("--save")
        .arg(&results)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let slow = slow_traces(&log);
    let intervals = interval_exemplars(&results);
    for trace in &slow {
        let id = trace.trace_id.to_string();
        let found = intervals
            .iter()
            .flatten()
            .find(|e| e["trace_id"] == id.as_str())
            .unwrap_or_else(|| panic!("slow request {id} is no interval's exemplar"));
        assert_eq!(found["span_id"], trace.span_id.to_string().as_str());
        assert!(found["latency_us"].as_u64().unwrap() >= 200_000, "{found}");
        assert_eq!(found["status"], 200);
    }
    // The report read back from the file lists the five as the run's slowest.
    let report = BELIER
        .command()
        .arg("report")
        .arg(&results)
        .output()
        .unwrap();
    assert_exit(&report, 0);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("Slowest requests"), "{text}");
    for trace in &slow {
        assert!(
            text.contains(&format!("trace {} span {}", trace.trace_id, trace.span_id)),
            "{} not among the slowest:\n{text}",
            trace.trace_id
        );
    }
}

/// The traces of the slow requests the server logged: five, all traced.
fn slow_traces(log: &std::path::Path) -> Vec<Trace> {
    let slow: Vec<Trace> = std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            Trace::parse_traceparent(l)
                .expect("the slow request was traced")
                .0
        })
        .collect();
    assert_eq!(slow.len(), 5, "5,000 requests, every 1,000th slow");
    slow
}

/// Each interval record's exemplars, in the file's order.
fn interval_exemplars(results: &PathBuf) -> Vec<Vec<Value>> {
    std::fs::read_to_string(results)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["interval"]["counters"]["exemplars"].as_array().cloned())
        .collect()
}

/// Prometheus, scraping belier's page with its exemplar storage on, keeps every slow
/// request's trace: each is its latency bucket's exemplar until the next slow one replaces
/// it, 2.5 s later, so the scrapes (every second) see each.
#[test]
fn prometheus_keeps_each_slow_requests_trace_as_an_exemplar() {
    let dir = belier_testsupport::dirs::temp_dir("prometheus-exemplars");
    let log = dir.join("slow.log");
    let server = PythonServer::start(SLOW_EVERY_THOUSANDTH, &[log.display().to_string()]);
    let listen = format!("127.0.0.1:{}", belier_testsupport::process::free_port());
    let target: std::net::SocketAddr = listen.parse().unwrap();
    // Started first, so that it scrapes from the run's first seconds on.
    let prometheus = std::thread::spawn(move || {
        belier_testsupport::prometheus::Prometheus::start_with(
            &[target],
            &["--enable-feature=exemplar-storage"],
        )
    });
    let mut belier = BELIER.spawn(&[
        &server.url("/"),
        "--rate",
        "400",
        "-z",
        "12.5s",
        "--trace-sample",
        "100%",
        "--metrics-listen",
        &listen,
        "--metrics-linger",
        "60s",
    ]);
    let Some(prometheus) = prometheus.join().unwrap() else {
        return;
    };
    belier.wait_for("serving the final metrics");
    let slow = slow_traces(&log);
    // The final page lingers: a scrape or two more, then every exemplar is stored.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let url = format!(
        "{}/api/v1/query_exemplars?query=belier_request_duration_seconds_bucket&start={}&end={}",
        prometheus.url(),
        now - 120,
        now + 5
    );
    let body = ureq::get(&url)
        .call()
        .expect("prometheus answers")
        .body_mut()
        .read_to_string()
        .unwrap();
    let doc: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    let stored: Vec<&Value> = doc["data"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .flat_map(|series| series["exemplars"].as_array().into_iter().flatten())
        .collect();
    for trace in &slow {
        let id = trace.trace_id.to_string();
        let e = stored
            .iter()
            .find(|e| e["labels"]["trace_id"] == id.as_str())
            .unwrap_or_else(|| panic!("{id} is no stored exemplar: {body}"));
        assert_eq!(e["labels"]["span_id"], trace.span_id.to_string().as_str());
        let value: f64 = e["value"].as_str().unwrap().parse().unwrap();
        assert!((0.2..0.25).contains(&value), "{e}");
    }
    belier.interrupt();
    let (code, _, stderr) = belier.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

/// Two shards of one run, each saving its own results file: the report of both lists the
/// slowest five of all their intervals' exemplars, whichever shard recorded them.
#[test]
fn the_slowest_of_shards_merge_to_the_slowest_of_their_union() {
    let Some(nginx) = Nginx::start(false) else {
        return;
    };
    let dir = belier_testsupport::dirs::temp_dir("slowest-shards");
    let files: Vec<PathBuf> = (1..=2).map(|i| dir.join(format!("s{i}.jsonl"))).collect();
    for (i, file) in files.iter().enumerate() {
        let out = BELIER
            .command()
            .arg(nginx.http_url("/"))
            .args(["--rate", "500", "-z", "2s", "--name", "split"])
            .args(["--shard", &format!("{}/2", i + 1), "--trace-sample", "100%"])
            .arg("--save")
            .arg(file)
            .output()
            .unwrap();
        assert_exit(&out, 0);
    }
    let mut union: Vec<Value> = files
        .iter()
        .flat_map(|f| interval_exemplars(f).into_iter().flatten())
        .collect();
    union.sort_by_key(|e| {
        (
            std::cmp::Reverse(e["latency_us"].as_u64().unwrap()),
            e["intended_unix_us"].as_u64().unwrap(),
        )
    });
    union.truncate(5);
    let report = BELIER
        .command()
        .arg("report")
        .args(&files)
        .args(["--type", "json"])
        .output()
        .unwrap();
    assert_exit(&report, 0);
    let doc: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(doc["summary"]["requests"], 1_000, "{doc}");
    assert_eq!(doc["slowest"], Value::Array(union), "{doc}");
}

/// The request spans the collector wrote, by span id, and each one's children.
struct Received {
    requests: BTreeMap<String, belier_testsupport::otelcol::ReceivedSpan>,
    children: BTreeMap<String, Vec<belier_testsupport::otelcol::ReceivedSpan>>,
}

fn received(spans: Vec<belier_testsupport::otelcol::ReceivedSpan>) -> Received {
    let mut r = Received {
        requests: BTreeMap::new(),
        children: BTreeMap::new(),
    };
    for span in spans {
        match span.parent_span_id.is_empty() {
            true => {
                assert!(r.requests.insert(span.span_id.clone(), span).is_none());
            }
            false => r
                .children
                .entry(span.parent_span_id.clone())
                .or_default()
                .push(span),
        }
    }
    r
}

/// `--traces-out` to the real OpenTelemetry Collector: exactly the requests nginx saw with a
/// traceparent arrive as spans, under the same trace and span ids, each with its phases
/// inside it and adding up to it within 1 %.
#[test]
fn the_collector_receives_exactly_the_sampled_requests_spans() {
    let Some(nginx) = Nginx::start(false) else {
        return;
    };
    let dir = belier_testsupport::dirs::temp_dir("spans-collector");
    let Some(collector) = belier_testsupport::otelcol::Collector::start(&dir) else {
        return;
    };
    let out = BELIER
        .command()
        .arg(nginx.http_url("/?page=2&token=secret"))
        .args(["--rate", "500", "-z", "2s", "--trace-sample", "30%"])
        .args(["--traces-out", &format!("otlp={}", collector.url())])
        .args(["--output", "json"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["warnings"], serde_json::json!([]), "{doc}");
    let (traced, _) = logged_traces(&nginx);
    assert!(traced.len() > 200, "{} traced", traced.len());
    let r = received(collector.spans());
    assert_eq!(
        r.requests.len(),
        traced.len(),
        "one span per traced request"
    );
    for (_, trace) in &traced {
        let span = &r.requests[&trace.span_id.to_string()];
        assert_eq!(span.trace_id, trace.trace_id.to_string());
        assert_eq!(span.name, "GET");
        assert_eq!(span.attribute("http.response.status_code"), Some("200"));
        let url = span.attribute("url.full").unwrap();
        assert!(!url.contains("secret") && url.contains("token="), "{url}");
        let children = &r.children[&span.span_id];
        let mut names: Vec<&str> = children.iter().map(|c| c.name.as_str()).collect();
        names.retain(|n| *n != "connect");
        assert_eq!(names, ["ttfb", "transfer"], "{children:?}");
        let mut sum = 0;
        for c in children {
            assert_eq!(c.trace_id, span.trace_id);
            assert!(
                c.start >= span.start && c.end <= span.end,
                "{c:?} out of {span:?}"
            );
            sum += c.end - c.start;
        }
        let whole = span.end - span.start;
        assert!(
            whole - sum <= whole / 100,
            "children {sum} ns of {whole} ns: {children:?}"
        );
    }
}

/// The collector stopped for part of the run: the run records every request, and what the
/// collector did not take is counted in the report's warnings, exactly.
#[test]
fn a_collector_down_mid_run_loses_nothing_of_the_run_and_its_spans_are_counted() {
    let Some(nginx) = Nginx::start(false) else {
        return;
    };
    let dir = belier_testsupport::dirs::temp_dir("spans-collector-down");
    let Some(mut collector) = belier_testsupport::otelcol::Collector::start(&dir) else {
        return;
    };
    let url = collector.url();
    let run = std::thread::spawn(move || {
        BELIER
            .command()
            .arg(nginx.http_url("/"))
            .args(["--rate", "300", "-z", "6s", "--trace-sample", "100%"])
            .args(["--traces-out", &format!("otlp={url}")])
            .args(["--output", "json"])
            .output()
            .map(|out| (out, nginx))
    });
    std::thread::sleep(std::time::Duration::from_secs(2));
    collector.stop();
    std::thread::sleep(std::time::Duration::from_secs(2));
    collector.restart();
    let (out, nginx) = run.join().unwrap().unwrap();
    assert_exit(&out, 0);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["requests"], 1_800, "{doc}");
    assert_eq!(doc["summary"]["errors"], 0, "{doc}");
    let (traced, untraced) = logged_traces(&nginx);
    assert_eq!((traced.len(), untraced), (1_800, 0));
    let arrived = received(collector.spans()).requests.len();
    assert!(arrived < 1_800 && arrived > 0, "{arrived} arrived");
    let warning = doc["warnings"][0].as_str().unwrap_or_default();
    let lost = 1_800 - arrived;
    assert!(
        warning.starts_with("--traces-out otlp=")
            && warning.contains(&format!(": {lost} of 1800 requests' spans not sent")),
        "{lost} lost: {doc}"
    );
}
