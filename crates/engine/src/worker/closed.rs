//! The closed loop's connections (or scripted users): which worker holds each, the task that
//! runs one, starting more when a steering raises the level, and when a connection is active
//! under the level's profile.

use std::rc::Rc;
use std::sync::Arc;

use super::task::{connection, Source};
use crate::local::Local;
use crate::plan::Plan;
use crate::vu;

/// Closed loop: the worker that holds connection (or user) `index`, counted across workers.
/// User j belongs to group j / N (N = streams per connection; 1 for HTTP/1.1, where a group
/// is a connection of its own) and group g to worker g mod W, so a ramp fills one connection
/// before it opens the next, and workers take turns.
pub(super) fn closed_owner(plan: &Plan, index: u64) -> usize {
    let per_group = plan.http2.as_ref().map_or(1, |h| h.max_streams) as u64;
    ((index / per_group) % plan.workers as u64) as usize
}

/// Closed loop: connection (or user) `index`, on the worker that holds it.
pub(super) async fn closed(local: Rc<Local>, plan: Arc<Plan>, index: u64) {
    let per_group = plan.http2.as_ref().map_or(1, |h| h.max_streams) as u64;
    let link = local
        .connections
        .link(&plan, (index / per_group / plan.workers as u64) as usize);
    match &plan.users {
        Some(users) => {
            let users = Arc::clone(users);
            vu::closed(local, plan, users, index, link).await;
        }
        None => connection(local, plan, Source::Closed { index }, link).await,
    }
}

/// Closed loop: starts connection (or user) `index` if it is this worker's, beside those the
/// run started with (a steering raised the level above their number).
pub(super) fn spawn_closed(local: &Rc<Local>, plan: &Arc<Plan>, index: u64) {
    if closed_owner(plan, index) != local.id {
        return;
    }
    let extra = Rc::clone(&local.schedule.steer.extra_tasks);
    extra.set(extra.get() + 1);
    let task = closed(Rc::clone(local), Arc::clone(plan), index);
    tokio::task::spawn_local(async move {
        task.await;
        extra.set(extra.get() - 1);
    });
}
