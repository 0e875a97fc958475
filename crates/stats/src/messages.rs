//! The messages of streaming gRPC calls: how many went each way, how long a call's first
//! response message took to come, the gaps between the next ones, and, where each response
//! answers a request message in turn, their round trips. A recorder keeps them only once it
//! has recorded a streaming call (boxed, absent otherwise), so that every other run pays
//! nothing for them, in memory or in its results files.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::histogram::{new_histogram, DIAGNOSTIC_SIGFIG, HISTOGRAM_SIGFIG};
use crate::latency::LatencySummary;
use crate::restore::RestoreError;

/// What one streaming call did, as the engine hands it to the recorder.
#[derive(Clone, Copy, Debug)]
pub struct CallMessages<'a> {
    /// Request messages sent.
    pub sent: u64,
    /// Response messages received.
    pub received: u64,
    /// From the request's send to its first response message, complete; `None` when none
    /// came.
    pub first_message_us: Option<u64>,
    /// Between each response message after the first and the one before it: `received - 1`
    /// of them (0 for messages read together).
    pub gaps: &'a MessageTimes,
    /// From each request message to the response message that answered it, when each
    /// response answers one request message in turn (as many of them, none before its
    /// request); `None` when they do not correlate so.
    pub round_trips: Option<&'a MessageTimes>,
}

impl<'a> CallMessages<'a> {
    /// A call whose answers do not correlate with its requests (no round trips): `sent`
    /// messages out, `received` in, the first after `first_message_us`, `gaps` between them.
    pub fn one_way(
        sent: u64,
        received: u64,
        first_message_us: Option<u64>,
        gaps: &'a MessageTimes,
    ) -> CallMessages<'a> {
        CallMessages {
            sent,
            received,
            first_message_us,
            gaps,
            round_trips: None,
        }
    }
}

/// Times kept one by one in a call's [`MessageTimes`] before the rest go to a histogram.
pub const KEPT_TIMES: usize = 1024;

/// Times of one call's messages (its gaps, its round trips), microseconds, as they come: the
/// first [`KEPT_TIMES`] as they are (8 KiB), the rest in a histogram of the call's own at 1 %
/// ([`DIAGNOSTIC_SIGFIG`], 26 KiB, made only for a stream that long), so that a call holds
/// bounded memory however long it streams.
#[derive(Clone, Debug, Default)]
pub struct MessageTimes {
    kept: Vec<u64>,
    more: Option<Box<Histogram<u64>>>,
}

impl MessageTimes {
    /// One more time, microseconds.
    pub fn push(&mut self, us: u64) {
        if self.kept.len() < KEPT_TIMES {
            self.kept.push(us);
        } else {
            self.more
                .get_or_insert_with(|| Box::new(new_histogram(DIAGNOSTIC_SIGFIG)))
                .saturating_record(us);
        }
    }

    /// How many there were.
    pub fn len(&self) -> u64 {
        self.kept.len() as u64 + self.more.as_ref().map_or(0, |h| h.len())
    }

    /// Whether there was none.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// Forgets them, keeping the allocation of those kept.
    pub fn clear(&mut self) {
        self.kept.clear();
        self.more = None;
    }

    /// Records them in `h`.
    fn record_in(&self, h: &mut Histogram<u64>) {
        for &us in &self.kept {
            h.saturating_record(us);
        }
        if let Some(more) = &self.more {
            // Bounds alike (precision aside), so `add` cannot fail.
            h.add(&**more)
                .expect("message histograms share their bounds");
        }
    }
}

/// The streaming calls' message counts, as results files store them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageCounts {
    /// Streaming calls recorded, whatever their outcome.
    pub calls: u64,
    /// Request messages sent.
    pub sent: u64,
    /// Response messages received.
    pub received: u64,
    /// What a message is: a gRPC message, or a streamed body's event, chunk or token chunk
    /// (absent from the files of gRPC runs, and of runs before streamed bodies were read).
    #[serde(default, skip_serializing_if = "MessageUnit::is_grpc")]
    pub unit: MessageUnit,
    /// LLM streams: output tokens, as each stream's `usage.completion_tokens` gave them, or
    /// else its chunks with content (absent unless counted).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tokens: u64,
    /// LLM streams that had a first and a later token chunk: their tokens after the first
    /// chunk's (a stream's tokens less its first chunk's share, taken as one), and the time
    /// from their first chunk to their last, microseconds. Their ratio is a stream's output
    /// rate once it has started (genai-perf's "output token throughput per user").
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generated_tokens: u64,
    /// The time those tokens took (see `generated_tokens`), microseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generation_us: u64,
    /// SSE streams sent as a reconnection of the stream before them (`--sse-reconnect`)
    /// (absent unless counted).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reconnections: u64,
    /// Of those, the ones that carried a `Last-Event-ID`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reconnections_with_id: u64,
    /// The time those reconnections waited, from the end of the stream before them to their
    /// start (the server's `retry:`, or the run's delay), microseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reconnection_wait_us: u64,
    /// Responses that stopped reconnection as an `EventSource` stops it: not a 200 with
    /// `Content-Type: text/event-stream` (a 204 among them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reconnection_stops: u64,
}

