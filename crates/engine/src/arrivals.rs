//! When each request of an open-loop run is due.
//!
//! Arrival `k` (counting from 0 across the whole run) is due when the profile's cumulative
//! count reaches `k` (even spacing) or reaches the `k`-th point of a unit-rate Poisson process
//! (exponential gaps, rescaled by the profile so the rate follows it). Worker `w` of `W` takes
//! arrivals `w, w+W, w+2W, …`, so the union over workers is exactly the single-thread schedule:
//! nothing is dropped, doubled or drifted by splitting. A shard of a run split across
//! processes takes its stripe of the global numbers the same way, and its workers stripes of
//! that ([`Shard::stripe`]).

use std::time::Duration;

use crate::shard::{Shard, Stripe};
use crate::Profile;

/// How arrivals are spaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spacing {
    /// Evenly: the gap is exactly 1/rate.
    Even,
    /// Exponential gaps (a Poisson process) from a seeded generator, so a run can be repeated.
    Poisson {
        /// Seed of the generator.
        seed: u64,
    },
}

/// Guards the floor of the expected count against floating-point error (199.9999999 → 200).
const COUNT_EPSILON: f64 = 1e-9;

/// The due times of one worker's share of the arrivals, as offsets from the start of the run.
#[derive(Clone, Debug)]
pub struct Arrivals {
    profile: Profile,
    spacing: Spacing,
    /// Expected count at the end of the run (`∞` when unbounded).
    expected_total: f64,
    /// Most arrivals across all workers (and shards).
    limit: u64,
    /// The global arrival numbers this worker takes.
    stripe: Stripe,
    /// Next global arrival number.
    k: u64,
    rng: Option<fastrand::Rng>,
    /// Poisson: the unit-rate process's current point.
    point: f64,
    /// The run's own end and request budget, which bound the count whatever the profile.
    end: Option<Duration>,
    requests: Option<u64>,
    /// `k`, `point` and the generator before the last arrival was taken, to take it back.
    before: (u64, f64, Option<fastrand::Rng>),
}

impl Arrivals {
    /// Worker `worker`'s share (of `workers`) of arrivals that follow `profile` until `end`,
    /// at most `requests` of them in all.
    pub fn new(
        profile: Profile,
        spacing: Spacing,
        end: Option<Duration>,
        requests: Option<u64>,
        worker: usize,
        workers: usize,
    ) -> Self {
        let stripe = Shard::WHOLE.stripe(worker as u64, workers as u64);
        Arrivals::striped(profile, spacing, end, requests, stripe)
    }

    /// The arrivals of `stripe` (one worker of one shard, see [`Shard::stripe`]) among those
    /// that follow `profile` until `end`, at most `requests` of them across the whole run.
    pub fn striped(
        profile: Profile,
        spacing: Spacing,
        end: Option<Duration>,
        requests: Option<u64>,
        stripe: Stripe,
    ) -> Self {
        let rng = match spacing {
            Spacing::Even => None,
            Spacing::Poisson { seed } => Some(fastrand::Rng::with_seed(seed)),
        };
        let mut arrivals = Arrivals {
            profile,
            spacing,
            expected_total: f64::INFINITY,
            limit: u64::MAX,
            stripe,
            k: 0,
            rng: rng.clone(),
            point: 0.0,
            end,
            requests,
            before: (0, 0.0, rng),
        };
        arrivals.bound();
        arrivals
    }

