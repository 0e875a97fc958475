//! belier's plan files: a YAML plan of weighted scenarios becomes the engine's virtual users.
//!
//! [`load`] (or [`parse`]) reads a plan (format in `PLAN.md`) into a [`Plan`]: the
//! [`Target`], run-wide [`Options`], the [`LoadPlan`] in the engine's own types, the
//! [`Threshold`]s, and compiled scenarios. [`Plan::users`] makes the [`PlanUsers`] factory the
//! engine drives (`belier_engine::user::Users`); each user picks a scenario by weight per
//! iteration, renders templates, keeps its variables and cookies, extracts values and runs
//! checks. Every plan error names the file, line and column ([`PlanError`]).
//!
//! [`targets`] reads targets files (vegeta's, JSON lines, Siege's URL lists) into users of
//! their own, one request per iteration.
//!
//! The crate reads the plan and the data and body files it names, when asked to load it, and
//! does no other I/O.
#![deny(missing_docs)]

mod check;
mod compiler;
mod condition;
mod cookie;
mod describe;
mod duration;
mod error;
mod extract;
mod feeder;
pub mod files;
mod form;
mod model;
mod origin;
mod parse;
mod script;
mod steps;
pub mod targets;
mod template;
mod threshold;
mod user;
mod yaml;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

pub use error::{PlanError, Pos};
pub use feeder::{Feeder, Order};
pub use model::{Executor, LoadModel, LoadPlan, Options, Plan, Target};
pub use origin::Scheme;
pub use parse::{Copies, DEFAULT_SEED, MAX_FOLLOW};
pub use threshold::{Comparison, Figures, Metric, Outcome, Threshold, DEFAULT_ABORT_AFTER};
pub use user::{Exhaustion, PhaseOutcome, PlanUsers, ScriptError};

/// Reads and parses the plan at `path`, and the data and body files it names (relative to
/// the plan's directory).
pub fn load(path: &Path) -> Result<Plan, PlanError> {
    load_with(path, &Copies::new(), Environment::Process)
}

/// Where a plan's `{{ env.NAME }}` are read from.
#[derive(Clone, Copy)]
pub enum Environment<'a> {
    /// This process's environment.
    Process,
    /// These values only, by name (`None`, or a name not there: not set): those the plan read
    /// where it was loaded first ([`Plan::environment`]), as a coordinator sends them with
    /// its job, so that a worker's own environment never reaches its requests.
    Only(&'a BTreeMap<String, Option<String>>),
}

impl Environment<'_> {
    /// The value of `name`.
    fn var(&self, name: &str) -> Result<String, std::env::VarError> {
        match self {
            Environment::Process => std::env::var(name),
            Environment::Only(values) => values
                .get(name)
                .cloned()
                .flatten()
                .ok_or(std::env::VarError::NotPresent),
        }
    }
}

/// [`load`] where the plan and the files it names may have local copies ([`Copies`], by the
/// paths the plan resolves them to): each is read from its copy, but errors and the plan's
/// [`Plan::files`] name them as the plan does; `{{ env.NAME }}` reads `env`. A worker reads
/// its coordinator's plan so.
pub fn load_with(path: &Path, copies: &Copies, env: Environment<'_>) -> Result<Plan, PlanError> {
    let local = copies.get(path).map_or(path, |p| p.as_path());
    let text = files::read_to_string(local, files::MOST_DOCUMENT_BYTES).map_err(|e| {
        PlanError::new(
            path,
            Pos { line: 1, col: 1 },
            format!("cannot read the plan: {e}"),
        )
    })?;
    parse::plan_with(&text, path, &|name| env.var(name), copies)
}

/// Parses plan text; `path` names the plan in errors and locates the files it names;
/// `{{ env.NAME }}` reads the process's environment, once.
pub fn parse(text: &str, path: &Path) -> Result<Plan, PlanError> {
    parse::plan(text, path, &|name| std::env::var(name))
}

impl Plan {
    /// A fresh set of virtual users for one run (feeders' shared cursors start over). The
    /// users follow [`Options::cookies`] and [`LoadPlan::seed`] as they are now, so a caller
    /// may override them first.
    pub fn users(&self) -> Arc<PlanUsers> {
        Arc::new(self.follow(PlanUsers::new(
            Arc::clone(&self.program),
            self.options.cookies,
            self.load.seed,
        )))
    }

    /// `users` following redirects as [`Options::follow`] says, to the plan's hosts and (not
    /// over HTTP/2) to hosts they lead to.
    fn follow(&self, users: PlanUsers) -> PlanUsers {
        if self.options.follow == 0 {
            return users;
        }
        let target = &self.target;
        let first = targets::Origin {
            scheme: target.scheme,
            host: target.host.clone(),
            port: target.port,
        };
        let origins = std::iter::once(first).chain(self.hosts.iter().cloned());
        // Hosts found on the way are spoken to over HTTP/1.1 only.
        users.following(self.options.follow, origins.collect(), !self.options.http2)
    }

    /// A fresh set of virtual users for each of the plan's [`Plan::executors`], in order, for
    /// one run: each picks among its own scenarios, with its load's seed; all draw from the
    /// same data (a row of `order: unique` goes once in the run, whichever executor takes it).
    pub fn executor_users(&self) -> Vec<Arc<PlanUsers>> {
        let draws = user::Draws::new(self.program.feeders.len());
        self.executors
            .iter()
            .map(|e| {
                Arc::new(self.follow(PlanUsers::of(
                    Arc::clone(&self.program),
                    e.scenarios.clone(),
                    Arc::clone(&draws),
                    self.options.cookies,
                    e.load.seed,
                )))
            })
            .collect()
    }

    /// The one user of the plan's `setup`, if it has one: run it once before the load (one
    /// iteration), then hand its [`PlanUsers::outcome`] to the load's users and teardown's
    /// ([`PlanUsers::share`]) if it passed.
    pub fn setup(&self) -> Option<Arc<PlanUsers>> {
        self.setup.as_ref().map(|p| self.phase_users(p))
    }

    /// The one user of the plan's `teardown`, if it has one: run it once after the load.
    pub fn teardown(&self) -> Option<Arc<PlanUsers>> {
        self.teardown.as_ref().map(|p| self.phase_users(p))
    }

    fn phase_users(&self, phase: &model::Phase) -> Arc<PlanUsers> {
        Arc::new(self.follow(PlanUsers::phase(
            Arc::clone(&phase.program),
            self.options.cookies,
            self.load.seed,
            &phase.exports,
        )))
    }
}
