//! A whole recorder as a results file stores one: counters, and histograms in HdrHistogram's
//! V2 compressed encoding, base64. Records are stored so, and so are a plan's executors'
//! totals in its end line ([`End::scenario_totals`](crate::End::scenario_totals)), so that shards' (or workers')
//! per-scenario figures merge exactly.

use std::collections::BTreeMap;
use std::io;

use belier_stats::{check_rows, Counters, Metric, Recorder, TimingHistogram};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::histogram::{decode, Encoder};

/// Histograms written under `phases`, only when they hold values. (belier's own open-loop
/// lateness came after version 2 was defined: it is an optional entry of this map, so files
/// without it still read, as a run that did not record it.)
const PHASES: [Metric; 5] = [
    Metric::Connect,
    Metric::Tls,
    Metric::Ttfb,
    Metric::Transfer,
    Metric::Dispatch,
];

/// A recorder's counters and histograms, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredRecorder {
    /// The counters.
    pub(crate) counters: Counters,
    pub(crate) latency: String,
    pub(crate) uncorrected: String,
    pub(crate) lag: String,
    /// Connection and response phases (connect, tls, ttfb, transfer), when not empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) phases: BTreeMap<String, String>,
    /// Scripted users: each step's latency histogram, by step number (the steps' counters,
    /// the checks and the iterations are in `counters`). Absent for single-request runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) steps_latency: Vec<String>,
    /// Scripted users: each custom metric's histogram of values (a trend's; a counter's is
    /// empty), by metric number (their counts are in `counters`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) metrics_values: Vec<String>,
    /// Streaming gRPC calls: their first messages' and gaps' histograms (their counts are in
    /// `counters`). Absent for runs without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) messages: Option<StoredMessages>,
    /// Runs over several server addresses: each address's latency histogram (its counts are
    /// in `counters`), by address; likewise by source address.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) remote_latency: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) local_latency: BTreeMap<String, String>,
    /// The server's own times (`--server-timing`): its histograms (their counts are in
    /// `counters`). Absent for runs that did not read them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) server_timing: Option<StoredServerTiming>,
}

/// The histograms of a run's server times, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredServerTiming {
    /// The server's time of each timed response.
    server: String,
    /// Each timed response's latency minus its server's time.
    outside: String,
    /// Each metric's durations, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    metrics: BTreeMap<String, String>,
}

/// The histograms of streaming gRPC calls' messages, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredMessages {
    /// From a call's send to its first response message.
    first_message: String,
    /// Between a call's consecutive response messages.
    gaps: String,
    /// From a request message to the response that answered it, when there were any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    round_trips: Option<String>,
    /// The same round trips from each message's actual send (WebSocket), when there were any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    round_trips_sent: Option<String>,
}

impl StoredRecorder {
    /// `recorder`, stored.
    pub fn encode(recorder: &Recorder) -> io::Result<StoredRecorder> {
        Encoder::default().store(recorder)
    }

    /// The recorder back, or what in it cannot be read.
    pub fn decode(&self) -> Result<Recorder, String> {
        self.restore(&mut Deserializer::new())
    }

