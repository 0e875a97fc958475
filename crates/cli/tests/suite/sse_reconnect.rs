//! SSE reconnection (`--stream sse --sse-reconnect`) against a Python server on loopback
//! (stdlib, a thread per connection) that sends each stream's events with ids and
//! `retry: 50`, closes the stream after a set number of events, and logs each request's
//! `Last-Event-ID`, when it arrived, the last id it sent and when it closed the stream. The
//! reconnections belier counts, the ids they carry and their waits are checked against that
//! log; a stream the server drops mid-body and a 204 are played too.

use belier_testsupport::python::PythonServer;
use serde_json::Value;

use crate::cli::error_count;

belier_testsupport::binary!(BELIER);

/// The server's handler (see [`belier_testsupport::python::SERVE`]), run with `EVENTS
/// RETRY_MS DROP_AT NO_CONTENT_AT LOG`. Each connection carries one stream (`Connection:
/// close`): `retry: RETRY_MS`, then EVENTS events 2 ms apart with ids `S-K` (S numbers the
/// requests from 0 in the order they came, K the event), then the end of the chunked body and
/// the close. The request numbered DROP_AT sends two events and half a third (its id and no
/// blank line), then drops the connection without ending the body; the one numbered
/// NO_CONTENT_AT is answered 204. Each request appends a JSON line to LOG: its number, its
/// `Last-Event-ID` (null without one), when it arrived and when its stream was closed
/// (monotonic seconds), the last id of an event it completed (null: none), and whether it
/// carried a `traceparent`.
const SERVER: &str = r#"
import json, socketserver, sys, threading, time
events, retry = int(sys.argv[1]), int(sys.argv[2])
drop_at, no_content_at, log = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
lock, seen = threading.Lock(), [0]

class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        last_event_id, traced = None, False
        line = self.rfile.readline()
        if not line:
            return
        while line not in (b"\r\n", b"\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"last-event-id":
                last_event_id = value.strip().decode()
            traced |= name.strip().lower() == b"traceparent"
            line = self.rfile.readline()
        arrived = time.monotonic()
        with lock:
            i = seen[0]
            seen[0] += 1
        last = None
        if i == no_content_at:
            self.wfile.write(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
        else:
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
            self.chunk(b"retry: %d\n\n" % retry)
            for k in range(2 if i == drop_at else events):
                time.sleep(0.002)
                last = "%d-%d" % (i, k)
                self.chunk(b"id: %s\ndata: tick\n\n" % last.encode())
            if i == drop_at:
                self.chunk(b"id: %d-2\ndata: half" % i)
            else:
                self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.connection.close()
        closed = time.monotonic()
        with lock, open(log, "a") as f:
            f.write(json.dumps({"i": i, "last_event_id": last_event_id, "arrived": arrived,
                                "closed": closed, "last_id": last, "traced": traced}) + "\n")
    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
"#;

/// One request as the server logged it.
#[derive(Debug)]
struct Logged {
    i: u64,
    last_event_id: Option<String>,
    arrived: f64,
    closed: f64,
    last_id: Option<String>,
    traced: bool,
}

/// Starts the server (`drop_at`, `no_content_at`: request numbers, `u32::MAX` for none), runs
/// belier with `args` and the server's URL (JSON out, whatever its exit code), and returns its
/// report and the server's log in the order the requests came.
fn run(name: &str, drop_at: u32, no_content_at: u32, args: &[&str]) -> (Value, Vec<Logged>) {
    let log = belier_testsupport::dirs::temp_dir(name).join("requests.jsonl");
    let numbers = [5, 50, drop_at, no_content_at].map(|n| n.to_string());
    let mut server_args = numbers.to_vec();
    server_args.push(log.display().to_string());
    let server = PythonServer::start(SERVER, &server_args);
    let url = server.url("/events");
    let out = BELIER.output(&[&["--output", "json"][..], args, &[&url]].concat());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    // The last request's line is written once its stream closed, which belier saw first.
    drop(server);
    let mut logged: Vec<Logged> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let text = |key: &str| v[key].as_str().map(str::to_owned);
            Logged {
                i: v["i"].as_u64().unwrap(),
                last_event_id: text("last_event_id"),
                arrived: v["arrived"].as_f64().unwrap(),
                closed: v["closed"].as_f64().unwrap(),
                last_id: text("last_id"),
                traced: v["traced"].as_bool().unwrap(),
            }
        })
        .collect();
    logged.sort_by_key(|l| l.i);
    (doc, logged)
}

