//! QUIC's own figures (HTTP/3 runs): how the connections' handshakes went, what they carried
//! as UDP datagrams, the packets the network lost, and how each connection ended. Counted per
//! connection, beside the requests' figures, which they must not blur: a lost packet delays a
//! request but fails none, and a connection's end is no request's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::restore::RestoreError;

/// The most distinct ends [`Quic::ended`] keeps: a server chooses its close codes, and a
/// hostile one could send a new code on every connection. Ends past these count as
/// [`OTHER_END`].
pub const MOST_ENDS: usize = 32;

/// The end counted for causes past the first [`MOST_ENDS`].
pub const OTHER_END: &str = "other";

/// The longest name of an end a stored record may hold.
const LONGEST_END: usize = 64;

/// What a run's QUIC connections did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quic {
    /// Handshakes that completed (each a connection that opened).
    pub handshakes: u64,
    /// Of those, connections whose requests went as 0-RTT early data and the server accepted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub early_accepted: u64,
    /// Connections whose early data the server refused (their requests went again).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub early_rejected: u64,
    /// UDP datagrams sent.
    pub datagrams_sent: u64,
    /// UDP datagrams received.
    pub datagrams_received: u64,
    /// System calls that sent them (fewer than datagrams when the kernel batches: GSO).
    pub sends: u64,
    /// System calls that received them (fewer than datagrams with GRO or batched reads).
    pub receives: u64,
    /// QUIC packets sent.
    pub packets_sent: u64,
    /// Packets QUIC's loss detection declared lost (their frames went again in new packets).
    pub packets_lost: u64,
    /// The bytes of those packets.
    pub bytes_lost: u64,
    /// Times the congestion controller cut its window for a loss.
    pub congestion_events: u64,
    /// Connections that ended, by cause: `idle_timeout`, `stateless_reset`, the server's close
    /// code by name (`H3_NO_ERROR`, `PROTOCOL_VIOLATION`, …), `goaway` and `request_rejected`
    /// (belier let go of it when the server said it was going away, or refused a request
    /// unprocessed), `belier_closed` (the run let go of it), `belier_error:NAME` (belier
    /// closed it on a protocol error of the server).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ended: BTreeMap<String, u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Quic {
    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.counts().all(|n| n == 0) && self.ended.is_empty()
    }

    /// Counts one connection's end under `cause`, or under [`OTHER_END`] once
    /// [`MOST_ENDS`] causes are kept.
    pub fn end(&mut self, cause: &str) {
        self.ends(cause, 1);
    }

    fn ends(&mut self, cause: &str, n: u64) {
        let key = if self.ended.contains_key(cause) || self.ended.len() < MOST_ENDS {
            cause
        } else {
            OTHER_END
        };
        *self.ended.entry(key.to_string()).or_default() += n;
    }

    /// Connections the server ended: every end but belier's own.
    pub fn ended_by_server(&self) -> u64 {
        self.ended
            .iter()
            .filter(|(cause, _)| !cause.starts_with("belier_"))
            .map(|(_, n)| n)
            .sum()
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &Quic) {
        self.handshakes += other.handshakes;
        self.early_accepted += other.early_accepted;
        self.early_rejected += other.early_rejected;
        self.datagrams_sent += other.datagrams_sent;
        self.datagrams_received += other.datagrams_received;
        self.sends += other.sends;
        self.receives += other.receives;
        self.packets_sent += other.packets_sent;
        self.packets_lost += other.packets_lost;
        self.bytes_lost += other.bytes_lost;
        self.congestion_events += other.congestion_events;
        for (cause, &n) in &other.ended {
            self.ends(cause, n);
        }
    }

    /// Refuses a stored record whose ends could not have been counted.
    pub(crate) fn check(&self) -> Result<(), RestoreError> {
        if self.ended.len() > MOST_ENDS + 1 {
            return Err(RestoreError(format!(
                "{} causes of QUIC connections' ends, more than the {MOST_ENDS} belier keeps",
                self.ended.len()
            )));
        }
        match self.ended.keys().find(|k| k.len() > LONGEST_END) {
            Some(k) => Err(RestoreError(format!(
                "a QUIC connection's end named with {} bytes, more than {LONGEST_END}",
                k.len()
            ))),
            None => Ok(()),
        }
    }

    /// Every count, for bounding a stored record.
    pub(crate) fn counts(&self) -> impl Iterator<Item = u64> + '_ {
        [
            self.handshakes,
            self.early_accepted,
            self.early_rejected,
            self.datagrams_sent,
            self.datagrams_received,
            self.sends,
            self.receives,
            self.packets_sent,
            self.packets_lost,
            self.bytes_lost,
            self.congestion_events,
        ]
        .into_iter()
        .chain(self.ended.values().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_and_ends_stay_bounded() {
        let mut a = Quic {
            handshakes: 2,
            datagrams_sent: 10,
            packets_lost: 1,
            ..Quic::default()
        };
        a.end("idle_timeout");
        let mut b = Quic {
            handshakes: 3,
            datagrams_sent: 5,
            ..Quic::default()
        };
        b.end("idle_timeout");
        b.end("idle_timeout");
        b.end("belier_closed");
        a.add(&b);
        assert_eq!((a.handshakes, a.datagrams_sent, a.packets_lost), (5, 15, 1));
        assert_eq!(a.ended["idle_timeout"], 3);
        assert_eq!(a.ended_by_server(), 3);
        assert!(a.check().is_ok());

        let mut hostile = Quic::default();
        for code in 0..100 {
            hostile.end(&format!("application 0x{code:x}"));
        }
        assert_eq!(hostile.ended.len(), MOST_ENDS + 1);
        assert_eq!(hostile.ended[OTHER_END], 100 - MOST_ENDS as u64);
        let mut merged = a.clone();
        merged.add(&hostile);
        assert_eq!(merged.ended.len(), MOST_ENDS + 1);
        let total: u64 = merged.ended.values().sum();
        assert_eq!(total, 4 + 100);
        assert!(merged.check().is_ok());

        merged.ended.insert("x".repeat(65), 1);
        assert!(merged.check().is_err());
    }

    #[test]
    fn nothing_counted_is_empty() {
        assert!(Quic::default().is_empty());
        let mut q = Quic::default();
        q.end("H3_NO_ERROR");
        assert!(!q.is_empty());
    }
}
