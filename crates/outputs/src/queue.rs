//! One output's worker: a thread that takes batches from a bounded queue and delivers them in
//! order, retrying a failure with backoff, and counts what it could not deliver. The run loop
//! only ever `try_send`s, so a slow or dead endpoint fills this queue, never the run loop.
//! The shape of Prometheus' remote-write queue manager, with one shard: the batches are one
//! per interval, a few kilobytes each.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::families::Family;

/// What one flush sends: the families as of a settled interval, and when.
#[derive(Debug)]
pub struct Batch {
    /// When the batch was made (the samples' timestamp).
    pub at: SystemTime,
    /// The series.
    pub families: Vec<Family>,
}

#[cfg(test)]
impl Batch {
    /// The sinks' tests' batch: one family, `name` of `kind`, made `ms` after the epoch.
    pub(crate) fn of(
        ms: u64,
        name: &'static str,
        kind: crate::families::Type,
        points: Vec<crate::families::Point>,
    ) -> Batch {
        Batch {
            at: std::time::UNIX_EPOCH + Duration::from_millis(ms),
            families: vec![Family {
                name,
                help: "",
                kind,
                points,
            }],
        }
    }
}

/// What one output delivered, at the end of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// `KIND=URL`, without credentials.
    pub output: String,
    /// Intervals handed to it.
    pub offered: u64,
    /// Intervals the endpoint accepted.
    pub delivered: u64,
    /// Intervals dropped because its queue was full (the endpoint was too slow).
    pub queue_full: u64,
    /// Intervals given up after their attempts, or refused.
    pub failed: u64,
    /// The last error seen, if any (it never holds a credential).
    pub last_error: Option<String>,
}

impl Delivery {
    /// Intervals not delivered, whatever the reason (those still queued at the end included).
    pub fn not_delivered(&self) -> u64 {
        self.offered.saturating_sub(self.delivered)
    }

    /// One line for the report's warnings, if anything was not delivered.
    pub fn warning(&self) -> Option<String> {
        let missing = self.not_delivered();
        (missing > 0).then(|| {
            format!(
                "--metrics-out {}: {missing} of {} intervals not delivered ({} failed after \
                 retries, {} dropped with the queue full, {} still queued at the end){}",
                self.output,
                self.offered,
                self.failed,
                self.queue_full,
                missing.saturating_sub(self.failed + self.queue_full),
                self.last_error
                    .as_deref()
                    .map(|e| format!("; last error: {e}"))
                    .unwrap_or_default()
            )
        })
    }
}

/// Batches waiting for an output before new ones are dropped (and counted).
pub const QUEUE: usize = 16;
/// Attempts at delivering one batch before it is given up (and counted).
pub const ATTEMPTS: u32 = 5;
/// The first wait before a retry; doubled after each failure up to [`MAX_BACKOFF`].
pub const MIN_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Why a delivery failed.
#[derive(Debug)]
pub enum Failure {
    /// Worth another attempt: the endpoint is unreachable, overloaded (429, 5xx) or slow.
    Retry(String),
    /// Refused for good (a 4xx): retrying the same batch would be refused again.
    Refused(String),
}

/// Delivers one batch to an endpoint.
pub trait Sink: Send {
    /// Sends `batch`, once.
    fn deliver(&mut self, batch: &Batch) -> Result<(), Failure>;
}

