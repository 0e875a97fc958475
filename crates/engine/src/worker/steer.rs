//! A worker's side of steering (see `crate::control`): the load's profile as steered so far,
//! kept up to date by one task that follows the run's steering channel, and the wake-ups that
//! tell the dispatcher and the closed loop's inactive connections that it changed.
//!
//! Every worker applies the same changes at the same instants of the run, so the open loop's
//! arrivals stay one schedule split exactly across workers, and the closed loop's connection
//! `j` is active wherever the steered level is above `j`, whichever worker holds it.

use std::rc::Rc;
use std::sync::Arc;

use tokio::sync::watch;

use super::closed::spawn_closed;
use crate::control::Steering;
use crate::load::Load;
use crate::local::Local;
use crate::plan::Plan;
use crate::profile::Profile;

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
        let steer = &local.schedule.steer;
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
