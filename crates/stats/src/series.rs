//! Per-interval time series with bounded memory.

use std::time::Duration;

use serde::Serialize;

use crate::Recorder;

/// Readings a worker takes at the end of each interval, beside what it recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Gauges {
    /// Requests issued and not yet finished (queued or on the wire).
    pub in_flight: u64,
    /// Share of one core the worker thread used during the interval (0..=1).
    pub cpu: f64,
    /// Most connections the worker had open at once during the interval.
    pub connections_peak: u64,
    /// Held connections (`--hold`) open at the end of the interval.
    pub held: u64,
}

impl Gauges {
    /// Combines the readings of two workers for the same interval: in-flight requests add up,
    /// CPU keeps the busiest worker (a saturated worker is what limits a run). Counts saturate:
    /// readings restored from a results file may claim anything (`in_flight` at u64::MAX
    /// overflowed when a second worker's reading was added).
    pub fn combine(self, other: Gauges) -> Gauges {
        Gauges {
            in_flight: self.in_flight.saturating_add(other.in_flight),
            cpu: self.cpu.max(other.cpu),
            // Workers peak at different instants: the sum is an upper bound of the run's peak.
            connections_peak: self.connections_peak.saturating_add(other.connections_peak),
            // Read at the same boundary by every worker: they add up.
            held: self.held.saturating_add(other.held),
        }
    }
}

/// Most points a series keeps; beyond it, neighbouring points are merged two by two and the
/// interval doubles. 7,200 one-second points cover two hours exactly.
pub const MAX_POINTS: usize = 7_200;

/// One interval of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    /// Start of the interval, from the start of the run.
    #[serde(rename = "offset_s", serialize_with = "as_secs")]
    pub offset: Duration,
    /// Length of the interval (the last one of a run is usually shorter).
    #[serde(rename = "width_s", serialize_with = "as_secs")]
    pub width: Duration,
    /// Requests that finished in the interval (responses and errors).
    pub requests: u64,
    /// Responses with a status below 400.
    pub succeeded: u64,
    /// Requests that failed without a complete response.
    pub errors: u64,
    /// Wire bytes read.
    pub bytes_in: u64,
    /// Median latency, microseconds.
    pub p50_us: u64,
    /// 90th percentile latency, microseconds.
    pub p90_us: u64,
    /// 99th percentile latency, microseconds.
    pub p99_us: u64,
    /// Largest latency, microseconds.
    pub max_us: u64,
    /// Arrivals that came due (open loop; 0 in the closed loop).
    pub scheduled: u64,
    /// Arrivals dropped at the in-flight cap.
    pub dropped: u64,
    /// 99th percentile scheduling lag, microseconds.
    pub lag_p99_us: u64,
    /// Requests in flight at the end of the interval, all workers.
    pub in_flight: u64,
    /// CPU share of one core used by the busiest worker thread (0..=1).
    pub cpu: f64,
    /// Connections opened in the interval.
    pub connections_opened: u64,
    /// Most connections open at once in the interval (summed over workers).
    pub connections_peak: u64,
    /// Streamed messages received in the interval (streaming gRPC calls', WebSockets',
    /// streamed bodies' events or tokens; 0 for other runs).
    pub messages_in: u64,
    /// 99th percentile of the time to a call's (socket's, stream's) first message, of the
    /// calls that ended in the interval, microseconds (0 when none).
    pub first_message_p99_us: u64,
    /// 99th percentile of the gaps between a call's messages, likewise.
    pub gap_p99_us: u64,
    /// SSE streams sent as a reconnection in the interval (`--sse-reconnect`; absent when
    /// none).
    #[serde(skip_serializing_if = "is_zero")]
    pub reconnections: u64,
    /// Held connections (`--hold`) open at the end of the interval (absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub held: u64,
    /// True once this point merges several intervals; its percentiles are then the largest of
    /// the merged intervals' (an upper bound), while counts and max stay exact.
    pub coarsened: bool,
}

