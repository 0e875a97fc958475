//! InfluxDB line protocol: one point per series per batch, measurement the series' name, the
//! labels as tags and the value as field `value`, stamped in milliseconds; POSTed to 1.x
//! `/write?db=` or 2.x `/api/v2/write?org=&bucket=` (with `precision=ms` added).

use std::fmt::Write as _;
use std::time::UNIX_EPOCH;

use crate::labels::RunLabels;
use crate::queue::{Batch, Failure, Sink};
use crate::spec::Spec;
use crate::transport::Http;

/// Writes to one InfluxDB.
pub struct Influx {
    http: Http,
    url: String,
    common: Vec<(String, String)>,
}

impl Influx {
    /// A writer to `spec`'s database or bucket.
    pub fn new(spec: &Spec, labels: &RunLabels) -> Influx {
        let mut url = spec.url.clone();
        if !url.query_pairs().any(|(k, _)| k == "precision") {
            url.query_pairs_mut().append_pair("precision", "ms");
        }
        Influx {
            http: Http::new(spec.credential.as_ref()),
            url: url.to_string(),
            common: labels.pairs(),
        }
    }
}

/// `batch` in line protocol (tags with an empty value left out: Influx refuses them).
pub fn lines(batch: &Batch, common: &[(String, String)]) -> String {
    let ms = batch
        .at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let mut out = String::new();
    for family in &batch.families {
        for point in &family.points {
            out.push_str(&escape(&point.name(family), ", "));
            let tags = common
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .chain(point.labels.iter().map(|(k, v)| (*k, v.as_str())));
            for (key, value) in tags.filter(|(_, v)| !v.is_empty()) {
                let _ = write!(out, ",{}={}", escape(key, ", ="), escape(value, ", ="));
            }
            let _ = writeln!(out, " value={:?} {ms}", point.value);
        }
    }
    out
}

/// Backslash before each of `special` (and before a backslash).
fn escape(s: &str, special: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\\' || special.contains(c) {
            out.push('\\');
        }
        // A line break would end the point.
        out.push(if c == '\n' { ' ' } else { c });
    }
    out
}

impl Sink for Influx {
    fn deliver(&mut self, batch: &Batch) -> Result<(), Failure> {
        let body = lines(batch, &self.common);
        self.http.send(
            "POST",
            &self.url,
            &[("Content-Type", "text/plain; charset=utf-8")],
            body.as_bytes(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Point, Type};

    #[test]
    fn points_escape_tags_and_keep_float_values() {
        let batch = Batch::of(
            1_234,
            "belier_request_duration_seconds",
            Type::Histogram,
            vec![
                Point::new("_bucket", &[("le", "0.5")], 3.0),
                Point::new("_sum", &[], 0.25),
            ],
        );
        let common = [
            ("run".to_string(), "my run,1=a".to_string()),
            ("method".to_string(), String::new()),
        ];
        assert_eq!(
            lines(&batch, &common),
            "belier_request_duration_seconds_bucket,run=my\\ run\\,1\\=a,le=0.5 value=3.0 1234\n\
             belier_request_duration_seconds_sum,run=my\\ run\\,1\\=a value=0.25 1234\n"
        );
    }

    /// What an InfluxDB 2.x would receive: the bucket's path with millisecond precision, the
    /// token as `Authorization: Token`, the points as the body.
    #[test]
    fn a_2x_write_carries_the_token_and_the_precision() {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream);
            let mut head = Vec::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                head.push(line.trim().to_string());
            }
            let length: usize = head
                .iter()
                .find_map(|h| {
                    h.to_ascii_lowercase()
                        .strip_prefix("content-length: ")?
                        .parse()
                        .ok()
                })
                .unwrap();
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            reader
                .get_mut()
                .write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
                .unwrap();
            (head, String::from_utf8(body).unwrap())
        });
        let spec = Spec::parse(&format!(
            "influx=http://:s3cret@{addr}/api/v2/write?org=o&bucket=b"
        ))
        .unwrap();
        let labels = RunLabels {
            run: "r".into(),
            method: None,
        };
        let mut influx = Influx::new(&spec, &labels);
        let batch = Batch::of(
            5,
            "belier_requests_total",
            Type::Counter,
            vec![Point::new("", &[("status", "200")], 9.0)],
        );
        influx.deliver(&batch).unwrap();
        let (head, body) = server.join().unwrap();
        assert_eq!(
            head[0],
            "POST /api/v2/write?org=o&bucket=b&precision=ms HTTP/1.1"
        );
        assert!(
            head.iter()
                .any(|h| h.eq_ignore_ascii_case("authorization: Token s3cret")),
            "{head:?}"
        );
        assert_eq!(body, "belier_requests_total,run=r,status=200 value=9.0 5\n");
    }
}
