//! A script as a plan gives it (inline, or `{ file: hooks.rhai }` beside the plan) compiled
//! once when the plan loads: its syntax checked (an error names the plan's or the script
//! file's line), the variables it reads and sets and the custom metrics it counts found in
//! its text.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use belier_engine::user::{CustomMetric, MetricKind};
use regex::Regex;

use crate::compiler::Compiler;
use crate::error::{PlanError, Pos, Result};
use crate::yaml::{Kind, Node};

use super::compiled::{Hook, Script};

fn var_use() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"\bvars\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*"([^"\\]*)"\s*\])(?:\s*([-+*/]?)=(?:[^=]|$))?"#,
        )
        .expect("a valid regex")
    })
}

fn metric_use() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r#"\b(counter|trend)\s*\(\s*(?:"([^"\\]*)")?"#).expect("a valid regex")
    })
}

/// Compiles the script at `node` (a text, or `{ file: PATH }` relative to the plan) that runs
/// as `hook` of step `step`; the variables in `defined` may be read, and those it sets are
/// added. Returns its index among the compiler's scripts.
pub(crate) fn compile(
    c: &mut Compiler<'_>,
    node: &Node,
    hook: Hook,
    step: &str,
    defined: &mut HashSet<usize>,
) -> Result<usize> {
    let (text, origin, source) = text(c, node)?;
    let at = |offset: usize| origin.pos(&text, offset);
    let ast = syntax(&text, &at)?;
    let (vars, sets) = variables(c, &text, defined, &at)?;
    metrics(c, &text, &at)?;
    for &slot in &sets {
        defined.insert(slot);
    }
    let check = c.check_row(&format!("{step}: {}", hook.key()));
    c.scripts.push(Script {
        ast: Arc::new(ast),
        hook,
        check,
        vars,
        sets,
        source,
    });
    Ok(c.scripts.len() - 1)
}

/// The script's text, where it is, and how `belier check` names its source: inline in the
/// plan, or the file `{ file: PATH }` names.
fn text<'n>(c: &Compiler<'_>, node: &'n Node) -> Result<(String, Origin<'n>, String)> {
    let rd = c.rd;
    Ok(match &node.kind {
        Kind::Map(_) => {
            let f = rd.map(node, "a script file (`file: hooks.rhai`)", &["file"])?;
            let Some(file_node) = f.get("file") else {
                return Err(rd.err(node, "a script mapping needs `file:`"));
            };
            let written = rd.str(file_node, "a script file")?;
            let path = c.file(written);
            let text = crate::files::read_to_string(&path, crate::files::MOST_DOCUMENT_BYTES)
                .map_err(|e| {
                    let path = path.display();
                    rd.err(file_node, format!("cannot read script file `{path}`: {e}"))
                })?;
            (text, Origin::File(path), written.to_string())
        }
        _ => {
            let text = rd.str(node, "a script (Rhai text, or `file: hooks.rhai`)")?;
            let lines = text.lines().count();
            let source = format!("inline, {lines} line{}", if lines == 1 { "" } else { "s" });
            (
                text.to_string(),
                Origin::Plan(rd.file.to_path_buf(), node),
                source,
            )
        }
    })
}

/// The script compiled, or its syntax error at the line and column it names.
fn syntax(text: &str, at: &dyn Fn(usize) -> At) -> Result<rhai::AST> {
    super::language::engine().compile(text).map_err(|e| {
        let p = e.position();
        let line = p.line().unwrap_or(1);
        let col = p.position().unwrap_or(1);
        let offset = text
            .split_inclusive('\n')
            .take(line - 1)
            .map(str::len)
            .sum::<usize>()
            + text.lines().nth(line - 1).map_or(0, |l| {
                l.char_indices().nth(col - 1).map_or(l.len(), |(i, _)| i)
            });
        at(offset).with(format!("script syntax: {}", e.err_type()))
    })
}

/// Variables by name, with their slots.
type Named = Vec<(String, usize)>;

