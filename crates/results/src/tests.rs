use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use belier_stats::{
    CallMessages, ErrorKind, Gauges, MessageTimes, Metric, Outcome, Recorder, Sample, Settled,
};
use hdrhistogram::Histogram;
use proptest::prelude::*;

use super::*;
use crate::fixtures;

mod changes;
mod coarsened;

fn header(name: &str) -> Header {
    Header {
        format: FORMAT.into(),
        version: VERSION,
        name: name.into(),
        interval_s: 1.0,
        run: fixtures::info(),
    }
}

fn sample(latency_us: u64, lag_us: u64, outcome: Outcome) -> Sample {
    // One instant for every sample, so that recordings made apart keep the same slowest
    // requests (exemplars are dated) and compare equal.
    static T0: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let t = *T0.get_or_init(Instant::now);
    Sample {
        bytes_in: 10,
        bytes_out: 5,
        ..Sample::simulated(t, lag_us, latency_us.max(lag_us), outcome)
    }
}

fn settled(index: u64, recorder: Recorder) -> Settled {
    Settled {
        index,
        offset: Duration::from_secs(index),
        recorder,
        gauges: Gauges {
            in_flight: index,
            cpu: 0.5,
            connections_peak: 0,
            held: 0,
        },
    }
}

fn write(h: &Header, intervals: &[Settled], end: Option<&End>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = ResultsWriter::new(&mut out, h).unwrap();
    for s in intervals {
        w.interval(s).unwrap();
    }
    if let Some(e) = end {
        w.end(e).unwrap();
    }
    out
}

fn reader(bytes: Vec<u8>, source: &str) -> Result<Reader, ResultsError> {
    Reader::open(Box::new(std::io::Cursor::new(bytes)), source)
}

/// Reads files as the shards of one run.
fn read(
    files: Vec<Vec<u8>>,
    from: Option<Duration>,
    to: Option<Duration>,
) -> Result<Run, ResultsError> {
    let readers = files
        .into_iter()
        .map(|f| reader(f, "mem"))
        .collect::<Result<Vec<_>, _>>()?;
    read_run(readers, from, to, false)
}

/// Every interval of a file, read one by one.
fn intervals_of(bytes: Vec<u8>, source: &str) -> Result<(Reader, Vec<Record>), ResultsError> {
    let mut r = reader(bytes, source)?;
    let mut all = Vec::new();
    while let Some(s) = r.next_record()? {
        all.push(s);
    }
    Ok((r, all))
}

fn end(elapsed_s: f64) -> End {
    End {
        elapsed_s,
        ..End::default()
    }
}

fn recorder_with(values: &[(u64, u64)]) -> Recorder {
    let mut r = Recorder::new();
    for &(latency, lag) in values {
        r.record(&sample(latency, lag, Outcome::Response { status: 200 }));
    }
    r
}

#[test]
fn round_trip_is_exact() {
    let mut r = recorder_with(&[(100, 0), (2_500, 10), (77_777, 3)]);
    r.record(&sample(5, 0, Outcome::Error(ErrorKind::ConnectionReset)));
    r.note_error_example(ErrorKind::ConnectionReset, || "reset \"quoted\"\n".into());
    r.record_scheduled();
    let intervals = vec![settled(0, r.clone()), settled(1, recorder_with(&[(9, 0)]))];
    let bytes = write(&header("a"), &intervals, Some(&end(1.5)));
    let (r_back, back) = intervals_of(bytes.clone(), "mem").unwrap();
    assert!(r_back.notes.is_empty(), "{:?}", r_back.notes);
    assert_eq!(r_back.header(), &header("a"));
    assert_eq!(r_back.end, Some(end(1.5)));
    assert_eq!(back.len(), 2);
    let got = &back[0].recorder;
    assert_eq!(got.counters(), r.counters());
    for m in Metric::ALL {
        assert_eq!(got.histogram(m), r.histogram(m), "{m:?}");
    }
    assert_eq!(
        back[1].gauges,
        Gauges {
            in_flight: 1,
            cpu: 0.5,
            connections_peak: 0,
            held: 0,
        }
    );
    let run = read(vec![bytes], None, None).unwrap();
    assert_eq!(run.totals.requests(), 5);
    assert_eq!(run.elapsed, Duration::from_millis(1_500));
    assert_eq!(run.end, Some(end(1.5)));
}