impl Point {
    /// Summarises `r` and `gauges` as the interval starting at `offset` and lasting `width`.
    pub fn of(r: &Recorder, gauges: Gauges, offset: Duration, width: Duration) -> Self {
        let h = r.latency_us();
        let lag = r.lag_us();
        let at = |q: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(q)
            }
        };
        Point {
            offset,
            width,
            requests: r.requests(),
            succeeded: r.succeeded(),
            errors: r.errors(),
            bytes_in: r.bytes_in(),
            p50_us: at(0.50),
            p90_us: at(0.90),
            p99_us: at(0.99),
            max_us: if h.is_empty() { 0 } else { h.max() },
            scheduled: r.scheduled(),
            dropped: r.dropped(),
            lag_p99_us: if lag.is_empty() {
                0
            } else {
                lag.value_at_quantile(0.99)
            },
            in_flight: gauges.in_flight,
            cpu: gauges.cpu,
            connections_opened: r.connections_opened(),
            connections_peak: gauges.connections_peak,
            messages_in: r.messages().map_or(0, |m| m.received()),
            first_message_p99_us: r.messages().map_or(0, |m| p99(m.first_message_us())),
            gap_p99_us: r.messages().map_or(0, |m| p99(m.gap_us())),
            reconnections: r.messages().map_or(0, |m| m.counts().reconnections),
            held: gauges.held,
            coarsened: false,
        }
    }

    /// Arrivals due per second over the interval: the target rate (open loop).
    pub fn target_rate(&self) -> f64 {
        per_second(self.scheduled, self.width)
    }

    /// Arrivals taken up per second over the interval (open loop): those due less those
    /// dropped. With scripted users an arrival is an iteration, so this is the rate at which
    /// iterations started, to set against [`Point::target_rate`].
    pub fn started_rate(&self) -> f64 {
        per_second(self.scheduled.saturating_sub(self.dropped), self.width)
    }

    /// Requests per second over the interval.
    pub fn rate(&self) -> f64 {
        per_second(self.requests, self.width)
    }

    fn absorb(&mut self, next: &Point) {
        self.width = next.offset + next.width - self.offset;
        self.requests += next.requests;
        self.succeeded += next.succeeded;
        self.errors += next.errors;
        self.bytes_in += next.bytes_in;
        self.p50_us = self.p50_us.max(next.p50_us);
        self.p90_us = self.p90_us.max(next.p90_us);
        self.p99_us = self.p99_us.max(next.p99_us);
        self.max_us = self.max_us.max(next.max_us);
        self.scheduled += next.scheduled;
        self.dropped += next.dropped;
        self.lag_p99_us = self.lag_p99_us.max(next.lag_p99_us);
        self.in_flight = self.in_flight.max(next.in_flight);
        self.cpu = self.cpu.max(next.cpu);
        self.connections_opened += next.connections_opened;
        self.connections_peak = self.connections_peak.max(next.connections_peak);
        self.messages_in += next.messages_in;
        self.first_message_p99_us = self.first_message_p99_us.max(next.first_message_p99_us);
        self.gap_p99_us = self.gap_p99_us.max(next.gap_p99_us);
        self.reconnections += next.reconnections;
        // The fewest held at any merged interval's end: a hold that broke stays seen.
        self.held = self.held.min(next.held);
        self.coarsened = true;
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The 99th percentile of `h`; 0 when it is empty.
fn p99(h: &hdrhistogram::Histogram<u64>) -> u64 {
    match h.is_empty() {
        true => 0,
        false => h.value_at_quantile(0.99),
    }
}

/// Points in time order, at most [`MAX_POINTS`] of them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Series {
    points: Vec<Point>,
    /// Width every point spans once the series has coarsened; new intervals fill the last
    /// point up to it before a new point starts.
    #[serde(skip)]
    bucket: Option<Duration>,
}

impl Series {
    /// An empty series.
    pub fn new() -> Self {
        Series::default()
    }

    /// Appends a point, coarsening the series first if it is full.
    pub fn push(&mut self, point: Point) {
        if self.absorbed(&point) {
            return;
        }
        if self.points.len() == MAX_POINTS {
            self.coarsen();
            if self.absorbed(&point) {
                return;
            }
        }
        self.points.push(point);
    }

    fn absorbed(&mut self, point: &Point) -> bool {
        match (self.bucket, self.points.last_mut()) {
            (Some(bucket), Some(last)) if last.width < bucket => {
                last.absorb(point);
                true
            }
            _ => false,
        }
    }

