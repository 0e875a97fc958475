//! Seeded runs for the renderers' tests: the shared fixture (closed loop), a slower, open-loop
//! copy whose name and error message need escaping in every format, and that copy steered
//! while it ran.

use std::time::{Duration, Instant};

use belier_results::{Change, ChangeKind, Model, RunInfo, ThresholdOutcome};
use belier_stats::{Collector, ErrorKind, Gauges, Outcome, Recorder, Sample, Series};

use crate::{fixtures, NamedReport, Report};

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
    pub thresholds: Vec<ThresholdOutcome>,
    pub changes: Vec<Change>,
}

impl Run {
    pub fn report(&self) -> Report<'_> {
        Report {
            scenarios: Vec::new(),
            info: &self.info,
            totals: &self.totals,
            series: &self.series,
            elapsed: self.elapsed,
            interrupted: false,
            warnings: vec![],
            thresholds: self.thresholds.clone(),
            changes: self.changes.clone(),
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
        thresholds: vec![],
        changes: vec![],
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
                bytes_in: 120,
                bytes_out: 50,
                ..Sample::simulated(t, lag, lag + 115 + n * 8, outcome)
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
            held: 0,
        };
        c.add(0, interval as u64, &r, gauges);
    }
    c.finish_worker(0, Duration::from_millis(1_500));
    let (mut totals, series) = c.finish();
    fixed_dates(&mut totals);
    Run {
        info,
        totals,
        series,
        elapsed: Duration::from_millis(1_500),
        thresholds: vec![],
        changes: vec![],
    }
}

