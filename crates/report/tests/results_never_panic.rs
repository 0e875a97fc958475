//! Reading a results file back gives a run or an error naming the line, never a panic,
//! whatever the file holds: noise, or a file `--save` wrote with a slip in it (a line cut
//! short, dropped or repeated, a field of the wrong type or at a boundary, a histogram's bytes
//! altered). Whatever reads is rendered in every format, merged as a shard with the intact
//! file, and compared with it, as `belier report` and `belier compare` would.
//!
//! No case may hold more than [`MOST_HELD`] bytes at once: every length or count a file
//! claims is bounded before it sizes anything (issue #28: one number in a histogram's header
//! made the reader allocate 2–4 GiB).
//!
//! `PROPTEST_CASES` sets the number of cases (256 by default); `bench/fuzz` runs many more.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Cursor;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use belier_report::{compare, HtmlRun, NamedReport, Report};
use belier_results::{read_run, End, Header, Reader, ResultsWriter, Run, RunInfo, FORMAT, VERSION};
use belier_stats::{ErrorKind, Gauges, Outcome, Recorder, Sample, Settled};
use belier_testsupport::near_miss;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2Serializer};
use hdrhistogram::Histogram;
use proptest::prelude::*;
use proptest::sample::Index;

/// Most bytes one case may hold at once beyond what its thread held before it. A record's
/// recorder is some 220 KiB, plus 180 KiB per row: step rows and custom-metric rows, each
/// bounded at 1,024 (`belier_stats::MOST_ROWS`), so a file at both bounds holds some 370 MiB
/// in a recorder, and reading and merging it holds two (a record and the totals): some
/// 740 MiB. (The bound here was 512 MiB, drawn from the step rows alone, until a case of 847
/// step rows and 565 metric rows held 537 MB.) The finds were 2–4 GiB.
const MOST_HELD: usize = 768 << 20;

/// The system allocator, counting the bytes each thread holds (proptest runs the cases of
/// one test on one thread; tests run on threads of their own).
struct Counting;

thread_local! {
    static HELD: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn held(delta: isize) {
    // try_with: the allocator runs while a thread's locals are torn down too.
    let _ = HELD.try_with(|h| {
        h.set(h.get() + delta);
        let _ = PEAK.try_with(|p| p.set(p.get().max(h.get())));
    });
}

// Counting what a case holds needs an allocator of the test's own, which is an unsafe trait.
// SAFETY: every call is forwarded to the system allocator as it came.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            held(layout.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            held(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        held(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            held(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Runs `f`; the most bytes its thread held at once beyond what it held before.
fn peak_held<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = HELD.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let out = f();
    (out, (PEAK.with(Cell::get) - before).max(0) as usize)
}

/// A results file as `belier --save` writes it: an open-loop run with stages, three records
/// with responses, errors and lag, and an end line.
fn seed() -> &'static str {
    static SEED: OnceLock<String> = OnceLock::new();
    SEED.get_or_init(|| {
        let info: RunInfo = serde_json::from_value(serde_json::json!({
            "belier_version": "0.1.0", "url": "http://127.0.0.1:8080/", "address": "127.0.0.1:8080",
            "method": "GET", "connections": 10, "threads": 2, "keepalive": true,
            "requests": 1000, "duration_s": 3.0, "schedule_s": 3.0, "timeout_s": 30.0,
            "host_cores": 2, "started_at": "2026-11-22T10:00:00Z", "model": "open",
            "rate": 100.0, "stages": [{"duration_s": 1.0, "target": 200.0}],
            "ramp_up_s": null, "arrivals": "poisson", "seed": 7, "max_connections": 100,
            "max_in_flight": 50, "timer_slack_us": 250
        }))
        .expect("run information");
        let header = Header {
            format: FORMAT.into(),
            version: VERSION,
            name: "seed".into(),
            interval_s: 1.0,
            run: info,
        };
        let mut out = Vec::new();
        let mut w = ResultsWriter::new(&mut out, &header).unwrap();
        let t = Instant::now();
        for index in 0..3u64 {
            let mut r = Recorder::new();
            for i in 0..50u64 {
                let outcome = match i % 10 {
                    0 => Outcome::Error(ErrorKind::Timeout),
                    1 => Outcome::Response { status: 503 },
                    _ => Outcome::Response { status: 200 },
                };
                r.record(&Sample {
                    intended: t,
                    dispatched: t + Duration::from_micros(i),
                    ready: None,
                    connected: Some(t + Duration::from_micros(i + 20)),
                    handshaken: None,
                    sent: t + Duration::from_micros(i + 30),
                    first_byte: Some(t + Duration::from_micros(100 * i + 40)),
                    done: t + Duration::from_micros(100 * i + 90),
                    outcome,
                    bytes_in: 100,
                    bytes_out: 50,
                    trace: None,
                });
                r.record_scheduled();
            }
            r.record_connection();
            let gauges = Gauges {
                in_flight: index,
                cpu: 0.25,
                connections_peak: 3,
                held: 0,
            };
            w.interval(&Settled {
                index,
                offset: Duration::from_secs(index),
                recorder: r,
                gauges,
            })
            .unwrap();
        }
        w.end(&End {
            elapsed_s: 2.5,
            warnings: vec!["a warning".into()],
            ..End::default()
        })
        .unwrap();
        String::from_utf8(out).unwrap()
    })
}

