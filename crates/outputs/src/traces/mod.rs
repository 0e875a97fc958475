//! `--traces-out otlp=URL`: a span per sampled request, sent to an OTLP/HTTP receiver.
//!
//! The run hands each sampled request's [`RequestSpan`] to [`TraceExporter::offer`], which
//! never waits: the span goes into a bounded queue, or is dropped and counted when the queue
//! is full. A thread of its own takes the spans in batches (up to [`BATCH`] requests, or
//! what came within [`LINGER`] of a batch's first) and POSTs each as one
//! `ExportTraceServiceRequest` in protobuf to `URL/v1/traces`. A batch the receiver does not
//! take (unreachable, too slow, or not a 2xx) is dropped and its spans counted: spans are
//! many and each is worth little alone, so no batch holds up the ones behind it with
//! retries. [`TraceExporter::finish`] sends what is queued until a deadline and says what
//! was sent and what was lost ([`SpanDelivery`]).

mod safe_url;
mod span;

use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use prost::Message as _;

pub use safe_url::safe_url;
pub use span::{export_request, spans, Interval, Outcome, Phases, RequestSpan};

use crate::queue::{join_until, Counts, Failure};
use crate::transport::Http;

/// Requests' spans waiting for the exporter's thread before new ones are dropped (and
/// counted): a few seconds of spans at a high sampled rate, a few megabytes at most.
pub const QUEUE: usize = 8192;
/// The most requests sent in one export request.
pub const BATCH: usize = 512;
/// How long a batch waits for more spans after its first before it is sent.
pub const LINGER: Duration = Duration::from_secs(1);

/// Why a `--traces-out` value is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TracesError {
    /// Not `otlp=URL`.
    #[error(
        "expected otlp=URL (an OTLP/HTTP receiver, e.g. otlp=http://127.0.0.1:4318), not {0:?}"
    )]
    Form(String),
    /// The URL does not parse, or is not http://.
    #[error("{0}")]
    Url(String),
}

/// Where spans go: `otlp=URL`, URL the receiver's base (`/v1/traces` is added to it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracesSpec {
    /// The receiver's base URL, without a trailing `/`.
    pub url: String,
}

impl std::str::FromStr for TracesSpec {
    type Err = TracesError;

    fn from_str(text: &str) -> Result<TracesSpec, TracesError> {
        let Some(url) = text.strip_prefix("otlp=") else {
            return Err(TracesError::Form(text.to_string()));
        };
        let parsed = url::Url::parse(url).map_err(|e| TracesError::Url(format!("{url}: {e}")))?;
        if parsed.scheme() != "http" || parsed.host().is_none() {
            return Err(TracesError::Url(format!(
                "{url}: an http:// URL of an OTLP/HTTP receiver is needed"
            )));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(TracesError::Url(format!(
                "{}: credentials in the URL are not sent",
                safe_url(url)
            )));
        }
        Ok(TracesSpec {
            url: url.trim_end_matches('/').to_string(),
        })
    }
}

/// What the exporter did with the spans, at the end of the run. Each count is of requests:
/// a request's span travels with its phases' spans, all sent or all lost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpanDelivery {
    /// `otlp=URL`.
    pub output: String,
    /// Requests' spans handed to the exporter.
    pub offered: u64,
    /// Those the receiver took (a 2xx).
    pub sent: u64,
    /// Those dropped because the queue was full.
    pub queue_full: u64,
    /// Those in a batch the receiver did not take.
    pub failed: u64,
    /// The last error seen, if any.
    pub last_error: Option<String>,
}

impl SpanDelivery {
    /// Requests' spans not sent, whatever the reason (those still queued at the end included).
    pub fn dropped(&self) -> u64 {
        self.offered.saturating_sub(self.sent)
    }

    /// One line for the report's warnings, if any span was not sent.
    pub fn warning(&self) -> Option<String> {
        let dropped = self.dropped();
        (dropped > 0).then(|| {
            format!(
                "--traces-out {}: {dropped} of {} requests' spans not sent ({} in batches the \
                 receiver did not take, {} dropped with the queue full, {} still queued at the \
                 end){}",
                self.output,
                self.offered,
                self.failed,
                self.queue_full,
                dropped.saturating_sub(self.failed + self.queue_full),
                self.last_error
                    .as_deref()
                    .map(|e| format!("; last error: {e}"))
                    .unwrap_or_default()
            )
        })
    }
}

/// The running exporter.
pub struct TraceExporter {
    label: String,
    queue: Option<SyncSender<RequestSpan>>,
    counts: Arc<Counts>,
    /// Set by [`TraceExporter::finish`]: nothing is sent past it.
    deadline: Arc<OnceLock<Instant>>,
    thread: Option<JoinHandle<()>>,
}