/// What a streamed body adds beside its messages (see [`Recorder::record_body_stream`]).
///
/// [`Recorder::record_body_stream`]: crate::Recorder::record_body_stream
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamedBody {
    /// What its messages are.
    pub unit: MessageUnit,
    /// Its output tokens (LLM streams; 0 otherwise).
    pub tokens: u64,
    /// From its first message to its last, microseconds.
    pub first_to_last_us: u64,
    /// It was sent as a reconnection of the stream before it (`--sse-reconnect`).
    pub reconnection: Option<Reconnection>,
    /// Its response stopped reconnection (see [`MessageCounts::reconnection_stops`]).
    pub stopped_reconnection: bool,
}

/// How an SSE stream was sent as a reconnection (see [`StreamedBody::reconnection`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reconnection {
    /// It carried a `Last-Event-ID`.
    pub with_id: bool,
    /// From the end of the stream before it to its start, microseconds.
    pub waited_us: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What the messages of a recorder are, which the reports name them by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageUnit {
    /// A streaming gRPC call's messages.
    #[default]
    Grpc,
    /// A streamed body's Server-Sent Events (each ended by a blank line).
    Events,
    /// A streamed body's chunks, as each read brought them.
    Chunks,
    /// An LLM stream's chunks that carried output (`choices[].delta.content`).
    Tokens,
    /// A WebSocket's messages (`belier ws`): a call is a socket.
    #[serde(rename = "websocket")]
    WebSocket,
}

impl MessageUnit {
    /// Whether it is gRPC's (the default, left out of results files).
    pub fn is_grpc(&self) -> bool {
        *self == MessageUnit::Grpc
    }

    /// Whether they are a streamed response body's (`--stream`): events, chunks or tokens.
    pub fn is_streamed_body(self) -> bool {
        matches!(
            self,
            MessageUnit::Events | MessageUnit::Chunks | MessageUnit::Tokens
        )
    }

    /// What one is called, singular (`message`, `event`, `chunk`, `token`).
    pub fn singular(self) -> &'static str {
        match self {
            MessageUnit::Grpc | MessageUnit::WebSocket => "message",
            MessageUnit::Events => "event",
            MessageUnit::Chunks => "chunk",
            MessageUnit::Tokens => "token",
        }
    }
}

/// The messages of the streaming calls a recorder recorded.
#[derive(Clone, Debug)]
pub struct Messages {
    counts: MessageCounts,
    first_message_us: Histogram<u64>,
    gap_us: Histogram<u64>,
    round_trip_us: Histogram<u64>,
    /// The same round trips from each message's actual send (WebSocket).
    round_trip_sent_us: Histogram<u64>,
    /// WebSocket sockets by the close code they ended with (see [`Messages::closes`]).
    closes: BTreeMap<u16, u64>,
    /// WebSocket sockets that offered permessage-deflate by what they agreed (see
    /// [`Messages::extensions`]).
    extensions: BTreeMap<String, u64>,
}

impl Messages {
    /// No call yet.
    pub(crate) fn new(counts: MessageCounts) -> Messages {
        Messages {
            counts,
            // A first message is timed as a first byte is, and compared with it.
            first_message_us: new_histogram(HISTOGRAM_SIGFIG),
            gap_us: new_histogram(HISTOGRAM_SIGFIG),
            round_trip_us: new_histogram(HISTOGRAM_SIGFIG),
            round_trip_sent_us: new_histogram(HISTOGRAM_SIGFIG),
            closes: BTreeMap::new(),
            extensions: BTreeMap::new(),
        }
    }

    /// Records a socket's round trips timed from each message's actual send.
    pub(crate) fn record_sent_round_trips(&mut self, times: &MessageTimes) {
        times.record_in(&mut self.round_trip_sent_us);
    }

    /// A WebSocket ended with close code `code`.
    pub(crate) fn record_close(&mut self, code: u16) {
        *self.closes.entry(code).or_default() += 1;
    }

