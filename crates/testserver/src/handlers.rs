//! A target with a known capacity: `workers` handlers, each holding a request for
//! `service_time` (waiting, not burning CPU), at most `queue` requests waiting for one; beyond
//! that the server answers `503` at once (`shed`) or closes the connection. Its capacity is
//! `workers / service_time` requests per second, which a capacity search must find.
//!
//! It measures what it does: the mean service time it actually gave (a sleep overshoots a
//! little, more under load), requests served, shed and waiting, all served at `/metrics` in
//! Prometheus' text format with the process's CPU time.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, SemaphorePermit};

use crate::counts::Counts;

/// The handler pool's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handlers {
    /// Requests served at once.
    pub workers: usize,
    /// How long a handler holds each request.
    pub service_time: Duration,
    /// Most requests waiting for a handler; `None`: no limit.
    pub queue: Option<usize>,
    /// Beyond the queue, answer `503` at once (`true`) or close the connection (`false`).
    pub shed: bool,
}

impl Handlers {
    /// The capacity the settings give: `workers / service_time`, requests per second.
    pub fn capacity(&self) -> f64 {
        self.workers as f64 / self.service_time.as_secs_f64()
    }
}

/// What a request gets from the pool.
pub(crate) enum Admission<'a> {
    /// A handler, held until dropped.
    Served(SemaphorePermit<'a>),
    /// The queue is full.
    Rejected,
}

/// The running pool and its counters.
pub(crate) struct Pool {
    pub(crate) settings: Handlers,
    handlers: Semaphore,
    waiting: AtomicU64,
    served: AtomicU64,
    rejected: AtomicU64,
    /// Service time actually given, summed, nanoseconds.
    service_ns: AtomicU64,
}

impl Pool {
    pub(crate) fn new(settings: Handlers) -> Pool {
        Pool {
            handlers: Semaphore::new(settings.workers),
            settings,
            waiting: AtomicU64::new(0),
            served: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            service_ns: AtomicU64::new(0),
        }
    }

    /// Waits for a handler, unless the queue is full.
    pub(crate) async fn admit(&self) -> Admission<'_> {
        if let Ok(permit) = self.handlers.try_acquire() {
            return Admission::Served(permit);
        }
        let waiting = self.waiting.fetch_add(1, Relaxed);
        if self.settings.queue.is_some_and(|q| waiting >= q as u64) {
            self.waiting.fetch_sub(1, Relaxed);
            self.rejected.fetch_add(1, Relaxed);
            return Admission::Rejected;
        }
        let permit = self
            .handlers
            .acquire()
            .await
            .expect("the handlers' semaphore is never closed");
        self.waiting.fetch_sub(1, Relaxed);
        Admission::Served(permit)
    }

    /// Holds the handler for the service time, and counts what it really took; returns when
    /// the handler took the request.
    pub(crate) async fn serve(&self, _handler: SemaphorePermit<'_>) -> Instant {
        let start = Instant::now();
        tokio::time::sleep(self.settings.service_time).await;
        let took = start.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
        self.service_ns.fetch_add(took, Relaxed);
        self.served.fetch_add(1, Relaxed);
        start
    }

    /// The figures so far.
    pub(crate) fn stats(&self) -> PoolStats {
        let served = self.served.load(Relaxed);
        PoolStats {
            served,
            rejected: self.rejected.load(Relaxed),
            waiting: self.waiting.load(Relaxed),
            busy: (self.settings.workers - self.handlers.available_permits()) as u64,
            mean_service: (served > 0)
                .then(|| Duration::from_nanos(self.service_ns.load(Relaxed) / served)),
        }
    }
}

/// What the pool did so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolStats {
    /// Requests a handler served.
    pub served: u64,
    /// Requests turned away because the queue was full.
    pub rejected: u64,
    /// Requests waiting for a handler now.
    pub waiting: u64,
    /// Handlers holding a request now.
    pub busy: u64,
    /// The mean service time actually given, once one request was served.
    pub mean_service: Option<Duration>,
}

