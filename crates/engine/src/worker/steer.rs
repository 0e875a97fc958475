//! A worker's side of steering (see `crate::control`): the load's profile as steered so far,
//! kept up to date by one task that follows the run's steering channel, and the wake-ups that
//! tell the dispatcher and the closed loop's inactive connections that it changed.
//!
//! Every worker applies the same changes at the same instants of the run, so the open loop's
//! arrivals stay one schedule split exactly across workers, and the closed loop's connection
//! `j` is active wherever the steered level is above `j`, whichever worker holds it.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};

use super::{spawn_closed, Local, Plan};
use crate::control::Steering;
use crate::{Load, Profile};

/// The steered load, as one worker's tasks read it.
pub(crate) struct Steered {
    /// The load's profile (rate or level) with every change applied.
    pub(crate) profile: RefCell<Profile>,
    /// Changes applied so far; the dispatcher compares it with what it last followed.
    pub(crate) epoch: Cell<u64>,
    /// The last change set the level to zero (a pause): arrivals that end then are not the
    /// end of the schedule, and inactive connections wait for the next change.
    pub(crate) paused: Cell<bool>,
    /// Wakes the open loop's dispatcher (a permit is kept if it is not waiting yet).
    pub(crate) dispatcher: Notify,
    /// Wakes every closed-loop connection waiting to become active.
    pub(crate) changed: Notify,
    /// Closed loop: connection numbers (across workers) up to which tasks were started.
    pub(crate) started_up_to: Cell<u64>,
    /// Closed loop: tasks started by a change, not yet ended.
    pub(crate) extra_tasks: Rc<Cell<usize>>,
}

impl Steered {
    /// Unsteered: the load's own profile.
    pub(crate) fn new(load: &Load) -> Steered {
        let profile = match load {
            Load::Closed { connections } => connections.clone(),
            Load::Open { rate, .. } => rate.clone(),
        };
        Steered {
            started_up_to: Cell::new(profile.peak().ceil() as u64),
            profile: RefCell::new(profile),
            epoch: Cell::new(0),
            paused: Cell::new(false),
            dispatcher: Notify::new(),
            changed: Notify::new(),
            extra_tasks: Rc::new(Cell::new(0)),
        }
    }

    /// Closed loop: `None` if connection `index` is active at `t` (from the start); otherwise
    /// when it next becomes active under the profile as steered so far (`Some(None)`: not
    /// unless the run is steered again).
    pub(crate) fn inactive_until(&self, index: u64, t: Duration) -> Option<Option<Duration>> {
        super::closed::inactive_until(&self.profile.borrow(), index, t)
    }
}

/// Follows the run's steering: applies each change to the worker's profile, wakes whoever
/// waits on it, and in a closed loop starts the connections (or users) a higher level needs.
/// Ends with the run's steering channel.
pub(crate) async fn follow(
    local: Rc<Local>,
    plan: Arc<Plan>,
    base: Profile,
    mut steering: watch::Receiver<Steering>,
) {
    while steering.changed().await.is_ok() {
        let changes = steering.borrow_and_update().clone();
        let profile = changes.apply(&base);
        let steer = &local.steer;
        steer.paused.set(changes.paused());
        let peak = profile.peak().ceil() as u64;
        *steer.profile.borrow_mut() = profile;
        steer.epoch.set(steer.epoch.get() + 1);
        steer.dispatcher.notify_one();
        steer.changed.notify_waiters();
        if let Load::Closed { .. } = plan.load {
            for index in steer.started_up_to.get()..peak {
                spawn_closed(&local, &plan, index);
            }
            steer.started_up_to.set(steer.started_up_to.get().max(peak));
        }
    }
}

/// Closed loop: waits until connection `index` may be active again: until `wake` (from the
/// start), or the next change of the steering, whichever comes first. `wake` is `None` when
/// only a change can make it active.
pub(crate) async fn until_active(local: &Local, plan: &Plan, wake: Option<Duration>) {
    let changed = local.steer.changed.notified();
    tokio::pin!(changed);
    // Registered before the caller's check went stale: a change from here on wakes it.
    changed.as_mut().enable();
    match wake {
        Some(w) => {
            tokio::select! {
                _ = tokio::time::sleep_until((plan.start + w).into()) => {}
                _ = changed => {}
            }
        }
        None => changed.await,
    }
}