    /// Adds stored close counts (results files).
    pub(crate) fn add_closes(&mut self, closes: &BTreeMap<u16, u64>) {
        for (&code, &n) in closes {
            *self.closes.entry(code).or_default() += n;
        }
    }

    /// A WebSocket that offered permessage-deflate agreed to `extension` (its parameters, or
    /// `declined`).
    pub(crate) fn record_extension(&mut self, extension: &str) {
        match self.extensions.get_mut(extension) {
            Some(n) => *n += 1,
            None => {
                self.extensions.insert(extension.to_string(), 1);
            }
        }
    }

    /// Adds stored extension counts (results files).
    pub(crate) fn add_extensions(&mut self, extensions: &BTreeMap<String, u64>) {
        for (extension, &n) in extensions {
            *self.extensions.entry(extension.clone()).or_default() += n;
        }
    }

    /// Records a streamed body's messages and what `body` adds.
    pub(crate) fn record_body(&mut self, call: &CallMessages<'_>, body: &StreamedBody) {
        self.counts.unit = body.unit;
        self.counts.tokens += body.tokens;
        if let Some(r) = body.reconnection {
            self.counts.reconnections += 1;
            self.counts.reconnections_with_id += u64::from(r.with_id);
            self.counts.reconnection_wait_us += r.waited_us;
        }
        self.counts.reconnection_stops += u64::from(body.stopped_reconnection);
        if body.unit == MessageUnit::Tokens && call.received > 1 && body.first_to_last_us > 0 {
            // Tokens counted by chunk make one a chunk; by `usage`, the first chunk is taken
            // as one token too (its share is not told).
            self.counts.generated_tokens += body.tokens.saturating_sub(1);
            self.counts.generation_us += body.first_to_last_us;
        }
        self.record(call);
    }

    /// Records a WebSocket's messages (a call is a socket).
    pub(crate) fn record_socket(&mut self, call: &CallMessages<'_>) {
        self.counts.unit = MessageUnit::WebSocket;
        self.record(call);
    }

    pub(crate) fn record(&mut self, call: &CallMessages<'_>) {
        self.counts.calls += 1;
        self.counts.sent += call.sent;
        self.counts.received += call.received;
        if let Some(us) = call.first_message_us {
            self.first_message_us.saturating_record(us);
        }
        call.gaps.record_in(&mut self.gap_us);
        if let Some(round_trips) = call.round_trips {
            round_trips.record_in(&mut self.round_trip_us);
        }
    }

    pub(crate) fn add(&mut self, other: &Messages) {
        self.counts.calls += other.counts.calls;
        self.counts.sent += other.counts.sent;
        self.counts.received += other.counts.received;
        self.counts.tokens += other.counts.tokens;
        self.counts.generated_tokens += other.counts.generated_tokens;
        self.counts.generation_us += other.counts.generation_us;
        self.counts.reconnections += other.counts.reconnections;
        self.counts.reconnections_with_id += other.counts.reconnections_with_id;
        self.counts.reconnection_wait_us += other.counts.reconnection_wait_us;
        self.counts.reconnection_stops += other.counts.reconnection_stops;
        if !other.counts.unit.is_grpc() {
            self.counts.unit = other.counts.unit;
        }
        // Same bounds on both sides by construction, so `add` cannot fail.
        self.first_message_us
            .add(&other.first_message_us)
            .expect("message histograms share their bounds");
        self.gap_us
            .add(&other.gap_us)
            .expect("message histograms share their bounds");
        self.round_trip_us
            .add(&other.round_trip_us)
            .expect("message histograms share their bounds");
        self.round_trip_sent_us
            .add(&other.round_trip_sent_us)
            .expect("message histograms share their bounds");
        self.add_closes(&other.closes);
        self.add_extensions(&other.extensions);
    }

    pub(crate) fn reset(&mut self) {
        self.counts = MessageCounts::default();
        self.first_message_us.reset();
        self.gap_us.reset();
        self.round_trip_us.reset();
        self.round_trip_sent_us.reset();
        self.closes.clear();
        self.extensions.clear();
    }

    /// Adds stored histograms of first messages, gaps, round trips and round trips from
    /// the actual send (results files).
    pub(crate) fn add_histograms(
        &mut self,
        stored: [&Histogram<u64>; 4],
    ) -> Result<(), RestoreError> {
        let fit = |e| RestoreError(format!("a message histogram does not fit: {e:?}"));
        let [first_message, gaps, round_trips, round_trips_sent] = stored;
        self.first_message_us.add(first_message).map_err(fit)?;
        self.gap_us.add(gaps).map_err(fit)?;
        self.round_trip_us.add(round_trips).map_err(fit)?;
        self.round_trip_sent_us.add(round_trips_sent).map_err(fit)
    }