#[test]
fn beliers_own_lateness_round_trips_and_is_absent_where_not_recorded() {
    let t = Instant::now();
    let mut r = Recorder::new();
    for own_us in [100u64, 250, 4_000] {
        let mut s = sample(9_000, 8_000, Outcome::Response { status: 200 });
        s.intended = t;
        s.dispatched = t + Duration::from_micros(8_000);
        s.ready = Some(t + Duration::from_micros(own_us));
        r.record(&s);
    }
    let bytes = write(&header("own"), &[settled(0, r.clone())], Some(&end(1.0)));
    let run = read(vec![bytes], None, None).unwrap();
    let own = run.totals.histogram(Metric::Dispatch);
    assert_eq!(own, r.histogram(Metric::Dispatch));
    assert_eq!(own.len(), 3);
    assert!(own.equivalent(own.max(), 4_000));

    // A run that did not record it writes nothing for it, and reads back empty.
    let plain = recorder_with(&[(1_000, 10)]);
    assert!(plain.histogram(Metric::Dispatch).is_empty());
    let bytes = write(&header("plain"), &[settled(0, plain)], Some(&end(1.0)));
    assert!(!String::from_utf8_lossy(&bytes).contains("dispatch"));
    let run = read(vec![bytes], None, None).unwrap();
    assert!(run.totals.histogram(Metric::Dispatch).is_empty());
}

#[test]
fn steps_checks_and_iterations_round_trip() {
    let mut r = recorder_with(&[(100, 0)]);
    let ok = sample(1_234, 0, Outcome::Response { status: 200 });
    r.record_step(2, &ok, false);
    r.record_step(2, &sample(5, 0, Outcome::Error(ErrorKind::Timeout)), true);
    r.record_step(0, &ok, true);
    r.record_check(1, false);
    r.record_check(1, true);
    r.record_iteration();
    let bytes = write(&header("a"), &[settled(0, r.clone())], Some(&end(1.0)));
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains("\"steps_latency\""));
    let (_, back) = intervals_of(bytes, "mem").unwrap();
    let got = &back[0].recorder;
    assert_eq!(got.counters(), r.counters());
    assert_eq!(got.steps().len(), 3);
    for (g, w) in got.steps().iter().zip(r.steps()) {
        assert_eq!(g.counts, w.counts);
        assert_eq!(g.values_us(), w.values_us());
    }
    assert_eq!(got.checks(), r.checks());
    assert_eq!(got.iterations(), 1);
}

#[test]
fn custom_metrics_round_trip() {
    let mut r = recorder_with(&[(100, 0)]);
    r.record_count(0, 5);
    r.record_count(0, 2);
    r.record_value(2, 1_500);
    r.record_value(2, 90_000);
    let bytes = write(&header("a"), &[settled(0, r.clone())], Some(&end(1.0)));
    assert!(String::from_utf8_lossy(&bytes).contains("\"metrics_values\""));
    let (_, back) = intervals_of(bytes, "mem").unwrap();
    let got = &back[0].recorder;
    assert_eq!(got.counters(), r.counters());
    let counts: Vec<u64> = got.metrics().iter().map(|m| m.counts).collect();
    assert_eq!(counts, [7, 0, 2]);
    for (g, w) in got.metrics().iter().zip(r.metrics()) {
        assert_eq!(g.values_us(), w.values_us());
    }
}

