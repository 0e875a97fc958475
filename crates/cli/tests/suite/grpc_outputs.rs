//! A streaming gRPC run's messages wherever a run is read: the live JSON report, the HTML
//! report, a StatsD output, and from its results file `belier report` (markdown, HTML, CSV,
//! JSON) and `belier compare`, each with the exact counts the built-in target counted.

use std::net::UdpSocket;
use std::time::Duration;

use belier_testserver::{Config, Server};
use belier_testsupport::dirs::temp_dir;
use serde_json::{json, Value};

belier_testsupport::binary!(BELIER);

/// Calls made, and response messages each: 40 × 50 = 2,000 messages in, 40 out.
const CALLS: u64 = 40;
const REPLIES: u64 = 50;

/// The StatsD counter `name`'s increments in `lines`, added up.
fn counted(lines: &[String], name: &str) -> u64 {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .filter_map(|rest| {
            let (value, kind) = rest.split_once('|')?;
            kind.starts_with('c').then(|| value.parse::<u64>().ok())?
        })
        .sum()
}

/// Every line the socket holds (the run has ended: they are all there).
fn received_lines(socket: &UdpSocket) -> Vec<String> {
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut lines = Vec::new();
    let mut buf = [0u8; 65_536];
    while let Ok(n) = socket.recv(&mut buf) {
        let text = String::from_utf8_lossy(&buf[..n]);
        lines.extend(text.lines().map(str::to_string));
    }
    lines
}

/// `belier report --type TYPE results`, its standard output.
fn report(kind: &str, results: &str) -> String {
    let out = BELIER.ok(&["report", "--type", kind, results]);
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_server_stream_s_messages_are_in_every_output_and_the_saved_results() {
    let server = Server::start(Config {
        http2: true,
        ..Config::default()
    })
    .expect("the target starts");
    let dir = temp_dir("grpc-outputs");
    let proto = dir.join("target.proto");
    std::fs::write(&proto, BELIER.ok(&["target", "--print-proto"]).stdout).unwrap();
    let (results, html) = (dir.join("run.jsonl"), dir.join("run.html"));
    let statsd = UdpSocket::bind("127.0.0.1:0").unwrap();
    let statsd_url = format!("statsd=udp://{}", statsd.local_addr().unwrap());
    let (results, html) = (results.display().to_string(), html.display().to_string());
    let target = server.addr().to_string();
    let message = format!(r#"{{"count": {REPLIES}}}"#);
    let calls = CALLS.to_string();
    let out = BELIER.ok(&[
        "grpc",
        &target,
        "--plaintext",
        "--call",
        "belier.target.Target/ServerStream",
        "--proto",
        &proto.display().to_string(),
        "-d",
        &message,
        "-n",
        &calls,
        "-c",
        "4",
        "--output",
        "json",
        "--save",
        &results,
        "--html",
        &html,
        "--metrics-out",
        &statsd_url,
    ]);
    let live: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let counts = server.counts();
    assert_eq!(
        [counts.grpc_messages_received, counts.grpc_messages_sent],
        [CALLS, CALLS * REPLIES]
    );
    let m = &live["messages"];
    assert_eq!(
        [&m["calls"], &m["sent"], &m["received"]],
        [&json!(CALLS), &json!(CALLS), &json!(CALLS * REPLIES)],
        "{live}"
    );

    // StatsD: the counters' increments add up to the counts.
    let lines = received_lines(&statsd);
    for (name, want) in [
        ("belier_grpc_streaming_calls_total", CALLS),
        ("belier_grpc_messages_sent_total", CALLS),
        ("belier_grpc_messages_received_total", CALLS * REPLIES),
        (
            "belier_grpc_message_gap_seconds_count",
            CALLS * (REPLIES - 1),
        ),
    ] {
        assert_eq!(counted(&lines, name), want, "{name} in {lines:?}");
    }

    // HTML, live and from the results file alike.
    let rows = [
        format!("<tr class=\"group\"><th>Streaming calls</th><td>{CALLS}</td></tr>"),
        "<tr><th>Messages received</th><td>2,000</td></tr>".to_string(),
        format!("<tr><th>Messages sent</th><td>{CALLS}</td></tr>"),
        "<tr><th>Received per call</th><td>50.0</td></tr>".to_string(),
    ];
    let live_html = std::fs::read_to_string(&html).unwrap();
    let saved_html = report("html", &results);
    for row in &rows {
        assert!(live_html.contains(row), "{row} in the live HTML");
        assert!(saved_html.contains(row), "{row} in the saved run's HTML");
    }

    // Markdown and JSON of the results file: the live run's messages.
    let markdown = report("markdown", &results);
    for row in [
        format!("| Streaming calls | {CALLS} |"),
        "| Messages received | 2,000 |".to_string(),
        format!("| Messages sent | {CALLS} |"),
    ] {
        assert!(markdown.contains(&row), "{row} in\n{markdown}");
    }
    let csv = report("csv-stats", &results);
    for row in [
        ",messages received,2000,",
        &format!(",messages sent,{CALLS},"),
    ] {
        assert!(csv.contains(row), "{row} in\n{csv}");
    }
    let saved: Value = serde_json::from_str(&report("json", &results)).unwrap();
    assert_eq!(saved["messages"], live["messages"]);

    // Compare: the messages rows, unchanged between the run and itself.
    let compared = BELIER.ok(&["compare", &results, &results]);
    let text = String::from_utf8(compared.stdout).unwrap();
    for (metric, value) in [("messages_received", "2,000"), ("messages_sent", "40")] {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(metric))
            .unwrap_or_else(|| panic!("no {metric} in\n{text}"));
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells, [metric, value, value, "+0.0", "%"], "{text}");
    }
}
