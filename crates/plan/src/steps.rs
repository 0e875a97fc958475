//! Scenarios and their steps (requests, pauses, groups, loops, choices, `if:` conditions)
//! compiled into flat programs, with variables checked in document order: a template may use
//! plan variables, data columns, built-ins, and variables extracted by an earlier step of the
//! same scenario. `setup:` and `teardown:` are lists of steps too, run once per run, each
//! compiled into a program of its own so its statistics and check rows stay apart from the
//! users'.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::compiler::{pos_in, Compiler};
use crate::condition::{Expr, Name};
use crate::error::Result;
use crate::model::{Op, Phase, Program, Scenario};
use crate::yaml::{Kind, Node};

mod form;
mod framing;
pub(crate) mod grpc;
mod request;
mod ws;

use request::{request, REQUEST_KEYS};

/// `load` is read apart, with the plan's (`parse::executors`).
const SCENARIO_KEYS: &[&str] = &["name", "weight", "steps", "load"];
/// Compiles the `scenarios` list.
pub(crate) fn scenarios(
    c: &mut Compiler<'_>,
    node: &Node,
    constants: &HashSet<usize>,
) -> Result<Vec<Scenario>> {
    let rd = c.rd;
    let items = rd.seq(node, "scenarios")?;
    if items.is_empty() {
        return Err(rd.err(node, "expected at least one scenario"));
    }
    let mut out: Vec<Scenario> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let f = rd.map(item, "a scenario", SCENARIO_KEYS)?;
        let name = match f.get("name") {
            Some(n) => rd.str(n, "a scenario name")?.to_string(),
            None => format!("scenario {}", i + 1),
        };
        if out.iter().any(|s| s.name == name) {
            return Err(rd.err(
                f.get("name").unwrap_or(item),
                format!("a scenario named `{name}` already exists"),
            ));
        }
        let weight = match f.get("weight") {
            Some(n) => weight(c, n)?,
            None => 1,
        };
        let Some(steps) = f.get("steps") else {
            return Err(rd.err(item, format!("scenario `{name}` needs `steps:`")));
        };
        let mut ops = Vec::new();
        let mut defined = constants.clone();
        let mut feeders = c.default_header_feeders.clone();
        compile_steps(c, steps, &mut ops, &mut defined, &mut feeders)?;
        out.push(Scenario {
            name,
            weight,
            ops,
            feeders,
        });
    }
    Ok(out)
}