#[test]
fn streaming_calls_messages_round_trip_and_merge_across_shards() {
    // A call whose three answers answer its three messages, with their round trips; one
    // whose do not correlate has none (`round_trips` then stays out of the file).
    let streaming = |round_trips: bool| {
        let mut r = Recorder::new();
        r.record(&sample(9_000, 0, Outcome::Grpc { code: 0 }));
        let mut gaps = MessageTimes::default();
        gaps.push(200);
        gaps.push(0);
        let mut trips = MessageTimes::default();
        [700, 750, 900].into_iter().for_each(|us| trips.push(us));
        r.record_messages(&CallMessages {
            sent: 3,
            received: 3,
            first_message_us: Some(1_500),
            gaps: &gaps,
            round_trips: round_trips.then_some(&trips),
        });
        // A WebSocket's close code, as a socket's end records it, and its round trips from
        // the actual send.
        r.record_close(if round_trips { 1000 } else { 1011 });
        // What its offer of permessage-deflate agreed.
        let agreed = "permessage-deflate; client_max_window_bits=12";
        r.record_extension(if round_trips { agreed } else { "declined" });
        r.record_extension(agreed);
        if round_trips {
            let mut sent = MessageTimes::default();
            [600, 700].into_iter().for_each(|us| sent.push(us));
            r.record_sent_round_trips(&sent);
        }
        r
    };
    let r = streaming(true);
    let bytes = write(&header("s"), &[settled(0, r.clone())], Some(&end(1.0)));
    let (_, back) = intervals_of(bytes.clone(), "mem").unwrap();
    let got = back[0].recorder.messages().unwrap();
    let want = r.messages().unwrap();
    assert_eq!(got.counts(), want.counts());
    assert_eq!(got.first_message_us(), want.first_message_us());
    assert_eq!(got.gap_us(), want.gap_us());
    assert_eq!(got.round_trip_us(), want.round_trip_us());
    assert_eq!(got.closes(), want.closes());
    assert_eq!(got.extensions(), want.extensions());
    assert_eq!(got.round_trip_sent_us(), want.round_trip_sent_us());
    assert_eq!(got.round_trip_sent_us().len(), 2);
    // Two shards: the counts and histograms sum; a file without messages reads as none.
    let other = write(
        &header("s"),
        &[settled(0, streaming(false))],
        Some(&end(1.0)),
    );
    assert!(!String::from_utf8_lossy(&other).contains("round_trips"));
    assert!(String::from_utf8_lossy(&bytes).contains("round_trips_sent"));
    let run = read(vec![bytes, other], None, None).unwrap();
    let m = run.totals.messages().unwrap();
    assert_eq!((m.calls(), m.sent(), m.received()), (2, 6, 6));
    let counts = [m.first_message(), m.gaps(), m.round_trips()].map(|s| s.count);
    assert_eq!(counts, [2, 4, 3]);
    let closes: Vec<_> = m.closes().iter().map(|(&c, &n)| (c, n)).collect();
    assert_eq!(closes, [(1000, 1), (1011, 1)]);
    let extensions: Vec<_> = m
        .extensions()
        .iter()
        .map(|(e, &n)| (e.as_str(), n))
        .collect();
    let agreed = "permessage-deflate; client_max_window_bits=12";
    assert_eq!(extensions, [("declined", 1), (agreed, 3)]);
    let plain = write(&header("p"), &[settled(0, recorder_with(&[(9, 0)]))], None);
    assert!(!String::from_utf8_lossy(&plain).contains("messages"));
    let (_, back) = intervals_of(plain, "mem").unwrap();
    assert!(back[0].recorder.messages().is_none());
}

