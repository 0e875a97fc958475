//! Streamed bodies (`--stream`, `--llm`) against real servers on loopback: a Python server
//! (stdlib, threads, `time.sleep` to absolute due times) that sends Server-Sent Events or an
//! OpenAI-compatible token stream with a set first delay and gap and logs when it sent each;
//! belier's time to first event or token, gaps and counts are checked against that log. The
//! built-in target's streams over HTTP/1.1 and HTTP/2 (h2c) are counted too.

// The measured figures are printed beside the server's (`--nocapture`), for the record.
#![allow(clippy::print_stderr)]

use std::path::{Path, PathBuf};

use belier_testserver::{Config, Server};
use belier_testsupport::python::PythonServer;
use serde_json::Value;

belier_testsupport::binary!(BELIER);

/// The server's handler (see [`belier_testsupport::python::SERVE`]), run with `MODE COUNT
/// FIRST_MS GAP_MS STALL_AT STALL_MS LOG`. MODE is
/// `sse` (events, a comment block every 10th) or `llm` (a role chunk without content at
/// once, COUNT token chunks, a `usage` chunk, `[DONE]`). The request numbered STALL_AT (from
/// 0) waits STALL_MS more before its first. Each stream appends a JSON line to LOG: when its
/// request arrived and when it wrote each event or token (monotonic seconds, taken as the
/// write starts: a stamp after it would add the thread's wait for the GIL).
const SERVER: &str = r#"
import json, socketserver, sys, threading, time
mode, count = sys.argv[1], int(sys.argv[2])
first, gap = float(sys.argv[3]) / 1e3, float(sys.argv[4]) / 1e3
stall_at, stall, log = int(sys.argv[5]), float(sys.argv[6]) / 1e3, sys.argv[7]
lock, seen = threading.Lock(), [0]
HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n")
ROLE = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
TOKEN = b'data: {"choices":[{"index":0,"delta":{"content":"tok "}}]}\n\n'

# A minimal HTTP/1.1 server (keep-alive, bodies by Content-Length): http.server's header
# parsing costs a loaded machine milliseconds, which would show in every first event.
class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            length = None
            line = self.rfile.readline()
            if not line:
                return
            while line not in (b"\r\n", b"\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
                line = self.rfile.readline()
            if length:
                self.rfile.read(length)
            self.serve()
    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
    def serve(self):
        arrived = time.monotonic()
        with lock:
            i = seen[0]
            seen[0] += 1
        start = arrived + (stall if i == stall_at else 0.0)
        self.wfile.write(HEAD)
        if mode == "llm":
            self.chunk(ROLE)
        emits = []
        for k in range(count):
            due = start + first + k * gap
            while (left := due - time.monotonic()) > 0:
                time.sleep(left)
            emits.append(time.monotonic())
            if mode == "sse":
                ping = b": ping\n\n" if k % 10 == 0 else b""
                self.chunk(ping + b"id: %d\ndata: tick %d\n\n" % (k, k))
            else:
                self.chunk(TOKEN)
        if mode == "llm":
            usage = b'data: {"choices":[],"usage":{"completion_tokens":%d}}\n\n' % count
            self.chunk(usage + b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        with lock, open(log, "a") as f:
            f.write(json.dumps({"arrived": arrived, "emits": emits}) + "\n")
"#;

/// A Python stream server for one test, killed on drop.
struct PyServer {
    server: PythonServer,
    log: PathBuf,
}

/// What the server sends: MODE, COUNT, FIRST_MS, GAP_MS, and which request stalls how long.
struct Streams {
    mode: &'static str,
    count: u32,
    first_ms: u32,
    gap_ms: u32,
    stall: Option<(u32, u32)>,
}

impl PyServer {
    /// Starts it, its log in the temp dir `name`.
    fn start(name: &str, s: &Streams) -> PyServer {
        let log = belier_testsupport::dirs::temp_dir(name).join("emits.jsonl");
        let (stall_at, stall_ms) = s.stall.unwrap_or((u32::MAX, 0));
        let numbers = [s.count, s.first_ms, s.gap_ms, stall_at, stall_ms].map(|n| n.to_string());
        let mut args = vec![s.mode.to_string()];
        args.extend(numbers);
        args.push(log.display().to_string());
        let server = PythonServer::start(SERVER, &args);
        PyServer { server, log }
    }

    fn url(&self, path: &str) -> String {
        self.server.url(path)
    }

    /// Each stream the server logged: (arrived, emits), seconds.
    fn streams(&self) -> Vec<(f64, Vec<f64>)> {
        read_log(&self.log)
    }

    /// Runs belier with `args` (JSON out) until the server sent every stream's first event on
    /// time (within 1 % of `first_ms` after the request came, by its own log), three times at
    /// most: on a machine loaded by others a Python thread is sometimes woken milliseconds
    /// late, which belier then measures rightly, but which is not the server the test sets
    /// up. Returns the last run's report and what the server logged of it.
    fn run_on_time(&self, first_ms: f64, args: &[&str]) -> (Value, Vec<(f64, Vec<f64>)>) {
        let mut attempt = 1;
        loop {
            let _ = std::fs::remove_file(&self.log);
            let doc = BELIER.json(args);
            let streams = self.streams();
            let latest = streams
                .iter()
                .map(|(a, e)| (e[0] - a) * 1e3)
                .fold(0.0, f64::max);
            if latest <= first_ms * 1.01 || attempt == 3 {
                return (doc, streams);
            }
            eprintln!("the server sent a first event {latest:.3} ms after a request: again");
            attempt += 1;
        }
    }
}

fn read_log(path: &Path) -> Vec<(f64, Vec<f64>)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let emits = v["emits"].as_array().unwrap();
            let emits = emits.iter().map(|e| e.as_f64().unwrap()).collect();
            (v["arrived"].as_f64().unwrap(), emits)
        })
        .collect()
}

