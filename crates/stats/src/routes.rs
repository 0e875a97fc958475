//! Requests by the addresses their connections joined: the server address each went to
//! (every address of a name, `--resolve` with several) and the source address it came from
//! (`--local-address`). One row per address, with its requests, errors, connections and the
//! latency of its complete responses, so that a report can show how the load spread and how
//! each backend fared. Recorded only when a run spreads its connections so (a recorder of any
//! other run keeps both tables empty), merged by address across workers and shards.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};

use crate::row::{Row, RowCounts};
use crate::sample::{Outcome, Sample};

/// What went over the connections of one address: counts, and the latency of its complete
/// responses (microseconds from the intended start).
pub type AddressRow = Row<AddressCounts>;

/// An address row's counts, in a form that stores and restores exactly (results files).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddressCounts {
    /// Requests sent over its connections, whatever their outcome.
    pub requests: u64,
    /// Those that ended without a complete response (an error kind).
    pub errors: u64,
    /// Connections opened to (or from) it.
    pub connections: u64,
}

impl RowCounts for AddressCounts {
    const KIND: &'static str = "address";

    fn merge(&mut self, other: &AddressCounts) {
        self.requests += other.requests;
        self.errors += other.errors;
        self.connections += other.connections;
    }
}

/// The two ends of the connection a request went over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// The server's address.
    pub remote: SocketAddr,
    /// The source address (its port aside).
    pub local: IpAddr,
}

/// The address tables of a recorder.
#[derive(Clone, Debug, Default)]
pub struct Routes {
    /// By server address.
    pub remote: BTreeMap<SocketAddr, AddressRow>,
    /// By source address.
    pub local: BTreeMap<IpAddr, AddressRow>,
}

impl Routes {
    /// Records `sample`, which went over a connection `route` joined; `opened`: the request
    /// opened that connection.
    pub(crate) fn record(&mut self, sample: &Sample, route: Route, opened: bool) {
        let answered = !matches!(sample.outcome, Outcome::Error(_));
        let latency = sample.latency_us();
        // A connect that failed before a source was bound has none to count under.
        let local =
            (!route.local.is_unspecified()).then(|| self.local.entry(route.local).or_default());
        for row in std::iter::once(self.remote.entry(route.remote).or_default()).chain(local) {
            row.counts.requests += 1;
            row.counts.errors += u64::from(!answered);
            row.counts.connections += u64::from(opened);
            if answered {
                row.record_value_us(latency);
            }
        }
    }

    /// Adds `other`'s rows, address by address.
    pub(crate) fn add(&mut self, other: &Routes) {
        for (addr, row) in &other.remote {
            *self.remote.entry(*addr).or_default() += row;
        }
        for (addr, row) in &other.local {
            *self.local.entry(*addr).or_default() += row;
        }
    }

    /// Empties the rows, keeping them (and their histograms) for the next interval.
    pub(crate) fn reset(&mut self) {
        self.remote.values_mut().for_each(AddressRow::reset);
        self.local.values_mut().for_each(AddressRow::reset);
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.remote
            .values()
            .chain(self.local.values())
            .all(|r| r.counts.requests == 0)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn each_request_counts_under_both_its_addresses_and_rows_merge_by_address() {
        let now = Instant::now();
        let ok = Sample::simulated(now, 0, 2_000, Outcome::Response { status: 200 });
        let failed = Sample::simulated(
            now,
            0,
            9_000,
            Outcome::Error(crate::ErrorKind::ConnectRefused),
        );
        let a: SocketAddr = "127.0.0.11:80".parse().unwrap();
        let b: SocketAddr = "127.0.0.12:80".parse().unwrap();
        let from: IpAddr = "127.0.1.1".parse().unwrap();
        let mut routes = Routes::default();
        routes.record(
            &ok,
            Route {
                remote: a,
                local: from,
            },
            true,
        );
        routes.record(
            &ok,
            Route {
                remote: a,
                local: from,
            },
            false,
        );
        routes.record(
            &failed,
            Route {
                remote: b,
                local: from,
            },
            true,
        );
        let counts = |row: &AddressRow| {
            (
                row.counts.requests,
                row.counts.errors,
                row.counts.connections,
            )
        };
        assert_eq!(counts(&routes.remote[&a]), (2, 0, 1));
        assert_eq!(counts(&routes.remote[&b]), (1, 1, 1));
        assert_eq!(counts(&routes.local[&from]), (3, 1, 2));
        // Only complete responses are timed.
        assert_eq!(routes.remote[&b].values_us().len(), 0);
        assert_eq!(routes.local[&from].values_us().len(), 2);
        let mut both = routes.clone();
        both.add(&routes);
        assert_eq!(counts(&both.remote[&a]), (4, 0, 2));
        both.reset();
        assert!(both.is_empty());
        assert!(!routes.is_empty());
    }
}