/// The body of `/metrics`: the server's counters in Prometheus' text format (version 0.0.4).
pub(crate) fn metrics(
    counts: &Counts,
    open: u64,
    pool: Option<&PoolStats>,
    cpu: Option<Duration>,
) -> String {
    const COUNTER: &str = "counter";
    const GAUGE: &str = "gauge";
    let mut metrics = vec![
        (
            "belier_target_requests_total",
            COUNTER,
            "Request heads parsed.",
            counts.requests.to_string(),
        ),
        (
            "belier_target_responses_total",
            COUNTER,
            "Complete responses.",
            counts.responses.to_string(),
        ),
        (
            "belier_target_connections_total",
            COUNTER,
            "Connections accepted.",
            counts.connections.to_string(),
        ),
        (
            "belier_target_open_connections",
            GAUGE,
            "Connections open now.",
            open.to_string(),
        ),
        (
            "belier_target_grpc_messages_received_total",
            COUNTER,
            "gRPC request messages read.",
            counts.grpc_messages_received.to_string(),
        ),
        (
            "belier_target_grpc_messages_sent_total",
            COUNTER,
            "gRPC reply messages sent.",
            counts.grpc_messages_sent.to_string(),
        ),
    ];
    if let Some(p) = pool {
        metrics.extend([
            (
                "belier_target_served_total",
                COUNTER,
                "Requests a handler served.",
                p.served.to_string(),
            ),
            (
                "belier_target_shed_total",
                COUNTER,
                "Requests turned away with the queue full.",
                p.rejected.to_string(),
            ),
            (
                "belier_target_in_flight",
                GAUGE,
                "Handlers holding a request.",
                p.busy.to_string(),
            ),
            (
                "belier_target_queued",
                GAUGE,
                "Requests waiting for a handler.",
                p.waiting.to_string(),
            ),
        ]);
    }
    if let Some(cpu) = cpu {
        let help = "User and system CPU time the server process spent.";
        metrics.push((
            "process_cpu_seconds_total",
            COUNTER,
            help,
            format!("{}", cpu.as_secs_f64()),
        ));
    }
    let mut out = String::new();
    for (name, kind, help, value) in metrics {
        // Writing to a String cannot fail.
        let _ = write!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_is_workers_over_service_time() {
        let h = Handlers {
            workers: 8,
            service_time: Duration::from_millis(5),
            queue: None,
            shed: false,
        };
        assert_eq!(h.capacity(), 1_600.0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_full_queue_rejects_and_counts() {
        let pool = Pool::new(Handlers {
            workers: 1,
            service_time: Duration::from_millis(10),
            queue: Some(1),
            shed: true,
        });
        let Admission::Served(first) = pool.admit().await else {
            panic!("a free handler was refused");
        };
        // One may wait; the next is turned away.
        let second = pool.admit();
        tokio::pin!(second);
        assert!(futures_poll(second.as_mut()).is_none());
        assert!(matches!(pool.admit().await, Admission::Rejected));
        assert_eq!(pool.stats().waiting, 1);
        assert_eq!(pool.stats().rejected, 1);
        pool.serve(first).await;
        let Admission::Served(next) = second.await else {
            panic!("the waiting request was refused");
        };
        pool.serve(next).await;
        let s = pool.stats();
        assert_eq!((s.served, s.waiting, s.busy), (2, 0, 0));
        // A sleep lasts at least what it was asked for.
        assert!(s.mean_service.unwrap() >= Duration::from_millis(10));
    }

    /// Polls a future once.
    fn futures_poll<F: std::future::Future + Unpin>(f: F) -> Option<F::Output> {
        let mut f = f;
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match std::pin::Pin::new(&mut f).poll(&mut cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        }
    }

    #[test]
    fn metrics_are_prometheus_text() {
        let counts = crate::Counts {
            requests: 5,
            responses: 4,
            connections: 2,
            ..crate::Counts::default()
        };
        let pool = PoolStats {
            served: 3,
            rejected: 1,
            waiting: 0,
            busy: 1,
            mean_service: None,
        };
        let text = metrics(&counts, 1, Some(&pool), Some(Duration::from_millis(250)));
        assert!(text.contains(
            "# TYPE belier_target_requests_total counter\nbelier_target_requests_total 5\n"
        ));
        assert!(text.contains("belier_target_shed_total 1\n"));
        assert!(text.contains("process_cpu_seconds_total 0.25\n"));
        assert!(text
            .lines()
            .all(|l| l.starts_with('#') || l.split(' ').count() == 2));
    }
}