#[test]
fn sse_reconnections_round_trip_and_merge_exactly_across_shards() {
    let shard = |reconnections: u64| {
        let mut r = Recorder::new();
        let gaps = MessageTimes::default();
        for i in 0..=reconnections {
            r.record(&sample(9_000, 0, Outcome::Response { status: 200 }));
            let body = belier_stats::StreamedBody {
                unit: belier_stats::MessageUnit::Events,
                reconnection: (i > 0).then_some(belier_stats::Reconnection {
                    with_id: i % 2 == 0,
                    waited_us: 50_001,
                }),
                stopped_reconnection: i == reconnections,
                ..belier_stats::StreamedBody::default()
            };
            r.record_body_stream(&CallMessages::one_way(0, 3, Some(100), &gaps), &body);
        }
        write(&header("s"), &[settled(0, r)], Some(&end(1.0)))
    };
    let run = read(vec![shard(3), shard(4)], None, None).unwrap();
    let c = run.totals.messages().unwrap().counts();
    assert_eq!(
        (
            c.calls,
            c.reconnections,
            c.reconnections_with_id,
            c.reconnection_wait_us,
            c.reconnection_stops
        ),
        (9, 7, 3, 7 * 50_001, 2)
    );
}

#[test]
fn files_without_steps_write_and_read_none() {
    let bytes = write(
        &header("a"),
        &[settled(0, recorder_with(&[(100, 0)]))],
        None,
    );
    let text = String::from_utf8(bytes.clone()).unwrap();
    let interval = text.lines().find(|l| l.contains("\"interval\"")).unwrap();
    for absent in ["steps", "steps_latency", "checks", "iterations"] {
        assert!(!interval.contains(&format!("\"{absent}\"")), "{absent}");
    }
    let (_, back) = intervals_of(bytes, "mem").unwrap();
    assert!(back[0].recorder.steps().is_empty());
}

#[test]
fn a_truncated_last_line_is_ignored_with_a_note() {
    let intervals = vec![
        settled(0, recorder_with(&[(100, 0)])),
        settled(1, recorder_with(&[(200, 0)])),
    ];
    let mut bytes = write(&header("a"), &intervals, None);
    bytes.truncate(bytes.len() - 40);
    let (r, back) = intervals_of(bytes, "run.jsonl").unwrap();
    assert_eq!(back.len(), 1);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("run.jsonl:3: truncated last line")),
        "{:?}",
        r.notes
    );
    assert!(
        r.notes.iter().any(|n| n.contains("no end line")),
        "{:?}",
        r.notes
    );
}

#[test]
fn bad_files_name_the_line() {
    let good = write(
        &header("a"),
        &[settled(0, recorder_with(&[(1, 0)]))],
        Some(&end(1.0)),
    );
    let text = String::from_utf8(good).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(1, "{\"interval\": 42}");
    let broken = lines.join("\n") + "\n";
    let err = intervals_of(broken.into_bytes(), "x.jsonl")
        .err()
        .unwrap()
        .to_string();
    assert!(err.starts_with("x.jsonl:2:"), "{err}");

    let err = reader(b"hello\n".to_vec(), "y").err().unwrap().to_string();
    assert!(err.starts_with("y:1:"), "{err}");
    let err = reader(Vec::new(), "z").err().unwrap().to_string();
    assert!(err.contains("empty"), "{err}");
    let second = text.lines().nth(1).unwrap().to_string() + "\n";
    let err = reader(second.into_bytes(), "w").err().unwrap().to_string();
    assert!(
        err.contains("w:1: the first line must be the header"),
        "{err}"
    );
}

/// Issue #28's fuzzing find: one number in a record (the compressed histogram's length) made
/// the reader allocate gigabytes, and its error was Rust Debug text. Now: file, line, field
/// and what is wrong, in words.
#[test]
fn a_histogram_length_altered_in_a_file_names_file_line_and_field() {
    let good = write(
        &header("a"),
        &[settled(0, recorder_with(&[(1_000, 0)]))],
        Some(&end(1.0)),
    );
    let text = String::from_utf8(good).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut record: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    let field = record.pointer_mut("/interval/latency").unwrap();
    let mut bytes = BASE64.decode(field.as_str().unwrap()).unwrap();
    let has = bytes.len() - 8;
    bytes[4..8].copy_from_slice(&4_000_000_000u32.to_be_bytes());
    *field = BASE64.encode(&bytes).into();
    lines[1] = record.to_string();
    let err = intervals_of((lines.join("\n") + "\n").into_bytes(), "today.jsonl")
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        err,
        format!(
            "today.jsonl:2: field `latency`: histogram payload claims 4,000,000,000 bytes, \
             more than its {has} encoded bytes"
        )
    );
}

