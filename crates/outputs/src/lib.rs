//! belier's metrics outputs (`--metrics-out KIND=URL`): the run's counters and latency sent
//! once per settled interval to Prometheus remote-write, a Pushgateway, InfluxDB, an OTLP
//! receiver or StatsD.
//!
//! Each output runs on its own thread behind a bounded queue ([`queue`]): the run loop hands
//! it a batch without waiting, a slow or failing endpoint is retried with backoff, and every
//! interval not delivered is counted per output ([`Delivery`]) for the report. Every batch
//! carries the run's totals so far (cumulative counters, as Prometheus models them), so an
//! interval that could not be delivered loses no request from the totals a later one brings.
//!
//! The series are [`families::families`]; each output renders them in its own format.

#![deny(missing_docs)]

pub mod families;
mod influx;
mod otlp;

mod prometheus_rw;
mod pushgateway;
pub mod queue;
mod spec;
mod statsd;
pub mod text;
mod transport;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

pub use families::{families, Family, Figures, Point, Type, BUCKETS_S};
pub use spec::{Credential, Kind, Spec, SpecError};

/// How long the outputs get at the end of the run to deliver what is queued.
pub const DRAIN: Duration = Duration::from_secs(3);

/// How long the check at start waits for an endpoint to accept a connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// What one flush sends: the families as of a settled interval, and when.
#[derive(Debug)]
pub struct Batch {
    /// When the batch was made (the samples' timestamp).
    pub at: SystemTime,
    /// The series.
    pub families: Vec<Family>,
}

/// The labels every series of the run carries.
#[derive(Clone, Debug, Default)]
pub struct RunLabels {
    /// The run's name (`--name`): label `run`.
    pub run: String,
    /// The request method of a flag run (label `method`); none for a plan.
    pub method: Option<String>,
}

impl RunLabels {
    /// The labels as key and value, in order.
    pub fn pairs(&self) -> Vec<(String, String)> {
        let mut out = vec![("run".to_string(), self.run.clone())];
        if let Some(m) = &self.method {
            out.push(("method".to_string(), m.clone()));
        }
        out
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

/// The running outputs.
pub struct Outputs {
    workers: Vec<queue::Worker>,
    /// The previous batch's time: each batch is stamped at least 1 ms later, since Prometheus
    /// refuses a second, different sample at the same millisecond (the final flush can follow
    /// the last interval's at once).
    last: std::cell::Cell<SystemTime>,
}

impl Outputs {
    /// Starts a worker per spec. Returns them and one warning per endpoint that does not
    /// accept a connection now (the run goes on; its intervals are retried and counted).
    pub fn start(specs: &[Spec], labels: &RunLabels) -> std::io::Result<(Outputs, Vec<String>)> {
        let mut workers = Vec::new();
        let mut warnings = Vec::new();
        for spec in specs {
            if let Err(e) = probe(spec) {
                warnings.push(format!(
                    "--metrics-out {}: cannot reach it now ({e}); its intervals will be \
                     retried and those not delivered counted",
                    spec.label()
                ));
            }
            let sink: Box<dyn queue::Sink> = match spec.kind {
                Kind::PrometheusRw => Box::new(prometheus_rw::RemoteWrite::new(spec, labels)),
                Kind::Pushgateway => Box::new(pushgateway::Pushgateway::new(spec, labels)),
                Kind::Influx => Box::new(influx::Influx::new(spec, labels)),
                Kind::Otlp => Box::new(otlp::Otlp::new(spec, labels)),
                Kind::Statsd => Box::new(statsd::Statsd::new(spec, labels)?),
            };
            workers.push(queue::Worker::start(spec.label(), sink)?);
        }
        Ok((
            Outputs {
                workers,
                last: std::cell::Cell::new(SystemTime::UNIX_EPOCH),
            },
            warnings,
        ))
    }

    /// Hands `families` to every output without waiting.
    pub fn send(&self, families: Vec<Family>) {
        if self.workers.is_empty() {
            return;
        }
        let at = SystemTime::now().max(self.last.get() + Duration::from_millis(1));
        self.last.set(at);
        let batch = Arc::new(Batch { at, families });
        for w in &self.workers {
            w.offer(&batch);
        }
    }

    /// Gives the outputs [`DRAIN`] at most to deliver what is queued, and says what each
    /// delivered.
    pub fn finish(self) -> Vec<Delivery> {
        let deadline = Instant::now() + DRAIN;
        self.workers
            .into_iter()
            .map(|w| w.finish(deadline))
            .collect()
    }
}

/// Whether `spec`'s endpoint accepts a TCP connection now (StatsD's UDP has nothing to ask).
fn probe(spec: &Spec) -> std::io::Result<()> {
    if spec.kind == Kind::Statsd {
        return Ok(());
    }
    let addrs = spec.url.socket_addrs(|| None)?;
    let mut last = std::io::Error::other("the host has no address");
    for addr in addrs {
        match std::net::TcpStream::connect_timeout(&addr, PROBE_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(e) => last = e,
        }
    }
    Err(last)
}