fn compile_steps(
    c: &mut Compiler<'_>,
    node: &Node,
    ops: &mut Vec<Op>,
    defined: &mut HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<()> {
    let rd = c.rd;
    let items = rd.seq(node, "steps")?;
    if items.is_empty() {
        return Err(rd.err(node, "expected at least one step"));
    }
    for item in items {
        let Kind::Map(entries) = &item.kind else {
            return Err(rd.err(
                item,
                format!(
                    "expected a step (a mapping: a request, `pause`, `group`, `loop` or `choice`), found {}",
                    item.describe()
                ),
            ));
        };
        let guard = match entries.iter().find(|(k, _)| k.scalar() == Some("if")) {
            Some((_, node)) => {
                let (cond, text) = condition(c, node, defined)?;
                ops.push(Op::If {
                    cond: Box::new(cond),
                    text,
                    end: 0,
                });
                Some(ops.len() - 1)
            }
            None => None,
        };
        step(c, item, entries, ops, defined, feeders)?;
        if let Some(at) = guard {
            let end = ops.len();
            ops.push(Op::GroupEnd);
            if let Op::If { end: e, .. } = &mut ops[at] {
                *e = end;
            }
        }
    }
    Ok(())
}

/// One step, of the kind its keys say (its `if:` aside).
fn step(
    c: &mut Compiler<'_>,
    item: &Node,
    entries: &[(Node, Node)],
    ops: &mut Vec<Op>,
    defined: &mut HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<()> {
    let rd = c.rd;
    let has = |k: &str| entries.iter().any(|(key, _)| key.scalar() == Some(k));
    if has("pause") {
        let f = rd.map(item, "a pause step", &["pause", "if"])?;
        let (min, max) = pause(c, f.get("pause").unwrap_or(item))?;
        ops.push(Op::Pause(min, max));
    } else if has("group") {
        let f = rd.map(item, "a group step", &["group", "steps", "if"])?;
        let name = rd.str(f.get("group").unwrap_or(item), "a group name")?;
        let Some(steps) = f.get("steps") else {
            return Err(rd.err(item, format!("group `{name}` needs `steps:`")));
        };
        ops.push(Op::Group(name.to_string()));
        compile_steps(c, steps, ops, defined, feeders)?;
        ops.push(Op::GroupEnd);
    } else if has("parallel") {
        parallel(c, item, ops, defined, feeders)?;
    } else if has("loop") {
        loop_step(c, item, ops, defined, feeders)?;
    } else if has("choice") {
        choice(c, item, ops, defined, feeders)?;
    } else if has("grpc") {
        let f = rd.map(item, "a grpc step", grpc::GRPC_KEYS)?;
        let index = grpc::grpc(c, &f, defined, feeders)?;
        ops.push(Op::Request(index));
    } else if has("ws") {
        let f = rd.map(item, "a ws step", ws::WS_STEP_KEYS)?;
        let index = ws::ws(c, &f, defined, feeders)?;
        ops.push(Op::Request(index));
    } else if has("script") {
        let f = rd.map(item, "a script step", &["script", "name", "if"])?;
        let name = match f.get("name") {
            Some(n) => rd.str(n, "a script step's name")?,
            None => "script",
        };
        let node = f.get("script").unwrap_or(item);
        let index = crate::script::compile(c, node, crate::script::Hook::Step, name, defined)?;
        ops.push(Op::Script(index));
    } else {
        let f = rd.map(item, "a request step", REQUEST_KEYS)?;
        for k in ["steps"] {
            if let Some(key) = f.key_node(k) {
                return Err(rd.err(key, format!("`{k}` belongs to a `group` or `loop` step")));
            }
        }
        let index = request(c, &f, defined, feeders)?;
        ops.push(Op::Request(index));
    }
    Ok(())
}

/// Keys that make a step something other than a request, refused inside a `parallel:` group.
const NOT_REQUESTS: &[&str] = &[
    "pause", "group", "parallel", "loop", "choice", "script", "if", "steps", "ws",
];

/// A `parallel:` group: request steps sent at once, named by `parallel:`. Each request's
/// templates may use only the variables defined before the group (its requests are rendered
/// together); what they extract is defined after it.
fn parallel(
    c: &mut Compiler<'_>,
    item: &Node,
    ops: &mut Vec<Op>,
    defined: &mut HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<()> {
    let rd = c.rd;
    let f = rd.map(item, "a parallel step", &["parallel", "steps", "if"])?;
    let name = rd.str(f.get("parallel").unwrap_or(item), "a parallel group's name")?;
    let Some(steps) = f.get("steps") else {
        return Err(rd.err(item, format!("parallel group `{name}` needs `steps:`")));
    };
    let items = rd.seq(steps, "steps")?;
    if items.is_empty() {
        return Err(rd.err(steps, "expected at least one request step"));
    }
    let row = c.step_row(name);
    let before = defined.clone();
    let mut requests = Vec::new();
    for inner in items {
        let Kind::Map(entries) = &inner.kind else {
            return Err(rd.err(
                inner,
                format!("expected a request step, found {}", inner.describe()),
            ));
        };
        if let Some((key, _)) = entries
            .iter()
            .find(|(k, _)| k.scalar().is_some_and(|k| NOT_REQUESTS.contains(&k)))
        {
            return Err(rd.err(
                key,
                format!(
                    "a parallel group holds request steps only, not `{}`",
                    key.scalar().unwrap_or("")
                ),
            ));
        }
        let mut seen = before.clone();
        let mut one = Vec::new();
        step(c, inner, entries, &mut one, &mut seen, feeders)?;
        defined.extend(seen);
        requests.extend(one.into_iter().filter_map(|op| match op {
            Op::Request(i) => Some(i),
            _ => None,
        }));
    }
    ops.push(Op::Parallel {
        name: name.to_string(),
        step: row,
        requests,
    });
    Ok(())
}

/// A `loop:` step: `count` passes over its `steps`, given inside `loop:` or beside it.
fn loop_step(
    c: &mut Compiler<'_>,
    item: &Node,
    ops: &mut Vec<Op>,
    defined: &mut HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<()> {
    let rd = c.rd;
    let f = rd.map(item, "a loop step", &["loop", "steps", "if"])?;
    let loop_node = f.get("loop").unwrap_or(item);
    let (count, steps) = match &loop_node.kind {
        Kind::Map(_) => {
            if let Some(k) = f.key_node("steps") {
                return Err(rd.err(
                    k,
                    "give `steps` either inside `loop:` or beside it, not both",
                ));
            }
            let inner = rd.map(loop_node, "a loop", &["count", "steps"])?;
            let Some(count) = inner.get("count") else {
                return Err(rd.err(loop_node, "a loop needs `count`"));
            };
            (rd.u64(count, "a loop count")?, inner.get("steps"))
        }
        _ => (rd.u64(loop_node, "a loop count")?, f.get("steps")),
    };
    let Some(steps) = steps else {
        return Err(rd.err(item, "a loop needs `steps:`"));
    };
    let start = ops.len();
    ops.push(Op::LoopStart { count, end: 0 });
    compile_steps(c, steps, ops, defined, feeders)?;
    let end = ops.len();
    ops.push(Op::LoopEnd { start });
    ops[start] = Op::LoopStart { count, end };
    Ok(())
}

/// An `if:` condition, compiled against the variables defined so far and the checks of the
/// steps before it.
fn condition(c: &Compiler<'_>, node: &Node, defined: &HashSet<usize>) -> Result<(Expr, String)> {
    let text = c.rd.str(node, "a condition such as `status == 200`")?;
    let mut resolve = |name: Name<'_>| match name {
        Name::Variable(v) => match c.slots.get(v) {
            Some(slot) if defined.contains(slot) => Ok(Expr::Var(*slot)),
            _ => Err(format!(
                "undefined variable `{v}`: not in `variables`, not extracted by an earlier step"
            )),
        },
        Name::Check(name) => c
            .checks
            .iter()
            .position(|x| x == name)
            .map(Expr::Check)
            .ok_or_else(|| {
                format!("no check `{name}` in the steps before (checks are named `STEP: LABEL`)")
            }),
    };
    let expr = crate::condition::parse(text, &mut resolve)
        .map_err(|(offset, m)| c.rd.err_at(pos_in(node, offset), m))?;
    Ok((expr, text.to_string()))
}

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
    let compiled = compile_steps(c, node, &mut ops, defined, &mut feeders);
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

/// A `choice:` step: a list of branches, `{ weight, steps }`, one run per pass, by weight.
fn choice(
    c: &mut Compiler<'_>,
    item: &Node,
    ops: &mut Vec<Op>,
    defined: &mut HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<()> {
    let rd = c.rd;
    let f = rd.map(item, "a choice step", &["choice", "if"])?;
    let list = f.get("choice").unwrap_or(item);
    let items = rd.seq(list, "choice branches (`- weight: N` with `steps:`)")?;
    if items.len() < 2 {
        return Err(rd.err(list, "a choice needs at least two branches"));
    }
    let mut branches = Vec::new();
    for b in items {
        let bf = rd.map(b, "a choice branch", &["weight", "steps"])?;
        let weight = match bf.get("weight") {
            Some(n) => weight(c, n)?,
            None => 1,
        };
        let Some(steps) = bf.get("steps") else {
            return Err(rd.err(b, "a choice branch needs `steps:`"));
        };
        branches.push((weight, steps));
    }
    let total = branches.iter().map(|(w, _)| w).sum();
    let start = ops.len();
    ops.push(Op::GroupEnd);
    let mut table = Vec::new();
    let mut jumps = Vec::new();
    for (weight, steps) in branches {
        table.push((weight, ops.len()));
        ops.push(Op::Branch { weight, total });
        compile_steps(c, steps, ops, defined, feeders)?;
        jumps.push(ops.len());
        ops.push(Op::Jump { to: 0 });
    }
    let end = ops.len();
    ops.push(Op::GroupEnd);
    for j in jumps {
        ops[j] = Op::Jump { to: end };
    }
    ops[start] = Op::Choice {
        branches: table,
        total,
    };
    Ok(())
}

/// A scenario's or branch's weight: 1 to 1000000.
fn weight(c: &Compiler<'_>, n: &Node) -> Result<u64> {
    match c.rd.u64(n, "a weight")? {
        0 => Err(c.rd.err(n, "expected a weight ≥ 1")),
        w if w > 1_000_000 => Err(c.rd.err(n, "expected a weight ≤ 1000000")),
        w => Ok(w),
    }
}

fn pause(c: &Compiler<'_>, node: &Node) -> Result<(Duration, Duration)> {
    let rd = c.rd;
    let text = rd.str(node, "a pause")?;
    let bad = |why: String| {
        rd.err(
            node,
            format!("expected a pause such as `1s` or a range `1s..3s`, found `{text}`: {why}"),
        )
    };
    let (min, max) = match text.split_once("..") {
        Some((a, b)) => (
            crate::duration::parse(a).map_err(bad)?,
            crate::duration::parse(b).map_err(bad)?,
        ),
        None => {
            let d = crate::duration::parse(text).map_err(bad)?;
            (d, d)
        }
    };
    if min > max {
        return Err(rd.err(
            node,
            format!("pause range `{text}`: the low end is above the high end"),
        ));
    }
    Ok((min, max))
}