/// One slip in a results file.
#[derive(Clone, Debug)]
enum Slip {
    /// Anywhere in the text (`near_miss`).
    Text(near_miss::Mutation),
    /// A JSON value of a line replaced by one of another type or removed.
    Field(Index, Index, Index),
    DropLine(Index),
    RepeatLine(Index),
    SwapLines(Index, Index),
    /// A histogram of a record re-encoded uncompressed (V2), one byte set, or cut short.
    HistogramByte(Index, Index, Index, u8),
    HistogramCut(Index, Index, Index),
    /// A length field set: the compressed form's (outer) or the plain one's (inner).
    CompressedLength(Index, Index, u32),
    PayloadLength(Index, Index, u32),
    /// A histogram's significant digits set (HdrHistogram allows up to 5).
    Digits(Index, Index, u8),
    /// A record's step rows (counters and histograms) or metric rows multiplied.
    Rows(Index, Index, usize),
}

fn slip() -> impl Strategy<Value = Slip> {
    prop_oneof![
        near_miss::mutation().prop_map(Slip::Text),
        (any::<Index>(), any::<Index>(), any::<Index>()).prop_map(|(a, b, c)| Slip::Field(a, b, c)),
        any::<Index>().prop_map(Slip::DropLine),
        any::<Index>().prop_map(Slip::RepeatLine),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Slip::SwapLines(a, b)),
        (any::<Index>(), any::<Index>(), any::<Index>(), any::<u8>())
            .prop_map(|(a, b, c, d)| Slip::HistogramByte(a, b, c, d)),
        (any::<Index>(), any::<Index>(), any::<Index>())
            .prop_map(|(a, b, c)| Slip::HistogramCut(a, b, c)),
        (any::<Index>(), any::<Index>(), length())
            .prop_map(|(a, b, n)| Slip::CompressedLength(a, b, n)),
        (any::<Index>(), any::<Index>(), length())
            .prop_map(|(a, b, n)| Slip::PayloadLength(a, b, n)),
        (any::<Index>(), any::<Index>(), 0u8..8).prop_map(|(a, b, d)| Slip::Digits(a, b, d)),
        (
            any::<Index>(),
            any::<Index>(),
            2usize..3 * belier_stats::MOST_ROWS
        )
            .prop_map(|(a, b, n)| Slip::Rows(a, b, n)),
    ]
}

/// A length field's value: anything, or one near what a histogram has, or past it.
fn length() -> impl Strategy<Value = u32> {
    prop_oneof![
        any::<u32>(),
        0u32..2_000,
        Just(u32::MAX),
        Just(4_000_000_000)
    ]
}

/// The row-holding fields of a record, by JSON pointer.
const ROWS: &[&str] = &[
    "/interval/counters/steps",
    "/interval/counters/metrics",
    "/interval/steps_latency",
    "/interval/metrics_values",
];

/// `line` with the array at `which` of [`ROWS`] made `n` long by repeating its items (or a
/// zero count, when it has none).
fn multiply_rows(line: &str, which: Index, n: usize) -> String {
    let Ok(mut doc) = serde_json::from_str::<serde_json::Value>(line) else {
        return line.to_string();
    };
    let pointer = ROWS[which.index(ROWS.len())];
    let Some(interval) = doc.pointer_mut("/interval") else {
        return line.to_string();
    };
    let item = match pointer {
        "/interval/counters/steps" => serde_json::json!({"requests": 1, "failures": 0}),
        "/interval/counters/metrics" => serde_json::json!(1),
        _ => interval["latency"].clone(),
    };
    let key = pointer.rsplit('/').next().unwrap();
    let holder = if pointer.contains("counters") {
        &mut interval["counters"]
    } else {
        interval
    };
    holder[key] = serde_json::Value::Array(vec![item; n]);
    doc.to_string()
}

