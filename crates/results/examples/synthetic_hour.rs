//! Writes a synthetic one-hour results file (3,600 one-second intervals, log-normal latencies,
//! open loop; 1,000 requests a second unless a rate is given) for the report benchmarks in
//! `bench/` and the file-size figures in docs/src/guide/results.md. It prints the file's size and how many
//! records the writer coarsened the hour into.
//!
//! ```sh
//! cargo run --release -p belier-results --example synthetic_hour -- /tmp/hour.jsonl [RATE [full]]
//! /usr/bin/time -v target/release/belier report --type html /tmp/hour.jsonl > /tmp/hour.html
//! ```
#![allow(clippy::print_stderr)]

use std::io::BufWriter;
use std::time::{Duration, Instant};

use belier_results::{
    fixtures, Coarsening, End, Header, Model, ResultsWriter, RunInfo, FORMAT, VERSION,
};
use belier_stats::{Gauges, Outcome, Recorder, Sample, Settled};

fn main() -> std::io::Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "hour.jsonl".into());
    let rate: u64 = match std::env::args().nth(2) {
        Some(r) => r.parse().map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("RATE '{r}' is not a whole number of requests a second"),
            )
        })?,
        None => 1_000,
    };
    let out = BufWriter::new(std::fs::File::create(&path)?);
    let run = RunInfo {
        belier_version: env!("CARGO_PKG_VERSION").into(),
        connections: 100,
        requests: None,
        duration_s: Some(3_600.0),
        started_at: "2026-11-22T00:00:00Z".into(),
        model: Model::Open,
        rate: Some(rate as f64),
        arrivals: Some("even".into()),
        max_connections: Some(100),
        ..fixtures::info()
    };
    let header = Header {
        format: FORMAT.into(),
        version: VERSION,
        name: "hour".into(),
        interval_s: 1.0,
        run,
    };
    // `full` as a third argument writes every interval as its own record (no size budget),
    // to check that a coarsened file reports the same totals.
    let coarsening = match std::env::args().nth(3).as_deref() {
        Some("full") => Coarsening::with_budget(Duration::from_secs(1), u64::MAX, Duration::MAX),
        _ => Coarsening::new(Duration::from_secs(1)),
    };
    let mut w = ResultsWriter::with_coarsening(out, &header, coarsening)?;
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut uniform = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let t = Instant::now();
    let mut r = Recorder::new();
    for i in 0..3_600u64 {
        r.reset();
        for _ in 0..rate {
            let (a, b) = (uniform(), uniform());
            let normal = (-2.0 * a.max(1e-12).ln()).sqrt() * (std::f64::consts::TAU * b).cos();
            // A slow patch every ten minutes so the charts have something to show.
            let slow = if i % 600 < 20 { 8.0 } else { 1.0 };
            let latency = (2_000.0 * slow * (0.8 * normal).exp()) as u64;
            let lag = (uniform() * 150.0) as u64;
            r.record_scheduled();
            let status = if uniform() < 0.001 { 503 } else { 200 };
            r.record(&Sample {
                bytes_in: 120,
                bytes_out: 80,
                ..Sample::simulated(t, lag, lag + latency, Outcome::Response { status })
            });
        }
        let gauges = Gauges {
            in_flight: 3,
            cpu: 0.2,
            connections_peak: 0,
            held: 0,
        };
        w.interval(&Settled {
            index: i,
            offset: Duration::from_secs(i),
            recorder: r.clone(),
            gauges,
        })?;
    }
    w.end(&End {
        elapsed_s: 3_600.0,
        ..End::default()
    })?;
    let bytes = std::fs::metadata(&path)?.len();
    let records = std::io::BufRead::lines(std::io::BufReader::new(std::fs::File::open(&path)?))
        .filter(|l| l.as_ref().is_ok_and(|l| l.starts_with("{\"interval\"")))
        .count();
    eprintln!(
        "wrote {path}: {rate} requests/s for an hour, {bytes} bytes in {records} records, {:.1} s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
