//! StatsD over UDP: counters as increments since the last batch sent (`|c`), gauges and the
//! latency quantiles as gauges (`|g`); labels as DogStatsD tags (`|#key:value`), which
//! Telegraf, the Datadog agent and statsd_exporter read. The histogram's buckets are left out
//! (StatsD has no cumulative buckets); its `_count` and `_sum` go as counters.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::UdpSocket;

use crate::families::Type;
use crate::labels::RunLabels;
use crate::queue::{Batch, Failure, Sink};
use crate::spec::Spec;

/// Datagrams stay under this size so that no path MTU splits them.
const DATAGRAM: usize = 1_400;

/// Sends to one StatsD server.
pub struct Statsd {
    socket: UdpSocket,
    tags: String,
    /// Per counter line (name and tags): the total already sent.
    sent: HashMap<String, f64>,
}

impl Statsd {
    /// A sender to `spec`'s host and port.
    pub fn new(spec: &Spec, labels: &RunLabels) -> std::io::Result<Statsd> {
        let target = spec.url.socket_addrs(|| None)?;
        let first = target
            .first()
            .ok_or_else(|| std::io::Error::other("the host has no address"))?;
        let local: std::net::SocketAddr = if first.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let socket = UdpSocket::bind(local)?;
        socket.connect(first)?;
        Ok(Statsd {
            socket,
            tags: labels
                .pairs()
                .iter()
                .map(|(k, v)| format!("{}:{}", tag(k), tag(v)))
                .collect::<Vec<_>>()
                .join(","),
            sent: HashMap::new(),
        })
    }

    /// The lines for `batch`, and the counters' totals they bring up to date.
    fn lines(&self, batch: &Batch) -> (Vec<Line>, Vec<(String, f64)>) {
        let mut lines = Vec::new();
        let mut totals = Vec::new();
        for family in &batch.families {
            for point in &family.points {
                if point.suffix == "_bucket" {
                    continue;
                }
                let mut key = point.name(family);
                let mut tags = self.tags.clone();
                for (k, v) in &point.labels {
                    let _ = write!(tags, ",{}:{}", tag(k), tag(v));
                }
                let _ = write!(key, "|#{tags}");
                let counter = family.kind != Type::Gauge;
                if counter {
                    let delta = point.value - self.sent.get(&key).copied().unwrap_or(0.0);
                    if delta != 0.0 {
                        let (name, tags) = key.split_once('|').unwrap_or((&key, ""));
                        lines.push(Line {
                            text: format!("{name}:{delta}|c|{tags}"),
                            counter: true,
                        });
                        totals.push((key, point.value));
                    }
                } else {
                    let (name, tags) = key.split_once('|').unwrap_or((&key, ""));
                    lines.push(Line {
                        text: format!("{name}:{}|g|{tags}", point.value),
                        counter: false,
                    });
                }
            }
        }
        (lines, totals)
    }
}

/// One StatsD line; a counter's brings its total up to date once sent.
struct Line {
    text: String,
    counter: bool,
}

/// A tag part without the characters DogStatsD uses as separators.
fn tag(s: &str) -> String {
    s.chars()
        .map(|c| if ",|#: \n".contains(c) { '_' } else { c })
        .collect()
}

impl Sink for Statsd {
    fn deliver(&mut self, batch: &Batch) -> Result<(), Failure> {
        let (lines, totals) = self.lines(batch);
        // Counters are brought up to date datagram by datagram, as each is sent: a batch that
        // fails half-way sends only the rest again, so nothing is counted twice.
        let mut datagram = String::new();
        let mut pending: Vec<(String, f64)> = Vec::new();
        let mut totals = totals.into_iter();
        for line in lines {
            if !datagram.is_empty() && datagram.len() + line.text.len() + 1 > DATAGRAM {
                self.flush(&mut datagram, &mut pending)?;
            }
            if !datagram.is_empty() {
                datagram.push('\n');
            }
            datagram.push_str(&line.text);
            if line.counter {
                pending.extend(totals.next());
            }
        }
        self.flush(&mut datagram, &mut pending)
    }
}

impl Statsd {
    fn flush(
        &mut self,
        datagram: &mut String,
        pending: &mut Vec<(String, f64)>,
    ) -> Result<(), Failure> {
        if !datagram.is_empty() {
            self.socket
                .send(datagram.as_bytes())
                .map_err(|e| Failure::Retry(e.to_string()))?;
            datagram.clear();
        }
        self.sent.extend(pending.drain(..));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Family, Point};

    fn batch(requests: f64, p99: f64) -> Batch {
        let point = |labels: Vec<(&'static str, String)>, value| Point {
            suffix: "",
            labels,
            value,
            exemplar: None,
        };
        Batch {
            at: std::time::SystemTime::now(),
            families: vec![
                Family {
                    name: "belier_requests_total",
                    help: "",
                    kind: Type::Counter,
                    points: vec![
                        point(vec![("status", "200".into())], requests),
                        point(vec![("error", "timeout".into())], 0.0),
                    ],
                },
                Family {
                    name: "belier_request_duration_quantile_seconds",
                    help: "",
                    kind: Type::Gauge,
                    points: vec![point(vec![("quantile", "0.99".into())], p99)],
                },
            ],
        }
    }

    #[test]
    fn counters_go_as_increments_and_gauges_as_they_are() {
        let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
        let spec =
            Spec::parse(&format!("statsd=udp://{}", receiver.local_addr().unwrap())).unwrap();
        let labels = RunLabels {
            run: "a b".into(),
            method: None,
        };
        let mut statsd = Statsd::new(&spec, &labels).unwrap();
        let mut buf = [0u8; 2048];
        let mut received = |statsd: &mut Statsd, b: &Batch| {
            statsd.deliver(b).unwrap();
            let n = receiver.recv(&mut buf).unwrap();
            String::from_utf8_lossy(&buf[..n]).into_owned()
        };
        assert_eq!(
            received(&mut statsd, &batch(5.0, 0.25)),
            "belier_requests_total:5|c|#run:a_b,status:200\n\
             belier_request_duration_quantile_seconds:0.25|g|#run:a_b,quantile:0.99"
        );
        assert_eq!(
            received(&mut statsd, &batch(12.0, 0.5)),
            "belier_requests_total:7|c|#run:a_b,status:200\n\
             belier_request_duration_quantile_seconds:0.5|g|#run:a_b,quantile:0.99"
        );
    }
}