    /// The points, oldest first.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// Shortens the last point to end at `end` (the end of the run).
    pub fn end_at(&mut self, end: Duration) {
        if let Some(last) = self.points.last_mut() {
            last.width = end.saturating_sub(last.offset);
        }
    }

    fn coarsen(&mut self) {
        let merged = self
            .points
            .chunks(2)
            .map(|pair| {
                let mut p = pair[0].clone();
                if let Some(next) = pair.get(1) {
                    p.absorb(next);
                }
                p.coarsened = true;
                p
            })
            .collect::<Vec<_>>();
        self.bucket = merged.first().map(|p| p.width);
        self.points = merged;
    }
}

pub(crate) fn per_second(count: u64, width: Duration) -> f64 {
    if width.is_zero() {
        0.0
    } else {
        count as f64 / width.as_secs_f64()
    }
}

fn as_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauges_from_a_file_saturate_when_combined() {
        // Found by bench/fuzz: a results file's reading of u64::MAX in flight overflowed.
        let most = Gauges {
            in_flight: u64::MAX,
            cpu: 0.5,
            connections_peak: u64::MAX,
            held: u64::MAX,
        };
        let other = Gauges {
            in_flight: 3,
            cpu: 0.75,
            connections_peak: 2,
            held: 5,
        };
        let both = most.combine(other);
        assert_eq!(both.in_flight, u64::MAX);
        assert_eq!(both.connections_peak, u64::MAX);
        assert_eq!(both.held, u64::MAX);
        assert_eq!(both.cpu, 0.75);
        assert_eq!(other.combine(other).in_flight, 6);
    }

    fn point(i: u64, requests: u64, p99: u64) -> Point {
        Point {
            offset: Duration::from_secs(i),
            width: Duration::from_secs(1),
            requests,
            succeeded: requests,
            errors: 0,
            bytes_in: 0,
            p50_us: p99 / 2,
            p90_us: p99,
            p99_us: p99,
            max_us: p99,
            scheduled: 0,
            dropped: 0,
            lag_p99_us: 0,
            in_flight: 0,
            cpu: 0.0,
            connections_opened: 0,
            connections_peak: 0,
            messages_in: requests * 10,
            first_message_p99_us: p99,
            gap_p99_us: p99 / 10,
            reconnections: requests / 2,
            held: 0,
            coarsened: false,
        }
    }

    #[test]
    fn stays_bounded_and_keeps_counts_exact() {
        let mut s = Series::new();
        let n = (MAX_POINTS * 3) as u64 + 17;
        for i in 0..n {
            s.push(point(i, i % 7, i % 1000));
        }
        assert!(s.points().len() <= MAX_POINTS);
        let total: u64 = s.points().iter().map(|p| p.requests).sum();
        assert_eq!(total, (0..n).map(|i| i % 7).sum::<u64>());
        let messages: u64 = s.points().iter().map(|p| p.messages_in).sum();
        assert_eq!(messages, total * 10);
        let reconnections: u64 = s.points().iter().map(|p| p.reconnections).sum();
        assert_eq!(reconnections, (0..n).map(|i| i % 7 / 2).sum::<u64>());
        // Percentiles of merged points are the largest of theirs.
        let first = s.points().iter().map(|p| p.first_message_p99_us).max();
        assert_eq!(first, Some(999));
        // Points are contiguous and ordered.
        for w in s.points().windows(2) {
            assert_eq!(w[0].offset + w[0].width, w[1].offset);
        }
        let last = s.points().last().unwrap();
        assert_eq!(last.offset + last.width, Duration::from_secs(n));
        assert_eq!(s.points().iter().map(|p| p.max_us).max(), Some(999));
    }

    #[test]
    fn short_series_is_untouched() {
        let mut s = Series::new();
        for i in 0..10 {
            s.push(point(i, 5, 100));
        }
        s.end_at(Duration::from_millis(9_400));
        assert_eq!(s.points().len(), 10);
        assert!(s.points().iter().all(|p| !p.coarsened));
        assert_eq!(s.points()[9].width, Duration::from_millis(400));
        assert_eq!(s.points()[0].rate(), 5.0);
    }
}
