//! Whether the server has drained after a step: what one step left queued at the server (the
//! requests of connections belier gave up on, a listen backlog of connections it closed) is
//! served after the step, and a step run on it would be judged on the last one's backlog.
//!
//! The caller probes the server before the search (its idle latency, the baseline), and after
//! each step until a few probes in a row answer at that latency again, for a bounded time. A
//! probe goes to the back of whatever queue is left, so its latency is that queue's length.
//! Deciding from the probes is here, on the caller's clock, so it is tested without a server.

use std::time::Duration;

/// Probes in a row that must answer at the idle latency.
pub const PROBES_IN_A_ROW: u32 = 3;

/// Probes before the search: their median is the idle latency.
pub const BASELINE_PROBES: usize = 5;

/// Pause between two probes, so that probing adds no load worth the name.
pub const PROBE_GAP: Duration = Duration::from_millis(100);

/// Latency a probe may add to the baseline and still count as idle, whatever the baseline: a
/// loaded machine delays a sub-millisecond answer by a few milliseconds, and a queue that
/// short drains in as little time.
pub const PROBE_SLACK: Duration = Duration::from_millis(5);

/// The idle latency from the baseline probes: their median (`None` when none answered).
pub fn baseline(latencies: &[Option<Duration>]) -> Option<Duration> {
    let mut answered: Vec<Duration> = latencies.iter().flatten().copied().collect();
    answered.sort();
    answered.get(answered.len().checked_sub(1)? / 2).copied()
}

/// The latency a probe must answer within to count as idle: twice the baseline, and at least
/// [`PROBE_SLACK`] above it.
pub fn idle_within(baseline: Duration) -> Duration {
    (baseline * 2).max(baseline + PROBE_SLACK)
}

/// Where the wait stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drain {
    /// Probe again after [`PROBE_GAP`].
    Waiting,
    /// The server answered at its idle latency from this time on (since the step's end).
    Drained(Duration),
    /// The longest wait ran out first.
    NotDrained,
}

/// The probes after one step, in order.
#[derive(Debug, Clone)]
pub struct DrainWatch {
    within: Duration,
    longest: Duration,
    in_a_row: u32,
    /// When the current run of idle probes started.
    since: Option<Duration>,
}

impl DrainWatch {
    /// Probes judged against `baseline`, for at most `longest` after the step.
    pub fn new(baseline: Duration, longest: Duration) -> DrainWatch {
        DrainWatch {
            within: idle_within(baseline),
            longest,
            in_a_row: 0,
            since: None,
        }
    }

    /// Takes a probe sent at `at` (since the step's end) and how long it took to answer
    /// (`None`: no answer, or not the answer the baseline probes had).
    pub fn probe(&mut self, at: Duration, latency: Option<Duration>) -> Drain {
        if latency.is_some_and(|l| l <= self.within) {
            self.in_a_row += 1;
            let since = *self.since.get_or_insert(at);
            if self.in_a_row >= PROBES_IN_A_ROW {
                return Drain::Drained(since);
            }
        } else {
            self.in_a_row = 0;
            self.since = None;
        }
        let done = at + latency.unwrap_or_default();
        if done + PROBE_GAP >= self.longest {
            Drain::NotDrained
        } else {
            Drain::Waiting
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_baseline_is_the_median_of_the_answers() {
        assert_eq!(
            baseline(&[Some(3 * MS), None, Some(MS), Some(9 * MS)]),
            Some(3 * MS)
        );
        assert_eq!(baseline(&[Some(2 * MS), Some(4 * MS)]), Some(2 * MS));
        assert_eq!(baseline(&[None, None]), None);
        assert_eq!(baseline(&[]), None);
        assert_eq!(idle_within(11 * MS), 22 * MS);
        assert_eq!(idle_within(MS / 2), MS / 2 + PROBE_SLACK);
    }

    /// A server of 4 handlers × 10 ms left with `backlog` requests: a probe at `t` waits for
    /// what is left of the backlog then, and is served in 11 ms.
    fn queued(backlog: u32, t: Duration) -> Duration {
        let left = (backlog as f64 * 2.5 - t.as_secs_f64() * 1000.0).max(0.0);
        Duration::from_secs_f64(left / 1000.0) + 11 * MS
    }

    /// Probes as the caller does: one after another, PROBE_GAP apart.
    fn wait(backlog: u32, longest: Duration) -> (Drain, u32) {
        let mut watch = DrainWatch::new(11 * MS, longest);
        let mut at = Duration::ZERO;
        for n in 1.. {
            let latency = queued(backlog, at);
            match watch.probe(at, Some(latency)) {
                Drain::Waiting => at += latency + PROBE_GAP,
                done => return (done, n),
            }
        }
        unreachable!()
    }

    #[test]
    fn a_backlog_is_waited_out_and_said_when() {
        // Nothing left: three probes, drained at once.
        assert_eq!(wait(0, 30 * 1000 * MS), (Drain::Drained(Duration::ZERO), 3));
        // 2,000 requests of 2.5 ms each: 5 s of backlog; the first probe waits behind all of
        // it, and the server answers at its idle latency from a little after 5 s.
        let (drain, _) = wait(2_000, 30 * 1000 * MS);
        let Drain::Drained(after) = drain else {
            panic!("{drain:?}");
        };
        assert!(after >= 5000 * MS && after < 5400 * MS, "{after:?}");
        // Not within 2 s.
        assert_eq!(wait(2_000, 2000 * MS).0, Drain::NotDrained);
    }

    #[test]
    fn a_slow_or_failed_probe_starts_the_count_again() {
        let mut w = DrainWatch::new(10 * MS, 10_000 * MS);
        let ms = |n: u32| n * MS;
        assert_eq!(w.probe(ms(0), Some(ms(12))), Drain::Waiting);
        assert_eq!(w.probe(ms(200), Some(ms(40))), Drain::Waiting);
        assert_eq!(w.probe(ms(400), Some(ms(12))), Drain::Waiting);
        assert_eq!(w.probe(ms(600), None), Drain::Waiting);
        assert_eq!(w.probe(ms(800), Some(ms(12))), Drain::Waiting);
        assert_eq!(w.probe(ms(1000), Some(ms(19))), Drain::Waiting);
        assert_eq!(w.probe(ms(1200), Some(ms(20))), Drain::Drained(ms(800)));
    }
}