    /// [`StoredRecorder::decode`] with a deserializer of the caller's (reused).
    pub(crate) fn restore(&self, deserializer: &mut Deserializer) -> Result<Recorder, String> {
        let mut recorder = Recorder::from_counters(&self.counters)
            .map_err(|e| format!("field `counters`: {e}"))?;
        let mut stored = vec![
            (Metric::Latency, "latency".to_string(), &self.latency),
            (Metric::Uncorrected, "uncorrected".into(), &self.uncorrected),
            (Metric::Lag, "lag".into(), &self.lag),
        ];
        for (name, encoded) in &self.phases {
            let metric = Metric::from_name(name)
                .filter(|m| PHASES.contains(m))
                .ok_or_else(|| format!("field `phases`: unknown phase '{name}'"))?;
            stored.push((metric, format!("phases.{name}"), encoded));
        }
        for (metric, field, encoded) in stored {
            let hist = decode(deserializer, encoded, &field)?;
            recorder
                .add_histogram(metric, &hist)
                .map_err(|e| e.to_string())?;
        }
        check_rows("histograms", self.steps_latency.len())
            .map_err(|e| format!("field `steps_latency`: {e}"))?;
        for (row, encoded) in self.steps_latency.iter().enumerate() {
            let hist = decode(deserializer, encoded, &format!("steps_latency[{row}]"))?;
            recorder
                .add_step_histogram(row, &hist)
                .map_err(|e| e.to_string())?;
        }
        check_rows("histograms", self.metrics_values.len())
            .map_err(|e| format!("field `metrics_values`: {e}"))?;
        for (row, encoded) in self.metrics_values.iter().enumerate() {
            let hist = decode(deserializer, encoded, &format!("metrics_values[{row}]"))?;
            recorder
                .add_metric_histogram(row, &hist)
                .map_err(|e| e.to_string())?;
        }
        for (remote, stored) in [(true, &self.remote_latency), (false, &self.local_latency)] {
            for (addr, encoded) in stored {
                let hist = decode(deserializer, encoded, &format!("latency of {addr}"))?;
                recorder
                    .add_route_histogram(remote, addr, &hist)
                    .map_err(|e| e.to_string())?;
            }
        }
        if let Some(t) = &self.server_timing {
            restore_server_timing(&mut recorder, deserializer, t)?;
        }
        if let Some(m) = &self.messages {
            let first = decode(deserializer, &m.first_message, "messages.first_message")?;
            let gaps = decode(deserializer, &m.gaps, "messages.gaps")?;
            let mut optional = |encoded: &Option<String>, name| match encoded {
                Some(encoded) => decode(deserializer, encoded, name),
                None => Ok(Histogram::new(1).expect("an empty histogram")),
            };
            let round_trips = optional(&m.round_trips, "messages.round_trips")?;
            let sent = optional(&m.round_trips_sent, "messages.round_trips_sent")?;
            recorder
                .add_message_histograms([&first, &gaps, &round_trips, &sent])
                .map_err(|e| e.to_string())?;
        }
        Ok(recorder)
    }
}

/// Adds the stored histograms of a run's server times to `recorder`, whose counters made
/// their rows.
fn restore_server_timing(
    recorder: &mut Recorder,
    deserializer: &mut Deserializer,
    stored: &StoredServerTiming,
) -> Result<(), String> {
    let mut all = vec![
        (
            TimingHistogram::Server,
            "server_timing.server".to_string(),
            &stored.server,
        ),
        (
            TimingHistogram::Outside,
            "server_timing.outside".into(),
            &stored.outside,
        ),
    ];
    for (name, encoded) in &stored.metrics {
        all.push((
            TimingHistogram::Metric(name),
            format!("server_timing.metrics.{name}"),
            encoded,
        ));
    }
    for (which, field, encoded) in all {
        let hist = decode(deserializer, encoded, &field)?;
        recorder
            .add_server_timing_histogram(which, &hist)
            .map_err(|e| format!("field `{field}`: {e}"))?;
    }
    Ok(())
}

impl Encoder {
    /// `recorder`'s counters and histograms, stored.
    pub(crate) fn store(&mut self, recorder: &Recorder) -> io::Result<StoredRecorder> {
        let mut phases = BTreeMap::new();
        for m in PHASES {
            let h = recorder.histogram(m);
            if !h.is_empty() {
                phases.insert(m.name().to_string(), self.encode(h)?);
            }
        }
        Ok(StoredRecorder {
            counters: recorder.counters(),
            latency: self.encode(recorder.histogram(Metric::Latency))?,
            uncorrected: self.encode(recorder.histogram(Metric::Uncorrected))?,
            lag: self.encode(recorder.histogram(Metric::Lag))?,
            phases,
            steps_latency: self.encode_rows(recorder.steps())?,
            metrics_values: self.encode_rows(recorder.metrics())?,
            remote_latency: match recorder.routes() {
                Some(r) => self.encode_keyed(&r.remote)?,
                None => BTreeMap::new(),
            },
            local_latency: match recorder.routes() {
                Some(r) => self.encode_keyed(&r.local)?,
                None => BTreeMap::new(),
            },
            server_timing: match recorder.server_times() {
                Some(t) => Some(StoredServerTiming {
                    server: self.encode(t.server.values_us())?,
                    outside: self.encode(t.outside.values_us())?,
                    metrics: self.encode_keyed(&t.metrics)?,
                }),
                None => None,
            },
            messages: match recorder.messages() {
                Some(m) => Some(StoredMessages {
                    first_message: self.encode(m.first_message_us())?,
                    gaps: self.encode(m.gap_us())?,
                    round_trips: self.encode_some(m.round_trip_us())?,
                    round_trips_sent: self.encode_some(m.round_trip_sent_us())?,
                }),
                None => None,
            },
        })
    }
}
