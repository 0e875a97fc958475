//! The messages of streaming gRPC calls: how many went each way, how long a call's first
//! response message took to come, and the gaps between the next ones. A recorder keeps them
//! only once it has recorded a streaming call (boxed, absent otherwise), so that every other
//! run pays nothing for them, in memory or in its results files.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::histogram::{new_histogram, HISTOGRAM_SIGFIG};
use crate::latency::LatencySummary;
use crate::restore::RestoreError;

/// What one streaming call did, as the engine hands it to the recorder.
#[derive(Clone, Copy, Debug, Default)]
pub struct CallMessages<'a> {
    /// Request messages sent.
    pub sent: u64,
    /// Response messages received.
    pub received: u64,
    /// From the request's send to its first response message, complete; `None` when none
    /// came.
    pub first_message_us: Option<u64>,
    /// Between each response message after the first and the one before it, microseconds:
    /// `received - 1` of them (0 for messages read together).
    pub gaps_us: &'a [u64],
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
}

/// The messages of the streaming calls a recorder recorded.
#[derive(Clone, Debug)]
pub struct Messages {
    counts: MessageCounts,
    first_message_us: Histogram<u64>,
    gap_us: Histogram<u64>,
}

impl Messages {
    /// No call yet.
    pub(crate) fn new(counts: MessageCounts) -> Messages {
        Messages {
            counts,
            // A first message is timed as a first byte is, and compared with it.
            first_message_us: new_histogram(HISTOGRAM_SIGFIG),
            gap_us: new_histogram(HISTOGRAM_SIGFIG),
        }
    }

    pub(crate) fn record(&mut self, call: &CallMessages<'_>) {
        self.counts.calls += 1;
        self.counts.sent += call.sent;
        self.counts.received += call.received;
        if let Some(us) = call.first_message_us {
            self.first_message_us.saturating_record(us);
        }
        for &gap in call.gaps_us {
            self.gap_us.saturating_record(gap);
        }
    }

    pub(crate) fn add(&mut self, other: &Messages) {
        self.counts.calls += other.counts.calls;
        self.counts.sent += other.counts.sent;
        self.counts.received += other.counts.received;
        // Same bounds on both sides by construction, so `add` cannot fail.
        self.first_message_us
            .add(&other.first_message_us)
            .expect("message histograms share their bounds");
        self.gap_us
            .add(&other.gap_us)
            .expect("message histograms share their bounds");
    }

    pub(crate) fn reset(&mut self) {
        self.counts = MessageCounts::default();
        self.first_message_us.reset();
        self.gap_us.reset();
    }

    /// Adds stored histograms of first messages and gaps (results files).
    pub(crate) fn add_histograms(
        &mut self,
        first_message: &Histogram<u64>,
        gaps: &Histogram<u64>,
    ) -> Result<(), RestoreError> {
        let fit = |e| RestoreError(format!("a message histogram does not fit: {e:?}"));
        self.first_message_us.add(first_message).map_err(fit)?;
        self.gap_us.add(gaps).map_err(fit)
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

    /// Time from a call's send to its first response message, microseconds (calls that had
    /// one).
    pub fn first_message_us(&self) -> &Histogram<u64> {
        &self.first_message_us
    }

    /// Gaps between a call's consecutive response messages, microseconds.
    pub fn gap_us(&self) -> &Histogram<u64> {
        &self.gap_us
    }

    /// Summary of [`Messages::first_message_us`].
    pub fn first_message(&self) -> LatencySummary {
        LatencySummary::of(&self.first_message_us)
    }

    /// Summary of [`Messages::gap_us`].
    pub fn gaps(&self) -> LatencySummary {
        LatencySummary::of(&self.gap_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_add_up_and_merge() {
        let mut m = Messages::new(MessageCounts::default());
        m.record(&CallMessages {
            sent: 1,
            received: 3,
            first_message_us: Some(500),
            gaps_us: &[10, 0],
        });
        m.record(&CallMessages {
            sent: 1,
            ..CallMessages::default()
        });
        let counts = MessageCounts {
            calls: 2,
            sent: 2,
            received: 3,
        };
        assert_eq!(m.counts(), counts);
        assert_eq!((m.first_message().count, m.gaps().count), (1, 2));
        let mut both = m.clone();
        both.add(&m);
        assert_eq!(both.received(), 6);
        assert_eq!(both.gap_us().len(), 4);
        both.reset();
        assert_eq!(both.counts(), MessageCounts::default());
        assert!(both.gap_us().is_empty());
    }
}