/// What a worker and the run loop's side count (the span exporter's too, in its own units).
#[derive(Default)]
pub(crate) struct Counts {
    pub(crate) offered: AtomicU64,
    pub(crate) delivered: AtomicU64,
    pub(crate) full: AtomicU64,
    pub(crate) failed: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl Counts {
    /// Queues `item` on `queue` without waiting, counted as offered; a full queue drops it,
    /// counted, and a closed one (its thread gone) counts it failed.
    pub(crate) fn offer<T>(&self, queue: &SyncSender<T>, item: T) {
        self.offered.fetch_add(1, Ordering::Relaxed);
        match queue.try_send(item) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.full.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Disconnected(_)) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Keeps `message` as the last error.
    pub(crate) fn error(&self, message: String) {
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(message);
    }

    /// The last error, if any.
    pub(crate) fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Waits for `thread` to end until `deadline`, and joins it if it did; else it is left to end
/// on its own (a request in flight has its own timeout), and what it may still deliver is
/// not counted as delivered.
pub(crate) fn join_until(thread: JoinHandle<()>, deadline: Instant) {
    while !thread.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    if thread.is_finished() {
        let _ = thread.join();
    }
}

/// One running output.
pub struct Worker {
    label: String,
    queue: Option<SyncSender<Arc<Batch>>>,
    counts: Arc<Counts>,
    /// Set when the run ends: no retry waits past it.
    deadline: Arc<OnceLock<Instant>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts a thread delivering to `sink`; `label` names it in reports.
    pub fn start(label: String, sink: Box<dyn Sink>) -> std::io::Result<Worker> {
        let (queue, batches) = std::sync::mpsc::sync_channel(QUEUE);
        let counts = Arc::new(Counts::default());
        let deadline = Arc::new(OnceLock::new());
        let thread = std::thread::Builder::new()
            .name(format!("output {label}"))
            .spawn({
                let counts = Arc::clone(&counts);
                let deadline = Arc::clone(&deadline);
                move || deliver_all(sink, &batches, &counts, &deadline)
            })?;
        Ok(Worker {
            label,
            queue: Some(queue),
            counts,
            deadline,
            thread: Some(thread),
        })
    }

    /// Queues `batch` without waiting; a full queue drops it, counted.
    pub fn offer(&self, batch: &Arc<Batch>) {
        if let Some(queue) = &self.queue {
            self.counts.offer(queue, Arc::clone(batch));
        }
    }

    /// Lets the queue drain until `deadline`, then says what was delivered; a batch still
    /// queued or in flight then counts as not delivered.
    pub fn finish(mut self, deadline: Instant) -> Delivery {
        let _ = self.deadline.set(deadline);
        self.queue = None;
        if let Some(thread) = self.thread.take() {
            join_until(thread, deadline);
        }
        let c = &self.counts;
        Delivery {
            output: self.label.clone(),
            offered: c.offered.load(Ordering::Relaxed),
            delivered: c.delivered.load(Ordering::Relaxed),
            queue_full: c.full.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            last_error: c.last_error(),
        }
    }
}

/// The worker thread: every batch in order, each retried with backoff.
fn deliver_all(
    mut sink: Box<dyn Sink>,
    batches: &Receiver<Arc<Batch>>,
    counts: &Counts,
    deadline: &OnceLock<Instant>,
) {
    let past_deadline = || deadline.get().is_some_and(|d| Instant::now() >= *d);
    for batch in batches {
        if past_deadline() {
            break;
        }
        let mut wait = MIN_BACKOFF;
        for attempt in 1..=ATTEMPTS {
            let error = match sink.deliver(&batch) {
                Ok(()) => {
                    counts.delivered.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                Err(Failure::Refused(e)) => (e, false),
                Err(Failure::Retry(e)) => (e, true),
            };
            let (message, retry) = error;
            counts.error(message);
            let until = Instant::now() + wait;
            if !retry || attempt == ATTEMPTS || deadline.get().is_some_and(|d| until > *d) {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                break;
            }
            std::thread::sleep(wait);
            wait = (wait * 2).min(MAX_BACKOFF);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails the first `failures` attempts, then takes everything, slowly if asked.
    struct Flaky {
        failures: u32,
        refuse: bool,
        delay: Duration,
        seen: Arc<AtomicU64>,
    }

    impl Sink for Flaky {
        fn deliver(&mut self, _: &Batch) -> Result<(), Failure> {
            std::thread::sleep(self.delay);
            if self.failures > 0 {
                self.failures -= 1;
                return Err(if self.refuse {
                    Failure::Refused("400".into())
                } else {
                    Failure::Retry("refused".into())
                });
            }
            self.seen.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
    }

    fn batch() -> Arc<Batch> {
        Arc::new(Batch {
            at: std::time::SystemTime::now(),
            families: Vec::new(),
        })
    }

    fn run(failures: u32, refuse: bool, delay: Duration, batches: usize) -> (Delivery, u64) {
        let seen = Arc::new(AtomicU64::new(0));
        let sink = Flaky {
            failures,
            refuse,
            delay,
            seen: Arc::clone(&seen),
        };
        let w = Worker::start("test".into(), Box::new(sink)).unwrap();
        for _ in 0..batches {
            w.offer(&batch());
        }
        let d = w.finish(Instant::now() + Duration::from_secs(10));
        (d, seen.load(Ordering::Relaxed))
    }

    #[test]
    fn a_failure_is_retried_and_then_delivered() {
        let (d, seen) = run(ATTEMPTS - 1, false, Duration::ZERO, 1);
        assert_eq!(
            (d.offered, d.delivered, d.failed, d.not_delivered()),
            (1, 1, 0, 0)
        );
        assert_eq!(seen, 1);
        assert_eq!(d.last_error.as_deref(), Some("refused"));
    }

    #[test]
    fn a_batch_failing_every_attempt_is_counted_and_the_next_goes() {
        let (d, seen) = run(ATTEMPTS, false, Duration::ZERO, 2);
        assert_eq!(
            (d.offered, d.delivered, d.failed, d.not_delivered()),
            (2, 1, 1, 1)
        );
        assert_eq!(seen, 1);
    }

    #[test]
    fn a_refusal_is_not_retried() {
        let (d, seen) = run(1, true, Duration::ZERO, 2);
        assert_eq!((d.delivered, d.failed), (1, 1));
        assert_eq!(seen, 1);
    }

    #[test]
    fn a_slow_endpoint_fills_the_queue_and_the_overflow_is_counted() {
        let batches = QUEUE + 10;
        let (d, seen) = run(0, false, Duration::from_millis(20), batches);
        assert_eq!(d.offered, batches as u64);
        assert!(d.queue_full >= 9, "{d:?}");
        assert_eq!(d.delivered, seen);
        assert_eq!(d.delivered + d.queue_full + d.failed, d.offered);
    }

    #[test]
    fn what_is_left_at_the_deadline_counts_as_not_delivered() {
        let seen = Arc::new(AtomicU64::new(0));
        let sink = Flaky {
            failures: 0,
            refuse: false,
            delay: Duration::from_millis(200),
            seen: Arc::clone(&seen),
        };
        let w = Worker::start("slow".into(), Box::new(sink)).unwrap();
        for _ in 0..5 {
            w.offer(&batch());
        }
        let d = w.finish(Instant::now() + Duration::from_millis(300));
        assert_eq!(d.offered, 5);
        assert!(d.delivered <= 2, "{d:?}");
        assert_eq!(d.not_delivered(), 5 - d.delivered);
    }
}
