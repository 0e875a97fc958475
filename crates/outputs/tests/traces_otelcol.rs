//! `--traces-out`'s exporter against the real OpenTelemetry Collector (its OTLP receiver and
//! file exporter, belier_testsupport::otelcol): every span it says it sent arrives, with its
//! phases' spans inside it, and a collector down for part of the run loses exactly the spans
//! the exporter counts as dropped.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant, SystemTime};

use belier_outputs::traces::{
    Interval, Outcome, Phases, RequestSpan, TraceExporter, TracesSpec, BATCH, QUEUE,
};
use belier_testsupport::otelcol::{Collector, ReceivedSpan};
use belier_testsupport::temp_dir;

/// Longest any wait in these tests may take.
const BOUND: Duration = Duration::from_secs(30);

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `n`th request: ids from `n`, contiguous phases of a few milliseconds (the first of
/// every four opens a connection, with DNS and TLS), a status or a failure.
fn request(n: u32, base: SystemTime) -> RequestSpan {
    let ms = |m: u64| Duration::from_micros(m * 100);
    let start = base + Duration::from_millis(u64::from(n) * 10);
    let mut at = start;
    let mut phase = |length: u64| {
        let interval = Interval {
            start: at,
            end: at + ms(length),
        };
        at = interval.end;
        Some(interval)
    };
    let fresh = n.is_multiple_of(4);
    let phases = Phases {
        dns: fresh.then(|| phase(3)).flatten(),
        connect: fresh.then(|| phase(5)).flatten(),
        tls: fresh.then(|| phase(11)).flatten(),
        ttfb: phase(20 + u64::from(n % 7)),
        transfer: phase(4),
    };
    let outcome = match n % 10 {
        0 => Outcome::Status(503),
        1 => Outcome::Failed("timeout"),
        _ => Outcome::Status(200),
    };
    let mut trace_id = [0x5a; 16];
    trace_id[12..].copy_from_slice(&n.to_be_bytes());
    let mut span_id = [0xb0; 8];
    span_id[4..].copy_from_slice(&n.to_be_bytes());
    RequestSpan {
        trace_id,
        span_id,
        parent_span_id: None,
        name: "GET".into(),
        start,
        end: at,
        phases,
        method: "GET".into(),
        url: format!("http://user:pw@127.0.0.1:8080/item/{n}?token=s3cret"),
        server_address: "127.0.0.1".into(),
        server_port: 8080,
        outcome,
        intended: start - Duration::from_millis(1),
        lag: Duration::from_millis(1),
        step: None,
    }
}

fn exporter(collector: &Collector) -> TraceExporter {
    let spec: TracesSpec = format!("otlp={}", collector.url()).parse().unwrap();
    TraceExporter::start(&spec).unwrap()
}

/// Waits (bounded) until the exporter has settled `n` requests' spans, sent or failed.
fn settle(exporter: &TraceExporter, n: u64) {
    let deadline = Instant::now() + BOUND;
    loop {
        let d = exporter.so_far();
        if d.sent + d.failed + d.queue_full >= n {
            return;
        }
        assert!(Instant::now() < deadline, "not settled: {d:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The request spans among `spans`, by span id, and their children by parent id.
fn by_parent(
    spans: &[ReceivedSpan],
) -> (
    HashMap<&str, &ReceivedSpan>,
    HashMap<&str, Vec<&ReceivedSpan>>,
) {
    let mut requests = HashMap::new();
    let mut children: HashMap<&str, Vec<&ReceivedSpan>> = HashMap::new();
    for span in spans {
        if span.parent_span_id.is_empty() {
            assert!(
                requests.insert(span.span_id.as_str(), span).is_none(),
                "a repeated span"
            );
        } else {
            children
                .entry(span.parent_span_id.as_str())
                .or_default()
                .push(span);
        }
    }
    (requests, children)
}

#[test]
fn every_sampled_request_arrives_with_its_phases_inside_it() {
    let dir = temp_dir("traces-otelcol-all");
    let Some(collector) = Collector::start(&dir) else {
        return;
    };
    let exporter = exporter(&collector);
    let base = SystemTime::now();
    let sent: Vec<RequestSpan> = (0..1_000).map(|n| request(n, base)).collect();
    for span in &sent {
        exporter.offer(span.clone());
    }
    let delivery = exporter.finish(Instant::now() + BOUND);
    assert_eq!(
        (delivery.offered, delivery.sent, delivery.dropped()),
        (1_000, 1_000, 0)
    );
    assert_eq!(delivery.warning(), None);

    let received = collector.spans();
    let (requests, children) = by_parent(&received);
    assert_eq!(requests.len(), 1_000);
    let phases: usize = sent.iter().map(|s| s.phases.named().count()).sum();
    assert_eq!(received.len(), 1_000 + phases);
    for (n, span) in sent.iter().enumerate() {
        let got = requests[hex(&span.span_id).as_str()];
        assert_eq!(got.trace_id, hex(&span.trace_id));
        assert_eq!((got.name.as_str(), got.kind), ("GET", 3));
        let url = format!("http://127.0.0.1:8080/item/{n}?token=REDACTED");
        assert_eq!(got.attribute("url.full"), Some(url.as_str()));
        assert_eq!(got.attribute("server.port"), Some("8080"));
        assert_eq!(got.attribute("belier.lag_ns"), Some("1000000"));
        let (status, error) = match n % 10 {
            0 => (Some("503"), Some("503")),
            1 => (None, Some("timeout")),
            _ => (Some("200"), None),
        };
        assert_eq!(got.attribute("http.response.status_code"), status, "{n}");
        assert_eq!(got.attribute("error.type"), error, "{n}");
        assert_eq!(got.status, if error.is_some() { 2 } else { 0 });

        let kids = &children[got.span_id.as_str()];
        let names: Vec<_> = kids.iter().map(|k| k.name.as_str()).collect();
        let want: Vec<_> = span.phases.named().map(|(name, _)| name).collect();
        assert_eq!(names, want);
        for kid in kids {
            assert_eq!(kid.trace_id, got.trace_id);
            assert!(
                got.start <= kid.start && kid.end <= got.end,
                "{kid:?} outside {got:?}"
            );
        }
        let total: u64 = kids.iter().map(|k| k.end - k.start).sum();
        let parent = got.end - got.start;
        assert!(
            total.abs_diff(parent) * 100 <= parent,
            "{total} vs {parent}"
        );
    }
}

#[test]
fn a_collector_down_mid_run_loses_exactly_the_spans_counted_as_dropped() {
    let dir = temp_dir("traces-otelcol-down");
    let Some(mut collector) = Collector::start(&dir) else {
        return;
    };
    let exporter = exporter(&collector);
    let base = SystemTime::now();
    let offer = |range: std::ops::Range<u32>| {
        for n in range {
            exporter.offer(request(n, base));
        }
    };
    offer(0..400);
    settle(&exporter, 400);
    collector.stop();
    offer(400..700);
    settle(&exporter, 700);
    collector.restart();
    offer(700..1_000);
    let deadline = Instant::now() + BOUND;
    let delivery = exporter.finish(deadline);
    assert!(
        Instant::now() < deadline + Duration::from_secs(1),
        "finish overran its deadline"
    );
    assert_eq!(
        (
            delivery.offered,
            delivery.sent,
            delivery.failed,
            delivery.queue_full
        ),
        (1_000, 700, 300, 0),
        "{delivery:?}"
    );
    let warning = delivery.warning().expect("a warning");
    assert!(
        warning.contains("300 of 1000 requests' spans not sent"),
        "{warning}"
    );

    let received = collector.spans();
    let (requests, _) = by_parent(&received);
    assert_eq!(requests.len() as u64, 1_000 - delivery.dropped());
    let want: HashSet<String> = (0..400)
        .chain(700..1_000)
        .map(|n| hex(&request(n, base).span_id))
        .collect();
    let got: HashSet<String> = requests.keys().map(|k| k.to_string()).collect();
    assert_eq!(got, want);
}

/// A receiver that takes connections and never answers holds the exporter's thread in its
/// POST (until its 2 s timeout): the spans offered meanwhile fill the queue, the overflow is
/// counted, `offer` never waits, and `finish` keeps its deadline.
#[test]
fn a_receiver_that_never_answers_costs_counted_spans_and_no_wait() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = std::thread::spawn(move || {
        // Keeps what it accepts open, silent, until the test ends.
        listener.incoming().take(4).collect::<Vec<_>>()
    });
    let spec: TracesSpec = format!("otlp=http://127.0.0.1:{port}").parse().unwrap();
    let exporter = TraceExporter::start(&spec).unwrap();
    let base = SystemTime::now();
    let extra = 100;
    let offered = (QUEUE + BATCH + extra) as u32;
    for n in 0..offered {
        exporter.offer(request(n, base));
    }
    let so_far = exporter.so_far();
    assert_eq!(so_far.offered, u64::from(offered));
    assert!(so_far.queue_full >= extra as u64, "{so_far:?}");
    let deadline = Instant::now() + Duration::from_millis(500);
    let delivery = exporter.finish(deadline);
    assert!(
        Instant::now() < deadline + Duration::from_secs(1),
        "finish overran its deadline"
    );
    assert_eq!(
        (delivery.sent, delivery.dropped()),
        (0, u64::from(offered)),
        "{delivery:?}"
    );
    assert!(delivery.warning().is_some());
    drop(held);
}
