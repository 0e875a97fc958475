//! The server's own time (`--server-timing`, `--server-time-header`) against a Python server
//! on loopback (stdlib, threads) that measures its handler's time, sends it as
//! `Server-Timing: app;dur=…` (or `X-Response-Time`), and logs each figure it sent: belier's
//! `app` percentiles are checked against those computed from the log, the time outside the
//! server against a wait the server adds outside its handler, and responses without the
//! header or with a malformed one are counted exactly as the server says it sent them.

// The measured figures are printed beside the server's (`--nocapture`), for the record.
#![allow(clippy::print_stderr)]

use std::path::PathBuf;

use belier_testsupport::python::PythonServer;

use serde_json::Value;

belier_testsupport::binary!(BELIER);

/// The server's handler (see [`belier_testsupport::python::SERVE`]), run with `MODE OUTSIDE_MS
/// LOG`. Each request, numbered from 0 as it
/// arrives, waits OUTSIDE_MS first (a queue in front of the application, outside what it
/// measures), then its handler runs: it sleeps 1 + (i % 50) × 0.2 ms and measures itself from
/// its start to just before it writes the answer. MODE says what the answer carries:
/// `app` sends `Server-Timing: app;dur=D, db;dur=D/2` (db nested in app); `mixed` sends that
/// for i % 3 == 0, a header with no readable duration for i % 3 == 1 and none for i % 3 == 2;
/// `figure` sends `X-Response-Time: 5.2ms`. Each request appends a JSON line to LOG: its kind
/// (`timed`, `malformed`, `missing`) and the duration it sent, in ms.
const SERVER: &str = r#"
import json, socketserver, sys, threading, time
mode, outside, log = sys.argv[1], float(sys.argv[2]) / 1e3, sys.argv[3]
lock, seen = threading.Lock(), [0]

class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            line = self.rfile.readline()
            if not line:
                return
            while line not in (b"\r\n", b"\n", b""):
                line = self.rfile.readline()
            self.serve()
    def serve(self):
        with lock:
            i = seen[0]
            seen[0] += 1
        time.sleep(outside)
        start = time.monotonic()
        time.sleep((1 + (i % 50) * 0.2) / 1e3)
        dur = round((time.monotonic() - start) * 1e3, 3)
        kind = "timed"
        if mode == "figure":
            dur = 5.2
            header = b"X-Response-Time: 5.2ms\r\n"
        elif mode == "mixed" and i % 3 == 1:
            kind, header = "malformed", b'Server-Timing: app;dur=oops, db;desc="unended\r\n'
        elif mode == "mixed" and i % 3 == 2:
            kind, header = "missing", b""
        else:
            header = b"Server-Timing: app;dur=%.3f, db;dur=%.3f\r\n" % (dur, dur / 2)
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" + header + b"\r\nok")
        with lock, open(log, "a") as f:
            f.write(json.dumps({"kind": kind, "dur": dur}) + "\n")
"#;

/// The Python server of one test and its log.
struct PyServer {
    server: PythonServer,
    log: PathBuf,
}

impl PyServer {
    /// Starts it in `mode`, waiting `outside_ms` before each handler, its log in the temp
    /// dir `name`.
    fn start(name: &str, mode: &str, outside_ms: u32) -> PyServer {
        let log = belier_testsupport::dirs::temp_dir(name).join("timings.jsonl");
        let args = [
            mode.to_string(),
            outside_ms.to_string(),
            log.display().to_string(),
        ];
        let server = PythonServer::start(SERVER, &args);
        PyServer { server, log }
    }

    fn url(&self) -> String {
        self.server.url("/")
    }

    /// What the server logged: each request's kind and the duration it sent (ms).
    fn sent(&self) -> Vec<(String, f64)> {
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (
                    v["kind"].as_str().unwrap().into(),
                    v["dur"].as_f64().unwrap(),
                )
            })
            .collect()
    }

    /// The durations of the requests the server timed, ms.
    fn timed(&self) -> Vec<f64> {
        self.sent()
            .into_iter()
            .filter(|(kind, _)| kind == "timed")
            .map(|(_, dur)| dur)
            .collect()
    }
}

/// The `p`th percentile of `values` by nearest rank, as HdrHistogram ranks them.
fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0 * sorted.len() as f64).ceil() as usize).max(1);
    sorted[rank - 1]
}

/// A percentile of a JSON summary, ms.
fn p_ms(summary: &Value, p: &str) -> f64 {
    summary["percentiles"][p]
        .as_f64()
        .unwrap_or_else(|| panic!("no {p} in {summary}"))
        / 1e3
}

