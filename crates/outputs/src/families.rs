//! The metrics every output sends, as one model: families of named series with labels and a
//! value, built from the settled intervals' totals. The text exposition format
//! ([`crate::text`]), remote-write, Influx line protocol, OTLP and StatsD are each a rendering
//! of these, so the pull exporter and every push output show the same numbers under the same
//! names (listed in docs/src/guide/outputs.md, "The series").

use belier_stats::{ErrorKind, LatencySummary, MessageUnit, Messages, Recorder};

use crate::buckets::bucket;
pub use crate::buckets::BUCKETS_S;
pub use crate::exemplars::PointExemplar;
use hdrhistogram::Histogram;

/// The quantiles of `belier_request_duration_quantile_seconds`, as report percentiles and
/// label values: computed from the recorded
/// HDR histogram (0.1 % precision), as the report computes its percentiles. The histogram's
/// buckets above are too coarse for a quantile within 1 % of the report's, and bucket sets
/// fine enough (1 % apart from 100 µs to 60 s) would be over a thousand series.
pub const QUANTILES: [(f64, &str); 5] = [
    (50.0, "0.5"),
    (90.0, "0.9"),
    (95.0, "0.95"),
    (99.0, "0.99"),
    (99.9, "0.999"),
];

/// What the series show: the settled intervals' totals and the run's state.
pub struct Figures<'a> {
    /// Everything in the intervals settled so far.
    pub total: &'a Recorder,
    /// Requests in flight at the end of the latest settled interval.
    pub in_flight: u64,
    /// Open loop: the arrival rate the run holds now.
    pub target_rate: Option<f64>,
    /// The run has ended: these are the final totals.
    pub ended: bool,
    /// A plan's request steps, by step number (the recorder's per-step rows): their series
    /// carry `step="NAME"`. Empty for a flag run.
    pub steps: &'a [String],
    /// The latency buckets' exemplars (traced runs), when kept.
    pub exemplars: Option<&'a crate::LatestExemplars>,
}

/// What a family's series measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    /// A total that only grows during the run.
    Counter,
    /// A value that goes up and down.
    Gauge,
    /// A cumulative histogram: `_bucket{le}`, `_sum` and `_count` series.
    Histogram,
}

/// A metric family: one name, its help and type, and its series.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    /// The family's name (`belier_requests_total`).
    pub name: &'static str,
    /// One line saying what it counts.
    pub help: &'static str,
    /// Counter, gauge or histogram.
    pub kind: Type,
    /// Its series.
    pub points: Vec<Point>,
}

/// One series of a family and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Appended to the family's name: `""`, or `_bucket`, `_sum`, `_count` for a histogram.
    pub suffix: &'static str,
    /// The series' own labels, in order (the run's labels are added by each output).
    pub labels: Vec<(&'static str, String)>,
    /// The value.
    pub value: f64,
    /// A histogram bucket's exemplar: the latest traced request it counted (see
    /// [`crate::LatestExemplars`]).
    pub exemplar: Option<PointExemplar>,
}

impl Point {
    /// The tests' series: `suffix` and `labels` as text.
    #[cfg(test)]
    pub(crate) fn new(suffix: &'static str, labels: &[(&'static str, &str)], value: f64) -> Point {
        Point {
            suffix,
            labels: labels.iter().map(|&(k, v)| (k, v.to_string())).collect(),
            value,
            exemplar: None,
        }
    }

    fn plain(value: f64) -> Point {
        Point {
            suffix: "",
            labels: Vec::new(),
            value,
            exemplar: None,
        }
    }

    /// The series' full name: the family's and the suffix.
    pub fn name(&self, family: &Family) -> String {
        format!("{}{}", family.name, self.suffix)
    }
}

/// The name of the requests counter.
pub const REQUESTS: &str = "belier_requests_total";
/// The name of the latency histogram.
pub const DURATION: &str = "belier_request_duration_seconds";
/// The name of the latency quantiles.
pub const DURATION_QUANTILES: &str = "belier_request_duration_quantile_seconds";

