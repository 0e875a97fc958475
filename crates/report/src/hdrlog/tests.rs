use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use belier_results::{read_run, End, Header, Reader, ResultsWriter, FORMAT, VERSION};
use belier_stats::{Gauges, Outcome, Recorder, Sample, Settled};
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::*;
use crate::fixtures;

fn recorder(latencies_us: impl IntoIterator<Item = u64>) -> Recorder {
    let mut r = Recorder::new();
    let t = Instant::now();
    for l in latencies_us {
        r.record(&Sample {
            bytes_in: 1,
            bytes_out: 1,
            ..Sample::simulated(t, 0, l, Outcome::Response { status: 200 })
        });
    }
    r
}

/// A run written to a results file and read back, with the intervals that went in.
fn results(name: &str, started_at: &str, scale: u64) -> (Run, Vec<Settled>) {
    let mut run = fixtures::info();
    run.started_at = started_at.into();
    let intervals = (0..2u64)
        .map(|index| Settled {
            index,
            offset: Duration::from_secs(index),
            recorder: recorder((1..=500).map(|i| i * scale + index * 1_000_000)),
            gauges: Gauges::default(),
        })
        .collect();
    let header = Header {
        format: FORMAT.into(),
        version: VERSION,
        name: name.into(),
        interval_s: 1.0,
        run,
    };
    let mut bytes = Vec::new();
    let mut w = ResultsWriter::new(&mut bytes, &header).unwrap();
    for s in &intervals {
        w.interval(s).unwrap();
    }
    w.end(&End {
        elapsed_s: 1.5,
        ..End::default()
    })
    .unwrap();
    let reader = Reader::open(Box::new(std::io::Cursor::new(bytes)), "memory").unwrap();
    (read_run(vec![reader], None, None, true).unwrap(), intervals)
}

struct Line {
    tag: Option<String>,
    start: Duration,
    width: Duration,
    max: f64,
    histogram: Histogram<u64>,
}

/// The log read back by the hdrhistogram crate's own reader: StartTime, and the intervals.
fn read(log: &str) -> (Option<Duration>, Vec<Line>) {
    let mut start = None;
    let mut lines = vec![];
    let mut deserializer = Deserializer::new();
    for entry in IntervalLogIterator::new(log.as_bytes()) {
        match entry.expect("a well-formed log") {
            LogEntry::StartTime(t) => start = Some(t),
            LogEntry::BaseTime(_) => panic!("no BaseTime is written"),
            LogEntry::Interval(h) => {
                let bytes = BASE64.decode(h.encoded_histogram()).unwrap();
                lines.push(Line {
                    tag: h.tag().map(|t| t.as_str().to_string()),
                    start: h.start_timestamp(),
                    width: h.duration(),
                    max: h.max(),
                    histogram: deserializer.deserialize(&mut bytes.as_slice()).unwrap(),
                });
            }
        }
    }
    (start, lines)
}

