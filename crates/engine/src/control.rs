//! Steering a running test: one handle ([`Control`]) that changes the open loop's rate or the
//! closed loop's number of connections (or users), pauses, resumes and stops. The terminal and
//! web consoles, the capacity search and a distributed coordinator all steer through it.
//!
//! A change is a step of the load's profile at the moment it is made ([`Profile::steered`]):
//! what was due before stays as it was, and from then on the profile holds the new level until
//! the run's own end. Every worker applies the same changes at the same instants, so an open
//! loop stays one schedule of arrivals split exactly across workers. A pause is a change to
//! zero (no arrivals, every connection of a closed loop inactive and closed); resuming returns
//! to the level before it. Changes go out on a `watch` channel: a worker that is busy applies
//! the latest state when it next looks, and nothing queues up.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::load::Load;
use crate::profile::Profile;

/// Every change made to a run so far, in order: what workers apply to the load's profile.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Steering {
    /// `(at, level)`: from `at` (since the start) on, the level is `level`.
    changes: Vec<(Duration, f64)>,
}

impl Steering {
    /// `base` with every change applied.
    pub(crate) fn apply(&self, base: &Profile) -> Profile {
        self.changes
            .iter()
            .fold(base.clone(), |p, &(at, level)| p.steered(at, level))
    }

    /// Whether the last change set the level to zero.
    pub(crate) fn paused(&self) -> bool {
        self.changes.last().is_some_and(|&(_, level)| level == 0.0)
    }
}

/// What the level of a run means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    /// Arrivals per second (an open loop: requests, or a plan's iterations).
    Rate,
    /// Connections (or scripted users) at once (a closed loop).
    Concurrency,
}

/// A change the run cannot take.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ControlError {
    /// Not a level: negative, not finite, or a fraction of a connection.
    #[error("{level} is not a {what}")]
    NotALevel {
        /// The level asked for.
        level: f64,
        /// What a level is here.
        what: &'static str,
    },
    /// A pause is undone with resume, not by setting a level of zero.
    #[error("a level of 0 is a pause: use pause, then resume")]
    Zero,
    /// Several loads run at once ([`crate::start_together`]): each has its own level.
    #[error("several loads run at once, each at its own level: pause, resume or stop them")]
    Several,
    /// Above the run's [`Ceiling`].
    #[error("{level} is above this run's limit of {most}: {what}")]
    AboveCeiling {
        /// The level asked for.
        level: f64,
        /// The ceiling's level.
        most: f64,
        /// What sets it, as the ceiling says.
        what: String,
    },
}

/// The highest level a run may be steered to, and what sets it: steering may not ask for more
/// than the run could have been started with (the connections the open-file limit allows,
/// the highest rate accepted), or one request could exhaust the machine's memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Ceiling {
    /// The highest level.
    pub level: f64,
    /// What sets it, in words a refusal shows (`the open-file limit (ulimit -n 1024) …`).
    pub what: String,
}

/// The state of the steering as the handle last set it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Steer {
    /// What the level means.
    pub knob: Knob,
    /// The level the run holds now, or returns to when resumed.
    pub level: f64,
    /// Paused.
    pub paused: bool,
    /// Changes made so far (pauses and resumes included).
    pub changes: usize,
}

struct State {
    steering: Steering,
    level: f64,
    paused: bool,
}

/// A handle that steers a running test (see the module's documentation). Cheap to clone;
/// every clone steers the same run. Changes to a run that has ended change nothing.
#[derive(Clone)]
pub struct Control {
    knob: Knob,
    base: Profile,
    start: Instant,
    state: Arc<Mutex<State>>,
    steering: Arc<watch::Sender<Steering>>,
    stop: Arc<watch::Sender<bool>>,
    /// The other loads started together with this one, paused and resumed with it.
    others: Vec<Control>,
    /// The highest level [`Control::set_level`] accepts, if any.
    ceiling: Option<Arc<Ceiling>>,
}

