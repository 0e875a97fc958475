//! Two seeded runs for the renderers' tests: the shared fixture (closed loop) and a slower,
//! open-loop copy whose name and error message need escaping in every format.

use std::time::{Duration, Instant};

use belier_stats::{Collector, ErrorKind, Gauges, Outcome, Recorder, Sample, Series};

use crate::{fixtures, Model, NamedReport, Report, RunInfo};

/// Name of the fixture run.
pub const BASE: &str = "base";
/// Name of the modified run: a comma, quotes and a pipe, as a user may type them.
pub const NEW: &str = "new | \"tuned\", v2";

/// Everything a [`Report`] borrows.
pub struct Run {
    pub info: RunInfo,
    pub totals: Recorder,
    pub series: Series,
    pub elapsed: Duration,
}

impl Run {
    pub fn report(&self) -> Report<'_> {
        Report {
            info: &self.info,
            totals: &self.totals,
            series: &self.series,
            elapsed: self.elapsed,
            interrupted: false,
            warnings: vec![],
            host: None,
        }
    }
}

/// The shared fixture: 1,000 requests over 1.5 s, closed loop.
pub fn base() -> Run {
    let (totals, series) = fixtures::results();
    Run {
        info: fixtures::info(),
        totals,
        series,
        elapsed: Duration::from_millis(1_500),
    }
}

/// The fixture's target at an arrival rate of 700/s: latencies about 15 % higher, some
/// arrivals dropped and late, more errors, over 1.5 s.
pub fn new() -> Run {
    let mut info = fixtures::info();
    info.model = Model::Open;
    info.rate = Some(700.0);
    info.requests = None;
    info.duration_s = Some(1.5);
    info.arrivals = Some("even".into());
    info.max_in_flight = Some(100);
    info.started_at = "2026-11-22T11:30:00Z".into();

    let mut c = Collector::new(1, Duration::from_secs(1));
    let t = Instant::now();
    let per_interval = [(700u64, 690u64), (350, 346)];
    let mut n = 0u64;
    for (interval, &(scheduled, sent)) in per_interval.iter().enumerate() {
        let mut r = Recorder::new();
        for _ in 0..scheduled {
            r.record_scheduled();
        }
        for _ in sent..scheduled {
            r.record_dropped();
        }
        for _ in 0..sent {
            let lag = (n % 40) * 50;
            let outcome = match n % 100 {
                0 | 50 => Outcome::Error(ErrorKind::Timeout),
                1 => Outcome::Response { status: 503 },
                2 => Outcome::Response { status: 404 },
                _ => Outcome::Response { status: 200 },
            };
            r.record(&Sample {
                intended: t,
                dispatched: t + Duration::from_micros(lag),
                connected: None,
                handshaken: None,
                sent: t + Duration::from_micros(lag),
                first_byte: None,
                done: t + Duration::from_micros(lag + 115 + n * 8),
                outcome,
                bytes_in: 120,
                bytes_out: 50,
            });
            if let Outcome::Error(kind) = outcome {
                r.note_error_example(kind, || "no response | after 30 s\nconnection kept".into());
            }
            n += 1;
        }
        r.record_connection();
        r.record_connection();
        let gauges = Gauges {
            in_flight: 3 + interval as u64,
            cpu: 0.42,
            connections_peak: 0,
        };
        c.add(0, interval as u64, &r, gauges);
    }
    c.finish_worker(0, Duration::from_millis(1_500));
    let (totals, series) = c.finish();
    Run {
        info,
        totals,
        series,
        elapsed: Duration::from_millis(1_500),
    }
}

/// `[base, new]` as named reports.
pub fn named<'a>(reports: &'a [Report<'a>; 2]) -> [NamedReport<'a>; 2] {
    [
        NamedReport {
            name: BASE,
            report: &reports[0],
        },
        NamedReport {
            name: NEW,
            report: &reports[1],
        },
    ]
}
