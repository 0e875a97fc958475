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
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

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
///
/// The list may be replaced while the run goes (`Config::dns_ttl`): connections opened after
/// take from the new one, those open stay where they are. A connection reads the list under a
/// read lock once, as it opens; requests never touch it.
#[derive(Debug)]
pub struct Addresses {
    list: RwLock<Arc<[SocketAddr]>>,
    policy: DnsPolicy,
    /// How many connections have taken an address (round robin's turn).
    taken: AtomicUsize,
    /// This process's part of the turn: its `n`-th connection is the run's `first + n × step`-th
    /// (a shard's connections are striped over the run's), so shards on several workers
    /// together go round the addresses as one process would.
    first: usize,
    step: usize,
    /// How many times a lookup answered another set of addresses.
    changes: AtomicU64,
}

impl Addresses {
    /// `list` (not empty) handed out by `policy`.
    pub fn new(list: Vec<SocketAddr>, policy: DnsPolicy) -> Addresses {
        assert!(!list.is_empty(), "a name's addresses are at least one");
        Addresses {
            list: RwLock::new(list.into()),
            policy,
            taken: AtomicUsize::new(0),
            first: 0,
            step: 1,
            changes: AtomicU64::new(0),
        }
    }

    /// The same, for `shard` of the run: its connections take the turns of the run's
    /// connections it holds.
    pub fn striped(mut self, shard: crate::Shard) -> Addresses {
        self.first = shard.index() as usize;
        self.step = shard.count().max(1) as usize;
        self
    }

    /// The addresses, in the resolver's order.
    pub fn list(&self) -> Arc<[SocketAddr]> {
        self.list.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Takes `fresh` (not empty) as the addresses if it is another set than the one held
    /// (order aside: a resolver may rotate its answers), counting the change; true if it was.
    pub fn replace(&self, fresh: Vec<SocketAddr>) -> bool {
        let sorted = |l: &[SocketAddr]| {
            let mut l = l.to_vec();
            l.sort_unstable();
            l
        };
        let mut held = self.list.write().unwrap_or_else(|e| e.into_inner());
        if fresh.is_empty() || sorted(&held) == sorted(&fresh) {
            return false;
        }
        *held = fresh.into();
        self.changes.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// The first address of the other family than `addr`'s (IPv4, IPv6), if the name has
    /// one: where happy eyeballs falls back to.
    pub fn other_family(&self, addr: SocketAddr) -> Option<SocketAddr> {
        let list = self.list.read().unwrap_or_else(|e| e.into_inner());
        list.iter().find(|a| a.is_ipv4() != addr.is_ipv4()).copied()
    }

    /// How many times the addresses changed while the run went.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }

    /// The address a new connection uses, and its index in [`Addresses::list`]. One relaxed
    /// atomic add: workers share the turn, so `c` connections opened by several threads still
    /// spread evenly.
    pub fn pick(&self) -> (usize, SocketAddr) {
        let list = self.list.read().unwrap_or_else(|e| e.into_inner());
        let i = match self.policy {
            DnsPolicy::First => 0,
            DnsPolicy::RoundRobin => {
                let n = self.taken.fetch_add(1, Ordering::Relaxed);
                self.first.wrapping_add(n.wrapping_mul(self.step)) % list.len()
            }
            DnsPolicy::Random => fastrand::usize(..list.len()),
        };
        (i, list[i])
    }
}

impl PartialEq for Addresses {
    /// The same addresses under the same policy, whatever the turn.
    fn eq(&self, other: &Addresses) -> bool {
        self.list() == other.list() && self.policy == other.policy
    }
}

impl Eq for Addresses {}

impl fmt::Display for Addresses {
    /// The addresses, comma-separated (`127.0.0.11:80,127.0.0.12:80`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, addr) in self.list().iter().enumerate() {
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
    fn shards_together_go_round_as_one() {
        let mut counts = [0; 4];
        for index in 0..3 {
            let a = four(DnsPolicy::RoundRobin).striped(crate::Shard::new(index, 3).unwrap());
            // -c 12 over 3 shards: 4 connections each.
            for _ in 0..4 {
                counts[a.pick().0] += 1;
            }
        }
        assert_eq!(counts, [3, 3, 3, 3]);
        let a = four(DnsPolicy::RoundRobin).striped(crate::Shard::new(1, 2).unwrap());
        let picked: Vec<usize> = (0..4).map(|_| a.pick().0).collect();
        assert_eq!(picked, [1, 3, 1, 3], "global connections 1, 3, 5, 7");
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
    fn a_new_set_is_taken_and_counted_a_reordered_one_is_not() {
        let a = four(DnsPolicy::RoundRobin);
        let mut rotated = a.list().to_vec();
        rotated.rotate_left(1);
        assert!(!a.replace(rotated));
        assert_eq!(a.changes(), 0);
        let fifth = SocketAddr::from(([127, 0, 0, 15], 80));
        assert!(a.replace(vec![fifth]));
        assert_eq!(a.changes(), 1);
        assert!((0..4).all(|_| a.pick() == (0, fifth)));
        assert!(
            !a.replace(Vec::new()),
            "an empty answer keeps the addresses held"
        );
    }

    #[test]
    fn shows_every_address() {
        assert_eq!(
            four(DnsPolicy::First).to_string(),
            "127.0.0.11:80,127.0.0.12:80,127.0.0.13:80,127.0.0.14:80"
        );
    }
}
