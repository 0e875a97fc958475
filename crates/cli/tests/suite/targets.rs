//! `belier --targets`: many requests in one run, through the real binary, against belier's
//! test server on 127.0.0.1, which records every request (method, path, headers, body). The
//! server's counts per target must equal the report's per-target table, exactly.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use belier_testserver::{Config, Server};
use belier_testsupport::temp_dir;
use serde_json::Value;

belier_testsupport::binary!();

/// A test server on 127.0.0.1:0 that keeps the last 10,000 requests.
fn server() -> Server {
    Server::start(Config {
        threads: 2,
        record_requests: 10_000,
        ..Config::default()
    })
    .expect("test server starts")
}

const BODY: &str = "{\"item\":42}";

/// The acceptance file: a GET, a POST with a body file, a PUT with a header.
fn three_targets(dir: &Path, s: &Server) -> String {
    std::fs::write(dir.join("item.json"), BODY).unwrap();
    format!(
        "# three targets\nGET {a}\n\nPOST {b}\nContent-Type: application/json\n@item.json\n\n\
         PUT {c}\nX-Token: put-token\n\n",
        a = s.url("/a"),
        b = s.url("/b"),
        c = s.url("/c?x=1"),
    )
}

/// What the server saw: requests by method, path and body.
fn seen(s: &Server) -> BTreeMap<(String, String, String), u64> {
    let mut by = BTreeMap::new();
    for r in s.recent_requests() {
        let body = String::from_utf8_lossy(&r.body).into_owned();
        *by.entry((r.method, r.target, body)).or_insert(0) += 1;
    }
    by
}

