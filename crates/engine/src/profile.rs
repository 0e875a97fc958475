//! A level that changes over time: a request rate (open loop) or a number of active
//! connections (closed loop). It starts at a level and moves through stages, each ramping
//! linearly to its target over its duration (k6's stages, JMeter's ramp-up).
//!
//! All functions are pure and take time as an argument, so they are table-tested.

use std::time::Duration;

/// One stage: reach `target` linearly over `duration`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stage {
    /// How long the ramp lasts.
    pub duration: Duration,
    /// Level at the end of the stage.
    pub target: f64,
}

/// A piecewise-linear level over time.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    start: f64,
    stages: Vec<Stage>,
    /// Keep the last level after the last stage instead of ending there.
    hold: bool,
}

impl Profile {
    /// A level that never changes.
    pub fn constant(level: f64) -> Self {
        Profile {
            start: level,
            stages: Vec::new(),
            hold: true,
        }
    }

    /// Starts at `start` and goes through `stages`; the profile ends with the last stage.
    pub fn staged(start: f64, stages: Vec<Stage>) -> Self {
        let hold = stages.is_empty();
        Profile {
            start,
            stages,
            hold,
        }
    }

    /// The same profile, keeping its last level after the last stage (a ramp-up that then
    /// holds until the run's own bound).
    pub fn then_hold(mut self) -> Self {
        self.hold = true;
        self
    }

    /// The stages, in order.
    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// The level the profile starts at.
    pub fn start(&self) -> f64 {
        self.start
    }

    /// When the profile ends: after its last stage, or never if it holds its last level.
    pub fn end(&self) -> Option<Duration> {
        if self.hold {
            None
        } else {
            Some(self.stages.iter().map(|s| s.duration).sum())
        }
    }