/// The variables the script names (`vars.NAME`), with their slots, and those it sets: each
/// must be defined before it unless the script assigns it first (`vars.x = ...`).
fn variables(
    c: &mut Compiler<'_>,
    text: &str,
    defined: &HashSet<usize>,
    at: &dyn Fn(usize) -> At,
) -> Result<(Named, Vec<usize>)> {
    let mut vars: Vec<(String, usize)> = Vec::new();
    let mut sets = Vec::new();
    for m in var_use().captures_iter(text) {
        let name = m.get(1).or(m.get(2)).map_or("", |n| n.as_str());
        // `vars.x = ...` defines `x`; `vars.x += ...` reads it first.
        let op = m.get(3).map(|o| o.as_str());
        let known = c
            .slots
            .get(name)
            .copied()
            .filter(|s| defined.contains(s) || vars.iter().any(|(_, v)| v == s));
        let slot = match (known, op) {
            (Some(slot), _) => slot,
            (None, Some("")) => c.slot(name),
            (None, _) => {
                return Err(at(m.get(0).map_or(0, |m| m.start())).with(format!(
                    "undefined variable `{name}`: not in `variables`, not extracted or set by an earlier step"
                )))
            }
        };
        if !vars.iter().any(|(_, s)| *s == slot) {
            vars.push((name.to_string(), slot));
        }
        if op.is_some() && !sets.contains(&slot) {
            sets.push(slot);
        }
    }
    Ok((vars, sets))
}

/// Adds the custom metrics the script counts (`counter("name", n)`, `trend("name", ms)`) to
/// the compiler's, each named by a string literal and of one kind throughout the plan.
fn metrics(c: &mut Compiler<'_>, text: &str, at: &dyn Fn(usize) -> At) -> Result<()> {
    for m in metric_use().captures_iter(text) {
        let whole = m.get(0).map_or(0, |m| m.start());
        let kind = match &m[1] {
            "counter" => MetricKind::Counter,
            _ => MetricKind::Trend,
        };
        let Some(name) = m.get(2).map(|n| n.as_str()) else {
            return Err(at(whole).with(format!(
                "name the metric of `{}(...)` with a string literal, e.g. `{}(\"signed\", 1)`, so reports and thresholds know it",
                &m[1], &m[1]
            )));
        };
        if name.is_empty() || name.contains(':') {
            return Err(
                at(whole).with(format!("`{name}` is not a metric name (not empty, no `:`)"))
            );
        }
        match c.metrics.iter().find(|x| x.name == name) {
            Some(x) if x.kind != kind => {
                return Err(at(whole).with(format!(
                    "metric `{name}` is a {} elsewhere; a metric has one kind",
                    x.kind.name()
                )))
            }
            Some(_) => {}
            None => c.metrics.push(CustomMetric {
                name: name.to_string(),
                kind,
            }),
        }
    }
    Ok(())
}

/// Where a script's text is, to turn an offset in it into a file position.
enum Origin<'n> {
    /// Inline in the plan, at this node.
    Plan(PathBuf, &'n Node),
    /// A script file.
    File(PathBuf),
}

/// A position in a file, waiting for its message.
struct At {
    file: PathBuf,
    pos: Pos,
}

impl At {
    fn with(self, message: String) -> PlanError {
        PlanError::new(&self.file, self.pos, message)
    }
}

impl Origin<'_> {
    fn pos(&self, text: &str, offset: usize) -> At {
        let before = &text[..offset.min(text.len())];
        let line = before.matches('\n').count();
        let col = before[before.rfind('\n').map_or(0, |i| i + 1)..]
            .chars()
            .count()
            + 1;
        match self {
            Origin::File(path) => At {
                file: path.clone(),
                pos: Pos {
                    line: line + 1,
                    col,
                },
            },
            Origin::Plan(file, node) => {
                // A block scalar's (`|`) node is where its text starts, on the line after
                // the indicator, at its indentation; a one-line scalar is on its node's line,
                // after its quote if it has one.
                let block = text.contains('\n');
                let quote =
                    usize::from(matches!(&node.kind, Kind::Scalar { plain: false, .. }) && !block);
                At {
                    file: file.clone(),
                    pos: if block {
                        Pos {
                            line: node.pos.line + line,
                            col: node.pos.col + col - 1,
                        }
                    } else {
                        Pos {
                            line: node.pos.line,
                            col: node.pos.col + quote + col - 1,
                        }
                    },
                }
            }
        }
    }
}
