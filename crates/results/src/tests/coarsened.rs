//! Files whose records span several intervals: written, re-read, merged, windowed; and the
//! size of an hour at high rates.

use super::*;

/// A rule that widens after every record past the first `full_resolution_s` seconds.
fn eager(full_resolution_s: u64) -> Coarsening {
    Coarsening::with_budget(
        Duration::from_secs(1),
        0,
        Duration::from_secs(full_resolution_s),
    )
}

fn write_with(c: Coarsening, intervals: &[Settled], end_s: f64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = ResultsWriter::with_coarsening(&mut out, &header("c"), c).unwrap();
    for s in intervals {
        w.interval(s).unwrap();
    }
    w.end(&end(end_s)).unwrap();
    out
}

/// Forty one-second intervals, interval `i` holding one request of `100 × (i + 1)` µs.
fn forty() -> Vec<Settled> {
    (0..40)
        .map(|i| settled(i, recorder_with(&[(100 * (i + 1), 0)])))
        .collect()
}

fn spans(run: &Run) -> Vec<(u64, u64)> {
    run.series
        .points()
        .iter()
        .map(|p| (p.offset.as_secs(), p.width.as_secs()))
        .collect()
}

/// The records an eager rule with a 4 s start writes for forty intervals: widths double on
/// the grid, the last one cut where the run ended.
const EAGER_4: [(u64, u64); 12] = [
    (0, 1),
    (1, 1),
    (2, 1),
    (3, 1),
    (4, 1),
    (5, 1),
    (6, 2),
    (8, 4),
    (12, 4),
    (16, 8),
    (24, 8),
    (32, 8),
];

#[test]
fn records_widen_on_the_grid_and_read_back_exactly() {
    let intervals = forty();
    let bytes = write_with(eager(4), &intervals, 40.0);
    let (r, records) = intervals_of(bytes.clone(), "mem").unwrap();
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    let layout: Vec<(u64, u64)> = records.iter().map(|r| (r.index, r.intervals)).collect();
    assert_eq!(layout, EAGER_4);
    let mut all = Recorder::new();
    for s in &intervals {
        all += &s.recorder;
    }
    for rec in &records {
        assert_eq!(rec.recorder.requests(), rec.intervals, "{}", rec.index);
        assert_eq!(rec.offset, Duration::from_secs(rec.index));
        assert_eq!(rec.width, Duration::from_secs(rec.intervals));
        // Gauges are the peaks over the record: in-flight is the interval index here.
        assert_eq!(rec.gauges.in_flight, rec.index + rec.intervals - 1);
    }
    let run = read(vec![bytes], None, None).unwrap();
    assert_eq!(spans(&run), EAGER_4);
    assert_eq!(run.totals.counters(), all.counters());
    for m in Metric::ALL {
        assert_eq!(run.totals.histogram(m), all.histogram(m), "{m:?}");
    }
    assert_eq!(run.elapsed, Duration::from_secs(40));
    // A coarse point keeps its exact count and the max of its span.
    let p = &run.series.points()[9];
    let slowest = recorder_with(&[(2_400, 0)]).latency_us().max();
    assert_eq!((p.requests, p.max_us), (8, slowest));
}

#[test]
fn shards_that_coarsened_at_different_moments_merge_on_the_grid() {
    // Shard a widens from 4 s, shard b from 10 s, shard c never: b's and c's records nest in
    // a's, so the merged points are a's records, each summing all three shards.
    let files = vec![
        write_with(eager(4), &forty(), 40.0),
        write_with(eager(10), &forty(), 40.0),
        write(&header("c"), &forty(), Some(&end(40.0))),
    ];
    let (_, b) = intervals_of(files[1].clone(), "b").unwrap();
    assert_eq!(
        b[10..14].iter().map(|r| r.intervals).collect::<Vec<_>>(),
        [1, 1, 2, 2]
    );
    let run = read(files, None, None).unwrap();
    assert_eq!(spans(&run), EAGER_4);
    for p in run.series.points() {
        assert_eq!(p.requests, 3 * p.width.as_secs(), "{p:?}");
        // In-flight requests add up over shards; each shard's is its peak over the span.
        assert_eq!(p.in_flight, 3 * (p.offset + p.width).as_secs() - 3);
    }
    assert_eq!(run.totals.requests(), 120);

    let log = read_run(
        vec![reader(write_with(eager(4), &forty(), 39.5), "a").unwrap()],
        None,
        None,
        true,
    )
    .unwrap()
    .latency_log;
    let widths: Vec<f64> = log.iter().map(|l| l.width.as_secs_f64()).collect();
    assert_eq!(
        widths,
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 4.0, 4.0, 8.0, 8.0, 7.5]
    );
    assert_eq!(
        log[9].max_us,
        recorder_with(&[(2_400, 0)]).latency_us().max()
    );
}

