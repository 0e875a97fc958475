//! The load as steered so far, as one worker's tasks read it (see `crate::control`): its
//! profile with every change applied, and the wake-ups that tell the dispatcher and the
//! closed loop's inactive connections that it changed. The worker's steering task
//! (`worker::steer`) keeps it up to date.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::load::Load;
use crate::profile::Profile;

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
        inactive_until(&self.profile.borrow(), index, t)
    }

    /// Closed loop: waits until a connection may be active again: until `wake` (from the
    /// run's `start`), or the next change of the steering, whichever comes first. `wake` is
    /// `None` when only a change can make it active.
    pub(crate) async fn until_active(&self, start: Instant, wake: Option<Duration>) {
        let changed = self.changed.notified();
        tokio::pin!(changed);
        // Registered before the caller's check went stale: a change from here on wakes it.
        changed.as_mut().enable();
        match wake {
            Some(w) => {
                tokio::select! {
                    _ = tokio::time::sleep_until((start + w).into()) => {}
                    _ = changed => {}
                }
            }
            None => changed.await,
        }
    }
}

/// `None` if connection `index` is active at `t`; otherwise when it next becomes active
/// (`Some(None)`: never again).
fn inactive_until(connections: &Profile, index: u64, t: Duration) -> Option<Option<Duration>> {
    let level = index as f64;
    if connections.level_at(t) > level {
        None
    } else {
        Some(connections.first_time_at_least(level + 1e-9, t))
    }
}