/// The median of `values`, milliseconds.
fn median_ms(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2] * 1e3
}

/// The server's first delays and gaps, as it logged them, milliseconds (medians).
fn server_figures(streams: &[(f64, Vec<f64>)]) -> (f64, f64) {
    let firsts = streams.iter().map(|(a, e)| e[0] - a).collect();
    let gaps = streams
        .iter()
        .flat_map(|(_, e)| e.windows(2).map(|w| w[1] - w[0]))
        .collect();
    (median_ms(firsts), median_ms(gaps))
}

/// A percentile of a JSON latency summary, milliseconds.
fn p_ms(summary: &Value, p: &str) -> f64 {
    summary["percentiles"][p].as_f64().unwrap() / 1e3
}

fn assert_within(what: &str, got: f64, want: f64, margin: f64) {
    assert!(
        (got - want).abs() <= margin,
        "{what}: {got:.3} ms, want {want:.3} ± {margin:.3} ms"
    );
}

#[test]
fn sse_first_event_and_gaps_match_the_server_and_events_are_counted_exactly() {
    let server = PyServer::start(
        "streams-sse",
        &Streams {
            mode: "sse",
            count: 50,
            first_ms: 100,
            gap_ms: 20,
            stall: None,
        },
    );
    let url = server.url("/");
    let (doc, streams) =
        server.run_on_time(100.0, &["-n", "4", "-c", "2", "--stream", "sse", &url]);
    let m = &doc["messages"];
    let emitted: usize = streams.iter().map(|(_, e)| e.len()).sum();
    assert_eq!((streams.len(), emitted), (4, 200));
    assert_eq!(m["received"], 200, "{m}");
    assert_eq!(
        (&m["calls"], &m["unit"]),
        (&Value::from(4), &Value::from("events"))
    );
    let (first, gap) = server_figures(&streams);
    let belier_first = p_ms(&m["first_message_us"], "p50");
    let belier_gap = p_ms(&m["gap_us"], "p50");
    eprintln!("first p50: belier {belier_first:.3} server {first:.3}; gap p50: belier {belier_gap:.3} server {gap:.3}");
    assert_within("time to first event p50", belier_first, 100.0, 2.0);
    assert_within("server's first delay", first, 100.0, 2.0);
    assert_within("gap p50", belier_gap, 20.0, 0.5);
    assert_within("server's gap p50", gap, 20.0, 0.5);
    assert_eq!(m["gap_us"]["count"], 4 * 49);
}

