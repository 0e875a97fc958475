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
//!
//! The spans of sampled requests (`--traces-out otlp=URL`) go out the same way, through
//! [`traces`].

#![deny(missing_docs)]

mod buckets;
mod exemplars;
pub mod families;
mod influx;
mod labels;
mod otlp;
mod prometheus_rw;
mod pushgateway;
pub mod queue;
mod spec;
mod statsd;
pub mod text;
pub mod traces;
mod transport;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

pub use exemplars::LatestExemplars;
pub use families::{families, Family, Figures, Point, PointExemplar, Type, BUCKETS_S};
pub use labels::RunLabels;
pub use queue::{Batch, Delivery};
pub use spec::{Credential, Kind, Spec, SpecError};

/// How long the outputs get at the end of the run to deliver what is queued.
pub const DRAIN: Duration = Duration::from_secs(3);

/// How long the check at start waits for an endpoint to accept a connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

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