impl TraceExporter {
    /// Starts the thread sending to `spec`'s receiver.
    pub fn start(spec: &TracesSpec) -> std::io::Result<TraceExporter> {
        let label = format!("otlp={}", spec.url);
        let (queue, spans) = std::sync::mpsc::sync_channel(QUEUE);
        let counts = Arc::new(Counts::default());
        let deadline = Arc::new(OnceLock::new());
        let url = format!("{}/v1/traces", spec.url);
        let thread = std::thread::Builder::new()
            .name("traces-out".into())
            .spawn({
                let counts = Arc::clone(&counts);
                let deadline = Arc::clone(&deadline);
                move || send_all(&Http::new(None), &url, &spans, &counts, &deadline)
            })?;
        Ok(TraceExporter {
            label,
            queue: Some(queue),
            counts,
            deadline,
            thread: Some(thread),
        })
    }

    /// Queues `span` without waiting; a full queue drops it, counted.
    pub fn offer(&self, span: RequestSpan) {
        if let Some(queue) = &self.queue {
            self.counts.offer(queue, span);
        }
    }

    /// Sends what is queued until `deadline`, then says what was sent; spans still queued or
    /// in flight then count as dropped.
    pub fn finish(mut self, deadline: Instant) -> SpanDelivery {
        let _ = self.deadline.set(deadline);
        self.queue = None;
        if let Some(thread) = self.thread.take() {
            join_until(thread, deadline);
        }
        self.so_far()
    }

    /// What it has done so far (spans in flight count as neither sent nor lost yet).
    pub fn so_far(&self) -> SpanDelivery {
        let c = &self.counts;
        SpanDelivery {
            output: self.label.clone(),
            offered: c.offered.load(Ordering::Relaxed),
            sent: c.delivered.load(Ordering::Relaxed),
            queue_full: c.full.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            last_error: c.last_error(),
        }
    }
}

/// The exporter's thread: batch after batch until the queue closes or the deadline passes.
fn send_all(
    http: &Http,
    url: &str,
    spans: &Receiver<RequestSpan>,
    counts: &Counts,
    deadline: &OnceLock<Instant>,
) {
    loop {
        let (batch, open) = next_batch(spans, deadline);
        if deadline.get().is_some_and(|d| Instant::now() >= *d) {
            return;
        }
        if !batch.is_empty() {
            let body = export_request(&batch).encode_to_vec();
            let headers = [("Content-Type", "application/x-protobuf")];
            let n = batch.len() as u64;
            match http.send("POST", url, &headers, &body) {
                Ok(()) => counts.delivered.fetch_add(n, Ordering::Relaxed),
                Err(Failure::Retry(e) | Failure::Refused(e)) => {
                    counts.error(e);
                    counts.failed.fetch_add(n, Ordering::Relaxed)
                }
            };
        }
        if !open {
            return;
        }
    }
}

/// The next batch: the first span, then those that come within [`LINGER`] of it, up to
/// [`BATCH`]; and whether the queue is still open. Once the run has ended (the queue
/// closed), what is queued goes at once.
fn next_batch(
    spans: &Receiver<RequestSpan>,
    deadline: &OnceLock<Instant>,
) -> (Vec<RequestSpan>, bool) {
    let mut batch = Vec::new();
    let Ok(first) = spans.recv() else {
        return (batch, false);
    };
    batch.push(first);
    let until = Instant::now() + LINGER;
    while batch.len() < BATCH {
        let wait = match deadline.get() {
            Some(_) => Duration::ZERO,
            None => until.saturating_duration_since(Instant::now()),
        };
        match spans.recv_timeout(wait) {
            Ok(span) => batch.push(span),
            Err(RecvTimeoutError::Timeout) => break,
            Err(RecvTimeoutError::Disconnected) => return (batch, false),
        }
    }
    (batch, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traces_out_value_is_otlp_and_an_http_url() {
        let spec: TracesSpec = "otlp=http://127.0.0.1:4318/".parse().unwrap();
        assert_eq!(spec.url, "http://127.0.0.1:4318");
        let refused = [
            ("jaeger=http://a:1", "expected otlp=URL"),
            ("otlp=https://a:4318", "an http:// URL"),
            ("otlp=not a url", "not a url"),
            ("otlp=http://u:secret@a:4318", "credentials in the URL"),
        ];
        for (text, why) in refused {
            let e = text.parse::<TracesSpec>().unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
            assert!(!e.contains("secret"), "{e}");
        }
    }

    #[test]
    fn the_warning_says_what_was_lost_and_why() {
        let d = SpanDelivery {
            output: "otlp=http://a:4318".into(),
            offered: 10,
            sent: 4,
            queue_full: 1,
            failed: 3,
            last_error: Some("connection refused".into()),
        };
        assert_eq!(d.dropped(), 6);
        assert_eq!(
            d.warning().unwrap(),
            "--traces-out otlp=http://a:4318: 6 of 10 requests' spans not sent (3 in batches \
             the receiver did not take, 1 dropped with the queue full, 2 still queued at the \
             end); last error: connection refused"
        );
        let all = SpanDelivery { sent: 10, ..d };
        assert_eq!(all.warning(), None);
    }
}