#[test]
fn two_runs_read_back_exactly_in_time_order() {
    let (a, a_in) = results("base", "2026-11-22T10:00:00Z", 7);
    let (b, b_in) = results("new, v2", "2026-11-22T10:00:30.5Z", 9);
    // Given newest first: the log still starts with the oldest run.
    let log = render_hdr_log(&[("new, v2", &b), ("base", &a)]);
    assert!(log.starts_with("#[Logged with belier 0.1.0]\n"), "{log}");
    assert!(log.contains("\n#[MaxValueDivisor: 1000.000]\n"), "{log}");
    assert!(
        log.contains("\n#[StartTime: 1795341600.000 (seconds since epoch)]\n"),
        "{log}"
    );

    let (start, lines) = read(&log);
    assert_eq!(start, Some(Duration::from_secs(1_795_341_600)));
    let got: Vec<(Option<&str>, f64, f64)> = lines
        .iter()
        .map(|l| {
            (
                l.tag.as_deref(),
                l.start.as_secs_f64(),
                l.width.as_secs_f64(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (Some("base"), 0.0, 1.0),
            (Some("base"), 1.0, 0.5),
            (Some("new__v2"), 30.5, 1.0),
            (Some("new__v2"), 31.5, 0.5),
        ]
    );
    let originals = [&a_in[0], &a_in[1], &b_in[0], &b_in[1]];
    for (line, original) in lines.iter().zip(originals) {
        let want = original.recorder.latency_us();
        assert_eq!(&line.histogram, want);
        // The max column is in milliseconds, at the log's three decimals.
        assert!(
            (line.max - want.max() as f64 / 1000.0).abs() < 0.0005,
            "{}",
            line.max
        );
    }
}

#[test]
fn an_unreadable_start_leaves_offsets_from_the_run_start() {
    let (a, _) = results("a", "yesterday", 3);
    let log = render_hdr_log(&[("a", &a)]);
    assert!(!log.contains("StartTime"), "{log}");
    let (start, lines) = read(&log);
    assert_eq!(start, None);
    // One run: untagged lines, as HdrHistogram's own writers leave them.
    assert!(lines.iter().all(|l| l.tag.is_none()));
    assert!(!log.contains("Tag="), "{log}");
    let starts: Vec<f64> = lines.iter().map(|l| l.start.as_secs_f64()).collect();
    assert_eq!(starts, [0.0, 1.0]);
}

#[test]
fn no_runs_is_a_log_with_only_its_header() {
    let log = render_hdr_log(&[]);
    assert!(log.lines().all(|l| l.starts_with('#')), "{log}");
    assert!(read(&log).1.is_empty());
}

#[test]
fn tags_are_sanitised_and_unique() {
    let names = ["a b", "a,b", "a_b", "", "x\ty\r\nz", "base", "base"];
    assert_eq!(
        unique_tags(names.into_iter()),
        ["a_b", "a_b-2", "a_b-3", "untitled", "x_y__z", "base", "base-2"]
    );
    for tag in unique_tags(names.into_iter()) {
        assert!(
            hdrhistogram::serialization::interval_log::Tag::new(&tag).is_some(),
            "{tag}"
        );
    }
}

#[test]
fn rfc3339_dates() {
    let since_epoch =
        |s: &str| parse_rfc3339(s).map(|t| t.duration_since(SystemTime::UNIX_EPOCH).unwrap());
    // Checked against `date -u -d … +%s`.
    let valid = [
        ("1970-01-01T00:00:00Z", 0, 0),
        ("2026-11-22T10:00:00Z", 1_795_341_600, 0),
        ("2026-11-22t10:00:00z", 1_795_341_600, 0),
        ("2026-11-22 10:00:00Z", 1_795_341_600, 0),
        ("2026-11-22T10:00:00.25Z", 1_795_341_600, 250_000_000),
        (
            "2026-11-22T10:00:00.123456789123Z",
            1_795_341_600,
            123_456_789,
        ),
        ("2000-02-29T12:34:56+02:00", 951_820_496, 0),
        ("2000-02-29T12:34:56-00:30", 951_829_496, 0),
        ("2100-03-01T00:00:00Z", 4_107_542_400, 0),
    ];
    for (s, secs, nanos) in valid {
        assert_eq!(since_epoch(s), Some(Duration::new(secs, nanos)), "{s}");
    }
    let invalid = [
        "",
        "yesterday",
        "2026-11-22",
        "2026-11-22T10:00:00",
        "2026-11-22T10:00:00+0200",
        "2026-11-22T10:00:00+2:00",
        "2026-11-22T10:00:00.Z",
        "2026-11-22T10:00:00ZZ",
        "2026-02-29T00:00:00Z",
        "2100-02-29T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-00-01T00:00:00Z",
        "2026-11-22T24:00:00Z",
        "1969-12-31T23:59:59Z",
        "1970-01-01T00:00:00+01:00",
        "2026-11-22T10:00:00+24:00",
        "２026-11-22T10:00:00Z",
    ];
    for s in invalid {
        assert_eq!(since_epoch(s), None, "{s}");
    }
}

#[test]
fn streamed_message_times_follow_each_interval_tagged_by_name() {
    // An interval of ten server streams: first messages after 2 ms, gaps of 500 µs.
    let mut streams = recorder([3_000; 10]);
    let mut gaps = belier_stats::MessageTimes::default();
    for _ in 0..3 {
        gaps.push(500);
    }
    for _ in 0..10 {
        let call = belier_stats::CallMessages::one_way(1, 4, Some(2_000), &gaps);
        streams.record_simulated_stream(3_000, &call);
    }
    let intervals = [
        Settled {
            index: 0,
            offset: Duration::ZERO,
            recorder: streams,
            gauges: Gauges::default(),
        },
        Settled {
            index: 1,
            offset: Duration::from_secs(1),
            recorder: recorder([1_000; 5]),
            gauges: Gauges::default(),
        },
    ];
    let header = Header {
        format: FORMAT.into(),
        version: VERSION,
        name: "s".into(),
        interval_s: 1.0,
        run: fixtures::info(),
    };
    let mut bytes = Vec::new();
    let mut w = ResultsWriter::new(&mut bytes, &header).unwrap();
    for s in &intervals {
        w.interval(s).unwrap();
    }
    w.end(&End::default()).unwrap();
    let reader = Reader::open(Box::new(std::io::Cursor::new(bytes)), "memory").unwrap();
    let run = read_run(vec![reader], None, None, true).unwrap();
    let log = render_hdr_log(&[("s", &run)]);
    assert!(
        log.contains("#[Tags first_message, gap, round_trip:"),
        "{log}"
    );
    let (_, lines) = read(&log);
    let tags: Vec<(Option<&str>, f64)> = lines
        .iter()
        .map(|l| (l.tag.as_deref(), l.start.as_secs_f64()))
        .collect();
    // The latency lines stay untagged; no round trips were recorded, so no line for them.
    assert_eq!(
        tags,
        [
            (None, 0.0),
            (Some("first_message"), 0.0),
            (Some("gap"), 0.0),
            (None, 1.0)
        ]
    );
    let m = intervals[0].recorder.messages().unwrap();
    assert_eq!(&lines[1].histogram, m.first_message_us());
    assert_eq!(&lines[2].histogram, m.gap_us());
    // With several runs, each time's tag carries its run's.
    let log = render_hdr_log(&[("s", &run), ("t", &run)]);
    assert!(log.contains("Tag=t.gap,"), "{log}");
}