/// The histograms a record line stores, by JSON pointer.
const HISTOGRAMS: &[&str] = &[
    "/interval/latency",
    "/interval/uncorrected",
    "/interval/lag",
    "/interval/phases/connect",
    "/interval/phases/ttfb",
];

/// `line`'s histogram at `which`, decoded and handed to `alter` as uncompressed V2 bytes.
fn alter_histogram(line: &str, which: Index, alter: impl FnOnce(&mut Vec<u8>)) -> String {
    alter_stored(line, which, |bytes| {
        let Ok(h) = Deserializer::new().deserialize::<u64, _>(&mut bytes.as_slice()) else {
            return;
        };
        let h: Histogram<u64> = h;
        bytes.clear();
        V2Serializer::new().serialize(&h, bytes).unwrap();
        alter(bytes);
    })
}

/// `line`'s histogram at `which` handed to `alter` as it is stored (compressed V2).
fn alter_stored(line: &str, which: Index, alter: impl FnOnce(&mut Vec<u8>)) -> String {
    let Ok(mut doc) = serde_json::from_str::<serde_json::Value>(line) else {
        return line.to_string();
    };
    let Some(field) = doc.pointer_mut(HISTOGRAMS[which.index(HISTOGRAMS.len())]) else {
        return line.to_string();
    };
    let Some(mut bytes) = field.as_str().and_then(|s| BASE64.decode(s).ok()) else {
        return line.to_string();
    };
    alter(&mut bytes);
    *field = serde_json::Value::String(BASE64.encode(&bytes));
    doc.to_string()
}

/// Sets the big-endian 32-bit field at `at`, when the bytes reach it.
fn set_u32(bytes: &mut [u8], at: usize, value: u32) {
    if let Some(field) = bytes.get_mut(at..at + 4) {
        field.copy_from_slice(&value.to_be_bytes());
    }
}

fn apply(text: &str, slip: &Slip) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let n = lines.len();
    let n_lines = n;
    match slip {
        Slip::Text(m) => return near_miss::apply(text, m),
        Slip::Field(line, node, with) => {
            let i = line.index(n);
            if let Ok(doc) = serde_json::from_str(&lines[i]) {
                lines[i] = near_miss::retype_json(&doc, *node, *with).to_string();
            }
        }
        Slip::DropLine(line) => drop(lines.remove(line.index(n))),
        Slip::RepeatLine(line) => {
            let i = line.index(n);
            lines.insert(i, lines[i].clone());
        }
        Slip::SwapLines(a, b) => lines.swap(a.index(n), b.index(n)),
        Slip::HistogramByte(line, which, at, value) => {
            let i = line.index(n);
            lines[i] = alter_histogram(&lines[i], *which, |raw| {
                let at = at.index(raw.len());
                raw[at] = *value;
            });
        }
        Slip::HistogramCut(line, which, at) => {
            let i = line.index(n);
            lines[i] = alter_histogram(&lines[i], *which, |raw| raw.truncate(at.index(raw.len())));
        }
        Slip::CompressedLength(line, which, n) => {
            let i = line.index(n_lines);
            lines[i] = alter_stored(&lines[i], *which, |raw| set_u32(raw, 4, *n));
        }
        Slip::PayloadLength(line, which, n) => {
            let i = line.index(n_lines);
            lines[i] = alter_histogram(&lines[i], *which, |raw| set_u32(raw, 4, *n));
        }
        Slip::Digits(line, which, d) => {
            let i = line.index(n_lines);
            lines[i] = alter_histogram(&lines[i], *which, |raw| set_u32(raw, 12, (*d).into()));
        }
        Slip::Rows(line, which, n) => {
            let i = line.index(n_lines);
            lines[i] = multiply_rows(&lines[i], *which, *n);
        }
    }
    lines.join("\n") + "\n"
}

fn near_miss_file() -> impl Strategy<Value = String> {
    prop::collection::vec(slip(), 1..=3)
        .prop_map(|slips| slips.iter().fold(seed().to_string(), |t, s| apply(&t, s)))
}

fn reader(bytes: &[u8]) -> Result<Reader, String> {
    Reader::open(Box::new(Cursor::new(bytes.to_vec())), "fuzz").map_err(|e| e.0)
}

