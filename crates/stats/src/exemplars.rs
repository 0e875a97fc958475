//! The slowest requests of an interval, kept one by one beside its histograms: a histogram
//! says that the p99 was 812 ms, an exemplar says which request took 1.94 s, when it was
//! due, what it answered and (when it was traced, `--trace-sample`) the trace that finds it
//! in the server's traces and logs.
//!
//! Each recorder keeps its [`EXEMPLARS_KEPT`] slowest complete responses, the requests its
//! latency histogram counts. Checking a request costs one comparison with the fastest kept;
//! recorders merge to the slowest of their union, so an interval's exemplars are the same
//! whether one worker, several or several shards recorded it.

use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::sample::{Outcome, Sample};
use crate::trace::{SpanId, TraceId};

/// How many of its slowest requests a recorder keeps.
pub const EXEMPLARS_KEPT: usize = 5;

/// One of the slowest complete responses of an interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exemplar {
    /// Its latency from the intended start, microseconds.
    pub latency_us: u64,
    /// When it was due to start: microseconds since the Unix epoch, by the recording host's
    /// clock (what finds it in the server's logs and a tracing tool's time range).
    pub intended_unix_us: u64,
    /// Its HTTP status (200 for a gRPC call's HTTP/2 response; see `grpc`).
    pub status: u16,
    /// A gRPC call's status code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<u8>,
    /// Its trace, when it was sampled for tracing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<TraceId>,
    /// Its own span in that trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_id: Option<SpanId>,
    /// A scripted user's request: the number of its step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
}

/// A recorder's slowest requests, slowest first, at most [`EXEMPLARS_KEPT`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exemplars(Vec<Exemplar>);

impl Exemplars {
    /// Keeps `sample`, a request of step `step`, if it is among the step's slowest.
    pub(crate) fn offer_step(&mut self, sample: &Sample, step: usize) {
        if self.would_keep(sample.latency_us()) {
            self.offer(sample);
            self.name_step(sample, step);
        }
    }

    /// Keeps `sample` if it is among the slowest complete responses so far.
    #[inline]
    pub(crate) fn offer(&mut self, sample: &Sample) {
        let latency_us = sample.latency_us();
        if !self.would_keep(latency_us) {
            return;
        }
        let (status, grpc) = match sample.outcome {
            Outcome::Response { status } => (status, None),
            Outcome::Grpc { code } => (200, Some(code)),
            Outcome::Error(_) => return,
        };
        self.keep(Exemplar {
            latency_us,
            intended_unix_us: unix_us(sample.intended),
            status,
            grpc,
            trace_id: sample.trace.map(|t| t.trace_id),
            span_id: sample.trace.map(|t| t.span_id),
            step: None,
        });
    }

    /// Names the step of `sample` if it is kept (a scripted user's request is recorded, then
    /// recorded under its step).
    pub(crate) fn name_step(&mut self, sample: &Sample, step: usize) {
        let latency_us = sample.latency_us();
        if self.0.last().is_none_or(|e| e.latency_us > latency_us) {
            return;
        }
        let intended = unix_us(sample.intended);
        let trace_id = sample.trace.map(|t| t.trace_id);
        if let Some(e) = self.0.iter_mut().find(|e| {
            e.latency_us == latency_us
                && e.intended_unix_us == intended
                && e.trace_id == trace_id
                && e.step.is_none()
        }) {
            e.step = u32::try_from(step).ok();
        }
    }

    #[inline]
    fn would_keep(&self, latency_us: u64) -> bool {
        // As slow as the fastest kept: `keep` orders the two by when they were due.
        self.0.len() < EXEMPLARS_KEPT || self.0.last().is_some_and(|e| e.latency_us <= latency_us)
    }

    fn keep(&mut self, exemplar: Exemplar) {
        let at = self.0.partition_point(|e| slower(e, &exemplar));
        self.0.insert(at, exemplar);
        self.0.truncate(EXEMPLARS_KEPT);
    }

    /// Adds another recorder's: the slowest of both.
    pub(crate) fn merge(&mut self, other: &Exemplars) {
        for e in &other.0 {
            if self.would_keep(e.latency_us) {
                self.keep(*e);
            }
        }
    }

    /// Gives each kept request the intended start `at` says (µs since the epoch).
    pub(crate) fn redate(&mut self, mut at: impl FnMut(&Exemplar) -> u64) {
        for e in &mut self.0 {
            e.intended_unix_us = at(e);
        }
        let kept = std::mem::take(&mut self.0);
        *self = Exemplars::restored(&kept);
    }