/// Checks that each request with a `Last-Event-ID` names the last id of exactly one earlier
/// stream that no other reconnection named, and arrived at least `retry_ms` after that
/// stream was closed; returns how many carried one.
fn check_reconnections(logged: &[Logged], retry_ms: f64) -> usize {
    let mut named = std::collections::HashSet::new();
    for r in logged.iter().filter(|r| r.last_event_id.is_some()) {
        let id = r.last_event_id.as_deref();
        let before: Vec<_> = logged
            .iter()
            .filter(|s| s.last_id.as_deref() == id)
            .collect();
        assert_eq!(before.len(), 1, "request {} names {id:?}", r.i);
        assert!(
            named.insert(before[0].i),
            "two reconnections of stream {}",
            before[0].i
        );
        let waited_ms = (r.arrived - before[0].closed) * 1e3;
        assert!(
            waited_ms >= retry_ms,
            "request {} came {waited_ms:.3} ms after stream {} closed",
            r.i,
            before[0].i
        );
    }
    named.len()
}

#[test]
fn each_connection_reconnects_with_its_last_event_id_after_the_server_s_retry() {
    // Two connections, eight streams: each connection's first is new, its next three
    // reconnect. The flag's own delay (3s) would make the run last seconds: `retry: 50` rules.
    let saved = belier_testsupport::dirs::temp_dir("sse-reconnect-saved").join("run.jsonl");
    let saved = saved.to_str().unwrap();
    let save = ["--save", saved];
    // (Two threads: each holds one connection and four of the requests.)
    let args = [
        "-n",
        "8",
        "-c",
        "2",
        "-t",
        "2",
        "--stream",
        "sse",
        "--sse-reconnect",
    ];
    let (doc, logged) = run(
        "sse-reconnect",
        u32::MAX,
        u32::MAX,
        &[&args[..], &save].concat(),
    );
    assert_eq!(logged.len(), 8);
    let with_id = check_reconnections(&logged, 50.0);
    assert_eq!(with_id, 6);
    // Followed from each connection's first stream, the reconnections make two chains of four.
    let chain = |first: &Logged| {
        let mut length = 1;
        let mut at = first;
        while let Some(next) = logged
            .iter()
            .find(|l| l.last_event_id.is_some() && l.last_event_id == at.last_id)
        {
            (length, at) = (length + 1, next);
        }
        length
    };
    let firsts = logged.iter().filter(|l| l.last_event_id.is_none());
    assert_eq!(firsts.map(chain).collect::<Vec<_>>(), [4, 4]);
    let m = &doc["messages"];
    assert_eq!(
        (&m["calls"], &m["received"], &m["unit"]),
        (&Value::from(8), &Value::from(40), &Value::from("events")),
        "{m}"
    );
    let r = &m["reconnections"];
    assert_eq!(
        (&r["count"], &r["with_last_event_id"], &r["stops"]),
        (&Value::from(6), &Value::from(6), &Value::from(0)),
        "{r}"
    );
    let mean_ms = r["wait_mean_us"].as_f64().unwrap() / 1e3;
    assert!(
        (50.0..3_000.0).contains(&mean_ms),
        "mean wait {mean_ms:.3} ms"
    );
    assert_eq!(doc["summary"]["errors"], 0);
    // The interval series counts them too.
    let points = doc["series"].as_array().unwrap();
    let in_series: u64 = points
        .iter()
        .filter_map(|p| p["reconnections"].as_u64())
        .sum();
    assert_eq!(in_series, 6);
    // So does the results file, and the CSV series made from it.
    let out = BELIER.ok(&["report", "--type", "json", saved]);
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["messages"]["reconnections"], m["reconnections"]);
    let out = BELIER.ok(&["report", "--type", "csv", saved]);
    let csv = String::from_utf8(out.stdout).unwrap();
    assert!(
        csv.lines().next().unwrap().ends_with(",reconnections"),
        "{csv}"
    );
    let column: u64 = csv
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(column, 6, "{csv}");
    // Without the flag, every request is a new stream: no id, no reconnection.
    let (doc, logged) = run("sse-no-reconnect", u32::MAX, u32::MAX, &args[..8]);
    assert_eq!(logged.len(), 8);
    assert!(logged
        .iter()
        .all(|l| l.last_event_id.is_none() && !l.traced));
    assert!(
        doc["messages"]["reconnections"].is_null(),
        "{}",
        doc["messages"]
    );
}

