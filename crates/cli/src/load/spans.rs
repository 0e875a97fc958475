//! `--traces-out otlp=URL`: each traced request of the run (`--trace-sample`) handed to the
//! span exporter as it arrives from the workers, a watcher of the run. The engine hands over
//! the sampled requests' samples ([`belier_engine::TracedRequest`]); this turns each into the
//! exporter's plain record ([`RequestSpan`]): its phases dated on the wall clock to the
//! nanosecond, the URL it went to, how it ended.

use std::time::Instant;

use belier_engine::{Config, TracedRequest};
use belier_outputs::traces::{Interval, Outcome as SpanOutcome, Phases, RequestSpan};
use belier_outputs::traces::{TraceExporter, TracesSpec};
use belier_run::{Begin, Seen, Watcher};
use belier_stats::{wall_clock, Collector, Outcome, Sample};

/// Where a run's requests went: each host's scheme, name and port, by origin number (0 the
/// run's own, then a plan's other hosts).
struct Host {
    base: String,
    address: String,
    port: u16,
}

/// The span exporter of a run.
pub struct Spans {
    exporter: Option<TraceExporter>,
    hosts: Vec<Host>,
    /// The run's request: its method and URL as the user gave it.
    method: String,
    url: String,
    /// A plan's step names, by number.
    steps: Vec<String>,
}

impl Spans {
    /// Starts the exporter `spec` names for a run of `engine` at `url`.
    pub fn start(spec: &TracesSpec, engine: &Config, url: &str) -> std::io::Result<Spans> {
        let scheme = |tls: bool| if tls { "https" } else { "http" };
        let own = &engine.request;
        let mut hosts = vec![host(scheme(engine.tls.is_some()), &own.host, own.port)];
        hosts.extend(
            engine
                .origins
                .iter()
                .map(|o| host(scheme(o.tls.is_some()), &o.host, o.port)),
        );
        Ok(Spans {
            exporter: Some(TraceExporter::start(spec)?),
            hosts,
            method: own.method.clone(),
            url: url.to_string(),
            steps: Vec::new(),
        })
    }

    /// The exporter's record of `traced`, `None` if it carries no trace (never, as the engine
    /// hands over only traced requests).
    fn span(&self, traced: &TracedRequest) -> Option<RequestSpan> {
        let s = &traced.sample;
        let trace = s.trace?;
        let (method, url, host, step) = match &traced.step {
            None => (self.method.clone(), self.url.clone(), &self.hosts[0], None),
            Some(step) => {
                let host = self.hosts.get(step.origin).unwrap_or(&self.hosts[0]);
                let url = format!("{}{}", host.base, step.path_and_query);
                let name = self.steps.get(step.step).cloned();
                (step.method.clone(), url, host, name)
            }
        };
        Some(RequestSpan {
            trace_id: trace.trace_id.0.to_be_bytes(),
            span_id: trace.span_id.0.to_be_bytes(),
            parent_span_id: None,
            name: step.clone().unwrap_or_else(|| method.clone()),
            start: wall_clock(s.dispatched),
            end: wall_clock(s.done.max(s.dispatched)),
            phases: phases(s),
            method,
            url,
            server_address: host.address.clone(),
            server_port: host.port,
            outcome: match s.outcome {
                Outcome::Response { status } => SpanOutcome::Status(status),
                // A gRPC call's HTTP/2 response came; its code is not an HTTP status.
                Outcome::Grpc { .. } => SpanOutcome::Status(200),
                Outcome::Error(kind) => SpanOutcome::Failed(kind.name()),
            },
            intended: wall_clock(s.intended),
            lag: s.dispatched.saturating_duration_since(s.intended),
            step,
        })
    }
}

fn host(scheme: &str, name: &str, port: u16) -> Host {
    let bracketed = match name.contains(':') {
        true => format!("[{name}]"),
        false => name.to_string(),
    };
    Host {
        base: format!("{scheme}://{bracketed}:{port}"),
        address: name.to_string(),
        port,
    }
}

/// The phases `s` went through, back to back from its dispatch: the connect and TLS
/// handshake of a connection it opened, then from its first byte written to the response's
/// first byte, then to its last. A failed request has those it reached.
fn phases(s: &Sample) -> Phases {
    let interval = |start: Instant, end: Instant| Interval {
        start: wall_clock(start),
        end: wall_clock(end.max(start)),
    };
    Phases {
        dns: None,
        connect: s.connected.map(|c| interval(s.dispatched, c)),
        tls: s.handshaken.zip(s.connected).map(|(h, c)| interval(c, h)),
        ttfb: s.first_byte.map(|f| interval(s.sent, f)),
        transfer: s.first_byte.map(|f| interval(f, s.done)),
    }
}

impl Watcher for Spans {
    fn begin(&mut self, run: &Begin<'_>) {
        self.steps.clone_from(&run.info.steps);
    }

    fn seen(&mut self, seen: &Seen<'_>, _: &mut Vec<String>) {
        let (Seen::Traced { requests, .. }, Some(exporter)) = (seen, &self.exporter) else {
            return;
        };
        for traced in *requests {
            if let Some(span) = self.span(traced) {
                exporter.offer(span);
            }
        }
    }

    fn end(&mut self, _: &Collector, warnings: &mut Vec<String>) {
        if let Some(exporter) = self.exporter.take() {
            let delivery = exporter.finish(Instant::now() + belier_outputs::DRAIN);
            warnings.extend(delivery.warning());
        }
    }
}