#[test]
fn a_window_keeps_whole_records_that_overlap_it() {
    let bytes = write_with(eager(4), &forty(), 40.0);
    let run = read(
        vec![bytes.clone()],
        Some(Duration::from_secs(10)),
        Some(Duration::from_secs(20)),
    )
    .unwrap();
    // [8, 12) and [16, 24) overlap the window only in part: kept whole.
    assert_eq!(spans(&run), [(8, 4), (12, 4), (16, 8)]);
    assert_eq!(run.totals.requests(), 16);
    assert_eq!(run.elapsed, Duration::from_secs(16));
    assert_eq!(run.totals.latency_us().min(), 900);
    let inside = read(
        vec![bytes],
        Some(Duration::from_millis(9_500)),
        Some(Duration::from_millis(9_600)),
    )
    .unwrap();
    assert_eq!(spans(&inside), [(8, 4)]);
}

#[test]
fn version_1_files_still_read() {
    // A file as the first belier wrote it: version 1, records without offset_s and width_s.
    let bytes = write(&header("old"), &forty()[..3], Some(&end(3.0)));
    let old: String = String::from_utf8(bytes.clone())
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if let Some(h) = v.get_mut("header") {
                h["version"] = 1.into();
            }
            if let Some(i) = v.get_mut("interval").and_then(|i| i.as_object_mut()) {
                assert!(i.remove("offset_s").is_some() && i.remove("width_s").is_some());
            }
            v.to_string() + "\n"
        })
        .collect();
    assert!(!old.contains("width_s") && old.contains("\"version\":1"));
    let (r, records) = intervals_of(old.clone().into_bytes(), "old").unwrap();
    assert_eq!(r.header().version, 1);
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|r| r.intervals == 1));
    let (now, then) = (
        read(vec![bytes], None, None).unwrap(),
        read(vec![old.into_bytes()], None, None).unwrap(),
    );
    assert_eq!(now.series, then.series);
    assert_eq!(now.totals.counters(), then.totals.counters());
}

#[test]
fn bad_record_timing_names_the_line() {
    let bytes = write(&header("t"), &forty()[..2], Some(&end(2.0)));
    let text = String::from_utf8(bytes).unwrap();
    let bad = |from: &str, to: &str| {
        assert!(text.contains(from), "{from}");
        let broken = text.replacen(from, to, 1).into_bytes();
        intervals_of(broken, "t.jsonl").err().unwrap().to_string()
    };
    let err = bad("\"width_s\":1.0", "\"width_s\":1.5");
    assert!(
        err.starts_with("t.jsonl:2: width_s 1.5 is not a whole number of 1 s intervals"),
        "{err}"
    );
    let err = bad("\"offset_s\":1.0", "\"offset_s\":7.0");
    assert!(
        err.starts_with("t.jsonl:3: offset_s 7 is not interval 1"),
        "{err}"
    );
    let err = bad("\"width_s\":1.0", "\"width_s\":2.0");
    assert!(
        err.starts_with("t.jsonl:3: the record at interval 1 starts before the previous one ends"),
        "{err}"
    );
}

/// Forty intervals of a scripted run: besides `forty()`'s request, interval `i` records one
/// request of step `i % 3`, a fourth step only in interval 20 (so a record's rows can be more
/// than the last one's), an evaluation of check `i % 2` and, every fourth interval, an
/// iteration.
fn forty_with_steps() -> Vec<Settled> {
    let mut intervals = forty();
    for s in &mut intervals {
        let i = s.index;
        let ok = sample(100 * (i + 1), 0, Outcome::Response { status: 200 });
        s.recorder.record_step((i % 3) as usize, &ok, i % 7 == 0);
        if i == 20 {
            let lost = sample(50, 0, Outcome::Error(ErrorKind::Timeout));
            s.recorder.record_step(3, &lost, true);
        }
        s.recorder.record_check((i % 2) as usize, i % 5 != 0);
        if i % 4 == 0 {
            s.recorder.record_iteration();
        }
    }
    intervals
}