#[test]
fn a_stream_dropped_mid_body_reconnects_and_a_204_stops_it() {
    // One connection, nine requests in turn. The fourth (3) ends mid-body after two events
    // and half a third: it is reconnected with its second event's id. The seventh (6) is
    // answered 204: the eighth is a new stream without an id, the ninth its reconnection.
    // Every request is traced too: a reconnection carries both headers.
    let args = [
        "-n",
        "9",
        "-c",
        "1",
        "--stream",
        "sse",
        "--sse-reconnect=20ms",
        "--trace-sample",
        "1",
    ];
    let (doc, logged) = run("sse-reconnect-faults", 3, 6, &args);
    assert_eq!(logged.len(), 9);
    let ids: Vec<Option<&str>> = logged.iter().map(|l| l.last_event_id.as_deref()).collect();
    assert_eq!(
        ids,
        [
            None,
            Some("0-4"),
            Some("1-4"),
            Some("2-4"),
            Some("3-1"),
            Some("4-4"),
            Some("5-4"),
            None,
            Some("7-4"),
        ]
    );
    assert_eq!(check_reconnections(&logged, 50.0), 7);
    assert!(logged.iter().all(|l| l.traced), "{logged:?}");
    let m = &doc["messages"];
    // Seven whole streams of five events, and the dropped one's two.
    assert_eq!(
        (&m["calls"], &m["received"]),
        (&Value::from(9), &Value::from(37)),
        "{m}"
    );
    let r = &m["reconnections"];
    assert_eq!(
        (&r["count"], &r["with_last_event_id"], &r["stops"]),
        (&Value::from(7), &Value::from(7), &Value::from(1)),
        "{r}"
    );
    assert_eq!(error_count(&doc, "closed_mid_body"), 1, "{}", doc["errors"]);
    assert_eq!(doc["status_codes"]["204"], 1, "{}", doc["status_codes"]);
    assert_eq!(doc["status_codes"]["200"], 7, "{}", doc["status_codes"]);
}

#[test]
fn reconnection_is_refused_where_it_cannot_apply_with_exit_2() {
    let url = "http://127.0.0.1:9/events";
    for (args, named) in [
        (&["--sse-reconnect", url][..], "--stream sse"),
        (&["--stream", "llm", "--sse-reconnect", url], "--stream sse"),
        (
            &["--stream", "sse", "--sse-reconnect", "--rate", "5", url],
            "--rate",
        ),
        (
            &["--stream", "sse", "--sse-reconnect", "--http2", url],
            "--http2",
        ),
        (
            &["--stream", "sse", "--sse-reconnect", "--cookies", url],
            "--cookies",
        ),
        (
            &["--stream", "sse", "--sse-reconnect", "--targets", "-"],
            "--targets",
        ),
        // A plan's `stream: sse` step sends what the plan says: `belier run` has no such flag.
        (&["run", "plan.yaml", "--sse-reconnect"], "--sse-reconnect"),
    ] {
        let out = BELIER.output(args);
        belier_testsupport::assert_exit(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("--sse-reconnect") && stderr.contains(named),
            "{args:?}: {stderr}"
        );
    }
}