/// A line is held whole while it is parsed: one without end is refused at its bound, not
/// read until memory runs out.
#[test]
fn an_endless_line_is_refused_at_its_bound() {
    let text = String::from_utf8(write(&header("a"), &[], None)).unwrap();
    let endless = std::io::Read::chain(std::io::Cursor::new(text), std::io::repeat(b' '));
    let mut r = Reader::open(Box::new(std::io::BufReader::new(endless)), "big.jsonl").unwrap();
    let err = r.next_record().err().unwrap().to_string();
    assert_eq!(
        err,
        "big.jsonl:2: line longer than 64 MiB, more than any belier writes"
    );
    let err = reader(vec![b'x'; MOST_LINE_BYTES + 1], "one.jsonl")
        .err()
        .unwrap()
        .to_string();
    assert!(err.starts_with("one.jsonl:1: line longer than"), "{err}");
}

#[test]
fn a_window_keeps_the_intervals_it_covers() {
    let intervals: Vec<Settled> = (0..10)
        .map(|i| settled(i, recorder_with(&[(100 * (i + 1), 0)])))
        .collect();
    let bytes = write(&header("a"), &intervals, Some(&end(10.0)));
    let s = read(
        vec![bytes],
        Some(Duration::from_secs(2)),
        Some(Duration::from_secs(5)),
    )
    .unwrap();
    assert_eq!(s.totals.requests(), 3);
    assert_eq!(s.elapsed, Duration::from_secs(3));
    assert_eq!(s.totals.latency_us().min(), 300);
    assert_eq!(s.series.points().len(), 3);
}

#[test]
fn shards_interleave_and_sum_per_interval() {
    // Two shards of one run, one of them missing its first 10 intervals: merging sums per
    // index, and a window skips what it must.
    let a: Vec<Settled> = (0..50)
        .map(|i| settled(i, recorder_with(&[(1_000, 0)])))
        .collect();
    let b: Vec<Settled> = (10..50)
        .map(|i| settled(i, recorder_with(&[(2_000, 0), (3_000, 0)])))
        .collect();
    let files = vec![
        write(&header("s"), &a, Some(&end(50.0))),
        write(&header("s"), &b, Some(&end(50.0))),
    ];
    let run = read(files.clone(), None, None).unwrap();
    assert_eq!(run.totals.requests(), 50 + 80);
    assert_eq!(run.series.points().len(), 50);
    assert_eq!(run.series.points()[5].requests, 1);
    assert_eq!(run.series.points()[15].requests, 3);
    let window = read(files, Some(Duration::from_secs(40)), None).unwrap();
    assert_eq!(window.totals.requests(), 30);
}

