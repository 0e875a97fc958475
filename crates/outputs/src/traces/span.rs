//! One sampled request as the caller records it ([`RequestSpan`]), and a batch of them as an
//! OTLP `ExportTraceServiceRequest`: a client span per request, with a child span for each
//! phase that happened, and the attributes of OpenTelemetry's HTTP client conventions.

use std::time::{Duration, SystemTime};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{
    span::SpanKind, status::StatusCode, ResourceSpans, ScopeSpans, Span, Status,
};

use super::safe_url;
use crate::otlp::{attribute, nanos};

/// When one phase of a request began and ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    /// When it began.
    pub start: SystemTime,
    /// When it ended.
    pub end: SystemTime,
}

/// The phases of a request, each one a child span when it happened: a request on a
/// connection already open has no `dns`, `connect` nor `tls`; one that failed has the phases
/// it reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Phases {
    /// Resolving the host's name.
    pub dns: Option<Interval>,
    /// The TCP connection.
    pub connect: Option<Interval>,
    /// The TLS handshake.
    pub tls: Option<Interval>,
    /// From the request written to the response's first byte (the wait on the server).
    pub ttfb: Option<Interval>,
    /// From the response's first byte to its last.
    pub transfer: Option<Interval>,
}

impl Phases {
    /// The phases that happened, each with its span's name, in order.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, Interval)> {
        [
            ("dns", self.dns),
            ("connect", self.connect),
            ("tls", self.tls),
            ("ttfb", self.ttfb),
            ("transfer", self.transfer),
        ]
        .into_iter()
        .filter_map(|(name, interval)| Some((name, interval?)))
    }
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A response came, with this status (4xx and 5xx make the span's status ERROR, as the
    /// conventions say of a client span).
    Status(u16),
    /// No response: the request failed with this error kind (`timeout`, `connect`, ...), the
    /// span's `error.type`.
    Failed(&'static str),
}

/// One sampled request, filled by the caller: plain data, copied to the exporter's thread.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestSpan {
    /// The trace's id (not all zeroes).
    pub trace_id: [u8; 16],
    /// The request span's id (not all zeroes).
    pub span_id: [u8; 8],
    /// The span it belongs under, if any (an incoming trace context's).
    pub parent_span_id: Option<[u8; 8]>,
    /// The span's name: the method (`GET`), or a plan step's name.
    pub name: String,
    /// When the request began (its connection's DNS look-up or connect, if it made one).
    pub start: SystemTime,
    /// When it ended: its response's last byte, or its failure.
    pub end: SystemTime,
    /// Its phases, the child spans.
    pub phases: Phases,
    /// The request's method (`http.request.method`).
    pub method: String,
    /// The URL; `url.full` is what [`safe_url`] leaves of it (no credentials, no query
    /// values), whatever the caller passes.
    pub url: String,
    /// The host the request went to (`server.address`).
    pub server_address: String,
    /// Its port (`server.port`).
    pub server_port: u16,
    /// How it ended.
    pub outcome: Outcome,
    /// When the load model meant it to start (`belier.intended_start_unix_nano`).
    pub intended: SystemTime,
    /// How late it was sent after that (`belier.lag_ns`).
    pub lag: Duration,
    /// The plan step it ran for, if any (`belier.step`).
    pub step: Option<String>,
}

fn int_attribute(key: &str, value: i64) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(any_value::Value::IntValue(value)),
        }),
        ..Default::default()
    }
}

/// A span id for a child: random, never all zeroes (an invalid id in OTLP).
fn child_id() -> [u8; 8] {
    loop {
        let id = fastrand::u64(..).to_be_bytes();
        if id != [0; 8] {
            return id;
        }
    }
}

/// The request span's attributes, and its status.
fn request_attributes(span: &RequestSpan) -> (Vec<KeyValue>, Option<Status>) {
    let mut attributes = vec![
        attribute("http.request.method", &span.method),
        attribute("url.full", &safe_url(&span.url)),
        attribute("server.address", &span.server_address),
        int_attribute("server.port", i64::from(span.server_port)),
    ];
    let error = match span.outcome {
        Outcome::Status(code) => {
            attributes.push(int_attribute("http.response.status_code", i64::from(code)));
            (code >= 400).then(|| code.to_string())
        }
        Outcome::Failed(kind) => Some(kind.to_string()),
    };
    attributes.push(int_attribute(
        "belier.intended_start_unix_nano",
        nanos(span.intended) as i64,
    ));
    attributes.push(int_attribute(
        "belier.lag_ns",
        i64::try_from(span.lag.as_nanos()).unwrap_or(i64::MAX),
    ));
    if let Some(step) = &span.step {
        attributes.push(attribute("belier.step", step));
    }
    let status = error.map(|kind| {
        attributes.push(attribute("error.type", &kind));
        Status {
            code: StatusCode::Error as i32,
            ..Default::default()
        }
    });
    (attributes, status)
}

/// `span` as OTLP spans: the request's client span first, then one internal child per phase.
pub fn spans(span: &RequestSpan) -> Vec<Span> {
    let (attributes, status) = request_attributes(span);
    let request = Span {
        trace_id: span.trace_id.to_vec(),
        span_id: span.span_id.to_vec(),
        parent_span_id: span.parent_span_id.map(|p| p.to_vec()).unwrap_or_default(),
        name: span.name.clone(),
        kind: SpanKind::Client as i32,
        start_time_unix_nano: nanos(span.start),
        end_time_unix_nano: nanos(span.end),
        attributes,
        status,
        ..Default::default()
    };
    let children = span.phases.named().map(|(name, interval)| Span {
        trace_id: span.trace_id.to_vec(),
        span_id: child_id().to_vec(),
        parent_span_id: span.span_id.to_vec(),
        name: name.to_string(),
        kind: SpanKind::Internal as i32,
        start_time_unix_nano: nanos(interval.start),
        end_time_unix_nano: nanos(interval.end),
        ..Default::default()
    });
    std::iter::once(request).chain(children).collect()
}