    /// Highest level the profile reaches.
    pub fn peak(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.target)
            .fold(self.start, f64::max)
    }

    /// The same profile up to `at`, then `level` from `at` on (a step, not a ramp): what a
    /// running test becomes when it is steered at `at`. It ends where this one ends, or holds
    /// if this one does; steering at or past the end changes nothing.
    pub fn steered(&self, at: Duration, level: f64) -> Profile {
        let end = self.end();
        if end.is_some_and(|e| at >= e) {
            return self.clone();
        }
        let mut stages = Vec::with_capacity(self.stages.len() + 3);
        let mut t = Duration::ZERO;
        for s in &self.stages {
            if t + s.duration <= at {
                stages.push(*s);
                t += s.duration;
            } else {
                break;
            }
        }
        if at > t {
            // The stage under way is cut at `at` (or, past the last stage, the level held).
            stages.push(Stage {
                duration: at - t,
                target: self.level_at(at),
            });
        }
        // A stage of no duration is a step: segments skip it, and the next starts from it.
        stages.push(Stage {
            duration: Duration::ZERO,
            target: level,
        });
        if let Some(e) = end {
            stages.push(Stage {
                duration: e - at,
                target: level,
            });
        }
        Profile {
            start: self.start,
            stages,
            hold: end.is_none(),
        }
    }

    /// Segments as `(start time, duration, level at start, level at end)`; a constant profile
    /// is one endless segment, and so is the level a profile holds after its last stage.
    /// Stages of no duration (steps) are no segment: the next segment starts at their level.
    fn segments(&self) -> impl Iterator<Item = (f64, f64, f64, f64)> + '_ {
        let constant =
            self.stages
                .is_empty()
                .then_some((0.0, f64::INFINITY, self.start, self.start));
        let mut t = 0.0;
        let mut level = self.start;
        let staged = self.stages.iter().map(move |s| {
            let seg = (t, s.duration.as_secs_f64(), level, s.target);
            t += seg.1;
            level = s.target;
            seg
        });
        let held = (self.hold && !self.stages.is_empty()).then(|| {
            let last = self.stages.last().map_or(self.start, |s| s.target);
            let total: f64 = self.stages.iter().map(|s| s.duration.as_secs_f64()).sum();
            (total, f64::INFINITY, last, last)
        });
        constant
            .into_iter()
            .chain(staged)
            .filter(|seg| seg.1 > 0.0)
            .chain(held)
    }

    /// The level at `t` (the last target after the end).
    pub fn level_at(&self, t: Duration) -> f64 {
        let t = t.as_secs_f64();
        for (t0, d, a, b) in self.segments() {
            if t < t0 + d {
                return if d.is_infinite() {
                    a
                } else {
                    a + (b - a) * (t - t0) / d
                };
            }
        }
        self.stages.last().map_or(self.start, |s| s.target)
    }

    /// ∫₀ᵗ level: for a rate, the number of arrivals expected by `t`.
    pub fn cumulative(&self, t: Duration) -> f64 {
        let t = t.as_secs_f64();
        let mut sum = 0.0;
        for (t0, d, a, b) in self.segments() {
            if t <= t0 {
                break;
            }
            let tau = (t - t0).min(d);
            let slope = if d.is_infinite() { 0.0 } else { (b - a) / d };
            sum += a * tau + slope * tau * tau / 2.0;
        }
        sum
    }

    /// The earliest time at which [`Profile::cumulative`] reaches `n`, or `None` if it never
    /// does before the profile ends.
    pub fn time_of_cumulative(&self, n: f64) -> Option<Duration> {
        let mut before = 0.0;
        for (t0, d, a, b) in self.segments() {
            let slope = if d.is_infinite() { 0.0 } else { (b - a) / d };
            let in_segment = if d.is_infinite() {
                f64::INFINITY
            } else {
                a * d + slope * d * d / 2.0
            };
            if before + in_segment >= n {
                let m = n - before;
                // Solve a·τ + slope·τ²/2 = m in the form that stays exact when the slope is
                // tiny or negative: τ = 2m / (a + √(a² + 2·slope·m)).
                let disc = (a * a + 2.0 * slope * m).max(0.0);
                let denom = a + disc.sqrt();
                let tau = if m <= 0.0 {
                    0.0
                } else if denom > 0.0 {
                    2.0 * m / denom
                } else {
                    // Level 0 at the segment start and rising: a·τ is 0, so slope·τ²/2 = m.
                    (2.0 * m / slope).sqrt()
                };
                return Duration::try_from_secs_f64(t0 + tau.min(d)).ok();
            }
            before += in_segment;
        }
        None
    }

    /// The earliest time at or after `from` when the level is at least `level`, or `None` if
    /// that never happens again.
    pub fn first_time_at_least(&self, level: f64, from: Duration) -> Option<Duration> {
        let from_s = from.as_secs_f64();
        if self.level_at(from) >= level {
            return Some(from);
        }
        for (t0, d, a, b) in self.segments() {
            let t1 = t0 + d;
            if t1 <= from_s {
                continue;
            }
            if a >= level && t0 >= from_s {
                // A step up (steering) put the level there at this segment's start.
                return Duration::try_from_secs_f64(t0).ok();
            }
            if b < level || d.is_infinite() {
                continue;
            }
            // Rising through `level` within this segment.
            let t = t0 + (level - a) / (b - a) * d;
            return Duration::try_from_secs_f64(t.max(from_s)).ok();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    fn ramp() -> Profile {
        // 0 → 100 over 10 s, hold 100 for 10 s, 100 → 0 over 10 s.
        Profile::staged(
            0.0,
            vec![
                Stage {
                    duration: s(10.0),
                    target: 100.0,
                },
                Stage {
                    duration: s(10.0),
                    target: 100.0,
                },
                Stage {
                    duration: s(10.0),
                    target: 0.0,
                },
            ],
        )
    }

    #[test]
    fn levels_and_end() {
        let p = ramp();
        assert_eq!(p.end(), Some(s(30.0)));
        assert_eq!(p.peak(), 100.0);
        for (t, want) in [
            (0.0, 0.0),
            (5.0, 50.0),
            (10.0, 100.0),
            (15.0, 100.0),
            (25.0, 50.0),
            (31.0, 0.0),
        ] {
            assert!((p.level_at(s(t)) - want).abs() < 1e-9, "t={t}");
        }
        assert_eq!(Profile::constant(7.0).end(), None);
        assert_eq!(Profile::constant(7.0).level_at(s(1e6)), 7.0);
    }

    #[test]
    fn cumulative_is_the_area() {
        let p = ramp();
        for (t, want) in [
            (0.0, 0.0),
            (10.0, 500.0),
            (20.0, 1500.0),
            (30.0, 2000.0),
            (40.0, 2000.0),
            (5.0, 125.0),
        ] {
            assert!(
                (p.cumulative(s(t)) - want).abs() < 1e-6,
                "t={t}: {}",
                p.cumulative(s(t))
            );
        }
        assert!((Profile::constant(2.5).cumulative(s(4.0)) - 10.0).abs() < 1e-12);
    }

    #[test]
    fn time_of_cumulative_inverts_cumulative() {
        for p in [
            ramp(),
            Profile::constant(3.3),
            Profile::staged(
                50.0,
                vec![Stage {
                    duration: s(4.0),
                    target: 10.0,
                }],
            ),
        ] {
            let total = p.end().map_or(1000.0, |e| p.cumulative(e));
            let mut n = 0.0;
            while n < total {
                let t = p.time_of_cumulative(n).expect("reachable");
                assert!((p.cumulative(t) - n).abs() < 1e-6, "{p:?} n={n} t={t:?}");
                n += total / 97.0;
            }
            if let Some(end) = p.end() {
                assert_eq!(p.time_of_cumulative(p.cumulative(end) + 1.0), None);
            }
        }
        assert_eq!(
            Profile::constant(100.0).time_of_cumulative(150.0),
            Some(s(1.5))
        );
    }

    #[test]
    fn a_steered_profile_keeps_its_past_and_steps_to_the_new_level() {
        // A constant 100/s steered to 300/s at 2 s, then paused (0) at 3 s, resumed at 5 s.
        let p = Profile::constant(100.0)
            .steered(s(2.0), 300.0)
            .steered(s(3.0), 0.0)
            .steered(s(5.0), 100.0);
        assert_eq!(p.end(), None);
        for (t, level, count) in [
            (1.0, 100.0, 100.0),
            (2.0, 300.0, 200.0),
            (2.5, 300.0, 350.0),
            (3.0, 0.0, 500.0),
            (4.0, 0.0, 500.0),
            (5.0, 100.0, 500.0),
            (6.0, 100.0, 600.0),
        ] {
            assert!((p.level_at(s(t)) - level).abs() < 1e-9, "level at {t}");
            assert!((p.cumulative(s(t)) - count).abs() < 1e-6, "count at {t}");
        }
        // Arrival 500 comes once the pause is over: at 5 s, not within it.
        assert_eq!(p.time_of_cumulative(499.0), Some(s(2.0 + 299.0 / 300.0)));
        let t = p.time_of_cumulative(500.5).unwrap().as_secs_f64();
        assert!((t - 5.005).abs() < 1e-9, "{t}");
        // Paused for good: no arrival after the pause.
        let paused = Profile::constant(10.0).steered(s(1.0), 0.0);
        assert_eq!(paused.time_of_cumulative(10.5), None);
        assert!((paused.cumulative(s(100.0)) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn steering_a_ramp_cuts_it_and_keeps_its_end() {
        let p = ramp().steered(s(5.0), 20.0);
        assert_eq!(p.end(), Some(s(30.0)));
        assert!((p.cumulative(s(5.0)) - 125.0).abs() < 1e-6);
        assert!((p.level_at(s(4.0)) - 40.0).abs() < 1e-9);
        assert_eq!(p.level_at(s(6.0)), 20.0);
        assert_eq!(p.level_at(s(29.0)), 20.0);
        assert!((p.cumulative(s(30.0)) - (125.0 + 25.0 * 20.0)).abs() < 1e-6);
        // Past the end, nothing changes.
        assert_eq!(ramp().steered(s(31.0), 5.0), ramp());
        // A held ramp-up steered after its last stage holds the new level.
        let held = Profile::staged(
            0.0,
            vec![Stage {
                duration: s(2.0),
                target: 10.0,
            }],
        )
        .then_hold();
        assert!(
            (held.cumulative(s(4.0)) - 30.0).abs() < 1e-9,
            "the hold counts"
        );
        let steered = held.steered(s(4.0), 2.0);
        assert_eq!(steered.level_at(s(3.0)), 10.0);
        assert!((steered.cumulative(s(5.0)) - 32.0).abs() < 1e-9);
    }

    #[test]
    fn a_step_up_is_found_where_it_happens() {
        // Connections: 2, then 5 from 3 s on: connection 4 (level 4) starts at 3 s.
        let p = Profile::constant(2.0).steered(s(3.0), 5.0);
        assert_eq!(p.first_time_at_least(4.0, s(0.0)), Some(s(3.0)));
        assert_eq!(p.first_time_at_least(4.0, s(4.0)), Some(s(4.0)));
        assert_eq!(p.first_time_at_least(6.0, s(0.0)), None);
        let down = Profile::constant(5.0).steered(s(1.0), 0.0);
        assert_eq!(down.first_time_at_least(1.0, s(2.0)), None);
        assert_eq!(down.peak(), 5.0);
    }

    #[test]
    fn first_time_at_least_follows_ramps() {
        let p = ramp();
        assert_eq!(p.first_time_at_least(50.0, s(0.0)), Some(s(5.0)));
        assert_eq!(p.first_time_at_least(50.0, s(12.0)), Some(s(12.0)));
        assert_eq!(p.first_time_at_least(50.0, s(26.0)), None);
        assert_eq!(p.first_time_at_least(1.0, s(0.0)), Some(s(0.1)));
        assert_eq!(
            Profile::constant(3.0).first_time_at_least(4.0, s(0.0)),
            None
        );
    }
}
