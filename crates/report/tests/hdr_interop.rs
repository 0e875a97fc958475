//! An independent HdrHistogram implementation reads belier's histograms: HdrHistogram_py (the
//! PyPI package `hdrhistogram`, imported as `hdrh`) decodes every histogram of a results file
//! and reads the interval log of `render_hdr_log` with its own log reader, and must find the
//! same counts, buckets and percentiles as the Rust histograms that were written.
//!
//! Without `python3` or the package the test says it skipped, except under CI (`CI=true`),
//! where that is a failure: `.ci/run` installs the package.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use belier_report::render_hdr_log;
use belier_results::{
    fixtures, read_run, End, Header, Model, Reader, ResultsWriter, RunInfo, FORMAT, VERSION,
};
use belier_stats::{ErrorKind, Gauges, Metric, Outcome, Recorder, Sample, Settled};
use belier_testsupport::missing;
use hdrhistogram::Histogram;
use serde_json::Value;

/// Percentiles compared, besides the count, minimum and maximum.
const PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];
const INTERVALS: u64 = 3;
/// Responses per interval, so values in each histogram.
///
/// HdrHistogram implementations turn a percentile into a rank differently: the Rust crate takes
/// `ceil(p / 100 × n)`, HdrHistogram_py rounds `p × n / 100` half up, Java takes the ceiling
/// after removing one ulp. They can pick neighbouring ranks, so values one bucket apart: for
/// 20,000 values, 99.9 / 100 is 0.9990000000000001 in binary and the Rust crate takes rank
/// 19,981 of p99.9 where the others take 19,980. 33,000 is a count at which all of them agree
/// on p50, p90, p99 and p99.9 (checked below), so the values must be identical.
const PER_INTERVAL: u64 = 33_000;
/// Requests per interval that failed; counted without a sample, so in no histogram.
const ERRORS_PER_INTERVAL: u64 = 17;

/// Reads argv[1] (a results file) and argv[2] (an interval log) with HdrHistogram_py only, and
/// prints what it decoded as JSON.
const SCRIPT: &str = r#"
import json, sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

PERCENTILES = [50.0, 90.0, 99.0, 99.9]

def summary(h):
    return {
        "count": h.get_total_count(),
        "min": h.get_min_value(),
        "max": h.get_max_value(),
        "percentiles": [h.get_value_at_percentile(p) for p in PERCENTILES],
        "buckets": [[v.value_iterated_to, v.count_at_value_iterated_to]
                    for v in h.get_recorded_iterator()],
    }

results = []
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        record = json.loads(line)
        if "interval" in record:
            i = record["interval"]
            encoded = {m: i[m] for m in ("latency", "uncorrected", "lag")}
            encoded.update(i.get("phases", {}))
            results.append({m: summary(HdrHistogram.decode(e)) for m, e in encoded.items()})

log = []
reader = HistogramLogReader(sys.argv[2], HdrHistogram(1, 3600000000, 3))
while True:
    h = reader.get_next_interval_histogram()
    if h is None:
        break
    s = summary(h)
    s["tag"] = h.get_tag()
    s["start_ms"] = h.get_start_time_stamp() - reader.get_start_time_sec() * 1000.0
    s["end_ms"] = h.get_end_time_stamp() - reader.get_start_time_sec() * 1000.0
    log.append(s)
json.dump({"results": results, "log": log, "start_s": reader.get_start_time_sec()}, sys.stdout)
"#;

fn info() -> RunInfo {
    RunInfo {
        connections: 50,
        requests: None,
        duration_s: Some(3.0),
        model: Model::Open,
        rate: Some(20_000.0),
        arrivals: Some("poisson".into()),
        seed: Some(7),
        ..fixtures::info()
    }
}