/// `requests` as one export request, from service `belier`.
pub fn export_request(requests: &[RequestSpan]) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![attribute("service.name", "belier")],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "belier".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                spans: requests.iter().flat_map(spans).collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    fn interval(from: u64, to: u64) -> Option<Interval> {
        Some(Interval {
            start: at(from),
            end: at(to),
        })
    }

    fn request(outcome: Outcome) -> RequestSpan {
        RequestSpan {
            trace_id: [7; 16],
            span_id: [9; 8],
            parent_span_id: None,
            name: "GET".into(),
            start: at(1_000),
            end: at(1_050),
            phases: Phases {
                dns: None,
                connect: interval(1_000, 1_010),
                tls: None,
                ttfb: interval(1_010, 1_040),
                transfer: interval(1_040, 1_050),
            },
            method: "GET".into(),
            url: "http://u:pw@a.test:8080/x?k=secret".into(),
            server_address: "a.test".into(),
            server_port: 8080,
            outcome,
            intended: at(990),
            lag: Duration::from_millis(10),
            step: Some("login".into()),
        }
    }

    fn value(span: &Span, key: &str) -> Option<any_value::Value> {
        let kv = span.attributes.iter().find(|kv| kv.key == key)?;
        kv.value.clone()?.value
    }

    fn int(v: i64) -> Option<any_value::Value> {
        Some(any_value::Value::IntValue(v))
    }

    fn string(v: &str) -> Option<any_value::Value> {
        Some(any_value::Value::StringValue(v.into()))
    }

    #[test]
    fn a_request_is_a_client_span_with_a_child_per_phase_that_happened() {
        let all = spans(&request(Outcome::Status(200)));
        let names: Vec<_> = all.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["GET", "connect", "ttfb", "transfer"]);
        let (parent, children) = all.split_first().unwrap();
        assert_eq!(parent.kind, SpanKind::Client as i32);
        assert_eq!(
            (parent.trace_id.clone(), parent.span_id.clone()),
            (vec![7; 16], vec![9; 8])
        );
        assert!(parent.parent_span_id.is_empty());
        assert_eq!(
            (parent.start_time_unix_nano, parent.end_time_unix_nano),
            (1_000_000_000, 1_050_000_000)
        );
        let mut ids = std::collections::HashSet::new();
        for child in children {
            assert_eq!(child.kind, SpanKind::Internal as i32);
            assert_eq!(child.trace_id, vec![7; 16]);
            assert_eq!(child.parent_span_id, vec![9; 8]);
            assert_eq!(child.span_id.len(), 8);
            assert_ne!(child.span_id, vec![0; 8]);
            assert!(ids.insert(child.span_id.clone()), "ids repeat");
        }
        let transfer = &children[2];
        assert_eq!(
            (transfer.start_time_unix_nano, transfer.end_time_unix_nano),
            (1_040_000_000, 1_050_000_000)
        );
        assert_eq!(parent.status, None);
    }

    #[test]
    fn the_request_span_carries_the_http_conventions_and_belier_s_own_attributes() {
        let mut with_parent = request(Outcome::Status(200));
        with_parent.parent_span_id = Some([3; 8]);
        let all = spans(&with_parent);
        assert!(!format!("{all:?}").contains("pw"), "credentials sent");
        assert!(!format!("{all:?}").contains("secret"), "a query value sent");
        let span = &all[0];
        assert_eq!(span.parent_span_id, vec![3; 8]);
        assert_eq!(value(span, "http.request.method"), string("GET"));
        assert_eq!(
            value(span, "url.full"),
            string("http://a.test:8080/x?k=REDACTED")
        );
        assert_eq!(value(span, "server.address"), string("a.test"));
        assert_eq!(value(span, "server.port"), int(8080));
        assert_eq!(value(span, "http.response.status_code"), int(200));
        assert_eq!(
            value(span, "belier.intended_start_unix_nano"),
            int(990_000_000)
        );
        assert_eq!(value(span, "belier.lag_ns"), int(10_000_000));
        assert_eq!(value(span, "belier.step"), string("login"));
        assert_eq!(value(span, "error.type"), None);
    }

    #[test]
    fn a_4xx_5xx_or_failure_is_an_error_with_its_type() {
        let cases = [
            (Outcome::Status(404), "404", int(404)),
            (Outcome::Status(503), "503", int(503)),
            (Outcome::Failed("timeout"), "timeout", None),
        ];
        for (outcome, kind, status_code) in cases {
            let span = &spans(&request(outcome))[0];
            assert_eq!(value(span, "error.type"), string(kind), "{outcome:?}");
            assert_eq!(value(span, "http.response.status_code"), status_code);
            let status = span.status.clone().expect("a status");
            assert_eq!(status.code, StatusCode::Error as i32);
        }
    }

    #[test]
    fn a_batch_is_one_resource_of_service_belier_with_every_span() {
        let request =
            export_request(&[request(Outcome::Status(200)), request(Outcome::Status(200))]);
        let [resource] = &request.resource_spans[..] else {
            panic!("one resource")
        };
        let service = &resource.resource.as_ref().unwrap().attributes[0];
        assert_eq!(service.key, "service.name");
        assert_eq!(resource.scope_spans[0].spans.len(), 8);
    }
}
