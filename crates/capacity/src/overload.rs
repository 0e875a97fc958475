//! How a service behaves past its capacity, and whether it comes back below it.
//!
//! Each overload step is classified on its judged window; the service's behaviour is the worst
//! of them (a service that sheds at 1.25× and collapses at 2× collapses):
//! - `crashes`: most connections refused, the server gone;
//! - `collapses`: goodput under half the goodput at capacity, or most requests time out or
//!   break, or requests break while the latency holds (the excess is neither rejected with a
//!   status nor queued);
//! - `slows`: the excess queues: the step's p99 grows past the SLO's latency;
//! - `sheds`: the excess is answered fast with an error status (429 or 503 above all) while
//!   goodput holds above half the goodput at capacity.
//!
//! Every judgement is on goodput, what the server served (responses with a status below 400),
//! never on what it answered: a fast 503 is no capacity.
//!
//! A shedding server keeps less than all of its capacity at first: with nothing queued, an
//! arrival turned away a moment before a handler frees up is goodput lost (belier's test
//! server with `--queue 0` keeps 85 % of it at 1.25×). So goodput only has to stay clear of a
//! collapse; what tells shedding from slowing is the latency.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Goodput below this share of the capacity has collapsed.
pub const GOODPUT_COLLAPSED: f64 = 0.5;
/// Share of requests refused, or broken, beyond which the server is gone or has collapsed.
pub const MOSTLY: f64 = 0.5;
/// The latency a rejection must beat when no SLO bounds latency.
pub const FAST_REJECTION_US: f64 = 1_000_000.0;

/// The behaviour past capacity, from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Behaviour {
    /// It rejects the excess fast and serves its capacity.
    Sheds,
    /// It queues the excess: latency grows past the SLO.
    Slows,
    /// Goodput falls, or requests time out and break.
    Collapses,
    /// It refuses connections, or is gone.
    Crashes,
}

impl Behaviour {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Behaviour::Sheds => "sheds",
            Behaviour::Slows => "slows",
            Behaviour::Collapses => "collapses",
            Behaviour::Crashes => "crashes",
        }
    }

    /// What it means, in a few words for reports.
    pub fn note(self) -> &'static str {
        match self {
            Behaviour::Sheds => "serves its capacity and rejects the excess fast",
            Behaviour::Slows => "queues the excess: latency grows past the SLO",
            Behaviour::Collapses => "goodput falls, or requests time out and break",
            Behaviour::Crashes => "connections refused: the server is gone",
        }
    }
}

/// What an overload step's judged window showed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OverloadStep {
    /// Arrivals per second offered.
    pub offered: f64,
    /// Successful responses (status below 400) per second.
    pub goodput: f64,
    /// Requests in the window.
    pub requests: u64,
    /// Responses 429 and 503, gRPC calls RESOURCE_EXHAUSTED and UNAVAILABLE: rejected by the
    /// service.
    pub rejected: u64,
    /// p99 latency of the rejections, µs, when there were any.
    pub rejected_p99_us: Option<u64>,
    /// Connections refused.
    pub refused: u64,
    /// Requests that timed out, were reset or closed without a complete response.
    pub broken: u64,
}

impl OverloadStep {
    /// This step's behaviour, against the goodput at capacity (`capacity`, per second) and
    /// the SLO's latency bound (µs).
    pub fn behaviour(&self, capacity: f64, latency_bound_us: Option<f64>) -> Behaviour {
        let share = |n: u64| n as f64 / self.requests.max(1) as f64;
        let fast = |us: Option<u64>| {
            us.is_some_and(|p99| (p99 as f64) < latency_bound_us.unwrap_or(FAST_REJECTION_US))
        };
        if share(self.refused) > MOSTLY {
            Behaviour::Crashes
        } else if self.goodput < GOODPUT_COLLAPSED * capacity || share(self.broken) > MOSTLY {
            Behaviour::Collapses
        } else if self.rejected > 0 && fast(self.rejected_p99_us) {
            Behaviour::Sheds
        } else if self.broken > 0 && fast(self.rejected_p99_us) {
            // It failed fast, on requests that broke: the excess was neither turned away with
            // a status nor queued (latency held), so it does not slow; its requests break. (A
            // target that closes the connection on the excess, searched to a low answer on a
            // loaded host, broke less than half of its overload steps and fell to `slows`
            // here, without a look at the latency.)
            Behaviour::Collapses
        } else {
            Behaviour::Slows
        }
    }
}