/// An error names the file, and a line when it has one.
fn assert_named(error: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        error.starts_with("fuzz") || error.starts_with("cannot merge"),
        "{}",
        error
    );
    Ok(())
}

fn report(run: &Run) -> Report<'_> {
    Report {
        scenarios: Vec::new(),
        info: &run.header.run,
        totals: &run.totals,
        series: &run.series,
        elapsed: run.elapsed,
        interrupted: run.end.as_ref().is_some_and(|e| e.interrupted),
        warnings: run.notes.clone(),
        host: run.end.as_ref().and_then(|e| e.host),
        thresholds: vec![],
        changes: vec![],
    }
}

/// Every renderer `belier report` offers, and `belier compare` against `other`.
fn render(run: &Run, other: &Run) {
    let (r, o) = (report(run), report(other));
    let _ = belier_report::render_text(&r);
    let _ = belier_report::render_json(&r);
    let named = [
        NamedReport {
            name: "a",
            report: &r,
        },
        NamedReport {
            name: "b",
            report: &o,
        },
    ];
    let _ = belier_report::render_markdown(&named);
    let _ = belier_report::render_csv(&named);
    let _ = belier_report::render_hdr_log(&[("a", run), ("b", other)]);
    let _ = belier_report::render_html(&[HtmlRun {
        name: "a".into(),
        report: &r,
    }]);
    let deltas = compare::compare(&o, &r);
    let conditions = compare::parse_fail_if("p99>+10%,errors>0.5%,rate<-5%,p50>1ms").unwrap();
    let failures = compare::failed(&deltas, &conditions);
    let _ = compare::render_comparison_text("b", "a", &deltas, &failures);
    let _ = compare::render_comparison_json("b", "a", &deltas, &failures);
}

fn seed_run() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        read_run(vec![reader(seed().as_bytes()).unwrap()], None, None, true).unwrap()
    })
}

/// [`read_and_render`], holding at most [`MOST_HELD`] bytes at once.
fn check(
    bytes: &[u8],
    from: Option<Duration>,
    to: Option<Duration>,
    merge: bool,
) -> Result<(), TestCaseError> {
    seed_run();
    let (outcome, peak) = peak_held(|| read_and_render(bytes, from, to, merge));
    prop_assert!(peak <= MOST_HELD, "held {} bytes at once", peak);
    outcome
}

/// Reads `bytes` over a window, rendering what reads; then, if it read and `merge`, as a
/// shard beside the intact file (merging their run information).
fn read_and_render(
    bytes: &[u8],
    from: Option<Duration>,
    to: Option<Duration>,
    merge: bool,
) -> Result<(), TestCaseError> {
    let alone = match reader(bytes) {
        Err(e) => return assert_named(&e),
        Ok(r) => read_run(vec![r], from, to, true),
    };
    match alone {
        Err(e) => return assert_named(&e.0),
        Ok(run) => render(&run, seed_run()),
    }
    if !merge {
        return Ok(());
    }
    let shards = vec![reader(seed().as_bytes()).unwrap(), reader(bytes).unwrap()];
    match read_run(shards, from, to, true) {
        Err(e) => assert_named(&e.0)?,
        Ok(run) => render(&run, seed_run()),
    }
    Ok(())
}

fn window() -> impl Strategy<Value = (Option<Duration>, Option<Duration>)> {
    let at = prop::option::of((0u64..5_000).prop_map(Duration::from_millis));
    (at.clone(), at)
}

proptest! {
    #[test]
    fn noise_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        check(&bytes, None, None, false)?;
    }

    #[test]
    fn lines_of_noise_after_a_header_never_panic(tail in "\\PC{0,300}") {
        let header = seed().lines().next().unwrap();
        check(format!("{header}\n{tail}").as_bytes(), None, None, false)?;
    }

    #[test]
    fn near_misses_never_panic(text in near_miss_file(), (from, to) in window()) {
        check(text.as_bytes(), from, to, true)?;
    }
}

#[test]
fn the_seed_reads_back_whole() {
    let run = seed_run();
    assert_eq!(run.totals.requests(), 150);
    assert_eq!(run.series.points().len(), 3);
    assert!(run.notes.is_empty(), "{:?}", run.notes);
    render(run, run);
    // Every histogram the slips alter is in the seed.
    let record: serde_json::Value = serde_json::from_str(seed().lines().nth(1).unwrap()).unwrap();
    for pointer in HISTOGRAMS {
        assert!(record.pointer(pointer).is_some(), "{pointer}");
    }
}