#[test]
fn threshold_outcomes_ride_on_the_end_line_and_older_end_lines_read_as_none() {
    let outcome = |expression: &str, passed| crate::ThresholdOutcome {
        expression: expression.into(),
        passed,
        actual: "12.0 ms".into(),
        stopped_run: None,
    };
    let stopper = crate::ThresholdOutcome {
        stopped_run: Some(crate::ThresholdStop {
            at_ms: 6_000,
            actual: "p99 = 14.0 ms".into(),
        }),
        ..outcome("p99 < 5ms", false)
    };
    let judged = End {
        thresholds: vec![stopper, outcome("requests >= 1", true)],
        ..end(3.0)
    };
    let intervals: Vec<Settled> = (0..3)
        .map(|i| settled(i, recorder_with(&[(1_000, 0)])))
        .collect();
    let bytes = write(&header("t"), &intervals, Some(&judged));
    let last = String::from_utf8(bytes.clone()).unwrap();
    assert!(last
        .lines()
        .last()
        .unwrap()
        .contains(r#""thresholds":[{"expression":"p99 < 5ms""#));
    assert!(last.contains(r#""stopped_run":{"at_ms":6000,"actual":"p99 = 14.0 ms"}"#));
    let run = read(vec![bytes.clone()], None, None).unwrap();
    assert_eq!(run.end.as_ref().unwrap().thresholds, judged.thresholds);
    assert!(run.notes.is_empty(), "{:?}", run.notes);
    // Judged on the whole run: not on a window, not on the sum of shards (each judged its own).
    let window = read(vec![bytes.clone()], Some(Duration::from_secs(1)), None).unwrap();
    assert!(window.end.unwrap().thresholds.is_empty());
    assert!(
        window.notes[0].contains("--from/--to"),
        "{:?}",
        window.notes
    );
    let merged = read(vec![bytes.clone(), bytes], None, None).unwrap();
    assert!(merged.end.unwrap().thresholds.is_empty());
    assert!(merged.notes[0].contains("each shard"), "{:?}", merged.notes);
    // A file written before the outcomes were kept: its end line has no `thresholds`.
    let old = write(&header("t"), &intervals, Some(&end(3.0)));
    assert!(!String::from_utf8(old.clone())
        .unwrap()
        .contains("thresholds"));
    let run = read(vec![old], None, None).unwrap();
    assert!(run.end.unwrap().thresholds.is_empty());
}

/// A proptest's samples, `(latency_us, lag_us, shard, interval, ok)`, recorded by one recorder
/// that sees them all and by 3 shards of `intervals` recorders each, every sample in its own
/// shard and interval. With `users`, each sample is also a scripted user's step, check and
/// (one in four) iteration, which follow from its values.
fn recorded_in_shards(
    samples: &[(u64, u64, usize, u64, bool)],
    intervals: usize,
    users: bool,
) -> (Recorder, Vec<Vec<Recorder>>) {
    let mut all = Recorder::new();
    let mut shards: Vec<Vec<Recorder>> = (0..3)
        .map(|_| (0..intervals).map(|_| Recorder::new()).collect())
        .collect();
    for &(latency, lag, shard, interval, ok) in samples {
        let outcome = if ok {
            Outcome::Response { status: 200 }
        } else {
            Outcome::Error(ErrorKind::Timeout)
        };
        let s = sample(latency, lag, outcome);
        all.record(&s);
        shards[shard][interval as usize].record(&s);
        // The server's time of each response: half its latency, a nested db metric on some,
        // no header on one in five.
        let value = format!("app;dur={}, db;dur={}", latency / 2_000, lag % 7);
        let value = (latency % 5 != 0).then_some(value.as_bytes());
        for r in [&mut all, &mut shards[shard][interval as usize]] {
            if ok {
                r.record_server_timing(belier_stats::TimingHeader::ServerTiming, value, latency);
            }
        }
        if users {
            let (step, check) = ((lag % 3) as usize, (latency % 2) as usize);
            for r in [&mut all, &mut shards[shard][interval as usize]] {
                r.record_step(step, &s, !ok);
                r.record_check(check, ok);
                if latency % 4 == 0 {
                    r.record_iteration();
                }
            }
        }
    }
    (all, shards)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    // Samples split across shards, each saved to its own file and merged, give exactly what
    // one recorder that saw every sample gives.
    #[test]
    fn merged_shards_equal_one_recorder(
        samples in proptest::collection::vec((1u64..5_000_000, 0u64..5_000, 0usize..3, 0u64..4, any::<bool>()), 1..300),
        users in any::<bool>(),
    ) {
        let (all, shards) = recorded_in_shards(&samples, 4, users);
        let files: Vec<Vec<u8>> = shards
            .into_iter()
            .map(|intervals| {
                let settled: Vec<Settled> = intervals.into_iter().enumerate().map(|(i, r)| settled(i as u64, r)).collect();
                write(&header("same"), &settled, Some(&end(4.0)))
            })
            .collect();
        let s = read(files, None, None).unwrap();
        prop_assert_eq!(s.header.run.shards, 3);
        prop_assert_eq!(s.totals.counters(), all.counters());
        prop_assert_eq!(s.totals.latency_summary(), all.latency_summary());
        for m in Metric::ALL {
            prop_assert_eq!(s.totals.histogram(m), all.histogram(m));
        }
        prop_assert_eq!(s.totals.steps().len(), all.steps().len());
        for (got, want) in s.totals.steps().iter().zip(all.steps()) {
            prop_assert_eq!(got.counts, want.counts);
            prop_assert_eq!(got.values_us(), want.values_us());
        }
        match (s.totals.server_times(), all.server_times()) {
            (Some(got), Some(want)) => {
                prop_assert_eq!(got.server.values_us(), want.server.values_us());
                prop_assert_eq!(got.outside.values_us(), want.outside.values_us());
                prop_assert_eq!(got.metrics.len(), want.metrics.len());
                for (name, row) in &want.metrics {
                    prop_assert_eq!(got.metrics[name].values_us(), row.values_us());
                }
            }
            (got, want) => prop_assert_eq!(got.is_some(), want.is_some()),
        }
    }
}

/// A case the property above found: a step whose only sample in one shard failed (no
/// exemplar) must not leave an empty list that the merged shards do not have.
#[test]
fn a_failed_step_leaves_no_empty_exemplar_list_behind() {
    let samples = [(1, 202, 0, 0, false), (1, 684, 0, 1, true)];
    let (all, shards) = recorded_in_shards(&samples, 4, true);
    let files: Vec<Vec<u8>> = shards
        .into_iter()
        .map(|intervals| {
            let settled: Vec<Settled> = intervals
                .into_iter()
                .enumerate()
                .map(|(i, r)| settled(i as u64, r))
                .collect();
            write(&header("same"), &settled, Some(&end(4.0)))
        })
        .collect();
    let s = read(files, None, None).unwrap();
    assert_eq!(s.totals.counters(), all.counters());
}

#[test]
fn executors_totals_ride_on_the_end_line_exactly_and_older_end_lines_read_as_none() {
    let mut a = recorder_with(&[(100, 0), (2_500, 10), (77_777, 3)]);
    a.record(&sample(5, 0, Outcome::Error(ErrorKind::ConnectionReset)));
    a.record_scheduled();
    let b = recorder_with(&[(9, 0)]);
    let with_totals = End {
        scenario_totals: vec![
            super::StoredRecorder::encode(&a).unwrap(),
            super::StoredRecorder::encode(&b).unwrap(),
        ],
        ..end(2.0)
    };
    let bytes = write(&header("a"), &[settled(0, a.clone())], Some(&with_totals));
    let (read, _) = intervals_of(bytes, "mem").unwrap();
    let back = read.end.expect("an end line").scenario_totals;
    for (stored, original) in back.iter().zip([&a, &b]) {
        let got = stored.decode().unwrap();
        assert_eq!(got.counters(), original.counters());
        for m in Metric::ALL {
            assert_eq!(got.histogram(m), original.histogram(m), "{m:?}");
        }
    }
    assert_eq!(back.len(), 2);
    let older = write(&header("a"), &[settled(0, a)], Some(&end(2.0)));
    let (read, _) = intervals_of(older, "mem").unwrap();
    assert!(read.end.unwrap().scenario_totals.is_empty());
}

#[test]
fn requests_by_address_round_trip_and_merge_across_shards() {
    let shard = |remote: &str| {
        let mut r = Recorder::new();
        let route = belier_stats::Route {
            remote: remote.parse().unwrap(),
            local: "127.0.1.2".parse().unwrap(),
        };
        for (latency_us, opened) in [(1_000, true), (3_000, false)] {
            let s = sample(latency_us, 0, Outcome::Response { status: 200 });
            r.record(&s);
            r.record_route(&s, route, opened);
        }
        r
    };
    let a = write(
        &header("a"),
        &[settled(0, shard("127.0.0.11:80"))],
        Some(&end(1.0)),
    );
    let (_, back) = intervals_of(a.clone(), "mem").unwrap();
    let routes = back[0].recorder.routes().unwrap();
    let row = &routes.remote[&"127.0.0.11:80".parse().unwrap()];
    assert_eq!((row.counts.requests, row.counts.connections), (2, 1));
    assert_eq!(row.values_us().len(), 2);
    let b = write(
        &header("a"),
        &[settled(0, shard("127.0.0.12:80"))],
        Some(&end(1.0)),
    );
    let run = read(vec![a, b], None, None).unwrap();
    let routes = run.totals.routes().unwrap();
    assert_eq!(routes.remote.len(), 2);
    let source = &routes.local[&"127.0.1.2".parse().unwrap()];
    assert_eq!((source.counts.requests, source.counts.connections), (4, 2));
    assert_eq!(source.values_us().len(), 4);
    // A file whose address is not one says which.
    let bad = String::from_utf8(write(
        &header("a"),
        &[settled(0, shard("127.0.0.11:80"))],
        None,
    ))
    .unwrap()
    .replace("127.0.0.11:80", "nowhere");
    assert!(intervals_of(bad.into_bytes(), "mem").is_err());
}

#[test]
fn server_times_round_trip_and_merge_across_shards_exactly() {
    use belier_stats::TimingHeader::ServerTiming;
    let shard = |values: &[(&[u8], u64)]| {
        let mut r = Recorder::new();
        for &(value, latency_us) in values {
            r.record(&sample(latency_us, 0, Outcome::Response { status: 200 }));
            r.record_server_timing(ServerTiming, Some(value), latency_us);
        }
        r.record_server_timing(ServerTiming, None, 9_000);
        r
    };
    let one = shard(&[(b"app;dur=4, db;dur=1", 9_000), (b"app;dur=x", 9_000)]);
    let other = shard(&[(b"app;dur=6, total;dur=7", 10_000)]);
    let a = write(&header("a"), &[settled(0, one.clone())], Some(&end(1.0)));
    let (_, back) = intervals_of(a.clone(), "mem").unwrap();
    let times = back[0].recorder.server_times().unwrap();
    assert_eq!(times.counts, one.server_times().unwrap().counts);
    assert_eq!(
        times.metrics["app"].values_us(),
        one.server_times().unwrap().metrics["app"].values_us()
    );
    assert_eq!(times.outside.values_us().len(), 1);
    let b = write(&header("a"), &[settled(0, other.clone())], Some(&end(1.0)));
    let run = read(vec![a, b], None, None).unwrap();
    let mut together = one;
    together += &other;
    let (merged, expected) = (
        run.totals.server_times().unwrap(),
        together.server_times().unwrap(),
    );
    assert_eq!(merged.counts, expected.counts);
    assert_eq!(
        (
            merged.counts.timed,
            merged.counts.missing,
            merged.counts.malformed
        ),
        (2, 2, 1)
    );
    assert_eq!(
        merged.metrics.keys().collect::<Vec<_>>(),
        ["app", "db", "total"]
    );
    for (name, row) in &expected.metrics {
        assert_eq!(merged.metrics[name].values_us(), row.values_us(), "{name}");
    }
    assert_eq!(merged.server.values_us(), expected.server.values_us());
    assert_eq!(merged.outside.values_us(), expected.outside.values_us());
    // A run without them stores none; a file with more names than a run keeps is refused.
    assert!(Recorder::new().counters().server_timing.is_none());
    let many: Vec<String> = (0..17).map(|i| format!("\"m{i}\":1")).collect();
    let text = String::from_utf8(write(&header("a"), &[settled(0, other)], None)).unwrap();
    let bad = text.replacen(
        "\"metrics\":{",
        &format!("\"metrics\":{{{},", many.join(",")),
        1,
    );
    assert_ne!(bad, text);
    assert!(intervals_of(bad.into_bytes(), "mem").is_err());
}