/// Seeded intervals: log-normal latencies (median about 2 ms) with rare multi-second stalls,
/// scheduling lag up to 3 ms, and some errors, which stay out of the histograms.
fn intervals() -> Vec<Settled> {
    let mut state = 0x5eed_c0de_u64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let t = Instant::now();
    (0..INTERVALS)
        .map(|index| {
            let mut r = Recorder::new();
            for _ in 0..PER_INTERVAL {
                let (a, b) = (uniform().max(1e-12), uniform());
                let normal = (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos();
                let mut latency = (2_000.0 * (0.9 * normal).exp()) as u64 + 1;
                if uniform() < 0.0005 {
                    latency += 2_000_000 + (uniform() * 3_000_000.0) as u64;
                }
                let lag = (uniform() * uniform() * 3_000.0) as u64;
                r.record(&Sample {
                    bytes_in: 100,
                    bytes_out: 50,
                    ..Sample::simulated(t, lag, lag + latency, Outcome::Response { status: 200 })
                });
            }
            r.record_errors(ErrorKind::Timeout, ERRORS_PER_INTERVAL);
            Settled {
                index,
                offset: Duration::from_secs(index),
                recorder: r,
                gauges: Gauges::default(),
            }
        })
        .collect()
}

/// Python's summary of one histogram must match the Rust histogram exactly.
fn assert_same(what: &str, py: &Value, h: &Histogram<u64>) {
    assert_eq!(py["count"].as_u64(), Some(h.len()), "{what}: count");
    assert_eq!(py["min"].as_u64(), Some(h.min()), "{what}: min");
    assert_eq!(py["max"].as_u64(), Some(h.max()), "{what}: max");
    let percentiles: Vec<u64> = PERCENTILES
        .iter()
        .map(|&p| h.value_at_percentile(p))
        .collect();
    let py_percentiles: Vec<u64> = py["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(py_percentiles, percentiles, "{what}: p50, p90, p99, p99.9");
    let buckets: Vec<(u64, u64)> = h
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect();
    let py_buckets: Vec<(u64, u64)> = py["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b[0].as_u64().unwrap(), b[1].as_u64().unwrap()))
        .collect();
    assert_eq!(py_buckets, buckets, "{what}: every recorded bucket");
}

/// `None` when python3 with HdrHistogram_py can run, else why not.
fn python_missing() -> Option<String> {
    match Command::new("python3")
        .args(["-c", "import hdrh.histogram, hdrh.log"])
        .output()
    {
        Err(e) => Some(format!("python3 cannot be run ({e})")),
        Ok(out) if !out.status.success() => Some(format!(
            "the Python package hdrhistogram is not installed ({})",
            String::from_utf8_lossy(&out.stderr)
                .trim()
                .lines()
                .last()
                .unwrap_or("")
        )),
        Ok(_) => None,
    }
}

fn temp_dir() -> PathBuf {
    belier_testsupport::temp_dir("hdr")
}

#[test]
fn hdrhistogram_py_reads_belier_histograms() {
    if let Some(why) = python_missing() {
        missing(&why, "python3 -m pip install hdrhistogram");
        return;
    }

    let n = PER_INTERVAL as f64;
    for p in PERCENTILES {
        let (rust, python) = (((p / 100.0) * n).ceil(), (p * n / 100.0 + 0.5).floor());
        assert_eq!(
            rust, python,
            "p{p} of {n} values: the libraries pick different ranks"
        );
    }
    let intervals = intervals();
    let header = Header {
        format: FORMAT.into(),
        version: VERSION,
        name: "interop run, v1".into(),
        interval_s: 1.0,
        run: info(),
    };
    let mut file = Vec::new();
    let mut writer = ResultsWriter::new(&mut file, &header).unwrap();
    for s in &intervals {
        writer.interval(s).unwrap();
    }
    writer
        .end(&End {
            elapsed_s: 2.5,
            ..End::default()
        })
        .unwrap();
    let reader = Reader::open(Box::new(std::io::Cursor::new(file.clone())), "memory").unwrap();
    let results = read_run(vec![reader], None, None, true).unwrap();
    let log = render_hdr_log(&[(&header.name, &results)]);

    let dir = temp_dir();
    let (results_path, log_path) = (dir.join("run.jsonl"), dir.join("run.hlog"));
    std::fs::write(&results_path, &file).unwrap();
    std::fs::write(&log_path, &log).unwrap();
    let out = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(&results_path)
        .arg(&log_path)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "python3 failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let py: Value = serde_json::from_slice(&out.stdout).unwrap();

    // Every histogram of the results file, decoded from its base64.
    let py_results = py["results"].as_array().unwrap();
    assert_eq!(py_results.len(), intervals.len());
    for (s, py) in intervals.iter().zip(py_results) {
        assert_eq!(s.recorder.requests(), PER_INTERVAL + ERRORS_PER_INTERVAL);
        for m in Metric::ALL {
            let h = s.recorder.histogram(m);
            let what = format!("results interval {} {}", s.index, m.name());
            // Phases that nothing went through are left out of the file.
            if h.is_empty() && py.get(m.name()).is_none() {
                continue;
            }
            assert_same(&what, &py[m.name()], h);
        }
    }

    // The interval log, through HdrHistogram_py's own log reader.
    assert_eq!(py["start_s"].as_f64(), Some(1_795_341_600.0));
    let py_log = py["log"].as_array().unwrap();
    assert_eq!(py_log.len(), intervals.len());
    for (s, py) in intervals.iter().zip(py_log) {
        let what = format!("log interval {}", s.index);
        assert!(py["tag"].is_null(), "one run, untagged: {what}");
        let start_ms = s.offset.as_secs_f64() * 1000.0;
        let end_ms = (start_ms + 1000.0).min(2_500.0);
        assert!(
            (py["start_ms"].as_f64().unwrap() - start_ms).abs() < 0.01,
            "{what}"
        );
        assert!(
            (py["end_ms"].as_f64().unwrap() - end_ms).abs() < 0.01,
            "{what}"
        );
        assert_same(&what, py, s.recorder.latency_us());
    }
}