/// `belier --targets FILE ARGS...`.
fn run(file: &Path, args: &[&str]) -> Output {
    belier()
        .arg("--targets")
        .arg(file)
        .args(args)
        .output()
        .expect("belier runs")
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

fn validate(doc: &Value) {
    let schema: Value = serde_json::from_str(belier_report::SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// The report's per-target table as (method, path, requests), and checks that every row
/// had its responses.
fn table(doc: &Value, s: &Server) -> Vec<(String, String, u64)> {
    let origin = s.url("");
    doc["targets"]
        .as_array()
        .expect("a targets table")
        .iter()
        .map(|t| {
            assert_eq!(t["errors"], 0, "{t}");
            assert_eq!(t["failures"], 0, "{t}");
            assert_eq!(t["latency_us"]["count"], t["requests"], "{t}");
            let url = t["url"].as_str().unwrap();
            let path = url
                .strip_prefix(origin.trim_end_matches('/'))
                .unwrap_or(url);
            (
                t["method"].as_str().unwrap().to_string(),
                path.to_string(),
                t["requests"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The server's counts, keyed as the table is, with the body each target must carry.
fn expected(n: u64) -> BTreeMap<(String, String, String), u64> {
    [
        ("GET", "/a", ""),
        ("POST", "/b", BODY),
        ("PUT", "/c?x=1", ""),
    ]
    .into_iter()
    .map(|(m, p, b)| ((m.to_string(), p.to_string(), b.to_string()), n))
    .collect()
}

fn assert_table_matches(doc: &Value, s: &Server, n: u64) {
    validate(doc);
    let by = seen(s);
    assert_eq!(by, expected(n), "server side");
    let rows = table(doc, s);
    assert_eq!(
        rows,
        [
            ("GET".to_string(), "/a".to_string(), n),
            ("POST".to_string(), "/b".to_string(), n),
            ("PUT".to_string(), "/c?x=1".to_string(), n),
        ]
    );
    assert_eq!(doc["summary"]["requests"], 3 * n);
    // The PUT's header went with every PUT, and only with it.
    for r in s.recent_requests() {
        assert_eq!(r.header("X-Token").is_some(), r.method == "PUT", "{r:?}");
    }
}

#[test]
fn a_targets_file_sends_each_target_in_turn_and_the_table_counts_them() {
    let s = server();
    let dir = temp_dir("file");
    let file = dir.join("targets.txt");
    std::fs::write(&file, three_targets(&dir, &s)).unwrap();
    let out = run(
        &file,
        &["-n", "300", "-c", "4", "-t", "2", "--output", "json"],
    );
    let doc = json(&out);
    assert_table_matches(&doc, &s, 100);
    assert_eq!(doc["run"]["targets"].as_array().unwrap().len(), 3);

    // The text report shows the same table.
    let out = run(&file, &["-n", "30", "-c", "2"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\nTargets  (latency"), "{text}");
    let row = format!("POST {}", s.url("/b"));
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&row))
        .expect("the POST row");
    assert_eq!(line.split_whitespace().nth(2), Some("10"), "{line}");
}

#[test]
fn the_same_targets_stream_on_standard_input_as_they_come() {
    let s = server();
    let dir = temp_dir("stdin");
    let batch = three_targets(&dir, &s);
    let mut child = belier()
        .args(["--targets", "-", "-c", "2", "--output", "json"])
        .args(["--save", "stream.jsonl"])
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(batch.as_bytes()).unwrap();
    stdin.flush().unwrap();
    // The first targets are sent while the generator still has the stream open: belier does
    // not wait for the end of its input.
    assert!(
        s.wait_for(Duration::from_secs(20), |c| c.requests >= 3),
        "the first batch was not sent before the stream ended"
    );
    for _ in 1..20 {
        stdin.write_all(batch.as_bytes()).unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let doc = json(&out);
    assert_table_matches(&doc, &s, 20);
    // The results file names the stream's targets at its end (its header could not): the
    // report read back from it has the same per-target table.
    let out = belier()
        .args(["report", "stream.jsonl", "--type", "json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let again = json(&out);
    assert_table_matches(&again, &s, 20);
    assert_eq!(again["targets"], doc["targets"]);
}

#[test]
fn json_lines_and_siege_lists_are_read_too() {
    let s = server();
    let dir = temp_dir("formats");
    std::fs::write(dir.join("item.json"), BODY).unwrap();
    let json_lines = format!(
        "{{\"method\":\"GET\",\"url\":\"{a}\"}}\n\
         {{\"method\":\"POST\",\"url\":\"{b}\",\"body\":\"eyJpdGVtIjo0Mn0=\"}}\n\
         {{\"method\":\"PUT\",\"url\":\"{c}\",\"header\":{{\"X-Token\":[\"put-token\"]}}}}\n",
        a = s.url("/a"),
        b = s.url("/b"),
        c = s.url("/c?x=1"),
    );
    std::fs::write(dir.join("targets.jsonl"), json_lines).unwrap();
    let out = run(
        &dir.join("targets.jsonl"),
        &["-n", "30", "-c", "3", "--output", "json"],
    );
    assert_table_matches(&json(&out), &s, 10);

    let s = server();
    let siege = format!(
        "{a}\n{b} POST <item.json\n",
        a = s.url("/a"),
        b = s.url("/b"),
    );
    std::fs::write(dir.join("urls.txt"), siege).unwrap();
    let out = run(
        &dir.join("urls.txt"),
        &[
            "--targets-format",
            "siege",
            "-n",
            "20",
            "-c",
            "2",
            "--output",
            "json",
        ],
    );
    let doc = json(&out);
    validate(&doc);
    let mut want = expected(10);
    want.remove(&("PUT".into(), "/c?x=1".into(), String::new()));
    assert_eq!(seen(&s), want);
    let rows = table(&doc, &s);
    assert_eq!(rows.iter().map(|r| r.2).collect::<Vec<_>>(), [10, 10]);
}

#[test]
fn random_order_repeats_with_its_seed() {
    let s = server();
    let dir = temp_dir("random");
    let file = dir.join("targets.txt");
    std::fs::write(&file, three_targets(&dir, &s)).unwrap();
    let counts = |seed: &str| {
        let args = [
            "--order", "random", "--seed", seed, "-n", "90", "-c", "1", "-t", "1",
        ];
        let out = run(&file, &[&args[..], &["--output", "json"]].concat());
        table(&json(&out), &s)
            .into_iter()
            .map(|r| r.2)
            .collect::<Vec<_>>()
    };
    let first = counts("5");
    assert_eq!(first.iter().sum::<u64>(), 90);
    assert!(first.iter().all(|&n| n > 0), "{first:?}");
    assert_ne!(first, [30, 30, 30], "random is not in turn");
    assert_eq!(counts("5"), first);
}

#[test]
fn a_malformed_line_exits_2_naming_the_file_and_line() {
    let s = server();
    let dir = temp_dir("bad");
    let file = dir.join("targets.txt");
    std::fs::write(
        &file,
        format!("GET {}\nthis is not a header\n", s.url("/a")),
    )
    .unwrap();
    let out = run(&file, &["-n", "3"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:2:1: expected a header", file.display())),
        "{err}"
    );
    assert_eq!(s.counts().requests, 0, "nothing is sent from a bad file");

    // Request splitting and false framing (issue 28), in every format: exit 2 at the line,
    // nothing sent.
    let url = s.url("/a");
    let cases = [
        (
            format!("{{\"method\":\"GET\",\"url\":\"{url}\",\"header\":{{\"X-A\":[\"a\\r\\nX-Injected: 1\"]}}}}\n"),
            ":1:1: the value of header `X-A` holds a line break (CR, \\r)",
        ),
        (
            format!("{{\"method\":\"GET\",\"url\":\"{url}\\r\\nX-Injected: 1\"}}\n"),
            ":1:1: the URL",
        ),
        (
            format!("GET {url}\n\nPOST {url}\nContent-Length: 100\n@body.txt\n"),
            ":3:1: `Content-Length: 100` does not match the body, which is 5 bytes",
        ),
    ];
    std::fs::write(dir.join("body.txt"), "hello").unwrap();
    for (text, expected) in cases {
        std::fs::write(&file, &text).unwrap();
        let out = run(&file, &["-n", "3"]);
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{}{expected}", file.display())),
            "{text}: {err}"
        );
    }
    assert_eq!(s.counts().requests, 0, "nothing is sent from a bad file");

    // In a stream the targets before the bad line are sent and reported; then exit 2.
    let mut child = belier()
        .args(["--targets", "-", "-c", "1", "--output", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    write!(
        stdin,
        "GET {}\n\nGET {}\n\nBROKEN\n",
        s.url("/a"),
        s.url("/b")
    )
    .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("-:5:1: expected `METHOD URL`"), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the report still");
    assert_eq!(doc["summary"]["requests"], 2);
    assert_eq!(s.counts().requests, 2);
}

#[test]
fn targets_on_several_hosts_get_a_connection_pool_each() {
    let (one, two) = (server(), server());
    let dir = temp_dir("hosts");
    let file = dir.join("targets.txt");
    std::fs::write(
        &file,
        format!(
            "GET {}\n\nGET {}\n\nPOST {}\n@item.json\n",
            one.url("/a"),
            two.url("/b"),
            one.url("/c")
        ),
    )
    .unwrap();
    std::fs::write(dir.join("item.json"), BODY).unwrap();
    let out = run(
        &file,
        &["-n", "60", "-c", "2", "-t", "1", "--output", "json"],
    );
    let doc = json(&out);
    validate(&doc);
    let count = |s: &Server, method: &str, path: &str| {
        s.recent_requests()
            .iter()
            .filter(|r| r.method == method && r.target == path)
            .count()
    };
    assert_eq!(count(&one, "GET", "/a"), 20);
    assert_eq!(count(&one, "POST", "/c"), 20);
    assert_eq!(one.counts().requests, 40);
    assert_eq!(count(&two, "GET", "/b"), 20);
    assert_eq!(two.counts().requests, 20);
    // Each request named its own host, and each user kept one connection to each host it
    // sent to (2 users: at most 2 connections a host).
    for s in [&one, &two] {
        let host = s.addr().to_string();
        assert!(s
            .recent_requests()
            .iter()
            .all(|r| r.header("Host") == Some(&host)));
        let c = s.counts().connections;
        assert!((1..=2).contains(&c), "{c} connections");
    }
    let urls: Vec<_> = doc["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["url"].as_str().unwrap().to_string(),
                t["requests"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        urls,
        [
            (one.url("/a"), 20),
            (two.url("/b"), 20),
            (one.url("/c"), 20)
        ]
    );

    // HTTP/2 shares a connection per host: several hosts are refused, naming the flag.
    let out = run(&file, &["-n", "3", "--http2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--http2"));
}

/// `--follow`: a chain of 3 redirects from the built-in target is 4 hops per request, each
/// counted and timed in its own row, and each seen by the server.
#[test]
fn follow_times_every_hop_of_a_redirect_chain() {
    let s = server();
    let url = s.url("/chain?redirect=3");
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args([
            &url, "--follow", "5", "-n", "40", "-c", "1", "--output", "json",
        ])
        .output()
        .unwrap();
    let doc = json(&out);
    validate(&doc);
    let seen = seen(&s);
    let hops = [
        "/chain?redirect=3",
        "/chain?redirect=2",
        "/chain?redirect=1",
        "/chain",
    ];
    for path in hops {
        assert_eq!(
            seen.get(&("GET".to_string(), path.to_string(), String::new())),
            Some(&10),
            "{path}: {seen:?}"
        );
    }
    assert_eq!(s.counts().requests, 40);
    let rows = doc["targets"].as_array().unwrap();
    // The target's row, then one per hop followed: 3 of the 5 allowed were needed.
    let counts: Vec<u64> = rows
        .iter()
        .map(|r| r["requests"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [10, 10, 10, 10, 0, 0]);
    for row in &rows[..4] {
        assert_eq!(row["latency_us"]["count"], 10, "{row}");
        assert_eq!(row["failures"], 0, "{row}");
    }
    assert_eq!(doc["status_codes"]["302"], 30);
    assert_eq!(doc["status_codes"]["200"], 10);
    assert_eq!(doc["iterations"]["count"], 10);
}