#[test]
fn llm_ttft_itl_and_tokens_match_the_server() {
    let server = PyServer::start(
        "streams-llm",
        &Streams {
            mode: "llm",
            count: 40,
            first_ms: 80,
            gap_ms: 10,
            stall: None,
        },
    );
    let body = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let url = server.url("/v1/chat/completions");
    let args = ["-n", "4", "-c", "2", "--llm", "-d", body, &url];
    let (doc, streams) = server.run_on_time(80.0, &args);
    let m = &doc["messages"];
    assert_eq!(streams.len(), 4);
    // The role chunk without content is no token; the usage chunk gives the count.
    assert_eq!(
        (&m["received"], &m["tokens"]),
        (&Value::from(160), &Value::from(160)),
        "{m}"
    );
    assert_eq!(m["unit"], "tokens");
    let (ttft, itl) = server_figures(&streams);
    let belier_ttft = p_ms(&m["first_message_us"], "p50");
    let belier_itl = p_ms(&m["gap_us"], "p50");
    eprintln!("ttft p50: belier {belier_ttft:.3} server {ttft:.3}; itl p50: belier {belier_itl:.3} server {itl:.3}");
    assert_within("TTFT p50", belier_ttft, 80.0, 80.0 * 0.02);
    assert_within("ITL p50", belier_itl, 10.0, 10.0 * 0.02);
    assert_within("server's ITL p50", itl, 10.0, 10.0 * 0.02);
    // Tokens/s per stream as the server computes it: its tokens after the first over the
    // time from its first to its last.
    let (after_first, generation) = streams.iter().fold((0.0, 0.0), |(n, t), (_, e)| {
        (n + (e.len() - 1) as f64, t + (e.last().unwrap() - e[0]))
    });
    let server_rate = after_first / generation;
    let belier_rate = m["tokens_per_s_per_stream"].as_f64().unwrap();
    eprintln!("tokens/s per stream: belier {belier_rate:.2} server {server_rate:.2}");
    assert!(
        (belier_rate / server_rate - 1.0).abs() <= 0.02,
        "tokens/s per stream: belier {belier_rate:.2}, server {server_rate:.2}"
    );
}

#[test]
fn a_server_stall_under_an_open_loop_shows_in_corrected_ttft() {
    // 20 stream starts at 20/s on one connection: the fifth waits 400 ms more for its first
    // token, and those due meanwhile queue behind it. The server saw 10 ms for all others.
    let server = PyServer::start(
        "streams-stall",
        &Streams {
            mode: "llm",
            count: 3,
            first_ms: 10,
            gap_ms: 2,
            stall: Some((4, 400)),
        },
    );
    let doc = BELIER.json(&[
        "--rate",
        "20",
        "-n",
        "20",
        "--max-connections",
        "1",
        "--llm",
        "-d",
        "{}",
        &server.url("/v1/completions"),
    ]);
    let m = &doc["messages"];
    let streams = server.streams();
    assert_eq!(streams.len(), 20);
    let (server_ttft, _) = server_figures(&streams);
    assert_within("server's TTFT p50", server_ttft, 10.0, 2.0);
    let ttft = &m["first_message_us"];
    assert_eq!(ttft["count"], 20, "{m}");
    let (p50, max) = (p_ms(ttft, "p50"), ttft["max"].as_f64().unwrap() / 1e3);
    eprintln!("corrected ttft: p50 {p50:.1} max {max:.1}; server p50 {server_ttft:.1}");
    // The stalled stream, from when it was due; and at least half of them waited (six
    // starts were due during the stall, each later one less).
    assert!(max >= 400.0, "max {max:.1} ms");
    assert!(p50 >= 3.0 * server_ttft, "p50 {p50:.1} ms");
}