#[test]
fn app_percentiles_match_the_servers_own_figures_within_1_percent() {
    let server = PyServer::start("server-timing-app", "app", 0);
    let doc = BELIER.json(&["-n", "200", "-c", "2", "--server-timing", &server.url()]);
    let st = &doc["server_timing"];
    let sent = server.timed();
    assert_eq!(sent.len(), 200);
    assert_eq!(
        (&st["timed"], &st["missing"], &st["malformed"]),
        (&200.into(), &0.into(), &0.into()),
        "{st}"
    );
    let app = &st["metrics_us"]["app"];
    assert_eq!(app["count"], 200, "{app}");
    for (label, p) in [("p50", 50.0), ("p99", 99.0)] {
        let (belier, own) = (p_ms(app, label), percentile(&sent, p));
        eprintln!("app {label}: belier {belier:.3} ms, the server's log {own:.3} ms");
        assert!(
            (belier - own).abs() <= own * 0.01,
            "app {label}: belier {belier:.3} ms, server {own:.3} ms"
        );
    }
    // db is nested in app: the server's time is app's, the larger, not their sum.
    let server_time = &st["server_us"];
    assert_eq!(server_time["count"], 200);
    assert!(
        (p_ms(server_time, "p50") - percentile(&sent, 50.0)).abs()
            <= percentile(&sent, 50.0) * 0.01
    );
}

#[test]
fn outside_the_server_is_the_latency_minus_its_time() {
    // Every request waits 20 ms in front of the handler, which measures only itself (1 to
    // 10.8 ms): outside is at least those 20 ms for every request, and at most the latency
    // minus the least the handler took.
    let server = PyServer::start("server-timing-outside", "app", 20);
    let doc = BELIER.json(&["-n", "60", "-c", "2", "--server-timing", &server.url()]);
    let st = &doc["server_timing"];
    let outside = &st["outside_us"];
    assert_eq!(
        (&st["timed"], &outside["count"]),
        (&60.into(), &60.into()),
        "{st}"
    );
    let least_app = server.timed().into_iter().fold(f64::MAX, f64::min);
    let latency_p50 = p_ms(&doc["latency_us"], "p50");
    let outside_min = outside["min"].as_f64().unwrap() / 1e3;
    let outside_p50 = p_ms(outside, "p50");
    eprintln!("latency p50 {latency_p50:.3} ms, outside min {outside_min:.3} p50 {outside_p50:.3} ms, least app {least_app:.3} ms");
    assert!(
        outside_min >= 20.0 * 0.999,
        "outside min {outside_min:.3} ms, below the 20 ms wait"
    );
    assert!(
        outside_p50 <= (latency_p50 - least_app) * 1.001,
        "outside p50 {outside_p50:.3} ms"
    );
    assert_eq!(st["above_latency"], 0);
}

#[test]
fn responses_without_a_readable_header_are_counted_as_the_server_sent_them() {
    let server = PyServer::start("server-timing-mixed", "mixed", 0);
    let out = BELIER.ok(&["-n", "30", "-c", "1", "--server-timing", &server.url()]);
    let text = String::from_utf8_lossy(&out.stdout);
    let sent = server.sent();
    let count = |kind: &str| sent.iter().filter(|(k, _)| k == kind).count();
    assert_eq!(
        (count("timed"), count("malformed"), count("missing")),
        (10, 10, 10)
    );
    assert!(
        text.contains("Server timing  (10 responses timed; 10 without the header; 10 with a header that gave no duration)"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("app ")),
        "{text}"
    );
}

