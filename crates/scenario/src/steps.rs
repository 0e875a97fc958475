//! Scenarios and their steps (requests, pauses, groups, loops) compiled into flat programs,
//! with variables checked in document order: a template may use plan variables, data columns,
//! built-ins, and variables extracted by an earlier step of the same scenario.

use std::collections::HashSet;
use std::time::Duration;

use crate::error::Result;
use crate::model::{Op, Scenario};
use crate::parse::Compiler;
use crate::yaml::{Kind, Node};

mod phase;
mod request;

pub(crate) use phase::phase;
use request::{request, REQUEST_KEYS};

const SCENARIO_KEYS: &[&str] = &["name", "weight", "steps"];
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
            Some(n) => match rd.u64(n, "a weight")? {
                0 => return Err(rd.err(n, "expected a weight ≥ 1")),
                w if w > 1_000_000 => return Err(rd.err(n, "expected a weight ≤ 1000000")),
                w => w,
            },
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
                    "expected a step (a mapping: a request, `pause`, `group` or `loop`), found {}",
                    item.describe()
                ),
            ));
        };
        let has = |k: &str| entries.iter().any(|(key, _)| key.scalar() == Some(k));
        if has("pause") {
            let f = rd.map(item, "a pause step", &["pause"])?;
            let (min, max) = pause(c, f.get("pause").unwrap_or(item))?;
            ops.push(Op::Pause(min, max));
        } else if has("group") {
            let f = rd.map(item, "a group step", &["group", "steps"])?;
            let name = rd.str(f.get("group").unwrap_or(item), "a group name")?;
            let Some(steps) = f.get("steps") else {
                return Err(rd.err(item, format!("group `{name}` needs `steps:`")));
            };
            ops.push(Op::Group(name.to_string()));
            compile_steps(c, steps, ops, defined, feeders)?;
            ops.push(Op::GroupEnd);
        } else if has("loop") {
            let f = rd.map(item, "a loop step", &["loop", "steps"])?;
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
    }
    Ok(())
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
