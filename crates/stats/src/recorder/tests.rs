//! The recorder's counting, merging and storing.

use std::time::Instant;

use proptest::prelude::*;

use super::*;
use crate::{DIAGNOSTIC_SIGFIG, HISTOGRAM_MAX_US, MOST_ROWS};

fn sample(latency_us: u64, outcome: Outcome) -> Sample {
    let s = Sample::simulated(Instant::now(), 0, latency_us, outcome);
    Sample {
        first_byte: Some(s.done),
        bytes_in: 100,
        bytes_out: 40,
        ..s
    }
}

#[test]
fn counts_add_up() {
    let mut r = Recorder::new();
    r.record(&sample(1_000, Outcome::Response { status: 200 }));
    r.record(&sample(2_000, Outcome::Response { status: 503 }));
    r.record(&sample(5, Outcome::Error(ErrorKind::ConnectRefused)));
    r.record_errors(ErrorKind::Cancelled, 2);
    assert_eq!(r.requests(), 5);
    assert_eq!(r.responses(), 2);
    assert_eq!(r.succeeded(), 1);
    assert_eq!(r.errors(), 3);
    assert_eq!(r.errors_of(ErrorKind::Cancelled), 2);
    assert_eq!(r.status_counts().collect::<Vec<_>>(), [(200, 1), (503, 1)]);
    assert_eq!(r.bytes_in(), 300);
    assert_eq!(r.bytes_out(), 120);
    // Errors stay out of the latency histogram.
    assert_eq!(r.latency_us().len(), 2);
}

#[test]
fn grpc_calls_are_counted_by_code_merged_and_stored() {
    let mut r = Recorder::new();
    for code in [0, 0, 0, 8, 4, 99] {
        r.record(&sample(1_000, Outcome::Grpc { code }));
    }
    r.record(&sample(5, Outcome::Error(ErrorKind::StreamReset)));
    // Every call that got a status is a response; only OK ones succeeded.
    assert_eq!((r.requests(), r.responses(), r.succeeded()), (7, 6, 3));
    // A code outside the 17 is UNKNOWN (2).
    let counts = [(0, 3), (2, 1), (4, 1), (8, 1)];
    assert_eq!(r.grpc_counts().collect::<Vec<_>>(), counts);
    assert_eq!(r.status_counts().count(), 0);
    assert_eq!(r.latency_us().len(), 6);
    let mut merged = r.clone();
    merged += &r;
    assert_eq!(merged.grpc_counts().next(), Some((0, 6)));
    let stored: Counters =
        serde_json::from_str(&serde_json::to_string(&r.counters()).unwrap()).unwrap();
    let restored = Recorder::from_counters(&stored).unwrap();
    assert_eq!(restored.grpc_counts().collect::<Vec<_>>(), counts);
    // Without gRPC nothing is written; a code out of range is refused.
    let http = Recorder::new().counters();
    assert!(!serde_json::to_string(&http).unwrap().contains("grpc"));
    let mut bad = Counters::default();
    bad.grpc.insert(17, 1);
    assert!(Recorder::from_counters(&bad).is_err());
    r.reset();
    assert_eq!(r.grpc_counts().count(), 0);
}

#[test]
fn streaming_calls_messages_are_counted_merged_and_stored() {
    let mut r = Recorder::new();
    assert!(r.messages().is_none());
    let mut gaps = crate::MessageTimes::default();
    gaps.push(100);
    gaps.push(0);
    let call = CallMessages {
        sent: 1,
        received: 3,
        first_message_us: Some(2_000),
        gaps: &gaps,
        round_trips: None,
    };
    for _ in 0..2 {
        r.record(&sample(5_000, Outcome::Grpc { code: 0 }));
        r.record_messages(&call);
    }
    let m = r.messages().unwrap();
    let counts = MessageCounts {
        calls: 2,
        sent: 2,
        received: 6,
        ..MessageCounts::default()
    };
    assert_eq!(m.counts(), counts);
    assert_eq!((m.first_message().count, m.gaps().count), (2, 4));
    // Merged into a recorder that had none, and not created by one that has none.
    let mut merged = Recorder::new();
    merged += &r;
    merged += &Recorder::new();
    assert_eq!(merged.messages().unwrap().received(), 6);
    let stored: Counters =
        serde_json::from_str(&serde_json::to_string(&r.counters()).unwrap()).unwrap();
    assert_eq!(stored.messages, Some(counts));
    let restored = Recorder::from_counters(&stored).unwrap();
    assert_eq!(restored.messages().unwrap().counts(), counts);
    // Without streaming calls nothing is written, and an older file reads as none.
    let http = Recorder::new().counters();
    assert!(!serde_json::to_string(&http).unwrap().contains("messages"));
    r.reset();
    assert!(r.messages().is_none());
    assert!(!serde_json::to_string(&r.counters())
        .unwrap()
        .contains("messages"));
}