#[test]
fn the_built_in_target_streams_over_http1_and_h2c() {
    let s = Server::start(Config {
        http2: true,
        threads: 2,
        ..Config::default()
    })
    .unwrap();
    let sse = s.url("/sse?events=20&first=30ms&gap=5ms");
    for http2 in [false, true] {
        let mut args = vec!["-n", "6", "-c", "3", "--stream", "sse", &sse];
        if http2 {
            args.insert(0, "--http2");
        }
        let doc = BELIER.json(&args);
        let m = &doc["messages"];
        assert_eq!(
            (&m["received"], &m["calls"]),
            (&Value::from(120), &Value::from(6)),
            "{m}"
        );
        // Never early; late by what a loaded machine adds to six streams' connects and
        // first waits (measured up to 38.6 ms at a load of 6 on two cores).
        let first = p_ms(&m["first_message_us"], "p50");
        assert!(
            (30.0..40.0).contains(&first),
            "first event p50 {first:.3} ms"
        );
        assert_within("gap p50", p_ms(&m["gap_us"], "p50"), 5.0, 0.5);
    }
    let llm = s.url("/v1/chat/completions?tokens=12&ttft=20&itl=4");
    let doc = BELIER.json(&["--http2", "-n", "3", "--llm", "-d", "{}", &llm]);
    let m = &doc["messages"];
    assert_eq!(
        (&m["received"], &m["tokens"]),
        (&Value::from(36), &Value::from(36)),
        "{m}"
    );
    let out = BELIER.ok(&["-n", "2", "--llm", "-d", "{}", &llm]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("ttft") && text.contains("output tokens"),
        "{text}"
    );
}

#[test]
fn llm_without_a_body_is_refused_with_exit_2() {
    let out = BELIER.output(&["--llm", "http://127.0.0.1:9/v1/chat/completions"]);
    belier_testsupport::assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--llm"));
}

#[test]
fn llm_figures_are_saved_and_two_shards_merge_exactly() {
    let s = Server::start(Config::default()).unwrap();
    let dir = belier_testsupport::dirs::temp_dir("streams-results");
    let llm = s.url("/v1/chat/completions?tokens=8&ttft=5&itl=2");
    let shard = |i: usize| {
        let file = dir.join(format!("llm-{i}.jsonl"));
        let file = file.to_str().unwrap().to_owned();
        let args = ["-n", "5", "-c", "5", "--llm", "-d", "{}", "--name", "llm"];
        let live = BELIER.json(&[&args[..], &["--save", &file, &llm]].concat());
        (live, file)
    };
    let ((live, a), (_, b)) = (shard(0), shard(1));
    let report = |files: &[&str]| -> Value {
        let out = BELIER.ok(&[&["report", "--type", "json"][..], files].concat());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let again = report(&[&a]);
    for key in ["received", "tokens", "unit", "tokens_per_s_per_stream"] {
        assert_eq!(live["messages"][key], again["messages"][key], "{key}");
    }
    let merged = report(&[&a, &b]);
    let m = &merged["messages"];
    assert_eq!(
        (&m["calls"], &m["received"]),
        (&Value::from(10), &Value::from(80)),
        "{m}"
    );
    assert_eq!(
        (&m["tokens"], &m["unit"]),
        (&Value::from(80), &Value::from("tokens"))
    );
    assert_eq!(m["gap_us"]["count"], 70);
}

#[test]
fn a_plans_stream_step_counts_its_tokens_and_its_other_steps_stay_whole() {
    // A warm-up request read whole, then a chat completion per iteration whose prompt comes
    // from a data file, its body cut into tokens: only the second step's 10 streams count.
    let s = Server::start(Config::default()).unwrap();
    let dir = belier_testsupport::dirs::temp_dir("streams-plan");
    std::fs::write(
        dir.join("prompts.csv"),
        "prompt\nhello\n\"say \"\"hi\"\"\"\nbye\n",
    )
    .unwrap();
    let plan = dir.join("plan.yaml");
    let text = format!(
        r#"target: {}
data:
  prompts: {{ file: prompts.csv }}
load: {{ vus: 2, iterations: 10 }}
scenarios:
  - steps:
      - name: warm
        get: /?size=64
      - name: chat
        post: /v1/chat/completions?tokens=6&ttft=5&itl=1
        json: {{ model: m, stream: true, messages: [{{ role: user, content: "{{{{ prompts.prompt }}}}" }}] }}
        stream: llm
"#,
        s.url("")
    );
    std::fs::write(&plan, text).unwrap();
    let out = BELIER.ok(&["run", plan.to_str().unwrap(), "--output", "json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let m = &doc["messages"];
    assert_eq!(
        (&m["calls"], &m["unit"]),
        (&Value::from(10), &Value::from("tokens")),
        "{m}"
    );
    assert_eq!(
        (&m["received"], &m["tokens"]),
        (&Value::from(60), &Value::from(60)),
        "{m}"
    );
    assert_eq!(m["first_message_us"]["count"], 10, "{m}");
    assert_eq!(s.counts().requests, 20);
}