    /// The counts.
    pub fn counts(&self) -> MessageCounts {
        self.counts
    }

    /// Streaming calls recorded, whatever their outcome.
    pub fn calls(&self) -> u64 {
        self.counts.calls
    }

    /// Request messages sent.
    pub fn sent(&self) -> u64 {
        self.counts.sent
    }

    /// Response messages received.
    pub fn received(&self) -> u64 {
        self.counts.received
    }

    /// What a message is.
    pub fn unit(&self) -> MessageUnit {
        self.counts.unit
    }

    /// WebSocket sockets by the close code they ended with: the one belier sent when it
    /// closed (1000) or the server's, and 1006 for a connection that ended without a close
    /// frame (a code no peer sends, RFC 6455 §7.4.1). Sockets that never opened, or that the
    /// run's end cut, have none. Empty for other streams.
    pub fn closes(&self) -> &BTreeMap<u16, u64> {
        &self.closes
    }

    /// WebSocket sockets that offered permessage-deflate (`belier ws --deflate`) by what the
    /// server's answer agreed to: `permessage-deflate` and its parameters that differ from
    /// the defaults (`permessage-deflate; client_max_window_bits=12`), or `declined`. Sockets
    /// whose upgrade failed have none. Empty for other streams and sockets that offered none.
    pub fn extensions(&self) -> &BTreeMap<String, u64> {
        &self.extensions
    }

    /// LLM streams' output tokens.
    pub fn tokens(&self) -> u64 {
        self.counts.tokens
    }

    /// Time from a call's send to its first response message, microseconds (calls that had
    /// one).
    pub fn first_message_us(&self) -> &Histogram<u64> {
        &self.first_message_us
    }

    /// Gaps between a call's consecutive response messages, microseconds.
    pub fn gap_us(&self) -> &Histogram<u64> {
        &self.gap_us
    }

    /// Round trips from a request message to the response message that answered it,
    /// microseconds (calls whose messages correlate so).
    pub fn round_trip_us(&self) -> &Histogram<u64> {
        &self.round_trip_us
    }

    /// WebSocket round trips timed from each message's actual send rather than its intended
    /// one, microseconds: beside [`Messages::round_trip_us`], what a generator that measures
    /// from its own send shows (coordinated omission: a late send hides the wait).
    pub fn round_trip_sent_us(&self) -> &Histogram<u64> {
        &self.round_trip_sent_us
    }

    /// `statistic` of the message time `time`, µs (what a condition such as `ttft p99` or
    /// `itl mean` names); `None` when no such time was recorded.
    pub fn time_us(
        &self,
        time: belier_vocabulary::message_metric::MessageTime,
        statistic: belier_vocabulary::message_metric::Statistic,
    ) -> Option<f64> {
        use belier_vocabulary::message_metric::{MessageTime, Statistic};
        let h = match time {
            MessageTime::FirstMessage => &self.first_message_us,
            MessageTime::Gap => &self.gap_us,
            MessageTime::RoundTrip => &self.round_trip_us,
        };
        if h.is_empty() {
            return None;
        }
        Some(match statistic {
            Statistic::Percentile(p) => crate::value_at_percentile(h, p) as f64,
            Statistic::Mean => h.mean(),
            Statistic::Min => h.min() as f64,
            Statistic::Max => h.max() as f64,
        })
    }

    /// Summary of [`Messages::first_message_us`].
    pub fn first_message(&self) -> LatencySummary {
        LatencySummary::of(&self.first_message_us)
    }

    /// Summary of [`Messages::gap_us`].
    pub fn gaps(&self) -> LatencySummary {
        LatencySummary::of(&self.gap_us)
    }

    /// Summary of [`Messages::round_trip_us`].
    pub fn round_trips(&self) -> LatencySummary {
        LatencySummary::of(&self.round_trip_us)
    }