#[test]
fn first_error_example_wins_and_is_formatted_once() {
    let mut r = Recorder::new();
    let mut calls = 0;
    for msg in ["first", "second"] {
        r.note_error_example(ErrorKind::Timeout, || {
            calls += 1;
            msg.to_string()
        });
    }
    assert_eq!(calls, 1);
    assert_eq!(r.error_example(ErrorKind::Timeout), Some("first"));
    assert_eq!(r.error_example(ErrorKind::OtherIo), None);
}

#[test]
fn runs_without_users_keep_no_rows() {
    let mut r = Recorder::new();
    r.record(&sample(10, Outcome::Response { status: 200 }));
    assert!(r.steps().is_empty() && r.checks().is_empty());
    let stored = r.counters();
    assert!(stored.steps.is_empty() && stored.checks.is_empty());
    assert_eq!(stored.iterations, 0);
}

#[test]
fn reset_forgets_everything() {
    let mut r = Recorder::new();
    r.record_step(0, &sample(10, Outcome::Response { status: 200 }), true);
    r.record_check(0, true);
    r.record_iteration();
    r.record(&sample(10, Outcome::Response { status: 200 }));
    r.note_error_example(ErrorKind::Timeout, || "x".into());
    r.record_connection();
    r.reset();
    assert_eq!(r.requests(), 0);
    assert_eq!(r.connections_opened(), 0);
    assert_eq!(r.error_example(ErrorKind::Timeout), None);
    assert_eq!(r.latency_us().len(), 0);
    assert_eq!(r.steps()[0].counts.requests, 0);
    assert_eq!(r.steps()[0].values_us().len(), 0);
    assert_eq!(r.checks()[0].passed, 0);
    assert_eq!(r.iterations(), 0);
}

#[test]
fn out_of_range_status_and_latency_are_clamped_not_lost() {
    let mut r = Recorder::new();
    r.record(&sample(
        HISTOGRAM_MAX_US * 4,
        Outcome::Response { status: 1200 },
    ));
    assert_eq!(r.responses(), 1);
    assert_eq!(r.status_counts().collect::<Vec<_>>(), [(0, 1)]);
    assert!(r.latency_us().max() >= HISTOGRAM_MAX_US - HISTOGRAM_MAX_US / 1000);
}

#[test]
fn counters_and_histograms_restore_exactly() {
    let mut r = Recorder::new();
    r.record(&sample(1_234, Outcome::Response { status: 201 }));
    r.record(&sample(99, Outcome::Error(ErrorKind::Timeout)));
    r.note_error_example(ErrorKind::Timeout, || "slow".into());
    r.record_connection();
    r.record_scheduled();
    r.record_dropped();
    r.record_step(1, &sample(500, Outcome::Response { status: 200 }), false);
    r.record_step(
        1,
        &sample(7, Outcome::Error(ErrorKind::ConnectRefused)),
        true,
    );
    r.record_check(2, false);
    r.record_iteration();
    r.record_resent();
    r.record_tls_resumed();
    r.record_tls_resumed();
    for _ in 0..3 {
        r.record_kernel_stamped();
    }
    r.record_wakeups(40);
    r.record_wakeups(2);
    let mut back = Recorder::from_counters(&r.counters()).unwrap();
    for m in Metric::ALL {
        back.add_histogram(m, r.histogram(m)).unwrap();
    }
    for (i, row) in r.steps().iter().enumerate() {
        back.add_step_histogram(i, row.values_us()).unwrap();
    }
    assert_eq!(back.steps().len(), 2);
    assert_eq!(back.steps()[1].counts.requests, 2);
    assert_eq!(back.steps()[1].counts.failures, 1);
    assert_eq!(back.steps()[1].summary(), r.steps()[1].summary());
    assert_eq!(back.checks()[2].failed, 1);
    assert_eq!(back.iterations(), 1);
    assert_eq!((back.resent(), back.tls_resumed()), (1, 2));
    assert_eq!(back.kernel_stamped(), 3);
    assert_eq!(back.wakeups(), 42);
    let mut twice = back.clone();
    twice += &back;
    assert_eq!((twice.resent(), twice.tls_resumed()), (2, 4));
    assert_eq!(twice.kernel_stamped(), 6);
    assert_eq!(twice.wakeups(), 84);
    twice.reset();
    assert_eq!((twice.resent(), twice.tls_resumed()), (0, 0));
    assert_eq!(twice.kernel_stamped(), 0);
    assert_eq!(twice.wakeups(), 0);
    assert_eq!(back.counters(), r.counters());
    assert_eq!(back.latency_summary(), r.latency_summary());
    assert_eq!(back.lag_us().len(), r.lag_us().len());
    let mut bad = r.counters();
    bad.errors.insert("gremlins".into(), 1);
    assert!(Recorder::from_counters(&bad).is_err());
}

