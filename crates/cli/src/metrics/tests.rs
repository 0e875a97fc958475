use std::time::{Duration, Instant};

use belier_stats::{ErrorKind, Outcome, Recorder, Sample};

use super::*;
use belier_outputs::BUCKETS_S;

fn recorder() -> Recorder {
    let mut r = Recorder::new();
    let t = Instant::now();
    let sample = |latency_us, outcome| Sample {
        bytes_in: 10,
        bytes_out: 3,
        ..Sample::simulated(t, 0, latency_us, outcome)
    };
    for latency_us in [50, 100, 900, 1_000, 7_000, 120_000_000] {
        r.record(&sample(latency_us, Outcome::Response { status: 200 }));
    }
    r.record(&sample(2_000, Outcome::Response { status: 503 }));
    r.record(&sample(30_000_000, Outcome::Error(ErrorKind::Timeout)));
    r
}

fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

#[test]
fn the_page_counts_what_the_recorder_holds() {
    let r = recorder();
    let text = render(&Figures {
        total: &r,
        in_flight: 4,
        target_rate: Some(250.0),
        ended: true,
        steps: &[],
        exemplars: None,
    });
    let requests: f64 = text
        .lines()
        .filter(|l| l.starts_with("belier_requests_total{"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum();
    assert_eq!(requests, 8.0, "{text}");
    assert_eq!(value(&text, "belier_requests_total{status=\"200\"}"), 6.0);
    assert_eq!(value(&text, "belier_requests_total{status=\"503\"}"), 1.0);
    assert_eq!(
        value(&text, "belier_requests_total{error=\"timeout\"}"),
        1.0
    );
    assert_eq!(
        value(&text, "belier_requests_total{error=\"cancelled\"}"),
        0.0
    );
    // Errors have no latency: the histogram counts the 7 responses.
    let d = "belier_request_duration_seconds";
    assert_eq!(value(&text, &format!("{d}_count")), 7.0);
    assert_eq!(value(&text, &format!("{d}_bucket{{le=\"0.0001\"}}")), 2.0);
    assert_eq!(value(&text, &format!("{d}_bucket{{le=\"0.001\"}}")), 4.0);
    assert_eq!(value(&text, &format!("{d}_bucket{{le=\"0.0025\"}}")), 5.0);
    assert_eq!(value(&text, &format!("{d}_bucket{{le=\"60\"}}")), 6.0);
    assert_eq!(value(&text, &format!("{d}_bucket{{le=\"+Inf\"}}")), 7.0);
    let sum = value(&text, &format!("{d}_sum"));
    assert!((sum - 120.011_05).abs() < 0.2, "{sum}");
    let buckets: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(d) && l.contains("_bucket"))
        .collect();
    assert_eq!(buckets.len(), BUCKETS_S.len() + 1);
    assert!(buckets.last().unwrap().contains("le=\"+Inf\""));
    assert_eq!(value(&text, "belier_bytes_received_total"), 80.0);
    assert_eq!(value(&text, "belier_bytes_sent_total"), 24.0);
    assert_eq!(value(&text, "belier_in_flight"), 4.0);
    assert_eq!(value(&text, "belier_target_rate"), 250.0);
    assert_eq!(value(&text, "belier_run_ended"), 1.0);
    // Every series belongs to a family declared before it.
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let name = line.split(['{', ' ']).next().unwrap();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        assert!(text.contains(&format!("# TYPE {family} ")), "{line}");
    }
}

#[test]
fn a_closed_loop_has_no_target_rate() {
    let text = render(&Figures {
        total: &Recorder::new(),
        in_flight: 0,
        target_rate: None,
        ended: false,
        steps: &[],
        exemplars: None,
    });
    assert!(!text.contains("belier_target_rate"));
    assert_eq!(value(&text, "belier_request_duration_seconds_count"), 0.0);
}

#[test]
fn anything_but_the_loopback_needs_a_token() {
    let addr = |s: &str| Some(s.parse().unwrap());
    let err = listen(addr("0.0.0.0:9464"), None, None).unwrap_err();
    assert!(err.to_string().contains("--metrics-listen"), "{err}");
    assert!(err.to_string().contains("--metrics-token"), "{err}");
    let short = listen(addr("0.0.0.0:9464"), Some("s3cret".into()), None).unwrap_err();
    assert!(
        short.to_string().contains("at least 16 characters"),
        "{short}"
    );
    let secret = "s3cret-s3cret-s3cret";
    let ok = listen(addr("0.0.0.0:9464"), Some(secret.into()), None)
        .unwrap()
        .unwrap();
    assert_eq!(ok.linger, DEFAULT_LINGER);
    assert!(!format!("{ok:?}").contains(secret), "a token never shows");
    assert!(listen(addr("127.0.0.1:9464"), Some("s3cret".into()), None).is_ok());
    assert!(listen(addr("127.0.0.1:9464"), None, Some(Duration::ZERO))
        .unwrap()
        .is_some());
    assert!(listen(addr("[::1]:9464"), None, None).unwrap().is_some());
    assert!(listen(addr("127.0.0.1:9464"), Some("a b".into()), None).is_err());
    assert!(listen(None, None, None).unwrap().is_none());
}

#[test]
fn labels_keep_no_secret_and_are_escaped() {
    assert_eq!(
        public_url("http://user:pw@example.com:8080/a/b?api_key=x#f"),
        "http://example.com:8080/a/b"
    );
    assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    assert!(same(b"Bearer t", b"Bearer t"));
    assert!(!same(b"Bearer t", b"Bearer u"));
    assert!(!same(b"Bearer t", b"Bearer tt"));
}

#[test]
fn openmetrics_is_served_to_scrapers_that_accept_it() {
    let accepts = |value: &str| {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, value.parse().unwrap());
        accepts_openmetrics(&headers)
    };
    // What Prometheus sends.
    assert!(accepts(
        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
         version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
    ));
    assert!(accepts("Application/OpenMetrics-Text"));
    assert!(!accepts("text/plain;version=0.0.4"));
    assert!(!accepts("*/*"));
    assert!(!accepts("application/openmetrics-text; q=0"));
    assert!(!accepts_openmetrics(&HeaderMap::new()));
}
