//! belier's plan language: a YAML plan of weighted scenarios, read, checked and compiled.
//!
//! [`load`] (or [`parse`]) reads a plan (format in the book: `docs/src/reference/plan-format.md`) into a [`Plan`]: the
//! [`Target`], run-wide [`Options`], the [`LoadPlan`] in the engine's own types, the
//! [`Threshold`]s, and compiled scenarios ([`program`]: requests with their templates, checks,
//! extractions, conditions and scripts; a `grpc:` step is a request too, its method's messages
//! encoded and read back by `belier-grpc`). Every plan error names the file, line and column
//! ([`PlanError`]). [`Plan::describe`] says what a plan will do.
//!
//! Nothing here runs a plan: the virtual users that walk a compiled program are the
//! `belier-scenario` crate's.
//!
//! The crate reads the plan and the data, body and script files it names, when asked to load
//! it, and does no other I/O.
#![deny(missing_docs)]

pub mod check;
mod compiler;
pub mod condition;
mod describe;
mod duration;
mod error;
pub mod extract;
mod feeder;
pub mod files;
pub mod form;
pub mod json_text;
mod model;
mod origin;
mod parse;
pub mod script;
mod steps;
pub mod template;
mod threshold;
mod yaml;

use std::collections::BTreeMap;
use std::path::Path;

pub use error::{PlanError, Pos};
pub use feeder::{Feeder, Order};
pub use model::{Executor, LoadModel, LoadPlan, Options, Plan, Target};
pub use origin::{Origin, Scheme};
pub use parse::{Copies, DEFAULT_SEED, MAX_FOLLOW};
pub use threshold::{Comparison, Figures, Metric, Outcome, Threshold, DEFAULT_ABORT_AFTER};

/// A compiled plan as its virtual users walk it: the program shared by a run's users, its
/// steps, requests and bodies. Built by [`load`]; read by the runtime (`belier-scenario`).
pub mod program {
    pub use crate::model::{
        Awaited, Body, JsonTemplate, Op, Phase, Program, Request, Scenario, WsMatch, WsStep,
    };
}

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

/// [`parse`] with `{{ env.NAME }}` read from `env`.
pub fn parse_with(text: &str, path: &Path, env: Environment<'_>) -> Result<Plan, PlanError> {
    parse::plan(text, path, &|name| env.var(name))
}
