//! The figures of streamed messages a condition may name, one table for plan thresholds,
//! capacity SLOs and `belier compare --fail-if`: gRPC streams, WebSocket messages and SSE or
//! LLM token streams all record the same three times and two counts.
//!
//! | canonical       | aliases  | what                                              |
//! |-----------------|----------|---------------------------------------------------|
//! | `first_message` | `ttft`   | from a call's start to its first message (token, event) |
//! | `gap`           | `itl`    | between a call's consecutive messages (inter-token latency) |
//! | `round_trip`    | `ws_rtt` | from a message sent to the reply that answered it |
//! | `messages_received`, `messages_sent` | | messages counted each way   |
//! | `received_per_s`, `sent_per_s`       | | messages per second of the run each way |
//!
//! A time takes a statistic, after a space or `_`: `ttft p99`, `itl_p50`, `round_trip max`
//! (`pNN`, `median`, `mean`/`avg`, `min`, `max`), and a duration as its limit (`500ms`).

use std::fmt;

/// A time measured on the messages of streaming calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageTime {
    /// From a call's start to its first response message: time to first token or event.
    FirstMessage,
    /// Between a call's consecutive response messages: inter-token latency.
    Gap,
    /// From a request message to the response message that answered it.
    RoundTrip,
}

/// Every name of a [`MessageTime`], each canonical name before its alias.
pub const TIME_NAMES: [(&str, MessageTime); 6] = [
    ("first_message", MessageTime::FirstMessage),
    ("ttft", MessageTime::FirstMessage),
    ("gap", MessageTime::Gap),
    ("itl", MessageTime::Gap),
    ("round_trip", MessageTime::RoundTrip),
    ("ws_rtt", MessageTime::RoundTrip),
];

/// Why a message figure has nothing to judge when the run made no streaming calls.
pub const NO_MESSAGES: &str = "the run recorded no streamed messages";

impl MessageTime {
    /// The canonical name: `first_message`, `gap`, `round_trip`.
    pub fn name(self) -> &'static str {
        match self {
            MessageTime::FirstMessage => "first_message",
            MessageTime::Gap => "gap",
            MessageTime::RoundTrip => "round_trip",
        }
    }

    /// Why this time has nothing to judge in a run that did make streaming calls.
    pub fn missing(self) -> &'static str {
        match self {
            MessageTime::FirstMessage => "no streaming call received a message",
            MessageTime::Gap => "no streaming call received a second message",
            MessageTime::RoundTrip => "no reply answered a message one for one",
        }
    }
}

/// What a condition reads of a time's values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Statistic {
    /// A percentile, 0–100 (`p99`, `p99.9`, `median`).
    Percentile(f64),
    /// The mean (`mean`, `avg`).
    Mean,
    /// The lowest.
    Min,
    /// The highest.
    Max,
}

impl Statistic {
    /// `p99`, `median`, `mean`, `avg`, `min`, `max`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Statistic> {
        Some(match text {
            "mean" | "avg" => Statistic::Mean,
            "min" => Statistic::Min,
            "max" => Statistic::Max,
            _ => Statistic::Percentile(crate::condition::percentile(text)?),
        })
    }
}

impl fmt::Display for Statistic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statistic::Percentile(p) => write!(f, "p{p}"),
            Statistic::Mean => f.write_str("mean"),
            Statistic::Min => f.write_str("min"),
            Statistic::Max => f.write_str("max"),
        }
    }
}

/// Which way messages went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Response messages received.
    Received,
    /// Request messages sent.
    Sent,
}

/// A figure of streamed messages, as a condition names it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MessageMetric {
    /// A statistic of a time.
    Time {
        /// Which time.
        time: MessageTime,
        /// The name as written (one of [`TIME_NAMES`]), so a verdict speaks the user's words.
        name: &'static str,
        /// Which statistic of it.
        statistic: Statistic,
    },
    /// How many messages went one way.
    Count(Direction),
    /// Messages per second of the run, one way.
    Rate(Direction),
}

/// Every name of a count or a rate.
pub const COUNT_NAMES: [(&str, MessageMetric); 4] = [
    (
        "messages_received",
        MessageMetric::Count(Direction::Received),
    ),
    ("messages_sent", MessageMetric::Count(Direction::Sent)),
    ("received_per_s", MessageMetric::Rate(Direction::Received)),
    ("sent_per_s", MessageMetric::Rate(Direction::Sent)),
];

const STATISTICS: &str = "p50, p99, p99.9…, median, mean, min or max";

impl MessageMetric {
    /// Reads a metric as written before a comparison: `ttft p99`, `itl_p50`,
    /// `first_message max`, `messages_received`. `Ok(None)` when it names no message figure
    /// (the caller's own metrics remain); `Err`, naming the text, when it names one wrongly
    /// (`ttft` without a statistic, `ttft q99`).
    pub fn parse(text: &str) -> Result<Option<MessageMetric>, String> {
        let text = text.trim();
        if let Some(&(_, m)) = COUNT_NAMES.iter().find(|(n, _)| *n == text) {
            return Ok(Some(m));
        }
        let Some(&(name, time)) = TIME_NAMES.iter().find(|(n, _)| {
            text.strip_prefix(n)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '_']))
        }) else {
            return Ok(None);
        };
        let rest = text[name.len()..].trim_start_matches('_').trim();
        if rest.is_empty() {
            return Err(format!(
                "`{text}` needs a statistic ({STATISTICS}), e.g. `{name} p99`"
            ));
        }
        let statistic = Statistic::parse(rest).ok_or_else(|| {
            format!("`{text}`: unknown statistic `{rest}` of {name} (expected {STATISTICS})")
        })?;
        Ok(Some(MessageMetric::Time {
            time,
            name,
            statistic,
        }))
    }

    /// The same figure under its canonical name (`ttft p99` is `first_message p99`).
    pub fn canonical(self) -> MessageMetric {
        match self {
            MessageMetric::Time {
                time, statistic, ..
            } => MessageMetric::Time {
                time,
                name: time.name(),
                statistic,
            },
            other => other,
        }
    }
}

impl fmt::Display for MessageMetric {
    /// As a verdict names it: `ttft p99`, `messages_received`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MessageMetric::Time {
                name, statistic, ..
            } => write!(f, "{name} {statistic}"),
            other => {
                let name = COUNT_NAMES
                    .iter()
                    .find(|(_, m)| m == other)
                    .map_or("messages", |(n, _)| n);
                f.write_str(name)
            }
        }
    }
}

#[cfg(test)]
mod tests;