    /// Summary of [`Messages::round_trip_sent_us`].
    pub fn round_trips_sent(&self) -> LatencySummary {
        LatencySummary::of(&self.round_trip_sent_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(values: &[u64]) -> MessageTimes {
        let mut times = MessageTimes::default();
        values.iter().for_each(|&us| times.push(us));
        times
    }

    #[test]
    fn calls_add_up_and_merge() {
        let mut m = Messages::new(MessageCounts::default());
        m.record(&CallMessages {
            sent: 1,
            received: 3,
            first_message_us: Some(500),
            gaps: &times(&[10, 0]),
            round_trips: None,
        });
        m.record(&CallMessages {
            sent: 2,
            received: 2,
            first_message_us: None,
            gaps: &times(&[5]),
            round_trips: Some(&times(&[700, 800])),
        });
        let counts = MessageCounts {
            calls: 2,
            sent: 3,
            received: 5,
            ..MessageCounts::default()
        };
        assert_eq!(m.counts(), counts);
        let summaries = [m.first_message(), m.gaps(), m.round_trips()];
        assert_eq!(summaries.map(|s| s.count), [1, 3, 2]);
        let mut both = m.clone();
        both.add(&m);
        assert_eq!(both.received(), 10);
        assert_eq!(both.gap_us().len(), 6);
        assert_eq!(both.round_trip_us().len(), 4);
        both.reset();
        assert_eq!(both.counts(), MessageCounts::default());
        assert!(both.gap_us().is_empty());
    }

    #[test]
    fn streamed_bodies_count_their_tokens_merge_and_store_only_what_they_have() {
        let mut m = Messages::new(MessageCounts::default());
        let body = StreamedBody {
            unit: MessageUnit::Tokens,
            tokens: 40,
            first_to_last_us: 390_000,
            ..StreamedBody::default()
        };
        let gaps = times(&[10_000; 39]);
        let call = CallMessages::one_way(0, 40, Some(80_000), &gaps);
        m.record_body(&call, &body);
        let mut merged = Messages::new(MessageCounts::default());
        merged.add(&m);
        merged.add(&m);
        let c = merged.counts();
        assert_eq!(
            (c.unit, c.tokens, c.received),
            (MessageUnit::Tokens, 80, 80)
        );
        assert_eq!((c.generated_tokens, c.generation_us), (78, 780_000));
        let stored = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<MessageCounts>(&stored).unwrap(), c);
        // A gRPC run's counts are stored as before, and such files read as gRPC's.
        let grpc = MessageCounts {
            calls: 1,
            sent: 2,
            received: 3,
            ..MessageCounts::default()
        };
        let old = r#"{"calls":1,"sent":2,"received":3}"#;
        assert_eq!(serde_json::to_string(&grpc).unwrap(), old);
        assert_eq!(serde_json::from_str::<MessageCounts>(old).unwrap(), grpc);
    }

    #[test]
    fn reconnections_count_with_their_ids_waits_and_stops_and_merge() {
        let mut m = Messages::new(MessageCounts::default());
        let gaps = times(&[]);
        let call = CallMessages::one_way(0, 2, Some(1_000), &gaps);
        let sse = |reconnection, stopped_reconnection| StreamedBody {
            unit: MessageUnit::Events,
            reconnection,
            stopped_reconnection,
            ..StreamedBody::default()
        };
        m.record_body(&call, &sse(None, false));
        let with_id = Reconnection {
            with_id: true,
            waited_us: 50_000,
        };
        m.record_body(&call, &sse(Some(with_id), false));
        let without = Reconnection {
            with_id: false,
            waited_us: 3_000,
        };
        m.record_body(&call, &sse(Some(without), true));
        let mut merged = m.clone();
        merged.add(&m);
        let c = merged.counts();
        assert_eq!(
            (
                c.reconnections,
                c.reconnections_with_id,
                c.reconnection_wait_us,
                c.reconnection_stops
            ),
            (4, 2, 106_000, 2)
        );
        let stored = serde_json::to_string(&c).unwrap();
        assert!(stored.contains(r#""reconnections":4,"reconnections_with_id":2"#));
        assert_eq!(serde_json::from_str::<MessageCounts>(&stored).unwrap(), c);
    }

    #[test]
    fn a_long_stream_s_times_past_those_kept_go_to_a_histogram_and_all_are_counted() {
        let long: Vec<u64> = (0..3 * KEPT_TIMES as u64).map(|i| 1_000 + i % 7).collect();
        let g = times(&long);
        assert_eq!((g.len(), g.kept.len()), (long.len() as u64, KEPT_TIMES));
        let mut m = Messages::new(MessageCounts::default());
        m.record(&CallMessages {
            sent: 1,
            received: long.len() as u64 + 1,
            first_message_us: Some(9),
            gaps: &g,
            round_trips: None,
        });
        let summary = m.gaps();
        assert_eq!(summary.count, long.len() as u64);
        // Within the spill's 1 %.
        assert!((1_000..=1_016).contains(&summary.max_us), "{summary:?}");
        assert!((1_000..=1_006).contains(&summary.min_us), "{summary:?}");
        let mut g = g;
        g.clear();
        assert_eq!((g.is_empty(), g.len()), (true, 0));
    }
}