#[test]
fn quic_figures_are_merged_stored_and_bounded() {
    let mut r = Recorder::new();
    assert!(r.quic().is_none());
    let mut q = crate::Quic {
        handshakes: 2,
        datagrams_sent: 30,
        sends: 10,
        ..crate::Quic::default()
    };
    q.end("idle_timeout");
    r.record_quic(&q);
    r.record_quic(&crate::Quic::default());
    let back = Recorder::from_counters(&r.counters()).unwrap();
    assert_eq!(back.quic(), Some(&q));
    let mut twice = back.clone();
    twice += &back;
    let both = twice.quic().unwrap();
    assert_eq!((both.handshakes, both.sends), (4, 20));
    assert_eq!(both.ended["idle_timeout"], 2);
    twice.reset();
    assert!(twice.quic().is_none());
    // A file may not claim more causes of ends than a recording keeps.
    let mut bad = r.counters();
    let quic = bad.quic.as_mut().unwrap();
    for i in 0..=crate::MOST_ENDS {
        quic.ended.insert(format!("0x{i:x}"), 1);
    }
    assert!(Recorder::from_counters(&bad)
        .unwrap_err()
        .0
        .contains("QUIC connections' ends"));
}

/// A stored step or metric row takes some 40 bytes and makes a histogram of about 180 KiB:
/// the count a file claims is refused above `MOST_ROWS` before any row is made.
#[test]
fn stored_rows_are_bounded_before_they_are_made() {
    let mut c = Counters {
        steps: vec![crate::StepCounts::default(); MOST_ROWS + 1],
        ..Counters::default()
    };
    let e = Recorder::from_counters(&c).unwrap_err();
    assert_eq!(
        e.0,
        format!(
            "{} step rows, more than the {MOST_ROWS} belier reads",
            MOST_ROWS + 1
        )
    );
    c.steps.truncate(3);
    c.metrics = vec![0; MOST_ROWS + 1];
    assert!(Recorder::from_counters(&c)
        .unwrap_err()
        .0
        .contains("metric rows"));
    c.metrics.truncate(2);
    let r = Recorder::from_counters(&c).unwrap();
    assert_eq!((r.steps().len(), r.metrics().len()), (3, 2));
}

