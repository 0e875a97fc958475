//! What a search varies: the request rate (the default), the iteration rate of a plan's
//! scripted users, the number of concurrent connections of a closed loop, or the rate of new
//! connections (one request each, so a TLS handshake each over https). The search's maths is
//! the same for all four; what differs is the unit a level is read in, whether levels are whole
//! numbers, and how a step's level becomes a load (the caller's job).

use serde::{Deserialize, Serialize};

/// The quantity a capacity search varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// Requests per second, an open loop.
    #[default]
    Rate,
    /// A plan's iterations per second, an open loop of scripted users.
    IterationRate,
    /// Concurrent connections, each sending its next request when the last one is answered.
    Connections,
    /// New connections per second, one request each (no keep-alive).
    ConnectionRate,
    /// Connections held open beside a load at a fixed rate (`--hold`): how many the server
    /// keeps while the load still meets the SLOs.
    HeldConnections,
}

impl Dimension {
    /// Its name as `--dimension` and JSON spell it.
    pub fn name(self) -> &'static str {
        match self {
            Dimension::Rate => "rate",
            Dimension::IterationRate => "iteration-rate",
            Dimension::Connections => "connections",
            Dimension::ConnectionRate => "connection-rate",
            Dimension::HeldConnections => "held-connections",
        }
    }

    /// Whether levels are whole numbers (connections are).
    pub fn whole(self) -> bool {
        matches!(self, Dimension::Connections | Dimension::HeldConnections)
    }

    /// Whether a level is a rate: the load is an open loop at that rate, and what a step
    /// sent is a rate to compare with it.
    pub fn is_rate(self) -> bool {
        !self.whole()
    }

    /// A level with its unit: `1,880/s`, `1,880 iterations/s`, `64 connections`, `300
    /// connections/s`.
    pub fn level(self, level: f64) -> String {
        let n = number(level);
        match self {
            Dimension::Rate => format!("{n}/s"),
            Dimension::IterationRate => format!("{n} iterations/s"),
            Dimension::Connections => {
                format!("{n} connection{}", if level == 1.0 { "" } else { "s" })
            }
            Dimension::ConnectionRate => format!("{n} connections/s"),
            Dimension::HeldConnections => {
                format!("{n} held connection{}", if level == 1.0 { "" } else { "s" })
            }
        }
    }

    /// The unit of a level, for a table's or a chart's heading: `req/s`, `iterations/s`,
    /// `connections`, `connections/s`.
    pub fn unit(self) -> &'static str {
        match self {
            Dimension::Rate => "req/s",
            Dimension::IterationRate => "iterations/s",
            Dimension::Connections => "connections",
            Dimension::ConnectionRate => "connections/s",
            Dimension::HeldConnections => "held connections",
        }
    }
}

/// A level or a rate with thousands separators, and one decimal below 100 unless whole:
/// `1,880`, `12.5`, `64` (the vocabulary's level format).
pub use belier_vocabulary::format::level as number;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_read_with_their_unit() {
        assert_eq!(Dimension::Rate.level(1_880.4), "1,880/s");
        assert_eq!(Dimension::Rate.level(12.5), "12.5/s");
        assert_eq!(Dimension::Rate.level(10.0), "10/s");
        assert_eq!(Dimension::IterationRate.level(40.0), "40 iterations/s");
        assert_eq!(Dimension::Connections.level(64.0), "64 connections");
        assert_eq!(Dimension::Connections.level(1.0), "1 connection");
        assert_eq!(Dimension::ConnectionRate.level(300.0), "300 connections/s");
        assert_eq!(
            Dimension::HeldConnections.level(45.0),
            "45 held connections"
        );
        assert!(Dimension::HeldConnections.whole() && !Dimension::HeldConnections.is_rate());
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(number(1_880.4), "1,880");
        assert_eq!(number(1_234_567.0), "1,234,567");
        assert_eq!(number(12.5), "12.5");
        assert_eq!(number(100.0), "100");
        assert_eq!(number(7.0), "7");
    }
}
