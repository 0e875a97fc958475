//! A plan's `follow: N`: a user follows the redirects of each request step, every hop a
//! request of its own in its own statistics row (step row `r`'s hop `k` is row `r·(N+1)+k`,
//! see [`belier_plan::program::Program::follow_rows`]); the step's checks and extractions judge the
//! answer the last hop got.

use std::time::SystemTime;

use belier_engine::user::{Outgoing, Reply};

use super::{jar, Local, Shared};

impl Local {
    /// Sends `outgoing`, hop `k` of its step, with the cookies of its host's jar; keeps it
    /// (without them) when following, so its redirect can be turned into the next hop.
    pub(super) fn send(&mut self, shared: &Shared, mut outgoing: Outgoing, k: usize) -> Outgoing {
        if shared.follow.is_some() {
            self.hop = Some((outgoing.clone(), k));
        }
        if shared.cookies {
            jar(&mut self.jars, outgoing.origin).add_to(
                &mut outgoing.headers,
                &outgoing.path_and_query,
                SystemTime::now(),
            );
        }
        outgoing
    }

    /// Whether `reply` is a redirect to follow: then the next hop waits for the next
    /// [`Local::next`], the redirect's cookies are stored, and the step goes on.
    pub(super) fn redirected(&mut self, shared: &Shared, reply: &Reply<'_>) -> bool {
        let (Some(follow), Some((sent, k))) = (&shared.follow, self.hop.take()) else {
            return false;
        };
        let Some(location) = reply.header("location").filter(|_| k < follow.hops) else {
            return false;
        };
        let location = String::from_utf8_lossy(location);
        let Some(next) =
            crate::redirect::next_hop(&sent, &follow.hosts, reply.status, &location, sent.step + 1)
        else {
            return false;
        };
        if let Some(pending) = &mut self.pending {
            if shared.cookies {
                jar(&mut self.jars, pending.origin).store_all(
                    reply.headers(),
                    &pending.path,
                    SystemTime::now(),
                );
            }
            pending.origin = next.origin;
            pending.path = next.path_and_query.clone();
        }
        self.next_hop = Some((next, k + 1));
        true
    }
}
