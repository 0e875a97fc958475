//! `setup:` and `teardown:`: a list of steps run once per run, compiled into a program of its
//! own so its statistics and check rows stay apart from the users'.

use std::collections::HashSet;
use std::sync::Arc;

use crate::error::Result;
use crate::model::{Phase, Program, Scenario};
use crate::parse::Compiler;
use crate::yaml::Node;

/// Compiles the steps of phase `name` at `node`. Its templates may read the variables in
/// `defined`; the variables it extracts are added to `defined` and listed as its exports.
pub(crate) fn phase(
    c: &mut Compiler<'_>,
    node: &Node,
    name: &str,
    defined: &mut HashSet<usize>,
) -> Result<Phase> {
    let users_steps = std::mem::take(&mut c.steps);
    let users_checks = std::mem::take(&mut c.checks);
    let users_requests = std::mem::take(&mut c.requests);
    let before = defined.clone();
    let mut ops = Vec::new();
    let mut feeders = c.default_header_feeders.clone();
    let compiled = super::compile_steps(c, node, &mut ops, defined, &mut feeders);
    let steps = std::mem::replace(&mut c.steps, users_steps);
    let checks = std::mem::replace(&mut c.checks, users_checks);
    let requests = std::mem::replace(&mut c.requests, users_requests);
    compiled?;
    let mut exports: Vec<usize> = defined.difference(&before).copied().collect();
    exports.sort_unstable();
    let program = Program {
        steps,
        checks,
        requests,
        scenarios: vec![Scenario {
            name: name.to_string(),
            weight: 1,
            ops,
            feeders,
        }],
        initial: c.initial.clone(),
        feeders: c.feeders.clone(),
        // A phase's scripts are compiled with the users' (one list); its users run them from
        // their own copy.
        scripts: c.scripts.clone(),
        metrics: c.metrics.clone(),
    };
    Ok(Phase {
        program: Arc::new(program),
        exports,
    })
}
