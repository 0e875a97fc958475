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

    /// Segments as `(start time, duration, level at start, level at end)`; a constant profile
    /// is one endless segment.
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
        constant.into_iter().chain(staged)
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
            if t1 <= from_s || b < level || d.is_infinite() {
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