impl Control {
    /// A handle for a run of `load` that started (or starts) at `start`.
    pub(crate) fn new(
        load: &Load,
        start: Instant,
        steering: Arc<watch::Sender<Steering>>,
        stop: Arc<watch::Sender<bool>>,
    ) -> Control {
        let (knob, base) = match load {
            Load::Open { rate, .. } => (Knob::Rate, rate.clone()),
            Load::Closed { connections } => (Knob::Concurrency, connections.clone()),
        };
        Control {
            knob,
            state: Arc::new(Mutex::new(State {
                steering: Steering::default(),
                level: base.level_at(Duration::ZERO),
                paused: false,
            })),
            base,
            start,
            steering,
            stop,
            others: Vec::new(),
            ceiling: None,
        }
    }

    /// This handle, refusing levels above `ceiling` (none: any level a run can hold).
    pub fn limited(mut self, ceiling: Option<Ceiling>) -> Control {
        self.ceiling = ceiling.map(Arc::new);
        self
    }

    /// This load's handle, which also pauses and resumes `others` (started together with it)
    /// and refuses a level.
    pub(crate) fn with_others(mut self, others: Vec<Control>) -> Control {
        self.others = others;
        self
    }

    /// A handle for a run of `load` whose engines run elsewhere (a distributed run's
    /// coordinator): it checks and records changes and a stop like any handle, and the
    /// caller passes them on, reading [`Control::history`] and [`Control::stop_requested`].
    pub fn detached(load: &Load, start: Instant) -> Control {
        let (steering, _) = watch::channel(Steering::default());
        let (stop, _) = watch::channel(false);
        Control::new(load, start, Arc::new(steering), Arc::new(stop))
    }

    /// The highest level [`Control::set_level`] accepts, if bounded.
    pub fn ceiling(&self) -> Option<&Ceiling> {
        self.ceiling.as_deref()
    }

    /// Whether [`Control::stop`] was called.
    pub fn stop_requested(&self) -> bool {
        *self.stop.borrow()
    }

    /// What the level means for this run.
    pub fn knob(&self) -> Knob {
        self.knob
    }

    /// The steering now: the level the run holds (before any change, the profile's level at
    /// this moment), whether it is paused, how many changes were made.
    pub fn state(&self) -> Steer {
        let state = self.lock();
        let level = if state.steering.changes.is_empty() {
            self.base.level_at(self.now())
        } else {
            state.level
        };
        Steer {
            knob: self.knob,
            level,
            paused: state.paused,
            changes: state.steering.changes.len(),
        }
    }

    /// Every change so far: from `at` (since the start) on, the level was `level` (0 for a
    /// pause). Applied to the load's profile with [`Profile::steered`], in order, they give
    /// the profile the run followed.
    pub fn history(&self) -> Vec<(Duration, f64)> {
        self.lock().steering.changes.clone()
    }

    /// Holds `level` from now on: arrivals per second for an open loop, connections (or
    /// users) for a closed loop, a whole number then. While paused, it is the level the run
    /// resumes at.
    pub fn set_level(&self, level: f64) -> Result<(), ControlError> {
        let what = match self.knob {
            Knob::Rate => "rate per second",
            Knob::Concurrency => "whole number of connections",
        };
        let whole = self.knob == Knob::Rate || level.fract() == 0.0;
        if !(level.is_finite() && level >= 0.0 && whole) {
            return Err(ControlError::NotALevel { level, what });
        }
        if level == 0.0 {
            return Err(ControlError::Zero);
        }
        if let Some(c) = self.ceiling.as_deref().filter(|c| level > c.level) {
            return Err(ControlError::AboveCeiling {
                level,
                most: c.level,
                what: c.what.clone(),
            });
        }
        if !self.others.is_empty() {
            return Err(ControlError::Several);
        }
        let mut state = self.lock();
        state.level = level;
        if !state.paused {
            self.change(&mut state, level);
        }
        Ok(())
    }

    /// Stops sending from now on without ending the run: no arrivals, and a closed loop's
    /// connections go inactive. Arrivals a pause skips are not due, so not dropped. Nothing
    /// happens if the run is paused already.
    pub fn pause(&self) {
        for other in &self.others {
            other.pause();
        }
        let mut state = self.lock();
        if state.paused {
            return;
        }
        if state.steering.changes.is_empty() {
            state.level = self.base.level_at(self.now());
        }
        state.paused = true;
        self.change(&mut state, 0.0);
    }