/// Every family, in the order the exporter's page shows them.
pub fn families(figures: &Figures) -> Vec<Family> {
    let total = figures.total;
    let mut requests: Vec<Point> = total
        .status_counts()
        .map(|(code, n)| Point {
            suffix: "",
            labels: vec![("status", code.to_string())],
            value: n as f64,
            exemplar: None,
        })
        .collect();
    requests.extend(total.grpc_counts().map(|(code, n)| Point {
        suffix: "",
        labels: vec![("grpc_code", belier_stats::grpc_code_name(code).to_string())],
        value: n as f64,
        exemplar: None,
    }));
    requests.extend(ErrorKind::ALL.iter().map(|kind| Point {
        suffix: "",
        labels: vec![("error", kind.name().to_string())],
        value: total.errors_of(*kind) as f64,
        exemplar: None,
    }));
    let mut out = vec![
        Family {
            name: REQUESTS,
            help: "Requests that ended: status=\"CODE\" for complete responses, grpc_code=\"NAME\" for gRPC calls, error=\"KIND\" for failures.",
            kind: Type::Counter,
            points: requests,
        },
        histogram(total, figures.exemplars),
        quantiles(total),
    ];
    if !figures.steps.is_empty() {
        out.extend(steps(total, figures.steps));
    }
    if let Some(m) = total.messages() {
        out.extend(messages(m));
    }
    if let Some(q) = total.quic() {
        out.extend(quic(q));
    }
    if let Some(routes) = total.routes() {
        out.extend(addresses(&BACKEND_NAMES, &routes.remote));
        out.extend(addresses(&SOURCE_NAMES, &routes.local));
    }
    let counter = |name, help, value: u64| Family {
        name,
        help,
        kind: Type::Counter,
        points: vec![Point::plain(value as f64)],
    };
    out.extend([
        counter(
            "belier_bytes_received_total",
            "Wire bytes read.",
            total.bytes_in(),
        ),
        counter(
            "belier_bytes_sent_total",
            "Wire bytes written.",
            total.bytes_out(),
        ),
        counter(
            "belier_connections_opened_total",
            "TCP connections opened.",
            total.connections_opened(),
        ),
        counter(
            "belier_dropped_total",
            "Open loop: arrivals never sent because --max-in-flight requests were in flight.",
            total.dropped(),
        ),
    ]);
    let gauge = |name, help, value: f64| Family {
        name,
        help,
        kind: Type::Gauge,
        points: vec![Point::plain(value)],
    };
    out.push(gauge(
        "belier_in_flight",
        "Requests in flight at the end of the latest settled interval.",
        figures.in_flight as f64,
    ));
    if let Some(rate) = figures.target_rate {
        out.push(gauge(
            "belier_target_rate",
            "Open loop: the arrival rate the run holds, per second.",
            rate,
        ));
    }
    out.push(gauge(
        "belier_run_ended",
        "1 once the run has ended and these are its final totals.",
        f64::from(u8::from(figures.ended)),
    ));
    out
}

/// `belier_request_duration_seconds`: the recorded latency histogram folded into
/// [`BUCKETS_S`].
/// With `exemplars`, each bucket carries its own.
fn histogram(total: &Recorder, exemplars: Option<&crate::LatestExemplars>) -> Family {
    let mut points = buckets(total.latency_us(), &[]);
    if let Some(exemplars) = exemplars {
        for (i, point) in points
            .iter_mut()
            .filter(|p| p.suffix == "_bucket")
            .enumerate()
        {
            point.exemplar = exemplars.of_bucket(i);
        }
    }
    Family {
        name: DURATION,
        help: "Latency of complete responses from their intended start (errors have none).",
        kind: Type::Histogram,
        points,
    }
}

