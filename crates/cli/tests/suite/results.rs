//! Results files through the real binary: saved as the run goes, re-reported, merged, and
//! surviving SIGKILL.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use belier_testserver::{Config, Server};
use belier_testsupport::temp_dir;
use serde_json::Value;

belier_testsupport::binary!();

fn run(args: &[&str]) -> Output {
    belier().args(args).output().expect("belier runs")
}

fn server() -> Server {
    Server::start(Config {
        threads: 2,
        ..Config::default()
    })
    .unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn a_saved_run_reports_the_same_figures_again() {
    let s = server();
    let dir = temp_dir("same");
    let file = dir.join("run.jsonl");
    let live = run(&[
        "-n",
        "2000",
        "-c",
        "8",
        "--output",
        "json",
        "--save",
        file.to_str().unwrap(),
        &s.url("/?status=201"),
    ]);
    assert_eq!(
        live.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&live.stderr)
    );
    let again = run(&["report", "--type", "json", file.to_str().unwrap()]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let (a, b) = (json(&live), json(&again));
    for key in [
        "requests",
        "responses",
        "succeeded",
        "errors",
        "bytes_in",
        "bytes_out",
        "connections_opened",
    ] {
        assert_eq!(a["summary"][key], b["summary"][key], "{key}");
    }
    assert_eq!(a["latency_us"], b["latency_us"]);
    assert_eq!(a["status_codes"], b["status_codes"]);
    assert_eq!(b["run"]["url"], s.url("/?status=201"));
    assert_eq!(b["summary"]["requests"], 2000);
}

#[test]
fn shards_with_one_name_merge_and_other_names_stand_apart() {
    let s = server();
    let dir = temp_dir("shards");
    let shard = |i: usize, name: &str| {
        let file = dir.join(format!("{name}-{i}.jsonl"));
        let out = run(&[
            "-n",
            "300",
            "-c",
            "3",
            "--name",
            name,
            "--save",
            file.to_str().unwrap(),
            &s.url("/"),
        ]);
        assert_eq!(out.status.code(), Some(0));
        file
    };
    let files = [
        shard(0, "api"),
        shard(1, "api"),
        shard(2, "api"),
        shard(0, "other"),
    ];
    let args: Vec<&str> = ["report", "--type", "json"]
        .into_iter()
        .chain(files.iter().map(|f| f.to_str().unwrap()))
        .collect();
    let doc = json(&run(&args));
    let runs = doc.as_array().expect("two runs: an array");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["summary"]["requests"], 900);
    assert_eq!(runs[0]["run"]["shards"], 3);
    assert_eq!(runs[0]["run"]["connections"], 9);
    assert_eq!(runs[1]["summary"]["requests"], 300);
    assert_eq!(s.counts().requests, 1200);
    // The three shards ran on this machine: its cores once, each shard's host listed (their
    // sum made a 3 × N-core host of it).
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(runs[0]["run"]["host_cores"], cores);
    assert_eq!(runs[1]["run"]["host_cores"], cores);
    let hosts = runs[0]["run"]["shard_hosts"]
        .as_array()
        .expect("each shard's host");
    assert_eq!(hosts.len(), 3);
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    for h in hosts {
        assert_eq!(h["cores"], cores);
        assert_eq!(h["name"], name.trim());
    }
    assert!(
        runs[1]["run"].get("shard_hosts").is_none(),
        "a single run has none"
    );
    let schema: Value = serde_json::from_str(belier_report::SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for run in runs {
        let errors: Vec<String> = validator
            .iter_errors(run)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
    }
    let text = run(&[
        "report",
        files[0].to_str().unwrap(),
        files[1].to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&text.stdout);
    let each = format!("{} ({cores} cores)", name.trim());
    assert!(
        text.contains(&format!("on 2 shards' hosts: {each}, {each}, target")),
        "{text}"
    );
}

#[test]
fn results_can_be_piped_into_report() {
    let s = server();
    let mut attack = belier()
        .args(["-n", "500", "-c", "5", "--save", "-", &s.url("/")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let piped = attack.stdout.take().unwrap();
    let report = belier()
        .args(["report", "--type", "json"])
        .stdin(piped)
        .output()
        .unwrap();
    let attack = attack.wait_with_output().unwrap();
    assert_eq!(attack.status.code(), Some(0));
    // With the results on standard output, the report goes to standard error.
    assert!(String::from_utf8_lossy(&attack.stderr).contains("Latency"));
    assert_eq!(json(&report)["summary"]["requests"], 500);
}

#[test]
fn sigkill_loses_at_most_the_interval_in_progress() {
    let s = server();
    let dir = temp_dir("kill");
    let file = dir.join("killed.jsonl");
    let mut child = belier()
        .args([
            "-z",
            "60s",
            "-c",
            "4",
            "--save",
            file.to_str().unwrap(),
            &s.url("/?delay=2ms"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(3_300));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let seen_at_kill = s.counts().requests;
    let out = run(&["report", "--type", "json", file.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json(&out);
    let series = doc["series"].as_array().unwrap();
    assert!(series.len() >= 2, "{} intervals", series.len());
    let full: Vec<&Value> = series
        .iter()
        .filter(|p| p["width_s"].as_f64().unwrap() >= 0.999)
        .collect();
    assert!(full.len() >= 2, "full intervals: {}", full.len());
    // Everything in the file was seen by the server, and the file holds all but the
    // interval in progress (at 4 connections × 2 ms, well under one interval's worth).
    let saved = doc["summary"]["requests"].as_u64().unwrap();
    assert!(saved <= seen_at_kill, "{saved} > {seen_at_kill}");
    let per_interval = full
        .iter()
        .map(|p| p["requests"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(
        seen_at_kill - saved <= per_interval + per_interval / 2,
        "lost {} of {seen_at_kill}",
        seen_at_kill - saved
    );
    let warnings = doc["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("no end line")),
        "{warnings:?}"
    );
}

#[test]
fn report_types_render_and_windows_select() {
    let s = server();
    let dir = temp_dir("types");
    let file = dir.join("t.jsonl");
    let out = run(&[
        "-z",
        "2500ms",
        "-c",
        "2",
        "--interval",
        "500ms",
        "--save",
        file.to_str().unwrap(),
        &s.url("/"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let f = file.to_str().unwrap();
    let text = String::from_utf8(run(&["report", f]).stdout).unwrap();
    assert!(
        text.contains("Latency") && text.contains("Verdict"),
        "{text}"
    );
    let csv = String::from_utf8(run(&["report", "--type", "csv", f]).stdout).unwrap();
    assert!(csv.lines().count() >= 5, "{csv}");
    let md = String::from_utf8(run(&["report", "--type", "markdown", f]).stdout).unwrap();
    assert!(md.contains('|'), "{md}");
    let hdr = String::from_utf8(run(&["report", "--type", "hdr", f]).stdout).unwrap();
    assert!(hdr.contains("HIST"), "{hdr}");
    let html = String::from_utf8(run(&["report", "--type", "html", f]).stdout).unwrap();
    assert!(html.contains("<svg"), "html");
    let all = json(&run(&["report", "--type", "json", f]));
    let window = json(&run(&[
        "report", "--type", "json", "--from", "1s", "--to", "2s", f,
    ]));
    assert_eq!(window["series"].as_array().unwrap().len(), 2);
    assert!(window["summary"]["requests"].as_u64() < all["summary"]["requests"].as_u64());
}

#[test]
fn html_shortcut_writes_the_page() {
    let s = server();
    let dir = temp_dir("html");
    let page = dir.join("r.html");
    let out = run(&[
        "-n",
        "200",
        "-c",
        "2",
        "--html",
        page.to_str().unwrap(),
        &s.url("/"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg"));
}

#[test]
fn bad_results_files_name_file_and_line() {
    let dir = temp_dir("bad");
    let file = dir.join("bad.jsonl");
    std::fs::write(&file, "{\"header\": 3}\n").unwrap();
    let out = run(&["report", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.jsonl:1:"), "{err}");
    let out = run(&["report", dir.join("missing.jsonl").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[
        "-n",
        "1",
        "--save",
        "/nonexistent-dir/x.jsonl",
        "http://127.0.0.1:1/",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--save"));
}

/// A saved run's file, one line replaced by `edit` (line index from 0).
fn edited_copy(
    dir: &Path,
    name: &str,
    from: &Path,
    edit: impl Fn(usize, &str) -> String,
) -> PathBuf {
    let text = std::fs::read_to_string(from).unwrap();
    let edited: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| edit(i, l) + "\n")
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, edited).unwrap();
    path
}

#[test]
fn damaged_results_lines_name_file_and_line_not_the_run() {
    let server = server();
    let dir = temp_dir("damaged");
    let saved = dir.join("good.jsonl");
    let url = server.url("/");
    let out = run(&[
        "-n",
        "20",
        "-c",
        "1",
        "--save",
        saved.to_str().unwrap(),
        &url,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = std::fs::read_to_string(&saved).unwrap().lines().count() - 1;
    let cases = [
        // A garbage line among the records.
        (
            "garbage.jsonl",
            1,
            "garbage".to_string(),
            "not a belier results line",
        ),
        // Seconds no Duration holds (Duration::from_secs_f64 panicked on them).
        (
            "elapsed.jsonl",
            last,
            r#"{"end":{"elapsed_s":1e300,"interrupted":false,"warnings":[],"host":null}}"#.into(),
            "elapsed_s",
        ),
        (
            "negative.jsonl",
            last,
            r#"{"end":{"elapsed_s":-5,"interrupted":false,"warnings":[],"host":null}}"#.into(),
            "elapsed_s",
        ),
    ];
    for (name, line, replacement, what) in cases {
        let file = edited_copy(&dir, name, &saved, |i, l| {
            if i == line {
                replacement.clone()
            } else {
                l.to_string()
            }
        });
        for kind in ["text", "json", "html", "hdr", "csv"] {
            let out = run(&["report", file.to_str().unwrap(), "--type", kind]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{name} --type {kind}: {err}");
            let expected = format!("error: {}:{}: ", file.display(), line + 1);
            assert!(err.starts_with(&expected), "{name}: {err}");
            assert!(err.contains(what), "{name}: {err}");
            assert!(
                !err.contains("'good'"),
                "the run's name is not the culprit: {err}"
            );
        }
    }
    // An interval no Duration holds, in the header.
    let file = edited_copy(&dir, "interval.jsonl", &saved, |i, l| {
        if i == 0 {
            l.replace("\"interval_s\":1.0", "\"interval_s\":1e300")
        } else {
            l.to_string()
        }
    });
    let out = run(&["report", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(&format!("error: {}:1: interval_s", file.display())),
        "{err}"
    );
}

#[test]
fn raw_stream_has_one_row_per_request() {
    let s = server();
    let dir = temp_dir("raw");
    let file = dir.join("raw.csv");
    let out = run(&[
        "-n",
        "1500",
        "-c",
        "5",
        "--raw",
        file.to_str().unwrap(),
        &s.url("/?status=404"),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(&file).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("intended_us,dispatched_us,sent_us,first_byte_us,done_us,latency_us,status,error,bytes_in,bytes_out")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 1500);
    for r in &rows {
        let n = |i: usize| r[i].parse::<u64>().unwrap();
        assert!(
            n(0) <= n(1) && n(1) <= n(2) && n(2) <= n(3) && n(3) <= n(4),
            "{r:?}"
        );
        assert_eq!(r[6], "404");
        assert_eq!(r[7], "");
    }
    assert_eq!(s.counts().requests, 1500);
}

#[test]
fn compare_exit_codes_gate_regressions() {
    let s = server();
    let dir = temp_dir("compare");
    let save = |name: &str, path: &str| {
        let file = dir.join(format!("{name}.jsonl"));
        let out = run(&[
            "-n",
            "400",
            "-c",
            "4",
            "--save",
            file.to_str().unwrap(),
            &s.url(path),
        ]);
        assert_eq!(out.status.code(), Some(0));
        file
    };
    let fast = save("fast", "/");
    let slow = save("slow", "/?delay=20ms");
    let (f, sl) = (fast.to_str().unwrap(), slow.to_str().unwrap());
    // No conditions: a table, exit 0.
    let out = run(&["compare", f, sl]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("p99") && text.contains("fast") && text.contains("slow"),
        "{text}"
    );
    // The slow run's p99 rose far more than 10 %: exit 3 with the figures.
    let out = run(&["compare", f, sl, "--fail-if", "p99>+10%"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAILED"));
    // Against itself nothing regresses.
    let out = run(&[
        "compare",
        f,
        f,
        "--fail-if",
        "p99>+10%,errors>0.5%",
        "--output",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json(&out)["failed"], false);
    // A malformed condition is bad input.
    let out = run(&["compare", f, sl, "--fail-if", "p99>>3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--fail-if"));
}

#[test]
fn an_open_loop_lasts_its_duration_and_shows_the_rate_set_in_every_format() {
    // 1/s for 3.5 s: arrivals at 0, 1, 2 and 3 s, and a run that ends at 3.5 s, not at the
    // fourth answer. The target is the 1/s asked for, not 4 arrivals over some span.
    let s = server();
    let dir = temp_dir("open-bound");
    let file = dir.join("run.jsonl");
    let started = std::time::Instant::now();
    let live = run(&[
        "--rate",
        "1",
        "-z",
        "3.5s",
        "--output",
        "json",
        "--save",
        file.to_str().unwrap(),
        &s.url("/"),
    ]);
    let wall = started.elapsed();
    assert_eq!(live.status.code(), Some(0));
    let doc = json(&live);
    assert_eq!(doc["summary"]["requests"], 4, "{}", doc["summary"]);
    assert_eq!(s.counts().requests, 4);
    let duration = doc["summary"]["duration_s"].as_f64().unwrap();
    assert!((3.45..=3.55).contains(&duration), "duration {duration}");
    assert!(wall >= Duration::from_millis(3450), "{wall:?}");
    assert_eq!(doc["open_loop"]["scheduled"], 4);
    assert_eq!(doc["open_loop"]["target_rps"], 1.0, "{}", doc["open_loop"]);

    let f = file.to_str().unwrap();
    let again = json(&run(&["report", "--type", "json", f]));
    assert_eq!(again["open_loop"]["target_rps"], 1.0);
    let text = String::from_utf8(run(&["report", f]).stdout).unwrap();
    assert!(text.contains("target 1.0/s"), "{text}");
    let md = String::from_utf8(run(&["report", "--type", "markdown", f]).stdout).unwrap();
    assert!(md.contains("| Target rate | 1.0/s |"), "{md}");
    let html = String::from_utf8(run(&["report", "--type", "html", f]).stdout).unwrap();
    assert!(html.contains("<th>Target rate</th><td>1.0/s</td>"), "html");
}

#[test]
fn phase_figures_lie_within_what_the_raw_rows_show() {
    // Near 20 ms a 2-digit histogram has 128 µs buckets and reports a min below every value
    // measured; the phases keep latency's precision and their exact extremes.
    let s = server();
    let dir = temp_dir("phases");
    let raw = dir.join("raw.csv");
    let out = run(&[
        "-n",
        "200",
        "-c",
        "4",
        "--output",
        "json",
        "--raw",
        raw.to_str().unwrap(),
        &s.url("/?delay=20ms"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let doc = json(&out);
    let text = std::fs::read_to_string(&raw).unwrap();
    let rows: Vec<Vec<u64>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').take(5).map(|f| f.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 200);
    // sent, first byte, done: each a whole microsecond from the start, so a difference of two
    // is within a microsecond of the engine's own.
    let ttfb: Vec<u64> = rows.iter().map(|r| r[3] - r[2]).collect();
    let transfer: Vec<u64> = rows.iter().map(|r| r[4] - r[3]).collect();
    for (name, values) in [("ttfb", ttfb), ("transfer", transfer)] {
        let phase = &doc["phases_us"][name];
        let (min, max) = (
            phase["min"].as_u64().unwrap(),
            phase["max"].as_u64().unwrap(),
        );
        let (lo, hi) = (*values.iter().min().unwrap(), *values.iter().max().unwrap());
        assert!(
            lo <= min + 1 && min <= lo + 1,
            "{name}: min {min}, raw {lo}..{hi}"
        );
        assert!(
            hi <= max + 1 && max <= hi + 1,
            "{name}: max {max}, raw {lo}..{hi}"
        );
        let p = &phase["percentiles"];
        for key in ["p50", "p90", "p99"] {
            let v = p[key].as_u64().unwrap();
            assert!(
                min <= v && v <= max,
                "{name} {key} {v} outside {min}..{max}"
            );
        }
    }
    // Every request waited the server's 20 ms for its first byte; the figures show
    // microseconds, not 128 µs steps.
    let p = &doc["phases_us"]["ttfb"]["percentiles"];
    let distinct: std::collections::BTreeSet<u64> = ["p50", "p75", "p90", "p95", "p99"]
        .iter()
        .map(|k| p[*k].as_u64().unwrap())
        .collect();
    assert!(doc["phases_us"]["ttfb"]["min"].as_u64().unwrap() >= 20_000);
    assert!(distinct.len() >= 3, "{p}");
}
