//! OpenTelemetry OTLP/HTTP: an `ExportMetricsServiceRequest` in protobuf POSTed to
//! `/v1/metrics`. Counters are cumulative monotonic sums, the latency an explicit-bucket
//! histogram (the same bounds), the rest gauges; all stamped from the run's start.
//!
//! The messages are opentelemetry-proto's own (its prost types only: without its `gen-tonic`
//! feature it brings no gRPC runtime), the crate the test receiver decodes with too.

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    exemplar, metric::Data, number_data_point, AggregationTemporality, Exemplar, Gauge, Histogram,
    HistogramDataPoint, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;

use crate::families::{Family, Point, Type};
use crate::labels::RunLabels;
use crate::queue::{Batch, Failure, Sink};
use crate::spec::Spec;
use crate::transport::Http;

/// Every series is cumulated from the run's start.
const CUMULATIVE: i32 = AggregationTemporality::Cumulative as i32;

/// A string attribute.
pub(crate) fn attribute(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_string())),
        }),
        ..Default::default()
    }
}

/// `t` in nanoseconds since the Unix epoch (0 before it).
pub(crate) fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Sends to one OTLP/HTTP receiver.
pub struct Otlp {
    http: Http,
    url: String,
    common: Vec<(String, String)>,
    start: SystemTime,
}

impl Otlp {
    /// A sender to `spec`'s receiver; the cumulation starts now.
    pub fn new(spec: &Spec, labels: &RunLabels) -> Otlp {
        Otlp {
            http: Http::new(None),
            url: spec.url.to_string(),
            common: labels.pairs(),
            start: SystemTime::now(),
        }
    }
}

