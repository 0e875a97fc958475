//! Trace context for sampled requests (`Config::trace_sample`): which requests carry a W3C
//! `traceparent`, their new ids, and the request bytes that carry it.
//!
//! A run's request is encoded once and written as it is; a sampled one is copied with its
//! `traceparent` line added (see [`crate::request::added`]). Requests
//! that are not sampled carry no trace header and cost one random draw. A scripted user's
//! iteration is one trace: the draw is made when it starts, and each of its requests is a
//! span of that trace.

use std::cell::RefCell;

use belier_stats::{SpanId, Trace, TraceId};

/// The header's name as written on HTTP/1.1 (HTTP/2 writes names in lower case anyway).
pub(crate) const TRACEPARENT: &str = "traceparent";

/// A worker's sampling draws and id source.
pub(crate) struct Sampler {
    /// The share of requests (or iterations) traced, `0.0..=1.0`; 0 traces none.
    fraction: f64,
    rng: RefCell<fastrand::Rng>,
}

impl Sampler {
    /// A sampler tracing `fraction` of what it is asked about, with its own random source.
    pub(crate) fn new(fraction: f64) -> Sampler {
        Sampler {
            fraction,
            rng: RefCell::new(fastrand::Rng::new()),
        }
    }

    /// Whether this run traces anything at all.
    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.fraction > 0.0
    }

    /// A request's trace context if it is sampled: a new trace, and the request its span.
    #[inline]
    pub(crate) fn draw(&self) -> Option<Trace> {
        self.draw_trace().map(|trace_id| self.span(trace_id))
    }

    /// A new trace id if what starts now (a request, a user's iteration) is sampled.
    #[inline]
    pub(crate) fn draw_trace(&self) -> Option<TraceId> {
        if !self.enabled() {
            return None;
        }
        let mut rng = self.rng.borrow_mut();
        // `f64()` is in [0, 1): a fraction of 1 traces every one.
        (rng.f64() < self.fraction).then(|| TraceId(rng.u128(1..)))
    }

    /// A new span of trace `trace_id`: one request of a traced iteration.
    pub(crate) fn span(&self, trace_id: TraceId) -> Trace {
        Trace {
            trace_id,
            span_id: SpanId(self.rng.borrow_mut().u64(1..)),
        }
    }
}

/// The `traceparent` header line for `trace`, with its line end.
pub(crate) fn header_line(
    trace: &Trace,
) -> [u8; TRACEPARENT.len() + 2 + belier_stats::TRACEPARENT_LEN + 2] {
    let mut line = [0u8; TRACEPARENT.len() + 2 + belier_stats::TRACEPARENT_LEN + 2];
    let (name, rest) = line.split_at_mut(TRACEPARENT.len());
    name.copy_from_slice(TRACEPARENT.as_bytes());
    rest[..2].copy_from_slice(b": ");
    rest[2..2 + belier_stats::TRACEPARENT_LEN].copy_from_slice(&trace.traceparent());
    rest[2 + belier_stats::TRACEPARENT_LEN..].copy_from_slice(b"\r\n");
    line
}

/// Adds `trace`'s header to the end of a request head being written into `out`.
pub(crate) fn write_header(out: &mut Vec<u8>, trace: &Trace) {
    out.extend_from_slice(&header_line(trace));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_s_header_line_is_its_traceparent() {
        let trace = Trace {
            trace_id: TraceId(0xab),
            span_id: SpanId(0xcd),
        };
        assert_eq!(
            std::str::from_utf8(&header_line(&trace)).unwrap(),
            "traceparent: 00-000000000000000000000000000000ab-00000000000000cd-01\r\n"
        );
    }

    #[test]
    fn sampling_draws_about_its_share_with_new_ids() {
        let sampler = Sampler::new(0.1);
        let drawn: Vec<Trace> = (0..20_000).filter_map(|_| sampler.draw()).collect();
        // 2,000 expected; the binomial's standard deviation is 42.
        assert!((1_800..=2_200).contains(&drawn.len()), "{}", drawn.len());
        let ids: std::collections::HashSet<_> = drawn.iter().map(|t| t.trace_id).collect();
        assert_eq!(ids.len(), drawn.len());
        assert!(Sampler::new(0.0).draw().is_none());
        assert!((0..1000).all(|_| Sampler::new(1.0).draw().is_some()));
        let trace_id = TraceId(5);
        let span = sampler.span(trace_id);
        assert_eq!(span.trace_id, trace_id);
        assert_ne!(span.span_id, SpanId(0));
    }
}
