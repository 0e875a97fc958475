//! Shards: one run split across `count` processes (machines, pods), each running shard
//! `index` of it, so that together they send exactly what the one-machine run sends.
//!
//! Everything a run numbers globally is dealt by the same rule, number `n` to shard
//! `n mod count` (k6's execution segments with equal segments):
//! - open-loop arrivals: shard `i` takes global arrivals `i, i+N, i+2N, …` of the one schedule
//!   (stages, ramps and Poisson gaps computed in global time), so each shard stays evenly
//!   spaced and the union of the shards' instants is the one-machine list;
//! - closed-loop connections (or users): slot `j` runs on shard `j mod N`, active wherever the
//!   global level is above `j`, so the shards' levels add up to the run's at every instant;
//! - budgets and caps (requests, iterations, connections, in-flight): shard `i` takes the
//!   count of the numbers below the total that are its own, which is [`crate::split`]'s share
//!   and adds up exactly;
//! - data rows a plan wants unique: row `r` belongs to shard `r mod N`.
//!
//! Within a shard, the workers (threads) split the shard's numbers the same way again
//! ([`Shard::stripe`]), so the shards may run different numbers of threads.

use std::fmt;
use std::str::FromStr;

/// Shard `index` (from 0) of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shard {
    index: u64,
    count: u64,
}

/// Why a shard cannot be made or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Not of the form `I/N`.
    #[error("expected I/N (shard I of N, e.g. 1/4), found `{0}`")]
    Syntax(String),
    /// No shard at all.
    #[error("the number of shards must be at least 1")]
    NoShards,
    /// The index is past the count.
    #[error("shard {number} of {count} does not exist: shards are numbered 1 to {count}")]
    OutOfRange {
        /// The number as given (from 1).
        number: u64,
        /// The count.
        count: u64,
    },
}

impl Shard {
    /// The whole run: shard 0 of 1.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` (from 0) of `count`.
    pub fn new(index: u64, count: u64) -> Result<Shard, ShardError> {
        if count == 0 {
            return Err(ShardError::NoShards);
        }
        if index >= count {
            return Err(ShardError::OutOfRange {
                number: index + 1,
                count,
            });
        }
        Ok(Shard { index, count })
    }

    /// This shard's index, from 0.
    pub fn index(self) -> u64 {
        self.index
    }

    /// How many shards the run is split into.
    pub fn count(self) -> u64 {
        self.count
    }

    /// Whether this is the whole run (one shard).
    pub fn is_whole(self) -> bool {
        self.count == 1
    }

    /// Whether global number `n` (arrival, connection slot, user, data row) is this shard's.
    pub fn owns(self, n: u64) -> bool {
        n % self.count == self.index
    }

    /// Of this shard's numbers, in order, the position of `n` (which it owns).
    pub fn local(self, n: u64) -> u64 {
        n / self.count
    }

    /// The global number of this shard's `local`-th number.
    pub fn global(self, local: u64) -> u64 {
        local * self.count + self.index
    }

    /// How many of the numbers `0..total` are this shard's: its share of a budget or a cap.
    /// The shares of all shards add up to `total` and differ by at most one.
    pub fn share(self, total: u64) -> u64 {
        total / self.count + u64::from(self.index < total % self.count)
    }

    /// Worker `worker` of `workers` within this shard takes the shard's numbers `worker,
    /// worker + workers, …`: globally the first is returned, then every `step`-th.
    pub fn stripe(self, worker: u64, workers: u64) -> Stripe {
        Stripe {
            first: self.global(worker),
            step: self.count * workers.max(1),
        }
    }
}

/// The global numbers `first, first + step, first + 2·step, …`: one worker's share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stripe {
    /// The first number.
    pub first: u64,
    /// The gap between two numbers.
    pub step: u64,
}

impl Stripe {
    /// Whether `n` is in the stripe.
    pub fn holds(self, n: u64) -> bool {
        n >= self.first && (n - self.first).is_multiple_of(self.step)
    }
}

impl Default for Shard {
    fn default() -> Self {
        Shard::WHOLE
    }
}

/// Written as the `--shard` flag reads it: `I/N`, numbered from 1 (`1/4` … `4/4`).
impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