/// The `_bucket{le}`, `_sum` and `_count` series of `h` (microseconds), each with `labels`
/// first. A value counts in the first bucket whose bound is at or above it (to the
/// histogram's precision, 0.1 %); `_sum` adds each value as its HDR bucket's middle.
fn buckets(h: &Histogram<u64>, labels: &[(&'static str, String)]) -> Vec<Point> {
    let mut counts = [0u64; BUCKETS_S.len() + 1];
    let mut sum_us = 0.0;
    for v in h.iter_recorded() {
        let value = v.value_iterated_to();
        let n = v.count_at_value();
        sum_us += h.median_equivalent(value) as f64 * n as f64;
        counts[bucket(value)] += n;
    }
    let with = |extra: Option<(&'static str, String)>| -> Vec<(&'static str, String)> {
        labels.iter().cloned().chain(extra).collect()
    };
    let mut cumulative = 0;
    let mut points: Vec<Point> = counts
        .iter()
        .enumerate()
        .map(|(i, n)| {
            cumulative += n;
            let le = BUCKETS_S
                .get(i)
                .map_or_else(|| "+Inf".to_string(), |b| b.to_string());
            Point {
                suffix: "_bucket",
                labels: with(Some(("le", le))),
                value: cumulative as f64,
                exemplar: None,
            }
        })
        .collect();
    points.push(Point {
        suffix: "_sum",
        labels: with(None),
        value: sum_us / 1e6,
        exemplar: None,
    });
    points.push(Point {
        suffix: "_count",
        labels: with(None),
        value: h.len() as f64,
        exemplar: None,
    });
    points
}

/// `belier_request_duration_quantile_seconds{quantile}`: the report's percentiles of the
/// latency so far (0 before the first response).
fn quantiles(total: &Recorder) -> Family {
    Family {
        name: DURATION_QUANTILES,
        help: "Latency quantiles of complete responses so far, as the report computes them.",
        kind: Type::Gauge,
        points: quantile_points(&total.latency_summary(), &[]),
    }
}

fn quantile_points(summary: &LatencySummary, labels: &[(&'static str, String)]) -> Vec<Point> {
    QUANTILES
        .iter()
        .map(|&(percentile, label)| Point {
            suffix: "",
            labels: labels
                .iter()
                .cloned()
                .chain([("quantile", label.to_string())])
                .collect(),
            value: summary.at(percentile).unwrap_or(0) as f64 / 1e6,
            exemplar: None,
        })
        .collect()
}

/// A plan's per-step series: `belier_step_requests_total{step,outcome="ok"|"failed"}` (the
/// user judged it failed: no response, unexpected status or failed check), and the step's
/// latency as `belier_step_request_duration_seconds{step}` (histogram) and
/// `belier_step_request_duration_quantile_seconds{step,quantile}`.
fn steps(total: &Recorder, names: &[String]) -> Vec<Family> {
    let rows = total.steps().iter().zip(names);
    let mut requests = Vec::new();
    let mut histograms = Vec::new();
    let mut quantiles = Vec::new();
    for (row, name) in rows {
        let step = [("step", name.clone())];
        requests.extend(outcome_points(
            &step[0],
            row.counts.requests,
            row.counts.failures,
        ));
        histograms.extend(buckets(row.values_us(), &step));
        quantiles.extend(quantile_points(&row.summary(), &step));
    }
    vec![
        Family {
            name: "belier_step_requests_total",
            help:
                "A plan's requests by step, outcome=\"ok\" or \"failed\" as the user judged them.",
            kind: Type::Counter,
            points: requests,
        },
        Family {
            name: "belier_step_request_duration_seconds",
            help: "Latency of a plan step's complete responses from their intended start.",
            kind: Type::Histogram,
            points: histograms,
        },
        Family {
            name: "belier_step_request_duration_quantile_seconds",
            help: "Latency quantiles of a plan step's complete responses so far.",
            kind: Type::Gauge,
            points: quantiles,
        },
    ]
}

/// A row's requests as two points labelled by the row (`label`) and `outcome`: `ok`, and
/// `failed` (`failed` of the `requests`).
fn outcome_points(label: &(&'static str, String), requests: u64, failed: u64) -> [Point; 2] {
    [("ok", requests - failed), ("failed", failed)].map(|(outcome, n)| Point {
        suffix: "",
        labels: vec![label.clone(), ("outcome", outcome.to_string())],
        value: n as f64,
        exemplar: None,
    })
}

/// The names of one side's address families: requests, connections, latency.
struct AddressNames([&'static str; 3]);

/// By server address (every address of a name, `--resolve`'s several).
const BACKEND_NAMES: AddressNames = AddressNames([
    "belier_backend_requests_total",
    "belier_backend_connections_total",
    "belier_backend_request_duration_seconds",
]);

/// By source address (`--local-address`).
const SOURCE_NAMES: AddressNames = AddressNames([
    "belier_source_requests_total",
    "belier_source_connections_total",
    "belier_source_request_duration_seconds",
]);

/// One side's requests by address, `outcome="ok"` or `"failed"` (an error kind), the
/// connections each opened, and the latency of each one's complete responses; none unless
/// the run used more than one address on that side.
fn addresses<A: ToString>(
    names: &AddressNames,
    rows: &std::collections::BTreeMap<A, belier_stats::AddressRow>,
) -> Vec<Family> {
    if rows.len() < 2 {
        return Vec::new();
    }
    let (mut requests, mut connections, mut histograms) = (Vec::new(), Vec::new(), Vec::new());
    for (addr, row) in rows {
        let address = [("address", addr.to_string())];
        requests.extend(outcome_points(
            &address[0],
            row.counts.requests,
            row.counts.errors,
        ));
        connections.push(Point {
            suffix: "",
            labels: address.to_vec(),
            value: row.counts.connections as f64,
            exemplar: None,
        });
        histograms.extend(buckets(row.values_us(), &address));
    }
    let [requests_name, connections_name, latency_name] = names.0;
    vec![
        Family {
            name: requests_name,
            help: "Requests by the address of their connection, outcome=\"ok\" or \"failed\" (no complete response).",
            kind: Type::Counter,
            points: requests,
        },
        Family {
            name: connections_name,
            help: "Connections opened, by address.",
            kind: Type::Counter,
            points: connections,
        },
        Family {
            name: latency_name,
            help: "Latency of complete responses from their intended start, by address.",
            kind: Type::Histogram,
            points: histograms,
        },
    ]
}

/// The names and help of a run's message families, by what its messages are.
struct MessageNames {
    calls: [&'static str; 2],
    sent: [&'static str; 2],
    received: [&'static str; 2],
    first: [&'static str; 2],
    gap: [&'static str; 2],
    round_trip: [&'static str; 2],
}

/// Streaming gRPC calls' messages.
const GRPC_NAMES: MessageNames = MessageNames {
    calls: [
        "belier_grpc_streaming_calls_total",
        "Streaming gRPC calls that ended, whatever their status.",
    ],
    sent: [
        "belier_grpc_messages_sent_total",
        "Request messages of streaming gRPC calls sent.",
    ],
    received: [
        "belier_grpc_messages_received_total",
        "Response messages of streaming gRPC calls received.",
    ],
    first: [
        "belier_grpc_first_message_seconds",
        "From a streaming call's send to its first response message.",
    ],
    gap: [
        "belier_grpc_message_gap_seconds",
        "Between a streaming call's consecutive response messages.",
    ],
    round_trip: [
        "belier_grpc_message_round_trip_seconds",
        "From a request message to the response message that answered it (bidirectional calls whose responses answer their messages one for one).",
    ],
};

/// A WebSocket run's messages (`belier ws`).
const WEBSOCKET_NAMES: MessageNames = MessageNames {
    calls: [
        "belier_ws_sockets_total",
        "WebSockets that ended after their upgrade, whatever their close.",
    ],
    sent: ["belier_ws_messages_sent_total", "WebSocket messages sent."],
    received: [
        "belier_ws_messages_received_total",
        "WebSocket messages received.",
    ],
    first: [
        "belier_ws_first_message_seconds",
        "From a socket's upgrade request to its first message in.",
    ],
    gap: [
        "belier_ws_message_gap_seconds",
        "Between a socket's consecutive messages in.",
    ],
    round_trip: [
        "belier_ws_message_round_trip_seconds",
        "From a message's intended send to the reply that answered it.",
    ],
};

/// A run's streamed response bodies (`--stream`): their events, chunks or token chunks.
const STREAM_NAMES: MessageNames = MessageNames {
    calls: [
        "belier_streams_total",
        "Streamed response bodies that ended, whatever their outcome.",
    ],
    sent: ["", ""],
    received: [
        "belier_stream_messages_received_total",
        "Messages of streamed bodies received: events (sse), chunks, or token chunks with content (llm).",
    ],
    first: [
        "belier_stream_first_message_seconds",
        "From a stream's intended start to its first message (time to first token for llm).",
    ],
    gap: [
        "belier_stream_message_gap_seconds",
        "Between a stream's consecutive messages (inter-token latency for llm).",
    ],
    round_trip: ["", ""],
};

/// A run's messages, named for what they are (see [`MessageNames`]): counters of the
/// streaming calls, sockets or streams and of the messages each way, and the histograms of
/// the first message, the gaps between messages and, where replies answer messages, the
/// round trips (0 in `_count` when they did not answer one for one). A streamed body's
/// messages go one way and add their output tokens (`belier_stream_tokens_total`, llm).
fn messages(m: &Messages) -> Vec<Family> {
    let counter = |[name, help]: [&'static str; 2], value: u64| Family {
        name,
        help,
        kind: Type::Counter,
        points: vec![Point::plain(value as f64)],
    };
    let histogram = |[name, help]: [&'static str; 2], h| Family {
        name,
        help,
        kind: Type::Histogram,
        points: buckets(h, &[]),
    };
    let unit = m.unit();
    let names = match unit {
        MessageUnit::Grpc => &GRPC_NAMES,
        MessageUnit::WebSocket => &WEBSOCKET_NAMES,
        _ => &STREAM_NAMES,
    };
    let mut families = vec![
        counter(names.calls, m.calls()),
        counter(names.sent, m.sent()),
        counter(names.received, m.received()),
        histogram(names.first, m.first_message_us()),
        histogram(names.gap, m.gap_us()),
        histogram(names.round_trip, m.round_trip_us()),
    ];
    families.retain(|f| !f.name.is_empty());
    if unit == MessageUnit::Tokens {
        families.push(counter(
            [
                "belier_stream_tokens_total",
                "Output tokens of llm streams (usage.completion_tokens, else chunks with content).",
            ],
            m.tokens(),
        ));
    }
    families
}

/// QUIC's own figures (HTTP/3 runs): handshakes, datagrams, packets lost, connections ended
/// by cause.
fn quic(q: &belier_stats::Quic) -> Vec<Family> {
    let counter = |name, help, value: u64| Family {
        name,
        help,
        kind: Type::Counter,
        points: vec![Point::plain(value as f64)],
    };
    let ended = q
        .ended
        .iter()
        .map(|(cause, &n)| Point {
            labels: vec![("cause", cause.clone())],
            ..Point::plain(n as f64)
        })
        .collect();
    vec![
        counter(
            "belier_quic_handshakes_total",
            "QUIC handshakes that completed.",
            q.handshakes,
        ),
        counter(
            "belier_quic_datagrams_sent_total",
            "UDP datagrams sent.",
            q.datagrams_sent,
        ),
        counter(
            "belier_quic_datagrams_received_total",
            "UDP datagrams received.",
            q.datagrams_received,
        ),
        counter(
            "belier_quic_packets_sent_total",
            "QUIC packets sent.",
            q.packets_sent,
        ),
        counter(
            "belier_quic_packets_lost_total",
            "QUIC packets declared lost (their frames went again).",
            q.packets_lost,
        ),
        Family {
            name: "belier_quic_connections_ended_total",
            help: "QUIC connections that ended, by cause (idle_timeout, goaway, the server's close code, belier_closed, ...).",
            kind: Type::Counter,
            points: ended,
        },
    ]
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Instant;

    use belier_stats::{Outcome, Sample};

    use super::*;

    /// A 200 response `latency_us` after its intended start.
    pub(crate) fn sample(latency_us: u64) -> Sample {
        Sample::simulated(
            Instant::now(),
            0,
            latency_us,
            Outcome::Response { status: 200 },
        )
    }

    /// The final figures of a run that recorded `total`, without steps or exemplars.
    fn ended(total: &Recorder) -> Figures<'_> {
        Figures {
            total,
            in_flight: 0,
            target_rate: None,
            ended: true,
            steps: &[],
            exemplars: None,
        }
    }

    fn value(family: &Family, suffix: &str, labels: &[(&str, &str)]) -> f64 {
        family
            .points
            .iter()
            .find(|p| {
                p.suffix == suffix
                    && p.labels.len() == labels.len()
                    && labels
                        .iter()
                        .all(|(k, v)| p.labels.iter().any(|(pk, pv)| pk == k && pv == v))
            })
            .unwrap_or_else(|| panic!("no {suffix} {labels:?} in {family:?}"))
            .value
    }

    #[test]
    fn grpc_calls_are_requests_labelled_by_their_codes_name() {
        let mut total = Recorder::new();
        for code in [0, 0, 0, 8] {
            total.record(&Sample::simulated(
                Instant::now(),
                0,
                1_000,
                Outcome::Grpc { code },
            ));
        }
        let all = families(&ended(&total));
        let requests = all.iter().find(|f| f.name == REQUESTS).unwrap();
        assert_eq!(value(requests, "", &[("grpc_code", "OK")]), 3.0);
        assert_eq!(
            value(requests, "", &[("grpc_code", "RESOURCE_EXHAUSTED")]),
            1.0
        );
        assert!(requests.points.iter().all(|p| p.labels[0].0 != "status"));
    }

    #[test]
    fn streaming_calls_have_message_counters_and_histograms_and_other_runs_none() {
        let mut total = Recorder::new();
        let mut gaps = belier_stats::MessageTimes::default();
        (0..9).for_each(|_| gaps.push(2_000));
        for _ in 0..4 {
            let call = belier_stats::CallMessages::one_way(1, 10, Some(3_000), &gaps);
            total.record_simulated_stream(30_000, &call);
        }
        let figures = Figures {
            total: &total,
            in_flight: 0,
            target_rate: None,
            ended: true,
            steps: &[],
            exemplars: None,
        };
        let all = families(&figures);
        let family = |name: &str| all.iter().find(|f| f.name == name).unwrap();
        let counted = |name| value(family(name), "", &[]);
        assert_eq!(counted("belier_grpc_streaming_calls_total"), 4.0);
        assert_eq!(counted("belier_grpc_messages_sent_total"), 4.0);
        assert_eq!(counted("belier_grpc_messages_received_total"), 40.0);
        let first = family("belier_grpc_first_message_seconds");
        assert_eq!(value(first, "_bucket", &[("le", "0.0025")]), 0.0);
        assert_eq!(value(first, "_bucket", &[("le", "0.005")]), 4.0);
        let gap = family("belier_grpc_message_gap_seconds");
        assert_eq!(value(gap, "_count", &[]), 36.0);
        assert_eq!(value(gap, "_bucket", &[("le", "0.0025")]), 36.0);
        let trips = family("belier_grpc_message_round_trip_seconds");
        assert_eq!(value(trips, "_count", &[]), 0.0);
        // A run of requests has none of them.
        let mut http = Recorder::new();
        http.record(&sample(1_000));
        let plain = families(&Figures {
            total: &http,
            ..figures
        });
        assert!(plain.iter().all(|f| !f.name.starts_with("belier_grpc_")));
    }

    #[test]
    fn sockets_and_streamed_bodies_name_their_messages_for_what_they_are() {
        let mut gaps = belier_stats::MessageTimes::default();
        gaps.push(20_000);
        let call = belier_stats::CallMessages::one_way(2, 2, Some(100_000), &gaps);
        let mut sockets = Recorder::new();
        sockets.record(&sample(300_000));
        sockets.record_socket_messages(&call);
        let mut streams = Recorder::new();
        streams.record(&sample(300_000));
        let body = belier_stats::StreamedBody {
            unit: MessageUnit::Tokens,
            tokens: 7,
            first_to_last_us: 20_000,
            ..belier_stats::StreamedBody::default()
        };
        streams.record_body_stream(&call, &body);
        let names = |total: &Recorder| -> Vec<&'static str> {
            let figures = Figures {
                total,
                in_flight: 0,
                target_rate: None,
                ended: true,
                steps: &[],
                exemplars: None,
            };
            let all = families(&figures);
            let messages = all.iter().filter(|f| {
                ["belier_ws_", "belier_stream", "belier_grpc_"]
                    .iter()
                    .any(|p| f.name.starts_with(p))
            });
            messages.map(|f| f.name).collect()
        };
        assert_eq!(
            names(&sockets),
            [
                "belier_ws_sockets_total",
                "belier_ws_messages_sent_total",
                "belier_ws_messages_received_total",
                "belier_ws_first_message_seconds",
                "belier_ws_message_gap_seconds",
                "belier_ws_message_round_trip_seconds",
            ]
        );
        assert_eq!(
            names(&streams),
            [
                "belier_streams_total",
                "belier_stream_messages_received_total",
                "belier_stream_first_message_seconds",
                "belier_stream_message_gap_seconds",
                "belier_stream_tokens_total",
            ]
        );
    }

    #[test]
    fn requests_by_address_have_series_only_where_the_run_used_several() {
        let mut total = Recorder::new();
        let local = "127.0.1.1".parse().unwrap();
        for (remote, latency_us, opened) in [
            ("127.0.0.11:80", 1_000, true),
            ("127.0.0.12:80", 2_000, true),
            ("127.0.0.12:80", 3_000, false),
        ] {
            let s = sample(latency_us);
            total.record(&s);
            let route = belier_stats::Route {
                remote: remote.parse().unwrap(),
                local,
            };
            total.record_route(&s, route, opened);
        }
        let all = families(&ended(&total));
        let family = |name: &str| all.iter().find(|f| f.name == name);
        let requests = family("belier_backend_requests_total").expect("backend requests");
        let ok_at = |address: &str| value(requests, "", &[("address", address), ("outcome", "ok")]);
        assert_eq!((ok_at("127.0.0.11:80"), ok_at("127.0.0.12:80")), (1.0, 2.0));
        let connections = family("belier_backend_connections_total").unwrap();
        assert_eq!(value(connections, "", &[("address", "127.0.0.12:80")]), 1.0);
        assert!(family("belier_backend_request_duration_seconds").is_some());
        // One source address: no series by source.
        assert!(all.iter().all(|f| !f.name.starts_with("belier_source_")));
    }

    #[test]
    fn quic_figures_have_series_only_in_runs_over_quic() {
        let mut total = Recorder::new();
        let none = families(&ended(&total));
        assert!(!none.iter().any(|f| f.name.starts_with("belier_quic_")));
        let mut q = belier_stats::Quic {
            handshakes: 3,
            packets_lost: 2,
            ..belier_stats::Quic::default()
        };
        q.end("idle_timeout");
        q.end("idle_timeout");
        q.end("belier_closed");
        total.record_quic(&q);
        let all = families(&ended(&total));
        let family = |name: &str| all.iter().find(|f| f.name == name).unwrap();
        assert_eq!(value(family("belier_quic_handshakes_total"), "", &[]), 3.0);
        assert_eq!(
            value(family("belier_quic_packets_lost_total"), "", &[]),
            2.0
        );
        let ended = family("belier_quic_connections_ended_total");
        assert_eq!(value(ended, "", &[("cause", "idle_timeout")]), 2.0);
        assert_eq!(value(ended, "", &[("cause", "belier_closed")]), 1.0);
    }

    #[test]
    fn a_plans_steps_have_their_own_series() {
        let mut total = Recorder::new();
        for (step, latency_us, failed) in [(0, 2_000, false), (0, 3_000, true), (1, 40_000, false)]
        {
            total.record(&sample(latency_us));
            total.record_step(step, &sample(latency_us), failed);
        }
        let names = ["login".to_string(), "search".to_string()];
        let figures = Figures {
            total: &total,
            in_flight: 0,
            target_rate: None,
            ended: true,
            steps: &names,
            exemplars: None,
        };
        let all = families(&figures);
        let family = |name: &str| all.iter().find(|f| f.name == name).unwrap();
        let requests = family("belier_step_requests_total");
        let latency = family("belier_step_request_duration_seconds");
        let step = |s| ("step", s);
        for (family, suffix, labels, want) in [
            (requests, "", [step("login"), ("outcome", "ok")], 1.0),
            (requests, "", [step("login"), ("outcome", "failed")], 1.0),
            (requests, "", [step("search"), ("outcome", "ok")], 1.0),
            (latency, "_bucket", [step("login"), ("le", "0.0025")], 1.0),
            (latency, "_bucket", [step("search"), ("le", "0.025")], 0.0),
            (latency, "_bucket", [step("search"), ("le", "0.05")], 1.0),
        ] {
            assert_eq!(value(family, suffix, &labels), want, "{suffix} {labels:?}");
        }
        assert_eq!(value(latency, "_count", &[step("login")]), 2.0);
        let quantiles = family("belier_step_request_duration_quantile_seconds");
        let p99 = value(quantiles, "", &[step("search"), ("quantile", "0.99")]);
        assert!((p99 - 0.04).abs() < 0.04 * 0.001, "{p99}");
        // A flag run has none of them.
        let flags = families(&Figures {
            steps: &[],
            exemplars: None,
            ..figures
        });
        assert!(flags.iter().all(|f| !f.name.starts_with("belier_step_")));
    }
}
