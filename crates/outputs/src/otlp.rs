//! OpenTelemetry OTLP/HTTP: an `ExportMetricsServiceRequest` in protobuf POSTed to
//! `/v1/metrics`. Counters are cumulative monotonic sums, the latency an explicit-bucket
//! histogram (the same bounds), the rest gauges; all stamped from the run's start.
//!
//! The messages are the fields of opentelemetry-proto's `metrics/v1` and `common/v1` that
//! belier sends, declared with prost's derive under their numbers there: the official crate
//! would bring the OpenTelemetry SDK and tonic with it. The test receiver decodes with the
//! official crate.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::families::{Family, Point, Type};
use crate::labels::RunLabels;
use crate::queue::{Batch, Failure, Sink};
use crate::spec::Spec;
use crate::transport::Http;

/// `ExportMetricsServiceRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsServiceRequest {
    /// Metrics by resource.
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

/// `ResourceMetrics`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceMetrics {
    /// What sends them.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// Metrics by instrumentation scope.
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
}

/// `Resource`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    /// Its attributes (`service.name`).
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// `ScopeMetrics`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeMetrics {
    /// The instrumentation scope.
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// The metrics.
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
}

/// `InstrumentationScope`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Version.
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `Metric`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Description.
    #[prost(string, tag = "2")]
    pub description: String,
    /// Unit (UCUM).
    #[prost(string, tag = "3")]
    pub unit: String,
    /// The data.
    #[prost(oneof = "Data", tags = "5, 7, 9")]
    pub data: Option<Data>,
}

/// `Metric.data`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Data {
    /// A gauge.
    #[prost(message, tag = "5")]
    Gauge(Gauge),
    /// A sum.
    #[prost(message, tag = "7")]
    Sum(Sum),
    /// A histogram.
    #[prost(message, tag = "9")]
    Histogram(Histogram),
}

/// `Gauge`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Gauge {
    /// Points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

/// `AggregationTemporality.CUMULATIVE`.
const CUMULATIVE: i32 = 2;

/// `Sum`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sum {
    /// Points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    /// `AggregationTemporality`.
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
    /// Only grows.
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

/// `Histogram`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    /// Points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<HistogramDataPoint>,
    /// `AggregationTemporality`.
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
}

/// `NumberDataPoint` (double values only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct NumberDataPoint {
    /// Attributes.
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    /// Start of the cumulation, ns since the epoch.
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// When, ns since the epoch.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// The value (`as_double`). A member of the oneof `value` there, so it must be sent even
    /// when 0: a plain proto3 double of 0 would be left out and the point read as valueless.
    #[prost(double, optional, tag = "4")]
    pub as_double: Option<f64>,
}

/// `HistogramDataPoint`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HistogramDataPoint {
    /// Attributes.
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    /// Start of the cumulation, ns since the epoch.
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// When, ns since the epoch.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// Values counted.
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    /// Their sum.
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
    /// Per bucket (not cumulative), one more than the bounds.
    #[prost(fixed64, repeated, tag = "6")]
    pub bucket_counts: Vec<u64>,
    /// Upper bounds.
    #[prost(double, repeated, tag = "7")]
    pub explicit_bounds: Vec<f64>,
}

/// `KeyValue` with a string value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    /// Key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// Value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `AnyValue` (strings only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    /// `string_value`.
    #[prost(string, optional, tag = "1")]
    pub string_value: Option<String>,
}

fn attribute(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            string_value: Some(value.to_string()),
        }),
    }
}

fn nanos(t: SystemTime) -> u64 {
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
                as_double: Some(p.value),
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
            }
        })
        .collect();
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![attribute("service.name", "belier")],
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "belier".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }),
                metrics,
            }],
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
    }
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
}