proptest! {
    // Merging recorders that each saw part of the samples equals one recorder that saw all.
    #[test]
    fn merge_equals_recording_everything(
        values in proptest::collection::vec((1u64..10_000_000, 0usize..4, 0usize..3), 1..400)
    ) {
        let mut all = Recorder::new();
        let mut parts = [Recorder::new(), Recorder::new(), Recorder::new()];
        for &(latency, kind, part) in &values {
            let outcome = match kind {
                0 => Outcome::Response { status: 200 },
                1 => Outcome::Response { status: 404 },
                2 => Outcome::Error(ErrorKind::Timeout),
                _ => Outcome::Error(ErrorKind::ConnectionReset),
            };
            let s = sample(latency, outcome);
            all.record(&s);
            parts[part].record(&s);
            // Scripted-user rows: the step, check and verdict follow from the values.
            let (step, check, failed) = ((latency % 5) as usize, kind % 3, kind >= 2);
            all.record_step(step, &s, failed);
            parts[part].record_step(step, &s, failed);
            all.record_check(check, !failed);
            parts[part].record_check(check, !failed);
            if latency % 2 == 0 {
                all.record_iteration();
                parts[part].record_iteration();
            }
        }
        let mut merged = Recorder::new();
        for p in &parts {
            merged += p;
        }
        prop_assert_eq!(merged.requests(), all.requests());
        prop_assert_eq!(merged.errors(), all.errors());
        prop_assert_eq!(merged.status_counts().collect::<Vec<_>>(), all.status_counts().collect::<Vec<_>>());
        prop_assert_eq!(merged.bytes_in(), all.bytes_in());
        prop_assert_eq!(merged.latency_summary(), all.latency_summary());
        prop_assert_eq!(merged.counters(), all.counters());
        prop_assert_eq!(merged.steps().len(), all.steps().len());
        for (m, a) in merged.steps().iter().zip(all.steps()) {
            prop_assert_eq!(m.counts, a.counts);
            prop_assert_eq!(m.summary(), a.summary());
        }
    }
}

#[test]
fn each_step_keeps_its_own_slowest_merged_and_stored() {
    let ok = Outcome::Response { status: 200 };
    let (mut a, mut b) = (Recorder::new(), Recorder::new());
    // Step 0 is slow (1–2 s), step 1 fast (1–20 ms): the run's five are all step 0's.
    for i in 0..20u64 {
        let r = if i % 2 == 0 { &mut a } else { &mut b };
        let slow = sample(1_000_000 + i * 50_000, ok);
        r.record(&slow);
        r.record_step(0, &slow, false);
        let fast = sample(1_000 + i * 1_000, ok);
        r.record(&fast);
        r.record_step(1, &fast, false);
    }
    a += &b;
    assert!(a.exemplars().iter().all(|e| e.step == Some(0)));
    let fast: Vec<u64> = a.step_exemplars(1).iter().map(|e| e.latency_us).collect();
    assert_eq!(fast, [20_000, 19_000, 18_000, 17_000, 16_000]);
    assert!(a.step_exemplars(1).iter().all(|e| e.step == Some(1)));
    assert_eq!(a.step_exemplars(0)[0].latency_us, 1_950_000);
    assert!(a.step_exemplars(2).is_empty());
    let back = Recorder::from_counters(&a.counters()).unwrap();
    assert_eq!(back.step_exemplars(1), a.step_exemplars(1));
    assert_eq!(back.exemplars(), a.exemplars());
    a.reset();
    assert!(a.step_exemplars(1).is_empty() && a.exemplars().is_empty());
}

#[test]
fn histograms_are_made_by_their_first_value() {
    for (i, m) in Metric::ALL.into_iter().enumerate() {
        assert_eq!(m.index(), i, "{m:?} is at its index in Metric::ALL");
    }
    let mut r = Recorder::new();
    assert!(r.histograms.iter().all(Option::is_none));
    // A response over a connection it opened, without TLS: no handshake histogram.
    r.record(&sample(1_000, Outcome::Response { status: 200 }));
    let made: Vec<Metric> = Metric::ALL
        .into_iter()
        .filter(|m| r.histograms[m.index()].is_some())
        .collect();
    assert!(!made.contains(&Metric::Tls), "made {made:?}");
    assert!(made.contains(&Metric::Latency), "made {made:?}");
    // An empty histogram reads as one with the metric's bounds and figures.
    let tls = r.histogram(Metric::Tls);
    assert_eq!((tls.len(), tls.sigfig()), (0, HISTOGRAM_SIGFIG));
    assert_eq!(r.histogram(Metric::Lag).sigfig(), DIAGNOSTIC_SIGFIG);
    assert_eq!(tls.high(), r.histogram(Metric::Latency).high());
    // Adding a recorder makes only what it has values in.
    let mut total = Recorder::new();
    total += &Recorder::new();
    assert!(total.histograms.iter().all(Option::is_none));
    total += &r;
    assert_eq!(total.histogram(Metric::Latency).len(), 1);
    assert!(total.histograms[Metric::Tls.index()].is_none());
}
