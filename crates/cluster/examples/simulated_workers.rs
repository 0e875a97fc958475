//! Simulated workers for the coordinator's scale benchmark (`bench/cluster`, #21 item 5):
//! N real `belier worker` servers (this crate's [`worker::serve`]) in one process, each of
//! whose runs writes one realistic record a second (1,000 log-normal latencies, so histograms
//! of a few hundred buckets, as a busy worker's are) for the run's `-z` seconds, without
//! sending any request. The coordinator cannot tell them from real workers.
//!
//! ```sh
//! cargo run --release -p belier-cluster --example simulated_workers -- 100 TEMPLATE.jsonl
//! ```
//! prints `workers: ADDR,ADDR,…` on standard output, then serves until killed (token: `BELIER_WORKER_TOKEN`, else `simulated-workers`). TEMPLATE is
//! any results file: its header is the one the simulated runs write.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::BufWriter;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use belier_cluster::protocol::Job;
use belier_cluster::worker::{self, Options, Prepared, Runner};
use belier_results::{End, Header, Reader, ResultsWriter};
use belier_stats::{Gauges, Outcome, Recorder, Sample, Settled};

/// Requests each simulated worker records a second.
const RATE: u64 = 1_000;

struct Simulated {
    header: Header,
}

struct Run {
    header: Header,
    seconds: u64,
}

impl Runner for Simulated {
    fn prepare(&self, job: &Job, _dir: &Path) -> Result<Box<dyn Prepared>, String> {
        let seconds = job
            .args
            .iter()
            .position(|a| a == "-z")
            .and_then(|i| job.args.get(i + 1))
            .and_then(|z| z.trim_end_matches('s').parse().ok())
            .unwrap_or(30);
        Ok(Box::new(Run {
            header: self.header.clone(),
            seconds,
        }))
    }
}

impl Prepared for Run {
    fn run(
        self: Box<Self>,
        start: Instant,
        results: &Path,
        stop: Arc<AtomicBool>,
    ) -> Result<(), String> {
        let file = std::fs::File::create(results).map_err(|e| e.to_string())?;
        let mut w =
            ResultsWriter::new(BufWriter::new(file), &self.header).map_err(|e| e.to_string())?;
        let mut rng = u64::from(std::process::id()) | 1;
        let mut uniform = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut r = Recorder::new();
        for i in 0..self.seconds {
            // Recorded before the interval ends, so that the lag measured is the coordinator's.
            r.reset();
            let t = Instant::now();
            for _ in 0..RATE {
                let (a, b) = (uniform(), uniform());
                let normal = (-2.0 * a.max(1e-12).ln()).sqrt() * (std::f64::consts::TAU * b).cos();
                let latency = (2_000.0 * (0.8 * normal).exp()) as u64;
                let lag = (uniform() * 150.0) as u64;
                r.record_scheduled();
                r.record(&Sample {
                    bytes_in: 120,
                    bytes_out: 80,
                    ..Sample::simulated(t, lag, lag + latency, Outcome::Response { status: 200 })
                });
            }
            std::thread::sleep(
                (start + Duration::from_secs(i + 1)).saturating_duration_since(Instant::now()),
            );
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let settled = Settled {
                index: i,
                offset: Duration::from_secs(i),
                recorder: r.clone(),
                gauges: Gauges {
                    in_flight: 3,
                    cpu: 0.2,
                    connections_peak: 4,
                    held: 0,
                },
            };
            w.interval(&settled).map_err(|e| e.to_string())?;
        }
        let end = End {
            elapsed_s: start.elapsed().as_secs_f64(),
            ..End::default()
        };
        w.end(&end).map_err(|e| e.to_string())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().unwrap_or_else(|| "100".into()).parse()?;
    let template = args
        .next()
        .ok_or("usage: simulated_workers N TEMPLATE.jsonl")?;
    let input = Box::new(std::io::BufReader::new(std::fs::File::open(&template)?));
    let header = Reader::open(input, &template)?.header().clone();
    // Every worker has a token; the coordinator takes the same from its environment.
    let token = std::env::var("BELIER_WORKER_TOKEN").unwrap_or_else(|_| "simulated-workers".into());
    let mut addrs = Vec::new();
    let mut servers = Vec::new();
    for i in 0..n {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        addrs.push(listener.local_addr()?.to_string());
        let options = Options {
            token: token.clone(),
            dir: std::env::temp_dir().join(format!("belier-sim-{}-{i}", std::process::id())),
            version: env!("CARGO_PKG_VERSION").into(),
        };
        let runner = Box::new(Simulated {
            header: header.clone(),
        });
        servers.push(std::thread::spawn(move || {
            worker::serve(listener, options, runner, || false)
        }));
    }
    println!("workers: {}", addrs.join(","));
    for s in servers {
        if let Ok(Err(e)) = s.join() {
            eprintln!("a simulated worker stopped: {e}");
        }
    }
    Ok(())
}