/// The service's behaviour over the overload steps that failed the SLOs: the worst; `None`
/// when none did (the caller leaves out the steps that met them).
pub fn classify(
    capacity: f64,
    latency_bound_us: Option<f64>,
    steps: &[OverloadStep],
) -> Option<Behaviour> {
    steps
        .iter()
        .map(|s| s.behaviour(capacity, latency_bound_us))
        .max()
}

/// Whether the service came back below its capacity after the overload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Recovery {
    /// The recovery step met the SLOs, judged on its window as a whole like every step (a
    /// last interval of stragglers does not undo a step that passed).
    pub recovered: bool,
    /// How long after the last overload step the server answered probes at its idle latency
    /// again; `None` when it did not within the longest wait, or was not probed.
    pub drained_after: Option<Duration>,
    /// Whether the server was probed after the last overload step.
    pub probed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(goodput: f64, rejected: u64, rejected_p99_us: Option<u64>) -> OverloadStep {
        OverloadStep {
            offered: 2_000.0,
            goodput,
            requests: 20_000,
            rejected,
            rejected_p99_us,
            refused: 0,
            broken: 0,
        }
    }

    #[test]
    fn each_behaviour_from_its_figures() {
        let c = 1_000.0;
        let bound = Some(30_000.0);
        // Serves (most of) its capacity, rejects the rest in 2 ms.
        assert_eq!(
            step(980.0, 9_000, Some(2_000)).behaviour(c, bound),
            Behaviour::Sheds
        );
        assert_eq!(
            step(850.0, 9_000, Some(2_000)).behaviour(c, bound),
            Behaviour::Sheds
        );
        // Rejections as slow as the SLO allows are no shedding.
        assert_eq!(
            step(980.0, 9_000, Some(40_000)).behaviour(c, bound),
            Behaviour::Slows
        );
        // Serves its capacity, queues the rest.
        assert_eq!(
            step(950.0, 0, Some(400_000)).behaviour(c, bound),
            Behaviour::Slows
        );
        // Goodput fell under half.
        assert_eq!(
            step(300.0, 9_000, Some(2_000)).behaviour(c, bound),
            Behaviour::Collapses
        );
        let broken = OverloadStep {
            broken: 15_000,
            ..step(950.0, 0, None)
        };
        assert_eq!(broken.behaviour(c, bound), Behaviour::Collapses);
        let refused = OverloadStep {
            refused: 19_000,
            ..step(0.0, 0, None)
        };
        assert_eq!(refused.behaviour(c, bound), Behaviour::Crashes);
        // Without a latency SLO, a rejection within a second is fast.
        assert_eq!(
            step(980.0, 10, Some(500_000)).behaviour(c, None),
            Behaviour::Sheds
        );
    }

    #[test]
    fn requests_broken_fast_are_no_slowing() {
        let c = 1_000.0;
        let bound = Some(100_000.0);
        // A third of the step broke (closed before a response) while the rest were served
        // within the SLO's latency: the excess broke, nothing queued.
        let closed = OverloadStep {
            broken: 7_000,
            ..step(1_000.0, 0, Some(46_000))
        };
        assert_eq!(closed.behaviour(c, bound), Behaviour::Collapses);
        // Without a latency SLO, fast is within a second.
        assert_eq!(closed.behaviour(c, None), Behaviour::Collapses);
        // The same breaks in a queue whose latency grew past the SLO's: it slows (its
        // requests time out waiting).
        let queued = OverloadStep {
            broken: 7_000,
            ..step(950.0, 0, Some(400_000))
        };
        assert_eq!(queued.behaviour(c, bound), Behaviour::Slows);
        // Fast rejections beside a few breaks: it sheds.
        let shed = OverloadStep {
            broken: 100,
            ..step(980.0, 9_000, Some(2_000))
        };
        assert_eq!(shed.behaviour(c, bound), Behaviour::Sheds);
    }

    #[test]
    fn the_worst_step_names_the_behaviour() {
        let steps = [step(980.0, 9_000, Some(2_000)), step(300.0, 0, None)];
        assert_eq!(classify(1_000.0, None, &steps), Some(Behaviour::Collapses));
        assert_eq!(classify(1_000.0, None, &steps[..1]), Some(Behaviour::Sheds));
        assert_eq!(classify(1_000.0, None, &[]), None);
    }
}