    /// The expected count and the most arrivals, from the profile, the end and the budget.
    fn bound(&mut self) {
        let end = match (self.end, self.profile.end()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.expected_total = end.map_or(f64::INFINITY, |e| self.profile.cumulative(e));
        self.limit = self.requests.unwrap_or(u64::MAX);
        if self.spacing == Spacing::Even && self.expected_total.is_finite() {
            // Arrival k is due where the cumulative count reaches k, so those due before the
            // end are k < expected_total: 1/s for 3.5 s is 0, 1, 2 and 3 s; 100/s for 2 s is
            // 200, the last at 1.99 s.
            self.limit = self
                .limit
                .min((self.expected_total - COUNT_EPSILON).ceil().max(0.0) as u64);
        }
    }

    /// Follows `profile` from here on: a steered run's (see [`Profile::steered`]), the same
    /// up to the moment it was steered, so the arrivals already taken stay where they were
    /// and every worker, steered alike, still takes its exact share.
    pub fn steer(&mut self, profile: Profile) {
        self.profile = profile;
        self.bound();
    }

    /// Takes back the arrival the last [`Iterator::next`] gave, so that the next call gives it
    /// again (after [`Arrivals::steer`], at its time under the new profile).
    pub fn take_back(&mut self) {
        let (k, point, rng) = self.before.clone();
        self.k = k;
        self.point = point;
        self.rng = rng;
    }

    /// Total arrivals of an evenly spaced run across all workers, if bounded: exactly
    /// ⌈∫ rate⌉ over the run (those due before its end), or the request budget if smaller.
    pub fn even_total(
        profile: &Profile,
        end: Option<Duration>,
        requests: Option<u64>,
    ) -> Option<u64> {
        let a = Arrivals::new(profile.clone(), Spacing::Even, end, requests, 0, 1);
        (a.limit != u64::MAX).then_some(a.limit)
    }
}

impl Iterator for Arrivals {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        self.before = (self.k, self.point, self.rng.clone());
        match self.spacing {
            Spacing::Even => {
                let k = if self.k == 0 {
                    self.stripe.first
                } else {
                    self.k
                };
                if k >= self.limit {
                    return None;
                }
                self.k = k + self.stripe.step;
                self.profile.time_of_cumulative(k as f64)
            }
            Spacing::Poisson { .. } => {
                let rng = self
                    .rng
                    .as_mut()
                    .expect("Poisson arrivals have a generator");
                // Every worker (of every shard) draws the whole sequence and keeps its own
                // share, so the union is the single-thread sequence whatever the number of
                // workers and shards: one exponential variate per arrival of the whole run.
                loop {
                    let k = self.k;
                    if k >= self.limit {
                        return None;
                    }
                    self.k += 1;
                    // Exp(1) gap: −ln(1 − U), with U in [0, 1) so the log is finite.
                    self.point += -(1.0 - rng.f64()).ln();
                    if self.point >= self.expected_total {
                        self.limit = k;
                        return None;
                    }
                    if self.stripe.holds(k) {
                        return self.profile.time_of_cumulative(self.point);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Stage;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    fn all(
        profile: &Profile,
        spacing: Spacing,
        end: Option<Duration>,
        n: Option<u64>,
        workers: usize,
    ) -> Vec<Duration> {
        let mut v: Vec<Duration> = (0..workers)
            .flat_map(|w| Arrivals::new(profile.clone(), spacing, end, n, w, workers))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn constant_rate_gives_exact_counts_and_gaps() {
        let p = Profile::constant(100.0);
        let v = all(&p, Spacing::Even, Some(secs(2.0)), None, 1);
        assert_eq!(v.len(), 200);
        assert_eq!(v[0], Duration::ZERO);
        assert_eq!(v[1], secs(0.01));
        assert!(v.last().unwrap() < &secs(2.0));
        // Fractional products: every arrival due before the end, the ceiling of rate ×
        // duration (1/s for 3.5 s: at 0, 1, 2 and 3 s).
        for (rate, d, want) in [
            (3.3, 1.0, 4),
            (2.5, 2.0, 5),
            (0.5, 3.0, 2),
            (1.0, 3.5, 4),
            (10.0, 1.0, 10),
            (0.1, 31.0, 4),
            (1000.0 / 3.0, 3.0, 1000),
        ] {
            let n = all(
                &Profile::constant(rate),
                Spacing::Even,
                Some(secs(d)),
                None,
                1,
            )
            .len();
            assert_eq!(n, want, "rate {rate} for {d}s");
            assert_eq!(
                Arrivals::even_total(&Profile::constant(rate), Some(secs(d)), None),
                Some(want as u64)
            );
        }
        // The request budget caps the count.
        assert_eq!(
            all(&p, Spacing::Even, Some(secs(2.0)), Some(50), 1).len(),
            50
        );
        assert_eq!(Arrivals::even_total(&p, None, None), None);
    }

    #[test]
    fn splitting_across_workers_is_exactly_the_single_thread_schedule() {
        let p = Profile::staged(
            10.0,
            vec![Stage {
                duration: secs(3.0),
                target: 500.0,
            }],
        );
        for spacing in [Spacing::Even, Spacing::Poisson { seed: 42 }] {
            let one = all(&p, spacing, None, None, 1);
            for workers in [2, 3, 7] {
                assert_eq!(
                    all(&p, spacing, None, None, workers),
                    one,
                    "{spacing:?} × {workers}"
                );
            }
        }
    }

    #[test]
    fn ramps_follow_the_profile() {
        // 0 → 200/s over 2 s: the first second gets a quarter of the 200 arrivals.
        let p = Profile::staged(
            0.0,
            vec![Stage {
                duration: secs(2.0),
                target: 200.0,
            }],
        );
        let v = all(&p, Spacing::Even, None, None, 1);
        assert_eq!(v.len(), 200);
        assert_eq!(v.iter().filter(|t| **t < secs(1.0)).count(), 50);
    }

    #[test]
    fn poisson_mean_rate_and_reproducibility() {
        let p = Profile::constant(1000.0);
        let v = all(&p, Spacing::Poisson { seed: 7 }, None, Some(5_000), 1);
        assert_eq!(v.len(), 5_000);
        let rate = 5_000.0 / v.last().unwrap().as_secs_f64();
        assert!((rate / 1000.0 - 1.0).abs() < 0.03, "rate {rate}");
        assert_eq!(
            all(&p, Spacing::Poisson { seed: 7 }, None, Some(5_000), 1),
            v
        );
        assert_ne!(
            all(&p, Spacing::Poisson { seed: 8 }, None, Some(5_000), 1),
            v
        );
        // Gaps are exponential: their coefficient of variation is about 1 (even spacing: 0).
        let gaps: Vec<f64> = v.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        let cv = var.sqrt() / mean;
        assert!((0.9..1.1).contains(&cv), "cv {cv}");
        // Bounded by time too.
        let w = all(&p, Spacing::Poisson { seed: 7 }, Some(secs(1.0)), None, 1);
        assert!((900..1100).contains(&w.len()), "{}", w.len());
        assert!(w.iter().all(|t| *t < secs(1.0)));
    }

    #[test]
    fn steered_workers_still_take_the_exact_schedule() {
        // 100/s steered to 300/s at 1 s, 2 s in all: 100 + 300 arrivals, whatever the
        // workers and wherever each was when the change came.
        for spacing in [Spacing::Even, Spacing::Poisson { seed: 7 }] {
            let base = Profile::constant(100.0);
            let steered = base.steered(secs(1.0), 300.0);
            let whole: Vec<Duration> = all(&steered, spacing, Some(secs(2.0)), None, 1);
            if spacing == Spacing::Even {
                assert_eq!(whole.len(), 400);
            }
            for workers in [1, 2, 3] {
                let mut union = Vec::new();
                for w in 0..workers {
                    let mut a =
                        Arrivals::new(base.clone(), spacing, Some(secs(2.0)), None, w, workers);
                    // Each worker learns of the change at 0.9 s, holding its next arrival,
                    // which it takes back and takes again under the new profile.
                    for t in a.by_ref() {
                        if t >= secs(0.9) {
                            break;
                        }
                        union.push(t);
                    }
                    a.take_back();
                    a.steer(steered.clone());
                    union.extend(a);
                }
                union.sort();
                assert_eq!(union, whole, "{spacing:?} over {workers} workers");
            }
        }
    }

    #[test]
    fn a_paused_schedule_has_no_arrival_until_it_is_steered_again() {
        let mut a = Arrivals::new(Profile::constant(10.0), Spacing::Even, None, None, 0, 1);
        let paused = Profile::constant(10.0).steered(secs(1.0), 0.0);
        a.steer(paused.clone());
        // 0, 0.1, …, 1.0 s: the pause starts after the arrival due as it begins.
        assert_eq!(a.by_ref().count(), 11);
        a.take_back();
        a.steer(paused.steered(secs(3.0), 10.0));
        let next = a.next().unwrap().as_secs_f64();
        assert!((next - 3.1).abs() < 1e-9, "{next}");
    }
}
