//! A recorder's counters and extremes in a form that stores and restores exactly (results
//! files); its histograms are stored apart, in HdrHistogram's own encoding.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::de::{Error as _, Unexpected};
use serde::{Deserialize, Deserializer, Serialize};

use super::{Recorder, STATUS_SLOTS};
use crate::custom::MetricRow;
use crate::error_kind::ErrorKind;
use crate::extremes::Range;
use crate::histogram::Metric;
use crate::messages::{MessageCounts, Messages};
use crate::restore::{check_rows, RestoreError};
use crate::routes::{AddressCounts, AddressRow, Routes};
use crate::sample::GRPC_CODES;
use crate::server_timing::{ServerTimes, StoredTiming, TimingHistogram};
use crate::step::{CheckCounts, StepCounts, StepRow};

/// Everything a recorder counts besides its histograms, in a form that stores and restores
/// exactly (results files).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Responses by status code.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "status_counts"
    )]
    pub status: BTreeMap<u16, u64>,
    /// gRPC calls by status code (absent from files of runs without gRPC).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "status_counts"
    )]
    pub grpc: BTreeMap<u8, u64>,
    /// Streaming gRPC calls' messages (absent from files of runs without them; their
    /// histograms are stored apart, see [`Recorder::messages`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<MessageCounts>,
    /// WebSocket sockets by the close code they ended with (absent from files of runs
    /// without WebSocket closes).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "status_counts"
    )]
    pub ws_closes: BTreeMap<u16, u64>,
    /// WebSocket sockets that offered permessage-deflate by what they agreed (absent from
    /// files of runs that offered none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ws_extensions: BTreeMap<String, u64>,
    /// Failed requests by error kind name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, u64>,
    /// An example message per error kind name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub examples: BTreeMap<String, String>,
    /// Wire bytes read.
    pub bytes_in: u64,
    /// Wire bytes written.
    pub bytes_out: u64,
    /// Response body bytes after content decoding (`--compressed`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes_decoded: u64,
    /// Connections opened.
    pub connections: u64,
    /// Open-loop arrivals due.
    #[serde(default)]
    pub scheduled: u64,
    /// Open-loop arrivals dropped.
    #[serde(default)]
    pub dropped: u64,
    /// The first TLS session's version, cipher and ALPN protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_session: Option<String>,
    /// Connections the server ended while belier meant to keep them.
    #[serde(default)]
    pub server_closes: u64,
    /// Requests sent again on a new connection after the server closed their first one
    /// unread (idle keep-alive close, HTTP/2 GOAWAY).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resent: u64,
    /// TLS handshakes that resumed an earlier session.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tls_resumed: u64,
    /// Responses timed by the kernel's receive stamps.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kernel_stamped: u64,
    /// Wake-ups of the generator's worker threads (voluntary context switches).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wakeups: u64,
    /// The exact smallest and largest value of each histogram, by metric name (absent from
    /// files written before they were kept: the histograms' own then stand in).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extremes: BTreeMap<String, Range>,
    /// Scripted users: counters of each step, by step number (their latency histograms are
    /// stored apart, see [`Recorder::steps`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepCounts>,
    /// Scripted users: counts of each check, by check number.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckCounts>,
    /// Scripted users: each custom metric's count (a counter's total, a trend's number of
    /// values), by metric number (trends' values are stored apart, see [`Recorder::metrics`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<u64>,
    /// Scripted users: iterations completed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub iterations: u64,
    /// Requests by server address (`127.0.0.11:80`), when the run spread its connections
    /// over several (their latency histograms are stored apart, see [`Recorder::routes`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub remote: BTreeMap<String, AddressCounts>,
    /// Requests by source address (`127.0.1.3`), likewise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub local: BTreeMap<String, AddressCounts>,
    /// Held connections (`--hold`): absent from files of runs that held none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<crate::Held>,
    /// QUIC's own figures (HTTP/3 runs): absent from files of runs without QUIC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<crate::Quic>,
    /// The server's own times (`--server-timing`): what became of the responses and each
    /// metric's number of figures (the histograms are stored apart, see
    /// [`Recorder::server_times`]). Absent from files of runs that did not read them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timing: Option<StoredTiming>,
    /// The slowest complete responses, slowest first (absent from files written before
    /// they were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exemplars: Vec<crate::Exemplar>,
    /// Scripted users: each step's slowest, by step number (absent without steps, and from
    /// files written before they were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_exemplars: Vec<Vec<crate::Exemplar>>,
}