/// Reads `I/N`, shards numbered from 1 as test runners number theirs (`--shard 1/4` …
/// `4/4`, Jest's and Playwright's convention), so a CI matrix of 1..N passes its numbers as
/// they are.
impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Shard, ShardError> {
        let syntax = || ShardError::Syntax(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(syntax)?;
        let number: u64 = i.trim().parse().map_err(|_| syntax())?;
        let count: u64 = n.trim().parse().map_err(|_| syntax())?;
        if count == 0 {
            return Err(ShardError::NoShards);
        }
        if number == 0 || number > count {
            return Err(ShardError::OutOfRange { number, count });
        }
        Shard::new(number - 1, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::split;

    #[test]
    fn reads_and_writes_one_based() {
        let s: Shard = "2/4".parse().unwrap();
        assert_eq!((s.index(), s.count()), (1, 4));
        assert_eq!(s.to_string(), "2/4");
        assert_eq!("1/1".parse::<Shard>().unwrap(), Shard::WHOLE);
        for bad in ["0/4", "5/4", "1/0", "x/4", "1", "1/4/2", "-1/4", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(
            "5/4".parse::<Shard>().unwrap_err().to_string(),
            "shard 5 of 4 does not exist: shards are numbered 1 to 4"
        );
    }

    #[test]
    fn shares_are_split_and_add_up() {
        for total in [0u64, 1, 2, 10, 1001] {
            for count in 1..12u64 {
                let shares: Vec<u64> = (0..count)
                    .map(|i| Shard::new(i, count).unwrap().share(total))
                    .collect();
                assert_eq!(shares, split(total, count as usize));
            }
        }
        // -c 10 over 4 shards: 3 + 3 + 2 + 2, slots 0,4,8 | 1,5,9 | 2,6 | 3,7.
        let owned = |i| {
            (0..10)
                .filter(|&j| Shard::new(i, 4).unwrap().owns(j))
                .count()
        };
        assert_eq!([owned(0), owned(1), owned(2), owned(3)], [3, 3, 2, 2]);
    }

    #[test]
    fn stripes_within_a_shard_cover_its_numbers_once() {
        let s = Shard::new(2, 3).unwrap();
        let mut got: Vec<u64> = (0..4)
            .flat_map(|w| {
                let st = s.stripe(w, 4);
                (0..5).map(move |k| st.first + k * st.step)
            })
            .collect();
        got.sort();
        let want: Vec<u64> = (0..20).map(|l| s.global(l)).collect();
        assert_eq!(got, want);
        assert!(got.iter().all(|&n| s.owns(n) && s.global(s.local(n)) == n));
    }
}

#[cfg(test)]
mod properties {
    use std::time::Duration;

    use proptest::prelude::*;

    use super::*;
    use crate::{Arrivals, Profile, Spacing, Stage};

    /// A random rate profile: a start level and up to four stages (ramps, holds, drops to 0),
    /// sometimes holding its last level.
    fn profile() -> impl Strategy<Value = Profile> {
        let stage = (1u64..3_000, 0.0f64..400.0).prop_map(|(ms, target)| Stage {
            duration: Duration::from_millis(ms),
            target,
        });
        (
            0.0f64..400.0,
            proptest::collection::vec(stage, 0..4),
            any::<bool>(),
        )
            .prop_map(|(start, stages, hold)| {
                let p = Profile::staged(start, stages);
                if hold {
                    p.then_hold()
                } else {
                    p
                }
            })
    }

    fn spacing() -> impl Strategy<Value = Spacing> {
        prop_oneof![
            Just(Spacing::Even),
            any::<u64>().prop_map(|seed| Spacing::Poisson { seed })
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The shards' arrival instants together are the one-machine list, whatever the
        /// profile, the bounds, the number of shards and each shard's threads.
        #[test]
        fn shards_together_are_the_whole_schedule(
            profile in profile(),
            spacing in spacing(),
            end_ms in 1u64..4_000,
            requests in proptest::option::of(0u64..1_500),
            count in 1u64..64,
            threads in 1u64..5,
        ) {
            let end = Some(Duration::from_millis(end_ms));
            let whole: Vec<Duration> =
                Arrivals::new(profile.clone(), spacing, end, requests, 0, 1).collect();
            let mut union = Vec::with_capacity(whole.len());
            for index in 0..count {
                let shard = Shard::new(index, count).unwrap();
                // Shards of one run may have different numbers of threads.
                let workers = 1 + (threads + index) % 4;
                let mut own = Vec::new();
                for w in 0..workers {
                    let stripe = shard.stripe(w, workers);
                    own.extend(Arrivals::striped(profile.clone(), spacing, end, requests, stripe));
                }
                // Each shard takes its share of the count: ⌊n/N⌋ or one more.
                prop_assert_eq!(own.len() as u64, shard.share(whole.len() as u64));
                union.extend(own);
            }
            union.sort();
            prop_assert_eq!(union, whole);
        }

        /// Budgets, caps and connection slots split across shards add up exactly, differ by
        /// at most one, and every slot has exactly one owner.
        #[test]
        fn budgets_and_slots_add_up(total in 0u64..1_000_000, count in 1u64..64) {
            let shards: Vec<Shard> = (0..count).map(|i| Shard::new(i, count).unwrap()).collect();
            let shares: Vec<u64> = shards.iter().map(|s| s.share(total)).collect();
            prop_assert_eq!(shares.iter().sum::<u64>(), total);
            prop_assert!(shares.iter().max().unwrap() - shares.iter().min().unwrap() <= 1);
            let slots = total.min(2_000);
            for n in 0..slots {
                prop_assert_eq!(shards.iter().filter(|s| s.owns(n)).count(), 1);
            }
            for s in &shards {
                prop_assert_eq!((0..slots).filter(|&n| s.owns(n)).count() as u64, s.share(slots));
            }
        }
    }
}