/// `batch` as an export request, cumulated from `start`.
pub fn request(
    batch: &Batch,
    common: &[(String, String)],
    start: SystemTime,
) -> ExportMetricsServiceRequest {
    let (start, now) = (nanos(start), nanos(batch.at));
    let attributes = |own: &[(&'static str, String)]| -> Vec<KeyValue> {
        common
            .iter()
            .map(|(k, v)| attribute(k, v))
            .chain(own.iter().map(|(k, v)| attribute(k, v)))
            .collect()
    };
    let number_points = |family: &Family| -> Vec<NumberDataPoint> {
        family
            .points
            .iter()
            .map(|p| NumberDataPoint {
                attributes: attributes(&p.labels),
                start_time_unix_nano: start,
                time_unix_nano: now,
                // A member of the oneof `value`: sent even when 0.
                value: Some(number_data_point::Value::AsDouble(p.value)),
                ..Default::default()
            })
            .collect()
    };
    let metrics = batch
        .families
        .iter()
        .map(|family| {
            let data = match family.kind {
                Type::Counter => Data::Sum(Sum {
                    data_points: number_points(family),
                    aggregation_temporality: CUMULATIVE,
                    is_monotonic: true,
                }),
                Type::Gauge => Data::Gauge(Gauge {
                    data_points: number_points(family),
                }),
                Type::Histogram => Data::Histogram(Histogram {
                    data_points: series(family)
                        .into_iter()
                        .map(|(labels, points)| {
                            histogram_point(&points, attributes(&labels), start, now)
                        })
                        .collect(),
                    aggregation_temporality: CUMULATIVE,
                }),
            };
            Metric {
                name: family.name.to_string(),
                description: family.help.to_string(),
                unit: if family.name.ends_with("_seconds") {
                    "s"
                } else {
                    ""
                }
                .to_string(),
                data: Some(data),
                ..Default::default()
            }
        })
        .collect();
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![attribute("service.name", "belier")],
                ..Default::default()
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "belier".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                metrics,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// A histogram family's points grouped by series: by their labels but `le`, in order.
fn series(family: &Family) -> Vec<(Labels, Vec<&Point>)> {
    let mut out: Vec<(Labels, Vec<&Point>)> = Vec::new();
    for p in &family.points {
        let labels: Labels = p
            .labels
            .iter()
            .filter(|(k, _)| *k != "le")
            .cloned()
            .collect();
        match out.iter_mut().find(|(l, _)| *l == labels) {
            Some((_, points)) => points.push(p),
            None => out.push((labels, vec![p])),
        }
    }
    out
}

type Labels = Vec<(&'static str, String)>;

/// One histogram series' `_bucket{le}` (cumulative), `_sum` and `_count` as one OTLP point
/// with counts per bucket.
fn histogram_point(
    points: &[&Point],
    attributes: Vec<KeyValue>,
    start: u64,
    now: u64,
) -> HistogramDataPoint {
    let value = |suffix: &str| {
        points
            .iter()
            .find(|p| p.suffix == suffix)
            .map_or(0.0, |p| p.value)
    };
    let mut explicit_bounds = Vec::new();
    let mut bucket_counts = Vec::new();
    let mut below = 0.0;
    for p in points.iter().filter(|p| p.suffix == "_bucket") {
        let le = p.labels.iter().find(|(k, _)| *k == "le").map(|(_, v)| v);
        if let Some(bound) = le
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|b| b.is_finite())
        {
            explicit_bounds.push(bound);
        }
        bucket_counts.push((p.value - below) as u64);
        below = p.value;
    }
    HistogramDataPoint {
        attributes,
        start_time_unix_nano: start,
        time_unix_nano: now,
        count: value("_count") as u64,
        sum: Some(value("_sum")),
        bucket_counts,
        explicit_bounds,
        exemplars: points
            .iter()
            .filter_map(|p| p.exemplar.as_ref())
            .filter_map(exemplar)
            .collect(),
        ..Default::default()
    }
}

/// A bucket's exemplar as OTLP carries it: the request's latency, when it ended, and its
/// trace and span ids as bytes; `None` for ids that are not hex (none belier records).
fn exemplar(e: &crate::PointExemplar) -> Option<Exemplar> {
    let trace_id = u128::from_str_radix(&e.trace_id, 16).ok()?;
    let span_id = u64::from_str_radix(&e.span_id, 16).ok()?;
    Some(Exemplar {
        time_unix_nano: (e.timestamp * 1e9) as u64,
        value: Some(exemplar::Value::AsDouble(e.value)),
        span_id: span_id.to_be_bytes().to_vec(),
        trace_id: trace_id.to_be_bytes().to_vec(),
        ..Default::default()
    })
}

impl Sink for Otlp {
    fn deliver(&mut self, batch: &Batch) -> Result<(), Failure> {
        let body = prost::Message::encode_to_vec(&request(batch, &self.common, self.start));
        self.http.send(
            "POST",
            &self.url,
            &[("Content-Type", "application/x-protobuf")],
            &body,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{families, Figures};

    #[test]
    fn the_histogram_counts_per_bucket_what_the_cumulative_buckets_hold() {
        let mut total = belier_stats::Recorder::new();
        for latency_us in [50, 700, 900, 3_000, 90_000_000] {
            total.record(&crate::families::tests::sample(latency_us));
        }
        let families = families(&Figures {
            total: &total,
            in_flight: 0,
            target_rate: None,
            ended: true,
            steps: &[],
            exemplars: None,
        });
        let latency = families.iter().find(|f| f.kind == Type::Histogram).unwrap();
        let groups = series(latency);
        assert_eq!(groups.len(), 1);
        let point = histogram_point(&groups[0].1, Vec::new(), 1, 2);
        assert_eq!(point.explicit_bounds, crate::BUCKETS_S);
        assert_eq!(point.count, 5);
        let mut expected = vec![0u64; crate::BUCKETS_S.len() + 1];
        expected[0] = 1; // ≤ 100 µs
        expected[3] = 2; // ≤ 1 ms
        expected[5] = 1; // ≤ 5 ms
        expected[crate::BUCKETS_S.len()] = 1; // over 60 s
        assert_eq!(point.bucket_counts, expected);
    }

    #[test]
    fn a_buckets_exemplar_goes_with_its_trace_and_span_ids_as_bytes() {
        let total = belier_stats::Recorder::new();
        let mut latest = crate::LatestExemplars::default();
        latest.update(&[belier_stats::Exemplar {
            latency_us: 201_500,
            intended_unix_us: 1_795_341_600_000_000,
            status: 200,
            grpc: None,
            trace_id: Some(belier_stats::TraceId(0xabc)),
            span_id: Some(belier_stats::SpanId(0xdef)),
            step: None,
        }]);
        let families = families(&Figures {
            total: &total,
            in_flight: 0,
            target_rate: None,
            ended: true,
            steps: &[],
            exemplars: Some(&latest),
        });
        let latency = families.iter().find(|f| f.kind == Type::Histogram).unwrap();
        let point = histogram_point(&series(latency)[0].1, Vec::new(), 1, 2);
        assert_eq!(point.exemplars.len(), 1);
        let e = &point.exemplars[0];
        assert_eq!(e.trace_id, 0xabc_u128.to_be_bytes().to_vec());
        assert_eq!(e.span_id, 0xdef_u64.to_be_bytes().to_vec());
        assert_eq!(e.value, Some(exemplar::Value::AsDouble(0.2015)));
        assert_eq!(e.time_unix_nano / 1_000_000, 1_795_341_600_201);
    }
}