/// Reads the status counts with their codes as text, the way a JSON object's keys are written,
/// and parses them. A results file's record reaches serde through `#[serde(flatten)]`, which
/// buffers the object and then offers its keys as text only, so `BTreeMap<u16, _>`'s own
/// reading (which asks for a number) would refuse them.
fn status_counts<'de, D, C>(d: D) -> Result<BTreeMap<C, u64>, D::Error>
where
    D: Deserializer<'de>,
    C: std::str::FromStr + Ord,
{
    BTreeMap::<String, u64>::deserialize(d)?
        .into_iter()
        .map(|(code, n)| match code.parse() {
            Ok(code) => Ok((code, n)),
            Err(_) => Err(D::Error::invalid_value(
                Unexpected::Str(&code),
                &"a status code",
            )),
        })
        .collect()
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Address rows' counts by the address written out.
fn stored_rows<A: ToString>(rows: &BTreeMap<A, AddressRow>) -> BTreeMap<String, AddressCounts> {
    rows.iter()
        .map(|(a, row)| (a.to_string(), row.counts))
        .collect()
}

/// Address rows from their stored counts, each address read back; `what` names them in errors.
fn restored_rows<A: std::str::FromStr + Ord>(
    stored: &BTreeMap<String, AddressCounts>,
    what: &str,
) -> Result<BTreeMap<A, AddressRow>, RestoreError> {
    stored
        .iter()
        .map(|(key, &counts)| Ok((parse_key(key, what)?, AddressRow::from_counts(counts))))
        .collect()
}

fn parse_key<A: std::str::FromStr>(key: &str, what: &str) -> Result<A, RestoreError> {
    key.parse()
        .map_err(|_| RestoreError(format!("'{key}' is not a {what}")))
}

/// Most requests, and most of any other count, one stored record may hold: 2^53, what ten
/// million requests a second make in 28 years. A file may claim anything; bounding each record
/// keeps the sums over a run's records and shards (thousands of records at the bound) inside
/// u64, whose overflow panics in a debug build and wraps in release.
const MOST_STORED: u64 = 1 << 53;

fn check_counts(c: &Counters) -> Result<(), RestoreError> {
    check_rows("step rows", c.steps.len())?;
    check_rows("metric rows", c.metrics.len())?;
    let requests = c
        .status
        .values()
        .chain(c.grpc.values())
        .chain(c.errors.values())
        .try_fold(0u64, |sum, &n| sum.checked_add(n))
        .unwrap_or(u64::MAX);
    let others = [
        c.bytes_in,
        c.bytes_out,
        c.bytes_decoded,
        c.connections,
        c.scheduled,
        c.dropped,
        c.server_closes,
        c.resent,
        c.tls_resumed,
        c.kernel_stamped,
        c.wakeups,
        c.iterations,
    ];
    let steps = c
        .steps
        .iter()
        .flat_map(|s| [s.requests, s.failures, s.bytes_in, s.bytes_out]);
    let checks = c.checks.iter().flat_map(|k| [k.passed, k.failed]);
    let messages = c.messages.iter().flat_map(|m| {
        [
            m.calls,
            m.sent,
            m.received,
            m.tokens,
            m.generated_tokens,
            m.reconnections,
            m.reconnections_with_id,
            m.reconnection_wait_us,
            m.reconnection_stops,
        ]
    });
    let addresses = c
        .remote
        .values()
        .chain(c.local.values())
        .flat_map(|a| [a.requests, a.errors, a.connections]);
    check_rows("address rows", c.remote.len() + c.local.len())?;
    check_rows("WebSocket extensions", c.ws_extensions.len())?;
    let largest = others
        .into_iter()
        .chain(addresses)
        .chain(steps)
        .chain(checks)
        .chain(messages)
        .chain(c.ws_closes.values().copied())
        .chain(c.ws_extensions.values().copied())
        .chain(c.metrics.iter().copied())
        .chain(c.held.iter().flat_map(crate::Held::counts))
        .chain(c.quic.iter().flat_map(crate::Quic::counts))
        .chain(c.server_timing.iter().flat_map(|t| t.counts.all()))
        .chain(
            c.server_timing
                .iter()
                .flat_map(|t| t.metrics.values().copied()),
        )
        .fold(requests, u64::max);
    if largest > MOST_STORED {
        return Err(RestoreError(format!(
            "a count of {largest} is more than one record can hold ({MOST_STORED})"
        )));
    }
    Ok(())
}

impl Recorder {
    /// The counters, for storing.
    pub fn counters(&self) -> Counters {
        Counters {
            status: self.status_counts().collect(),
            grpc: self.grpc_counts().collect(),
            messages: self.messages().map(Messages::counts),
            ws_closes: self
                .messages()
                .map(|m| m.closes().clone())
                .unwrap_or_default(),
            ws_extensions: self
                .messages()
                .map(|m| m.extensions().clone())
                .unwrap_or_default(),
            errors: ErrorKind::ALL
                .iter()
                .filter(|k| self.errors_of(**k) > 0)
                .map(|k| (k.name().to_string(), self.errors_of(*k)))
                .collect(),
            examples: ErrorKind::ALL
                .iter()
                .filter_map(|k| Some((k.name().to_string(), self.error_example(*k)?.to_string())))
                .collect(),
            bytes_in: self.bytes_in,
            bytes_out: self.bytes_out,
            bytes_decoded: self.bytes_decoded,
            connections: self.connections_opened,
            scheduled: self.scheduled,
            dropped: self.dropped,
            tls_session: self.tls_session.clone(),
            server_closes: self.server_closes,
            resent: self.resent,
            tls_resumed: self.tls_resumed,
            kernel_stamped: self.kernel_stamped,
            wakeups: self.wakeups,
            extremes: self.extremes.stored(),
            steps: self.steps.iter().map(|r| r.counts).collect(),
            checks: self.checks.clone(),
            metrics: self.metrics.iter().map(|m| m.counts).collect(),
            iterations: self.iterations,
            remote: self
                .routes()
                .map_or_else(BTreeMap::new, |r| stored_rows(&r.remote)),
            local: self
                .routes()
                .map_or_else(BTreeMap::new, |r| stored_rows(&r.local)),
            held: self.held().cloned(),
            quic: self.quic().cloned(),
            server_timing: self.server_times().map(ServerTimes::stored),
            exemplars: self.exemplars.all().to_vec(),
            step_exemplars: match self.step_exemplars.iter().all(|e| e.all().is_empty()) {
                true => Vec::new(),
                false => self
                    .step_exemplars
                    .iter()
                    .map(|e| e.all().to_vec())
                    .collect(),
            },
        }
    }

    /// Rebuilds a recorder from stored counters; histograms are added with
    /// [`Recorder::add_histogram`].
    pub fn from_counters(c: &Counters) -> Result<Recorder, RestoreError> {
        check_counts(c)?;
        let mut r = Recorder::new();
        for (&code, &n) in &c.status {
            let slot = usize::from(code);
            if slot >= STATUS_SLOTS {
                return Err(RestoreError(format!("status code {code} out of range")));
            }
            r.status[slot] = n;
        }
        for (&code, &n) in &c.grpc {
            let slot = usize::from(code);
            if slot >= GRPC_CODES {
                return Err(RestoreError(format!(
                    "gRPC status code {code} out of range"
                )));
            }
            r.grpc[slot] = n;
        }
        r.messages = c.messages.map(|m| Box::new(Messages::new(m)));
        if !c.ws_closes.is_empty() {
            r.messages_mut().add_closes(&c.ws_closes);
        }
        if !c.ws_extensions.is_empty() {
            r.messages_mut().add_extensions(&c.ws_extensions);
        }
        for (name, &n) in &c.errors {
            let kind = ErrorKind::from_name(name)
                .ok_or_else(|| RestoreError(format!("unknown error kind '{name}'")))?;
            r.errors[kind.index()] = n;
        }
        for (name, example) in &c.examples {
            let kind = ErrorKind::from_name(name)
                .ok_or_else(|| RestoreError(format!("unknown error kind '{name}'")))?;
            r.error_examples[kind.index()] = Some(example.clone());
        }
        check_rows("exemplars", c.exemplars.len())?;
        r.exemplars = crate::Exemplars::restored(&c.exemplars);
        check_rows("step exemplars", c.step_exemplars.len())?;
        for stored in &c.step_exemplars {
            check_rows("exemplars", stored.len())?;
        }
        r.step_exemplars = c
            .step_exemplars
            .iter()
            .map(|s| crate::Exemplars::restored(s))
            .collect();
        r.bytes_in = c.bytes_in;
        r.bytes_out = c.bytes_out;
        r.bytes_decoded = c.bytes_decoded;
        r.connections_opened = c.connections;
        r.scheduled = c.scheduled;
        r.dropped = c.dropped;
        r.tls_session.clone_from(&c.tls_session);
        r.server_closes = c.server_closes;
        r.resent = c.resent;
        r.tls_resumed = c.tls_resumed;
        r.kernel_stamped = c.kernel_stamped;
        r.wakeups = c.wakeups;
        for (name, &range) in &c.extremes {
            let metric = Metric::from_name(name)
                .ok_or_else(|| RestoreError(format!("unknown histogram '{name}'")))?;
            r.extremes.widen(metric, range);
        }
        r.steps = c
            .steps
            .iter()
            .map(|&counts| StepRow::from_counts(counts))
            .collect();
        r.checks.clone_from(&c.checks);
        r.metrics = c
            .metrics
            .iter()
            .map(|&n| MetricRow::from_counts(n))
            .collect();
        r.iterations = c.iterations;
        if !c.remote.is_empty() || !c.local.is_empty() {
            r.routes = Some(Box::new(Routes {
                remote: restored_rows(&c.remote, "server address")?,
                local: restored_rows(&c.local, "source address")?,
            }));
        }
        if let Some(held) = &c.held {
            held.check()?;
            r.held = Some(Box::new(held.clone()));
        }
        if let Some(quic) = &c.quic {
            quic.check()?;
            r.quic = Some(Box::new(quic.clone()));
        }
        if let Some(timing) = &c.server_timing {
            r.server_times = Some(Box::new(ServerTimes::restored(timing)?));
        }
        Ok(r)
    }

    /// Adds the values of a stored latency histogram to the row of address `addr` (a
    /// server's, `remote`, else a source's), which [`Recorder::from_counters`] made.
    pub fn add_route_histogram(
        &mut self,
        remote: bool,
        addr: &str,
        h: &Histogram<u64>,
    ) -> Result<(), RestoreError> {
        let routes = self.routes_mut();
        let row = match remote {
            true => parse_key(addr, "server address").map(|a| routes.remote.entry(a).or_default()),
            false => parse_key(addr, "source address").map(|a| routes.local.entry(a).or_default()),
        }?;
        row.add_values(h)
    }

    /// Adds the values of a stored histogram of the server's times (see
    /// [`Recorder::server_times`]) to its row, which [`Recorder::from_counters`] made.
    pub fn add_server_timing_histogram(
        &mut self,
        which: TimingHistogram<'_>,
        h: &Histogram<u64>,
    ) -> Result<(), RestoreError> {
        match &mut self.server_times {
            Some(times) => times.add_values(which, h),
            None => Err(RestoreError(
                "server timing histograms without their counts".into(),
            )),
        }
    }

    /// Adds the values of stored histograms of streaming calls' first messages, gaps, round
    /// trips and round trips from the actual send, in that order, to [`Recorder::messages`]'
    /// (their counts come with [`Recorder::from_counters`]).
    pub fn add_message_histograms(
        &mut self,
        stored: [&Histogram<u64>; 4],
    ) -> Result<(), RestoreError> {
        self.messages_mut().add_histograms(stored)
    }

    /// Adds the values of a stored histogram to `metric`'s.
    pub fn add_histogram(
        &mut self,
        metric: Metric,
        h: &Histogram<u64>,
    ) -> Result<(), RestoreError> {
        let mine = self.histogram_mut(metric);
        mine.add(h).map_err(|e| {
            RestoreError(format!("{} histogram does not fit: {e:?}", metric.name()))
        })?;
        // Stored without its exact range (an older file): the histogram's edges stand in.
        if self.extremes.of(metric).is_none() && !h.is_empty() {
            let min = if h.min() == 0 { h.min_nz() } else { h.min() };
            self.extremes.widen(metric, Range { min, max: h.max() });
        }
        Ok(())
    }
}
