//! One entry of a plan's `thresholds:`: an expression (`"p99 < 200ms"`, `"login: p99 <
//! 300ms"`, or as YAML reads an unquoted `- login: p99 < 300ms`, a one-entry mapping from step
//! to expression), or the detailed mapping `{ expr: "p99 < 300ms", abort: true, after: 10s }`
//! of a threshold that stops the run as soon as it fails.

use super::pos_in;
use crate::error::Result;
use crate::threshold::{Threshold, DEFAULT_ABORT_AFTER};
use crate::yaml::{Kind, Node, Reader};

/// The keys of the detailed form.
const KEYS: [&str; 3] = ["expr", "abort", "after"];

const WHAT: &str = "a threshold such as `p99 < 200ms`";

/// Reads one threshold of the list.
pub(super) fn threshold(rd: Reader<'_>, item: &Node) -> Result<Threshold> {
    if let Kind::Map(entries) = &item.kind {
        // The detailed form has `expr`; a one-entry mapping without it is `STEP: EXPR`
        // (a step named `expr` is then written as a quoted string).
        let detailed = entries.len() > 1 || entries.iter().any(|(k, _)| k.scalar() == Some("expr"));
        if detailed {
            return detailed_form(rd, item);
        }
        if let [(step, expr)] = entries.as_slice() {
            let step_text = rd.str(step, "a step name")?;
            let expr_text = rd.str(expr, WHAT)?;
            let text = format!("{step_text}: {expr_text}");
            let prefix = step_text.len() + 2;
            return Threshold::parse(&text).map_err(|(offset, m)| {
                let pos = match offset.checked_sub(prefix) {
                    Some(o) => pos_in(expr, o),
                    None => pos_in(step, offset),
                };
                rd.err_at(pos, m)
            });
        }
    }
    expression(rd, item)
}

fn expression(rd: Reader<'_>, node: &Node) -> Result<Threshold> {
    let text = rd.str(node, WHAT)?;
    Threshold::parse(text).map_err(|(offset, m)| rd.err_at(pos_in(node, offset), m))
}

/// `{ expr: EXPRESSION, abort: BOOL, after: DURATION }`.
fn detailed_form(rd: Reader<'_>, item: &Node) -> Result<Threshold> {
    let fields = rd.map(item, "a threshold", &KEYS)?;
    let Some(expr) = fields.get("expr") else {
        return Err(rd.err(
            item,
            "a threshold written as a mapping needs `expr`, e.g. `{ expr: \"p99 < 300ms\", abort: true }`",
        ));
    };
    let mut t = expression(rd, expr)?;
    let abort = match fields.get("abort") {
        Some(node) => rd.bool(node, "abort")?,
        None => false,
    };
    let after = fields
        .get("after")
        .map(|node| rd.duration(node, "after"))
        .transpose()?;
    if !abort {
        if let Some(key) = fields.key_node("after") {
            return Err(rd.err(
                key,
                "`after` delays the judgement of a threshold that aborts the run: add `abort: true` or drop `after`",
            ));
        }
        return Ok(t);
    }
    t.judged_live().map_err(|why| {
        let at = fields.get("abort").unwrap_or(item);
        rd.err(at, why)
    })?;
    t.abort_after = Some(after.unwrap_or(DEFAULT_ABORT_AFTER));
    Ok(t)
}