/// Step rows (counters and latency histogram), checks and iterations.
type UsersPart = (
    Vec<(belier_stats::StepCounts, Histogram<u64>)>,
    Vec<belier_stats::CheckCounts>,
    u64,
);

/// A recorder's step rows (counters and latency histogram), checks and iterations, without
/// trailing rows that never counted anything: a recorder reused across intervals keeps the
/// rows it once had, emptied, and they add nothing.
fn users_part(r: &Recorder) -> UsersPart {
    let mut steps: Vec<_> = r
        .steps()
        .iter()
        .map(|row| (row.counts, row.values_us().clone()))
        .collect();
    while steps
        .last()
        .is_some_and(|(c, h)| c.requests == 0 && h.is_empty())
    {
        steps.pop();
    }
    let mut checks = r.checks().to_vec();
    while checks.last().is_some_and(|c| c.passed + c.failed == 0) {
        checks.pop();
    }
    (steps, checks, r.iterations())
}

#[test]
fn coarsened_records_carry_the_steps_of_every_interval_they_cover() {
    let intervals = forty_with_steps();
    let bytes = write_with(eager(4), &intervals, 40.0);
    let text = String::from_utf8(bytes.clone()).unwrap();
    let wide = text
        .lines()
        .filter(|l| l.contains("\"width_s\":8.0"))
        .collect::<Vec<_>>();
    assert_eq!(wide.len(), 3);
    assert!(wide.iter().all(|l| l.contains("\"steps_latency\"")));

    let (_, records) = intervals_of(bytes.clone(), "mem").unwrap();
    let layout: Vec<(u64, u64)> = records.iter().map(|r| (r.index, r.intervals)).collect();
    assert_eq!(layout, EAGER_4);
    for rec in &records {
        let mut covered = Recorder::new();
        for s in &intervals[rec.index as usize..(rec.index + rec.intervals) as usize] {
            covered += &s.recorder;
        }
        assert_eq!(
            users_part(&rec.recorder),
            users_part(&covered),
            "record at {}",
            rec.index
        );
        assert!(!rec.recorder.steps().is_empty());
    }

    let mut all = Recorder::new();
    for s in &intervals {
        all += &s.recorder;
    }
    let run = read(vec![bytes], None, None).unwrap();
    assert_eq!(spans(&run), EAGER_4);
    assert_eq!(run.totals.counters(), all.counters());
    assert_eq!(users_part(&run.totals), users_part(&all));
    assert_eq!(run.totals.steps().len(), 4);
    assert_eq!(run.totals.steps()[3].counts.failures, 1);
    assert_eq!(run.totals.iterations(), 10);
    assert_eq!(
        run.totals.checks()[0].passed + run.totals.checks()[1].passed,
        32
    );
}

