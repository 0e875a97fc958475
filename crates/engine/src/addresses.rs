//! Every address behind a name, and which one each new connection uses.
//!
//! A name behind DNS round robin, a headless Service or a load balancer's several addresses
//! answers with several records; connecting always to the first puts all the load on one
//! backend. [`Addresses`] keeps them all and hands one to each connection as it opens, by the
//! run's [`DnsPolicy`]. The choice is made per connection, not per request: a connection is
//! bound to its address for its life, as a backend sees it.
//!
//! With HTTP/2 a run opens few connections (one per `max_streams` users), so round robin
//! spreads connections, not requests: with fewer connections than addresses some addresses
//! get none. An open-loop run opens connections as its arrivals need them, each taking the
//! next address, so the spread follows how many each address's connections carry.

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Which of a name's addresses each new connection uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DnsPolicy {
    /// The first address the resolver gave, for every connection (what a libc client does).
    #[default]
    First,
    /// Each new connection the next address, in turn: with `c` connections over `k`
    /// addresses each address gets `c / k` (give or take one).
    RoundRobin,
    /// Each new connection an address drawn at random, evenly.
    Random,
}

impl DnsPolicy {
    /// The policy's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            DnsPolicy::First => "first",
            DnsPolicy::RoundRobin => "round-robin",
            DnsPolicy::Random => "random",
        }
    }
}

/// A name's addresses, shared by the run's workers, and the turn of the next connection.
#[derive(Debug)]
pub struct Addresses {
    list: Vec<SocketAddr>,
    policy: DnsPolicy,
    /// How many connections have taken an address (round robin's turn).
    taken: AtomicUsize,
}

impl Addresses {
    /// `list` (not empty) handed out by `policy`.
    pub fn new(list: Vec<SocketAddr>, policy: DnsPolicy) -> Addresses {
        assert!(!list.is_empty(), "a name's addresses are at least one");
        Addresses {
            list,
            policy,
            taken: AtomicUsize::new(0),
        }
    }

    /// The addresses, in the resolver's order.
    pub fn list(&self) -> &[SocketAddr] {
        &self.list
    }

    /// The address a new connection uses, and its index in [`Addresses::list`]. One relaxed
    /// atomic add: workers share the turn, so `c` connections opened by several threads still
    /// spread evenly.
    pub fn pick(&self) -> (usize, SocketAddr) {
        let i = match self.policy {
            DnsPolicy::First => 0,
            DnsPolicy::RoundRobin => self.taken.fetch_add(1, Ordering::Relaxed) % self.list.len(),
            DnsPolicy::Random => fastrand::usize(..self.list.len()),
        };
        (i, self.list[i])
    }
}

impl PartialEq for Addresses {
    /// The same addresses under the same policy, whatever the turn.
    fn eq(&self, other: &Addresses) -> bool {
        self.list == other.list && self.policy == other.policy
    }
}

impl Eq for Addresses {}

impl fmt::Display for Addresses {
    /// The addresses, comma-separated (`127.0.0.11:80,127.0.0.12:80`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, addr) in self.list.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            addr.fmt(f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn four(policy: DnsPolicy) -> Addresses {
        let list = (11..=14)
            .map(|i| SocketAddr::from(([127, 0, 0, i], 80)))
            .collect();
        Addresses::new(list, policy)
    }

    #[test]
    fn round_robin_gives_each_address_its_share() {
        let a = four(DnsPolicy::RoundRobin);
        let mut counts = [0; 4];
        for _ in 0..40 {
            counts[a.pick().0] += 1;
        }
        assert_eq!(counts, [10, 10, 10, 10]);
    }

    #[test]
    fn first_always_gives_the_first() {
        let a = four(DnsPolicy::First);
        assert!((0..10).all(|_| a.pick() == (0, a.list()[0])));
    }

    #[test]
    fn random_stays_among_the_addresses_and_reaches_each() {
        let a = four(DnsPolicy::Random);
        let mut counts = [0; 4];
        for _ in 0..4000 {
            let (i, addr) = a.pick();
            assert_eq!(addr, a.list()[i]);
            counts[i] += 1;
        }
        assert!(counts.iter().all(|&c| c > 0), "{counts:?}");
    }

    #[test]
    fn shows_every_address() {
        assert_eq!(
            four(DnsPolicy::First).to_string(),
            "127.0.0.11:80,127.0.0.12:80,127.0.0.13:80,127.0.0.14:80"
        );
    }
}