    /// The kept requests, slowest first.
    pub fn all(&self) -> &[Exemplar] {
        &self.0
    }

    /// Exemplars as a results file stored them: the slowest [`EXEMPLARS_KEPT`] of them
    /// (a file written by hand may hold more, in any order).
    pub(crate) fn restored(stored: &[Exemplar]) -> Exemplars {
        let mut kept = Exemplars::default();
        for e in stored {
            if kept.would_keep(e.latency_us) {
                kept.keep(*e);
            }
        }
        kept
    }
}

/// Whether `a` comes before `b`: slower, or as slow and due earlier (an order that does not
/// depend on which recorder merged first).
fn slower(a: &Exemplar, b: &Exemplar) -> bool {
    (a.latency_us, std::cmp::Reverse(a.intended_unix_us))
        > (b.latency_us, std::cmp::Reverse(b.intended_unix_us))
}

/// `at` on the wall clock, microseconds since the Unix epoch (see [`wall_clock`]).
pub fn unix_us(at: Instant) -> u64 {
    wall_clock(at)
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// `at` on the wall clock, through one reading of both clocks taken the first time, so that
/// instants keep their order and spacing to the nanosecond (what exemplars and spans are
/// dated by).
pub fn wall_clock(at: Instant) -> SystemTime {
    static ANCHOR: OnceLock<(Instant, SystemTime)> = OnceLock::new();
    let (instant, wall) = *ANCHOR.get_or_init(|| (Instant::now(), SystemTime::now()));
    match at.checked_duration_since(instant) {
        Some(after) => wall + after,
        None => wall - instant.duration_since(at),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::trace::Trace;
    use crate::ErrorKind;

    fn answered(at: Instant, latency_ms: u64) -> Sample {
        Sample::simulated(at, 0, latency_ms * 1000, Outcome::Response { status: 200 })
    }

    #[test]
    fn the_slowest_complete_responses_are_kept_slowest_first() {
        let t0 = Instant::now();
        let mut kept = Exemplars::default();
        for (i, ms) in [5, 90, 7, 200, 3, 40, 200, 1, 60].into_iter().enumerate() {
            kept.offer(&answered(t0 + Duration::from_millis(i as u64), ms));
        }
        let timeout = Sample::simulated(t0, 0, 9_000_000, Outcome::Error(ErrorKind::Timeout));
        kept.offer(&timeout);
        let latencies: Vec<u64> = kept.all().iter().map(|e| e.latency_us / 1000).collect();
        assert_eq!(latencies, [200, 200, 90, 60, 40]);
        // Of two as slow, the one due first comes first.
        assert!(kept.all()[0].intended_unix_us < kept.all()[1].intended_unix_us);
    }

    #[test]
    fn merging_keeps_the_slowest_of_the_union_whatever_the_order() {
        let t0 = Instant::now();
        let (mut a, mut b) = (Exemplars::default(), Exemplars::default());
        for i in 0..40u64 {
            let sample = answered(t0 + Duration::from_millis(i), (i * 37) % 101);
            if i % 3 == 0 { &mut a } else { &mut b }.offer(&sample);
        }
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        assert_eq!(ab, ba);
        let mut all = Exemplars::default();
        for i in 0..40u64 {
            all.offer(&answered(t0 + Duration::from_millis(i), (i * 37) % 101));
        }
        assert_eq!(ab, all);
        assert_eq!(Exemplars::restored(all.all()), all);
    }

    #[test]
    fn an_exemplar_carries_its_trace_and_step() {
        let t0 = Instant::now();
        let trace = Trace {
            trace_id: TraceId(7),
            span_id: SpanId(9),
        };
        let slow = Sample {
            trace: Some(trace),
            ..answered(t0, 300)
        };
        let mut kept = Exemplars::default();
        kept.offer(&answered(t0, 1));
        kept.offer(&slow);
        kept.name_step(&slow, 3);
        kept.name_step(&answered(t0, 1), 1);
        let e = kept.all()[0];
        assert_eq!(
            (e.trace_id, e.span_id, e.step),
            (Some(TraceId(7)), Some(SpanId(9)), Some(3))
        );
        assert_eq!(kept.all()[1].step, Some(1));
        let later = unix_us(t0 + Duration::from_millis(1500));
        assert_eq!(later - e.intended_unix_us, 1_500_000);
    }
}