#[test]
fn shards_with_steps_that_coarsened_at_different_moments_merge_exactly() {
    let files = vec![
        write_with(eager(4), &forty_with_steps(), 40.0),
        write_with(eager(10), &forty_with_steps(), 40.0),
        write(&header("c"), &forty_with_steps(), Some(&end(40.0))),
    ];
    let mut all = Recorder::new();
    for _ in 0..3 {
        for s in forty_with_steps() {
            all += &s.recorder;
        }
    }
    let run = read(files, None, None).unwrap();
    assert_eq!(spans(&run), EAGER_4);
    assert_eq!(run.totals.counters(), all.counters());
    assert_eq!(users_part(&run.totals), users_part(&all));
    // A window keeps whole records, steps and all: [8, 12) and [16, 24) for 10 s to 20 s.
    let files = vec![write_with(eager(4), &forty_with_steps(), 40.0)];
    let window = read(
        files,
        Some(Duration::from_secs(10)),
        Some(Duration::from_secs(20)),
    )
    .unwrap();
    let mut kept = Recorder::new();
    for s in &forty_with_steps()[8..24] {
        kept += &s.recorder;
    }
    assert_eq!(users_part(&window.totals), users_part(&kept));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    // Shards coarsening at random moments (or never), each saved and re-read: merged, they
    // give exactly what one recorder that saw every sample gives, and a series of contiguous
    // points that count every request once.
    #[test]
    fn coarsened_shards_equal_one_recorder(
        samples in proptest::collection::vec(
            (1u64..5_000_000, 0u64..5_000, 0usize..3, 0u64..40, any::<bool>()),
            1..300,
        ),
        starts in proptest::collection::vec(proptest::option::of(0u64..30), 3),
        users in any::<bool>(),
    ) {
        let (all, shards) = recorded_in_shards(&samples, 40, users);
        let files: Vec<Vec<u8>> = shards
            .into_iter()
            .zip(&starts)
            .map(|(intervals, start)| {
                let settled: Vec<Settled> = intervals
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| settled(i as u64, r))
                    .collect();
                let rule = match start {
                    Some(s) => eager(*s),
                    None => Coarsening::new(Duration::from_secs(1)),
                };
                write_with(rule, &settled, 40.0)
            })
            .collect();
        let run = read(files, None, None).unwrap();
        prop_assert_eq!(run.totals.counters(), all.counters());
        prop_assert_eq!(run.totals.latency_summary(), all.latency_summary());
        for m in Metric::ALL {
            prop_assert_eq!(run.totals.histogram(m), all.histogram(m));
        }
        prop_assert_eq!(users_part(&run.totals), users_part(&all));
        let points = run.series.points();
        prop_assert_eq!(points.first().map(|p| p.offset), Some(Duration::ZERO));
        for pair in points.windows(2) {
            prop_assert_eq!(pair[0].offset + pair[0].width, pair[1].offset);
        }
        let last = points.last().unwrap();
        prop_assert_eq!(last.offset + last.width, Duration::from_secs(40));
        prop_assert_eq!(points.iter().map(|p| p.requests).sum::<u64>(), all.requests());
    }
}

/// Bytes an hour of one-second intervals takes at `rate` requests a second, latencies
/// log-normal (median 2 ms, p99 about 13 ms: the shape of a real service), open loop (lag
/// recorded, so all three histograms differ), written with the default rule.
///
/// Recording every request of an hour is too slow for a debug test at high rates, so each
/// second is one of a pool of 64 seconds recorded in full; records span at most 64 s here, so
/// a record's seconds are all different ones and their merged histograms, which decide the
/// size, have the same spread as an hour of distinct seconds. The `synthetic_hour` example
/// records every request; its figures are in docs/src/guide/results.md.
fn hour_bytes(rate: u64) -> (usize, usize) {
    const POOL: u64 = 64;
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut pool: Vec<Settled> = (0..POOL)
        .map(|i| {
            let mut r = Recorder::new();
            for _ in 0..rate {
                let (a, b) = (uniform(), uniform());
                let normal = (-2.0 * a.max(1e-12).ln()).sqrt() * (std::f64::consts::TAU * b).cos();
                let lag = (uniform() * 200.0) as u64;
                let latency = (2_000.0 * (0.8 * normal).exp()) as u64;
                r.record(&sample(
                    latency + lag,
                    lag,
                    Outcome::Response { status: 200 },
                ));
            }
            settled(i, r)
        })
        .collect();
    let mut out = Vec::new();
    let mut w = ResultsWriter::new(&mut out, &header("size")).unwrap();
    for i in 0..3_600 {
        let s = &mut pool[(i % POOL) as usize];
        s.index = i;
        s.offset = Duration::from_secs(i);
        w.interval(s).unwrap();
    }
    w.end(&end(3_600.0)).unwrap();
    let records = out
        .split(|&b| b == b'\n')
        .filter(|l| l.starts_with(b"{\"interval\""))
        .count();
    (out.len(), records)
}

#[test]
fn an_hour_at_1000_per_second_stays_under_10_mb() {
    let (bytes, records) = hour_bytes(1_000);
    assert!(
        bytes < 10_000_000,
        "{bytes} bytes for an hour in {records} records"
    );
}

#[test]
fn an_hour_at_5000_per_second_stays_under_10_mb() {
    let (bytes, records) = hour_bytes(5_000);
    assert!(
        bytes < 10_000_000,
        "{bytes} bytes for an hour in {records} records"
    );
}

#[test]
fn an_hour_at_20000_per_second_stays_under_10_mb() {
    // One-second records would take about 18 MB: the writer coarsens.
    let (bytes, records) = hour_bytes(20_000);
    assert!(
        bytes < 10_000_000,
        "{bytes} bytes for an hour in {records} records"
    );
    assert!(records < 3_600, "{records}");
}
