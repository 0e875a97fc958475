//! belier's virtual users: what walks a compiled plan (`belier-plan`) or a targets file for the
//! engine.
//!
//! [`VirtualUsers`] gives a [`Plan`] its [`PlanUsers`], the factory the engine drives
//! (`belier_engine::user::Users`); each user picks a scenario by weight per iteration, renders
//! templates, keeps its variables and cookies, draws data rows, extracts values, runs checks
//! and scripts, and follows redirects.
//!
//! [`CallUsers`] are a flag run's users of one gRPC call whose message is templated.
//!
//! [`targets`] reads targets files (vegeta's, JSON lines, Siege's URL lists) into users of
//! their own, one request per iteration.
//!
//! The crate reads targets files when asked to, and does no other I/O.
#![deny(missing_docs)]

mod call;
mod cookie;
mod redirect;
mod script;
pub mod targets;
mod user;

use std::sync::Arc;

use belier_plan::program::Phase;
use belier_plan::Plan;

pub use call::CallUsers;
pub use user::{Exhaustion, PhaseOutcome, PlanUsers, ScriptError};

/// A plan's virtual users, for one run each time they are asked for.
pub trait VirtualUsers {
    /// A fresh set of virtual users for one run (feeders' shared cursors start over). The
    /// users follow [`belier_plan::Options::cookies`] and [`belier_plan::LoadPlan::seed`] as
    /// they are now, so a caller may override them first.
    fn users(&self) -> Arc<PlanUsers>;

    /// A fresh set of virtual users for each of the plan's [`Plan::executors`], in order, for
    /// one run: each picks among its own scenarios, with its load's seed; all draw from the
    /// same data (a row of `order: unique` goes once in the run, whichever executor takes it).
    fn executor_users(&self) -> Vec<Arc<PlanUsers>>;

    /// The one user of the plan's `setup`, if it has one: run it once before the load (one
    /// iteration), then hand its [`PlanUsers::outcome`] to the load's users and teardown's
    /// ([`PlanUsers::share`]) if it passed.
    fn setup(&self) -> Option<Arc<PlanUsers>>;

    /// The one user of the plan's `teardown`, if it has one: run it once after the load.
    fn teardown(&self) -> Option<Arc<PlanUsers>>;
}

impl VirtualUsers for Plan {
    fn users(&self) -> Arc<PlanUsers> {
        let users = PlanUsers::new(
            Arc::clone(self.program()),
            self.options.cookies,
            self.load.seed,
        );
        Arc::new(configured(self, users))
    }

    fn executor_users(&self) -> Vec<Arc<PlanUsers>> {
        let draws = user::Draws::new(self.program().feeders.len());
        self.executors
            .iter()
            .map(|e| {
                Arc::new(configured(
                    self,
                    PlanUsers::of(
                        Arc::clone(self.program()),
                        e.scenarios().to_vec(),
                        Arc::clone(&draws),
                        self.options.cookies,
                        e.load.seed,
                    ),
                ))
            })
            .collect()
    }

    fn setup(&self) -> Option<Arc<PlanUsers>> {
        self.setup_phase().map(|p| phase_users(self, p))
    }

    fn teardown(&self) -> Option<Arc<PlanUsers>> {
        self.teardown_phase().map(|p| phase_users(self, p))
    }
}

/// `users` with the plan's connection options (`connections_per_host`, `connection:`) and
/// following redirects as it says.
fn configured(plan: &Plan, users: PlanUsers) -> PlanUsers {
    let users = users.connecting(
        plan.options.connections_per_host,
        plan.options.per_iteration,
    );
    follow(plan, users)
}

/// `users` following redirects as [`belier_plan::Options::follow`] says, to the plan's hosts
/// and (not over HTTP/2) to hosts they lead to.
fn follow(plan: &Plan, users: PlanUsers) -> PlanUsers {
    if plan.options.follow == 0 {
        return users;
    }
    let target = &plan.target;
    let first = targets::Origin {
        scheme: target.scheme,
        host: target.host.clone(),
        port: target.port,
    };
    let origins = std::iter::once(first).chain(plan.hosts.iter().cloned());
    // Hosts found on the way are spoken to over HTTP/1.1 only: not in HTTP/2 or HTTP/3 plans.
    let multiplexed = plan.options.http2 || plan.options.http3;
    users.following(plan.options.follow, origins.collect(), !multiplexed)
}

fn phase_users(plan: &Plan, phase: &Phase) -> Arc<PlanUsers> {
    Arc::new(configured(
        plan,
        PlanUsers::phase(
            Arc::clone(&phase.program),
            plan.options.cookies,
            plan.load.seed,
            &phase.exports,
        ),
    ))
}
