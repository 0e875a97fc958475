//! The closed loop's connections (or scripted users): which worker holds each, the task that
//! runs one, starting more when a steering raises the level, and when a connection is active
//! under the level's profile.

use std::rc::Rc;
use std::sync::Arc;

use super::task::{connection, Source};
use crate::local::Local;
use crate::plan::Plan;
use crate::vu;

/// Closed loop: the worker that holds connection (or user) `index`, counted across workers
/// and shards; `None` when another shard holds it. Slot j is shard j mod S's (see
/// `crate::shard`), its l-th (l = j / S). Within the shard, user l belongs to group l / N (N =
/// streams per connection; 1 for HTTP/1.1, where a group is a connection of its own) and
/// group g to worker g mod W, so a ramp fills one connection before it opens the next, and
/// workers take turns.
pub(super) fn closed_owner(plan: &Plan, index: u64) -> Option<usize> {
    if !plan.shard.owns(index) {
        return None;
    }
    let per_group = plan.http2.as_ref().map_or(1, |h| h.max_streams) as u64;
    Some(((plan.shard.local(index) / per_group) % plan.workers as u64) as usize)
}

/// Closed loop: connection (or user) `index`, on the worker that holds it.
pub(super) async fn closed(local: Rc<Local>, plan: Arc<Plan>, index: u64) {
    let per_group = plan.http2.as_ref().map_or(1, |h| h.max_streams) as u64;
    let link = local.connections.link(
        &plan,
        (plan.shard.local(index) / per_group / plan.workers as u64) as usize,
    );
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
    if closed_owner(plan, index) != Some(local.id) {
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
