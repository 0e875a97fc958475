//! Exemplars of the latency histogram: for each of its buckets, the latest traced request it
//! counted (`--trace-sample`), so that a dashboard's bar at 250 ms links to a request that took
//! that long and to its trace. The Prometheus page offers them in OpenMetrics' exemplar syntax
//! ([`crate::text::render_openmetrics`]), OTLP on its histogram's data point.
//!
//! They come from the settled intervals' slowest requests ([`belier_stats::Exemplar`]): an
//! interval's traced ones replace, bucket by bucket, what an earlier interval left, the
//! slowest of the interval first. A bucket no traced request reached has none.

use belier_stats::Exemplar;

use crate::buckets::{bucket, BUCKETS_S};

/// One request a histogram bucket counted, named by its trace (an OpenMetrics exemplar).
#[derive(Clone, Debug, PartialEq)]
pub struct PointExemplar {
    /// Its trace id, 32 hex digits.
    pub trace_id: String,
    /// Its span id, 16 hex digits.
    pub span_id: String,
    /// Its latency, seconds.
    pub value: f64,
    /// When it ended, seconds since the Unix epoch.
    pub timestamp: f64,
}

/// The latest traced request of each latency bucket (`+Inf` last).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatestExemplars {
    slots: [Option<Exemplar>; BUCKETS_S.len() + 1],
}

impl LatestExemplars {
    /// Takes a settled interval's slowest requests (slowest first): each traced one becomes
    /// its bucket's exemplar unless a slower one of the same interval did.
    pub fn update(&mut self, interval: &[Exemplar]) {
        let mut taken = [false; BUCKETS_S.len() + 1];
        for e in interval.iter().filter(|e| e.trace_id.is_some()) {
            let slot = bucket(e.latency_us);
            if !std::mem::replace(&mut taken[slot], true) {
                self.slots[slot] = Some(*e);
            }
        }
    }

    /// Bucket `i`'s exemplar (`BUCKETS_S[i]`, or `+Inf` for the last), as a point carries it.
    pub(crate) fn of_bucket(&self, i: usize) -> Option<PointExemplar> {
        let e = self.slots.get(i)?.as_ref()?;
        Some(PointExemplar {
            trace_id: e.trace_id?.to_string(),
            span_id: e.span_id.map(|s| s.to_string()).unwrap_or_default(),
            value: e.latency_us as f64 / 1e6,
            timestamp: (e.intended_unix_us + e.latency_us) as f64 / 1e6,
        })
    }

    /// Whether no bucket has one.
    pub fn is_empty(&self) -> bool {
        self.slots.iter().all(Option::is_none)
    }
}

#[cfg(test)]
mod tests {
    use belier_stats::{SpanId, TraceId};

    use super::*;

    fn exemplar(latency_us: u64, trace: Option<u128>) -> Exemplar {
        Exemplar {
            latency_us,
            intended_unix_us: 1_000_000,
            status: 200,
            grpc: None,
            trace_id: trace.map(TraceId),
            span_id: trace.map(|t| SpanId(t as u64)),
            step: None,
        }
    }

    #[test]
    fn each_bucket_keeps_the_latest_intervals_slowest_traced_request() {
        let mut latest = LatestExemplars::default();
        assert!(latest.is_empty());
        // 210 ms and 205 ms fall in the 250 ms bucket (index 10); 90 s past the last bound.
        latest.update(&[
            exemplar(90_000_000, Some(9)),
            exemplar(210_000, Some(1)),
            exemplar(205_000, Some(2)),
            exemplar(220_000, None),
        ]);
        assert_eq!(
            latest.of_bucket(10).unwrap().trace_id,
            TraceId(1).to_string()
        );
        assert_eq!(latest.of_bucket(18).unwrap().value, 90.0);
        assert_eq!(latest.of_bucket(3), None);
        // A later interval's replaces it; a bucket it does not reach keeps its own.
        latest.update(&[exemplar(201_000, Some(3))]);
        let e = latest.of_bucket(10).unwrap();
        assert_eq!(
            (e.trace_id.as_str(), e.value, e.timestamp),
            (TraceId(3).to_string().as_str(), 0.201, 1.201)
        );
        assert!(latest.of_bucket(18).is_some());
        assert_eq!(bucket(100), 0);
        assert_eq!(bucket(101), 1);
    }
}