#[test]
fn a_single_figure_header_is_read_with_its_unit() {
    let server = PyServer::start("server-timing-figure", "figure", 0);
    let args = [
        "-n",
        "20",
        "--server-time-header",
        "X-Response-Time",
        &server.url(),
    ];
    let doc = BELIER.json(&args);
    let st = &doc["server_timing"];
    let figure = &st["metrics_us"]["x-response-time"];
    assert_eq!(
        (&st["timed"], &figure["count"]),
        (&20.into(), &20.into()),
        "{st}"
    );
    let p50 = p_ms(figure, "p50");
    assert!(
        (p50 - 5.2).abs() <= 5.2 * 0.001,
        "x-response-time p50 {p50:.3} ms"
    );
    // A header name that is no HTTP token is refused before anything is sent.
    let bad = BELIER.output(&[
        "-n",
        "1",
        "--server-time-header",
        "X Response",
        &server.url(),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--server-time-header"));
    // belier probe and belier ws refuse the flags rather than ignore them.
    for args in [
        vec!["probe", "--server-timing", &server.url()],
        vec!["ws", "--server-timing", "-n", "1", "ws://127.0.0.1:9/"],
    ] {
        let refused = BELIER.output(&args);
        assert_eq!(refused.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains("--server-timing"), "{stderr}");
    }
    assert_eq!(server.sent().len(), 20, "the refused runs sent nothing");
}

#[test]
fn the_built_in_targets_timing_is_read_over_http1_and_h2c() {
    let s = belier_testserver::Server::start(belier_testserver::Config {
        http2: true,
        threads: 2,
        ..belier_testserver::Config::default()
    })
    .unwrap();
    let url = s.url("/?timing=1&delay=3ms");
    for http2 in [false, true] {
        let before = s.counts().responses;
        let mut args = vec!["-n", "40", "-c", "4", "--server-timing", &url];
        if http2 {
            args.push("--http2");
        }
        let doc = BELIER.json(&args);
        let st = &doc["server_timing"];
        let answered = s.counts().responses - before;
        assert_eq!(answered, 40);
        assert_eq!(
            (&st["timed"], &st["missing"]),
            (&40.into(), &0.into()),
            "http2 {http2}: {st}"
        );
        // Each handler slept its 3 ms delay at least, and said so.
        let app = &st["metrics_us"]["app"];
        assert!(
            app["min"].as_u64().unwrap() >= 3_000,
            "http2 {http2}: {app}"
        );
    }
}

#[test]
fn shards_saved_apart_merge_their_server_timing_exactly() {
    let s = belier_testserver::Server::start(belier_testserver::Config::default()).unwrap();
    let dir = belier_testsupport::temp_dir("server-timing-shards");
    let url = s.url("/?timing=1");
    let mut files = Vec::new();
    let mut apps = Vec::new();
    for i in 1..=2 {
        let file = dir.join(format!("s{i}.jsonl"));
        let shard = format!("{i}/2");
        let file_arg = file.display().to_string();
        let args = [
            "-n", "100", "-c", "2", "-t", "2", "--name", "timed", "--shard", &shard,
        ];
        let doc =
            BELIER.json(&[&args[..], &["--server-timing", "--save", &file_arg, &url]].concat());
        apps.push(doc["server_timing"]["metrics_us"]["app"].clone());
        files.push(file_arg);
    }
    let mut args = vec!["report", "--type", "json"];
    args.extend(files.iter().map(String::as_str));
    let doc: Value = serde_json::from_slice(&BELIER.ok(&args).stdout).unwrap();
    let st = &doc["server_timing"];
    // Each shard's responses, every one timed, and the figures of both in one histogram.
    assert_eq!(s.counts().responses, 100);
    assert_eq!(
        (&st["timed"], &st["metrics_us"]["app"]["count"]),
        (&100.into(), &100.into()),
        "{st}"
    );
    let counts: Vec<u64> = apps.iter().map(|a| a["count"].as_u64().unwrap()).collect();
    assert_eq!(counts, [50, 50]);
    let max = |a: &Value| a["max"].as_u64().unwrap();
    assert_eq!(
        max(&st["metrics_us"]["app"]),
        apps.iter().map(max).max().unwrap()
    );
}

#[test]
fn a_plans_server_timing_option_reads_the_header_of_every_step() {
    let s = belier_testserver::Server::start(belier_testserver::Config::default()).unwrap();
    let dir = belier_testsupport::temp_dir("server-timing-plan");
    let plan = dir.join("timed.yaml");
    let text = format!(
        "target: {}\nserver_timing: true\nload: {{ vus: 2 }}\nscenarios:\n  - steps:\n      - get: /?timing=1&delay=1ms\n      - get: /\n",
        s.url("")
    );
    std::fs::write(&plan, text).unwrap();
    let args = [
        "run",
        plan.to_str().unwrap(),
        "--iterations",
        "20",
        "--output",
        "json",
    ];
    let doc: Value = serde_json::from_slice(&BELIER.ok(&args).stdout).unwrap();
    let st = &doc["server_timing"];
    // Of each iteration's two requests, the first asked for the header and the second not.
    assert_eq!(s.counts().responses, 40);
    assert_eq!(
        (&st["timed"], &st["missing"]),
        (&20.into(), &20.into()),
        "{st}"
    );
    assert!(
        st["metrics_us"]["app"]["min"].as_u64().unwrap() >= 1_000,
        "{st}"
    );
}
