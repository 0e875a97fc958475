//! Prometheus remote-write 1.0: a protobuf `prometheus.WriteRequest`, compressed with snappy's
//! block format, POSTed with the protocol's headers. One sample per series per batch.

use std::time::UNIX_EPOCH;

use crate::labels::RunLabels;
use crate::queue::{Batch, Failure, Sink};
use crate::spec::Spec;
use crate::transport::Http;

/// `prometheus.WriteRequest` (prompb/remote.proto), the fields remote-write 1.0 sends.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    /// The series.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries` (prompb/types.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Labels, `__name__` included, sorted by name.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Samples, oldest first.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// Label name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Label value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// Writes to one remote-write endpoint.
pub struct RemoteWrite {
    http: Http,
    url: String,
    common: Vec<(String, String)>,
}

impl RemoteWrite {
    /// A writer to `spec`'s endpoint.
    pub fn new(spec: &Spec, labels: &RunLabels) -> RemoteWrite {
        RemoteWrite {
            http: Http::new(spec.credential.as_ref()),
            url: spec.url.to_string(),
            common: labels.pairs(),
        }
    }
}

/// `batch` as a write request, each series' labels being `common` and its own.
pub fn request(batch: &Batch, common: &[(String, String)]) -> WriteRequest {
    let timestamp = batch
        .at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let label = |name: &str, value: &str| Label {
        name: name.to_string(),
        value: value.to_string(),
    };
    let mut timeseries = Vec::new();
    for family in &batch.families {
        for point in &family.points {
            let mut labels = vec![label("__name__", &point.name(family))];
            labels.extend(common.iter().map(|(k, v)| label(k, v)));
            labels.extend(point.labels.iter().map(|(k, v)| label(k, v)));
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            timeseries.push(TimeSeries {
                labels,
                samples: vec![Sample {
                    value: point.value,
                    timestamp,
                }],
            });
        }
    }
    WriteRequest { timeseries }
}

impl Sink for RemoteWrite {
    fn deliver(&mut self, batch: &Batch) -> Result<(), Failure> {
        let proto = prost::Message::encode_to_vec(&request(batch, &self.common));
        let body = snap::raw::Encoder::new()
            .compress_vec(&proto)
            .map_err(|e| Failure::Refused(format!("snappy: {e}")))?;
        self.http.send(
            "POST",
            &self.url,
            &[
                ("Content-Type", "application/x-protobuf"),
                ("Content-Encoding", "snappy"),
                ("X-Prometheus-Remote-Write-Version", "0.1.0"),
                ("User-Agent", concat!("belier/", env!("CARGO_PKG_VERSION"))),
            ],
            &body,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Point, Type};

    #[test]
    fn series_carry_sorted_labels_and_one_sample() {
        let batch = Batch::of(
            1_700_000_000_123,
            "belier_requests_total",
            Type::Counter,
            vec![Point::new("", &[("status", "200")], 7.0)],
        );
        let common = [("run".to_string(), "r1".to_string())];
        let encoded = prost::Message::encode_to_vec(&request(&batch, &common));
        let decoded: WriteRequest = prost::Message::decode(encoded.as_slice()).unwrap();
        let series = &decoded.timeseries[0];
        let names: Vec<_> = series.labels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["__name__", "run", "status"]);
        assert_eq!(series.labels[0].value, "belier_requests_total");
        assert_eq!(series.samples[0].value, 7.0);
        assert_eq!(series.samples[0].timestamp, 1_700_000_000_123);
    }
}
