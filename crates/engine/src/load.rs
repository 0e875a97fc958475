//! How load is generated: a closed loop of connections or an open loop of arrivals.

use std::time::Duration;

use crate::arrivals::Spacing;
use crate::profile::Profile;

/// How load is generated.
#[derive(Clone, Debug, PartialEq)]
pub enum Load {
    /// Closed loop: a number of connections (constant or following the profile, which then
    /// ramps users up and down), each sending its next request as soon as the previous one
    /// finished. Connection `j` is active while the profile's level is above `j`.
    Closed {
        /// Active connections over time.
        connections: Profile,
    },
    /// Open loop: requests are due at the instants the rate profile sets, whatever the
    /// responses do; latency counts from those instants.
    Open {
        /// Requests per second over time.
        rate: Profile,
        /// Even or Poisson spacing.
        spacing: Spacing,
        /// Connections are opened as needed up to this many; beyond it requests queue.
        max_connections: usize,
        /// Requests due while this many are in flight are dropped (counted, never sent).
        max_in_flight: Option<u64>,
    },
}

impl Load {
    /// Most connections the load can open at once.
    pub fn max_connections(&self) -> usize {
        match self {
            Load::Closed { connections } => connections.peak().ceil() as usize,
            Load::Open {
                max_connections, ..
            } => *max_connections,
        }
    }

    /// When the load profile itself ends, if it does.
    pub fn end(&self) -> Option<Duration> {
        match self {
            Load::Closed { connections } => connections.end(),
            Load::Open { rate, .. } => rate.end(),
        }
    }
}