    /// Undoes a pause: the level before it (or the last one set meanwhile) from now on.
    pub fn resume(&self) {
        for other in &self.others {
            other.resume();
        }
        let mut state = self.lock();
        if !state.paused {
            return;
        }
        state.paused = false;
        let level = state.level;
        self.change(&mut state, level);
    }

    /// Asks every worker to stop sending, as [`crate::Run::stop`] does.
    pub fn stop(&self) {
        // Kept even without a receiver, for a detached handle's caller to read.
        self.stop.send_replace(true);
    }

    fn change(&self, state: &mut State, level: f64) {
        let at = self.now();
        state.steering.changes.push((at, level));
        self.steering.send_replace(state.steering.clone());
    }

    /// Time since the start; before it (while connections open ahead), zero.
    fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.start)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves a state that is still whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle(load: Load) -> (Control, watch::Receiver<Steering>) {
        let (tx, rx) = watch::channel(Steering::default());
        let (stop, _) = watch::channel(false);
        let start = Instant::now();
        (Control::new(&load, start, Arc::new(tx), Arc::new(stop)), rx)
    }

    fn open(rate: f64) -> Load {
        Load::Open {
            rate: Profile::constant(rate),
            spacing: crate::Spacing::Even,
            max_connections: 10,
            max_in_flight: None,
        }
    }

    #[test]
    fn changes_reach_the_workers_in_order() {
        let (c, rx) = handle(open(100.0));
        assert_eq!(c.state().level, 100.0);
        c.set_level(300.0).unwrap();
        c.pause();
        c.pause();
        c.set_level(50.0).unwrap();
        assert!(c.state().paused);
        c.resume();
        let s = rx.borrow().clone();
        let levels: Vec<f64> = s.changes.iter().map(|&(_, l)| l).collect();
        assert_eq!(levels, [300.0, 0.0, 50.0]);
        assert!(!s.paused());
        let state = c.state();
        assert_eq!((state.level, state.paused, state.changes), (50.0, false, 3));
        // The instants only move forward.
        assert!(s.changes.windows(2).all(|w| w[0].0 <= w[1].0));
        let profile = s.apply(&Profile::constant(100.0));
        assert_eq!(profile.level_at(Duration::from_secs(3600)), 50.0);
    }

    #[test]
    fn a_detached_handle_keeps_its_changes_and_stop() {
        let c = Control::detached(&open(200.0), Instant::now());
        c.set_level(400.0).unwrap();
        c.pause();
        c.resume();
        let levels: Vec<f64> = c.history().iter().map(|&(_, l)| l).collect();
        assert_eq!(levels, [400.0, 0.0, 400.0]);
        assert!(!c.stop_requested());
        c.stop();
        assert!(c.stop_requested());
    }

    #[test]
    fn levels_the_run_cannot_take_are_refused() {
        let (c, _) = handle(open(10.0));
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                c.set_level(bad),
                Err(ControlError::NotALevel { .. })
            ));
        }
        assert_eq!(c.set_level(0.0), Err(ControlError::Zero));
        assert!(c.set_level(2.5).is_ok());
        let (closed, _) = handle(Load::Closed {
            connections: Profile::constant(4.0),
        });
        assert_eq!(closed.knob(), Knob::Concurrency);
        let e = closed.set_level(2.5).unwrap_err();
        assert_eq!(e.to_string(), "2.5 is not a whole number of connections");
        assert!(closed.set_level(8.0).is_ok());
    }

    #[test]
    fn levels_above_the_ceiling_are_refused_and_change_nothing() {
        let (c, rx) = handle(open(10.0));
        let c = c.limited(Some(Ceiling {
            level: 1000.0,
            what: "the most --rate accepts".into(),
        }));
        let e = c.set_level(1e12).unwrap_err();
        assert_eq!(
            e.to_string(),
            "1000000000000 is above this run's limit of 1000: the most --rate accepts"
        );
        assert_eq!((c.state().level, c.state().changes), (10.0, 0));
        assert!(
            rx.borrow().changes.is_empty(),
            "nothing reached the workers"
        );
        assert!(c.set_level(1000.0).is_ok(), "the ceiling itself is allowed");
        let detached = Control::detached(&open(10.0), Instant::now()).limited(Some(Ceiling {
            level: 20.0,
            what: "a test".into(),
        }));
        assert!(detached.set_level(21.0).is_err() && detached.history().is_empty());
    }
}
