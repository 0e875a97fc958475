//! The changes made to a run through its control handle, as the results file and the reports
//! record them: the engine keeps `(when, level)` pairs, the reports say what each one did.

use std::time::Duration;

use belier_engine::{Load, Profile};
use belier_results::{Change, ChangeKind};

/// Follows a run's steering history and names each change in it.
pub struct Changes {
    /// What setting a level changes in this run.
    knob: ChangeKind,
    /// The load's own profile: the level before the first change.
    base: Profile,
    made: Vec<Change>,
}

impl Changes {
    /// For a run of `load`, with scripted users or not.
    pub fn new(load: &Load, users: bool) -> Changes {
        let (knob, base) = match load {
            Load::Open { rate, .. } => (ChangeKind::Rate, rate.clone()),
            Load::Closed { connections } if users => (ChangeKind::Users, connections.clone()),
            Load::Closed { connections } => (ChangeKind::Connections, connections.clone()),
        };
        Changes {
            knob,
            base,
            made: Vec::new(),
        }
    }

    /// Takes in `history` (every change so far, as the control handle gives it) and returns
    /// the changes it holds that earlier calls did not.
    pub fn since(&mut self, history: &[(Duration, f64)]) -> &[Change] {
        let seen = self.made.len();
        for &(at, level) in history.iter().skip(seen) {
            let before = self.made.last();
            let from = before.map_or_else(|| self.base.level_at(at), |c| c.level);
            // The engine refuses a level of 0 but for a pause, and what ends a pause is a
            // resume.
            let what = if level == 0.0 {
                ChangeKind::Pause
            } else if before.is_some_and(|c| c.what == ChangeKind::Pause) {
                ChangeKind::Resume
            } else {
                self.knob
            };
            self.made.push(Change {
                at_s: at.as_secs_f64(),
                what,
                level,
                from,
            });
        }
        &self.made[seen..]
    }

    /// Every change taken in, in order.
    pub fn into_vec(self) -> Vec<Change> {
        self.made
    }
}

#[cfg(test)]
mod tests {
    use belier_engine::{Load, Profile, Spacing, Stage};

    use super::*;

    fn open(rate: Profile) -> Load {
        Load::Open {
            rate,
            spacing: Spacing::Even,
            max_connections: 10,
            max_in_flight: None,
        }
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn each_change_says_what_it_did_and_from_which_level() {
        let mut c = Changes::new(&open(Profile::constant(50.0)), false);
        let mut history = vec![(secs(1.0), 55.0), (secs(2.0), 60.5)];
        let first: Vec<_> = c
            .since(&history)
            .iter()
            .map(|c| (c.what, c.from, c.level))
            .collect();
        assert_eq!(
            first,
            [
                (ChangeKind::Rate, 50.0, 55.0),
                (ChangeKind::Rate, 55.0, 60.5)
            ]
        );
        assert!(c.since(&history).is_empty(), "nothing new");
        history.extend([(secs(3.0), 0.0), (secs(4.0), 60.5)]);
        let next: Vec<_> = c
            .since(&history)
            .iter()
            .map(|c| (c.what, c.from, c.level))
            .collect();
        assert_eq!(
            next,
            [
                (ChangeKind::Pause, 60.5, 0.0),
                (ChangeKind::Resume, 0.0, 60.5)
            ]
        );
        assert_eq!(c.into_vec()[3].at_s, 4.0);
    }

    #[test]
    fn the_first_change_starts_from_the_profiles_level_then() {
        let ramp = Profile::staged(
            0.0,
            vec![Stage {
                duration: secs(10.0),
                target: 100.0,
            }],
        );
        let mut c = Changes::new(&open(ramp), false);
        assert_eq!(c.since(&[(secs(5.0), 20.0)])[0].from, 50.0);
        let closed = |users| {
            let load = Load::Closed {
                connections: Profile::constant(4.0),
            };
            Changes::new(&load, users).since(&[(secs(1.0), 8.0)])[0].what
        };
        assert_eq!(closed(false), ChangeKind::Connections);
        assert_eq!(closed(true), ChangeKind::Users);
    }
}