/// [`new`], steered while it ran: its rate raised 10 %, then paused and resumed.
pub fn steered() -> Run {
    let change = |at_s, what, from, level| Change {
        at_s,
        what,
        level,
        from,
    };
    Run {
        changes: vec![
            change(0.5, ChangeKind::Rate, 700.0, 770.0),
            change(0.75, ChangeKind::Pause, 770.0, 0.0),
            change(1.0, ChangeKind::Resume, 0.0, 770.0),
        ],
        ..new()
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

/// Dates the slowest requests kept in `totals` on a fixed day (2026-11-22, 10:00:00 UTC,
/// plus their latency in ms as seconds), so that a report of seeded results reads the same
/// whenever it is made.
pub fn fixed_dates(totals: &mut belier_stats::Recorder) {
    const TEN_O_CLOCK_US: u64 = 1_795_341_600_000_000;
    totals.redate_exemplars(|e| TEN_O_CLOCK_US + e.latency_us / 1000 * 1_000_000);
}

/// `[base, new]` rendered by `render`: the golden file of a format that lists several runs.
pub fn render_pair(render: impl Fn(&[NamedReport]) -> String) -> String {
    let (a, b) = (base(), new());
    let reports = [a.report(), b.report()];
    render(&named(&reports))
}

/// A run of scripted users: 20 users of a three-step plan (the last step never reached),
/// two checks, iterations, and two thresholds, one failed.
pub fn with_steps() -> Run {
    let mut info = fixtures::info();
    info.plan = Some("plans/shop.yaml".into());
    info.virtual_users = Some(20);
    info.connections = 20;
    info.pacing_s = Some(2.0);
    info.requests = None;
    info.duration_s = Some(1.5);
    info.steps = vec!["login".into(), "browse".into(), "checkout".into()];
    info.checks = vec!["status is 2xx".into(), "token | present".into()];
    info.metrics = vec![
        belier_stats::CustomMetric {
            name: "signed".into(),
            kind: belier_stats::MetricKind::Counter,
        },
        belier_stats::CustomMetric {
            name: "queue_ms".into(),
            kind: belier_stats::MetricKind::Trend,
        },
    ];

    let mut c = Collector::new(1, Duration::from_secs(1));
    let t = Instant::now();
    let mut n = 0u64;
    for interval in 0..2u64 {
        let mut r = Recorder::new();
        for _ in 0..300 {
            // Each iteration: login, then two pages.
            let step = [0, 1, 1][(n % 3) as usize];
            let outcome = match n % 50 {
                7 => Outcome::Error(ErrorKind::Timeout),
                13 => Outcome::Response { status: 500 },
                _ => Outcome::Response { status: 200 },
            };
            let latency_us = 200 + (step as u64 + 1) * 900 + n * 3;
            let sample = Sample {
                bytes_in: 300,
                bytes_out: 80,
                ..Sample::simulated(t, 0, latency_us, outcome)
            };
            r.record(&sample);
            let failed = !matches!(outcome, Outcome::Response { status: 200 });
            r.record_step(step, &sample, failed);
            if let Outcome::Response { status } = outcome {
                r.record_check(0, status < 300);
                if step == 0 {
                    r.record_check(1, !n.is_multiple_of(30));
                    r.record_count(0, 2);
                    r.record_value(1, 1_000 + n * 10);
                }
            }
            if n % 3 == 2 {
                r.record_iteration();
            }
            n += 1;
        }
        r.record_connection();
        c.add(0, interval, &r, Gauges::default());
    }
    c.finish_worker(0, Duration::from_millis(1_500));
    let (mut totals, series) = c.finish();
    fixed_dates(&mut totals);
    Run {
        info,
        totals,
        series,
        elapsed: Duration::from_millis(1_500),
        thresholds: vec![
            ThresholdOutcome {
                expression: "p99 < 200ms".into(),
                passed: true,
                actual: "3.7 ms".into(),
                stopped_run: None,
            },
            ThresholdOutcome {
                expression: "login: error_rate < 1%".into(),
                passed: false,
                actual: "4.00 %".into(),
                stopped_run: None,
            },
        ],
        changes: vec![],
    }
}

/// [`base`]'s info and series with the totals of 200 server-streaming gRPC calls, all OK:
/// one request message and 100 response messages each, the first after 1.000–1.199 ms, the
/// others 0.250 ms apart.
pub fn streaming() -> Run {
    let mut run = base();
    let mut totals = Recorder::new();
    let t = Instant::now();
    let mut gaps = belier_stats::MessageTimes::default();
    (0..99).for_each(|_| gaps.push(250));
    for i in 0..200u64 {
        let outcome = Outcome::Grpc { code: 0 };
        totals.record(&Sample::simulated(t, 0, 30_000 + i, outcome));
        let call = belier_stats::CallMessages::one_way(1, 100, Some(1_000 + i), &gaps);
        totals.record_messages(&call);
    }
    run.totals = totals;
    run
}

/// [`base`]'s info and series with the totals of 100 LLM streams (`--stream llm`): 40 token
/// chunks each, the first 80.000–80.099 ms after the request was due, the others 10 ms apart,
/// 40 output tokens by their `usage`.
pub fn llm_streams() -> Run {
    let mut run = base();
    let mut totals = Recorder::new();
    let t = Instant::now();
    let mut gaps = belier_stats::MessageTimes::default();
    (0..39).for_each(|_| gaps.push(10_000));
    let body = belier_stats::StreamedBody {
        unit: belier_stats::MessageUnit::Tokens,
        tokens: 40,
        first_to_last_us: 390_000,
        ..belier_stats::StreamedBody::default()
    };
    for i in 0..100u64 {
        let outcome = Outcome::Response { status: 200 };
        totals.record(&Sample::simulated(t, 0, 470_000 + i, outcome));
        let call = belier_stats::CallMessages::one_way(0, 40, Some(80_000 + i), &gaps);
        totals.record_body_stream(&call, &body);
    }
    run.totals = totals;
    run
}

/// [`base`]'s info and series with the totals of 60 SSE streams (`--stream sse
/// --sse-reconnect`): 10 events each; 40 of them reconnections, 30 with a `Last-Event-ID`,
/// each after 50 ms; 2 responses stopped reconnection.
pub fn sse_reconnections() -> Run {
    let mut run = base();
    let mut totals = Recorder::new();
    let t = Instant::now();
    let mut gaps = belier_stats::MessageTimes::default();
    (0..9).for_each(|_| gaps.push(20_000));
    for i in 0..60u64 {
        let outcome = Outcome::Response { status: 200 };
        totals.record(&Sample::simulated(t, 0, 300_000 + i, outcome));
        let call = belier_stats::CallMessages::one_way(0, 10, Some(100_000 + i), &gaps);
        let body = belier_stats::StreamedBody {
            unit: belier_stats::MessageUnit::Events,
            reconnection: (i < 40).then_some(belier_stats::Reconnection {
                with_id: i < 30,
                waited_us: 50_000,
            }),
            stopped_reconnection: i >= 58,
            ..belier_stats::StreamedBody::default()
        };
        totals.record_body_stream(&call, &body);
    }
    run.totals = totals;
    run
}

/// One bidirectional call on top of `run`'s: a message answered in 1.500 ms.
pub fn add_round_trip(run: &mut Run) {
    let mut trips = belier_stats::MessageTimes::default();
    trips.push(1_500);
    run.totals.record_messages(&belier_stats::CallMessages {
        sent: 1,
        received: 1,
        first_message_us: Some(1_500),
        gaps: &belier_stats::MessageTimes::default(),
        round_trips: Some(&trips),
    });
}

/// `[base, streaming]` rendered by `render`, the streaming run with a round trip too: a
/// format's message figures beside a run without them.
pub fn render_with_messages(render: impl Fn(&[NamedReport]) -> String) -> String {
    let (plain, mut streaming) = (base(), streaming());
    add_round_trip(&mut streaming);
    let reports = [plain.report(), streaming.report()];
    render(&named(&reports))
}

/// A series of one-second intervals with nothing recorded but `gauges`, one per interval.
pub fn series_with_gauges(gauges: &[Gauges]) -> Series {
    let mut c = Collector::new(1, Duration::from_secs(1));
    for (i, g) in gauges.iter().enumerate() {
        c.add(0, i as u64, &Recorder::new(), *g);
    }
    c.finish_worker(0, Duration::from_secs(gauges.len() as u64));
    c.finish().1
}
