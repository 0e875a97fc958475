//! A `ws:` step compiled: one action on the user's WebSocket. `ws:` holds a mapping whose
//! first key says the action: `connect: PATH` (with `subprotocols:` and `deflate:`, which offers
//! permessage-deflate; the step's `headers:` go
//! with the upgrade), `send: MESSAGE` (with `binary:` and `reply:`, what answers it, and
//! `count:`), `receive: MATCH` (with `count:`), `ping: PAYLOAD`, `close: CODE` (with
//! `reason:`). Messages and payloads are templates; what a step waits for is `any` message,
//! the `echo` of the one it sent, one that `contains:` a text, or a JSON one whose value at a
//! `json:` path `equals:` a text. The step's `check:` and `extract:` read the last message it
//! awaited as a request step's read a body (and a connect's the upgrade's answer).

use std::collections::HashSet;

use super::request::{self as http, check_kinds, source};
use crate::compiler::Compiler;
use crate::error::Result;
use crate::model::{Awaited, Body, Request, WsMatch, WsStep};
use crate::template::Template;
use crate::yaml::{Fields, Kind, Node};

/// Keys of a `ws:` step.
pub(super) const WS_STEP_KEYS: &[&str] = &[
    "name",
    "ws",
    "headers",
    "timeout",
    "extract",
    "check",
    "abort_on_fail",
    "if",
];

/// The actions a `ws:` mapping may name, each with the keys it takes beside its own.
const ACTIONS: &[(&str, &[&str])] = &[
    ("connect", &["subprotocols", "deflate"]),
    ("send", &["binary", "reply", "count"]),
    ("receive", &["count"]),
    ("ping", &[]),
    ("close", &["reason"]),
];

/// A step's headers, each value a template.
type Headers = Vec<(String, Template)>;

/// The most messages a step may wait for.
const MOST_AWAITED: u64 = 1_000_000;

/// Compiles a `ws:` step into a request; returns its index.
pub(super) fn ws(
    c: &mut Compiler<'_>,
    f: &Fields<'_>,
    defined: &mut HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<usize> {
    let rd = c.rd;
    let node = f.get("ws").unwrap_or(f.node);
    let (action, keys) = action(c, node)?;
    let w = rd.map(node, &format!("a `ws: {{{action}: …}}` step"), &keys)?;
    let value = w.get(action).unwrap_or(node);
    if action != "connect" {
        if let Some(key) = f.key_node("headers") {
            return Err(rd.err(key, "`headers` go with a `ws: {connect: …}` step"));
        }
    }
    let mut headers = Vec::new();
    let mut path = Template::literal("");
    let mut body = Body::None;
    let step = match action {
        "connect" => {
            let (p, h, step) = connect(c, f, &w, value, defined, feeders)?;
            (path, headers) = (p, h);
            step
        }
        "send" => {
            let (text, step) = send(c, &w, value, defined, feeders)?;
            body = Body::Text(text);
            step
        }
        "receive" => WsStep::Receive(awaited(c, value, &w, defined, feeders)?),
        "ping" => {
            let payload = match value.is_null() {
                true => Template::literal(""),
                false => c.template(value, "a ping's payload", defined, feeders)?,
            };
            body = Body::Text(payload);
            WsStep::Ping
        }
        _ => close(c, value, &w)?,
    };
    let name = match f.get("name") {
        Some(n) => rd.str(n, "a step name")?.to_string(),
        None => default_name(c, action, value),
    };
    let row = c.step_row(&name);
    let timeout = http::timeout(c, f)?;
    let vars_check = http::uses_extracted(c, &path, &headers, &body)
        .then(|| c.check_row(&format!("{name}: variables set")));
    let (checks, status_checked) = http::checks(c, f, &name, check_kinds)?;
    let extract = http::extractions(c, f, &name, source)?;
    defined.extend(extract.iter().map(|e| e.slot));
    let abort_on_fail = http::abort_on_fail(c, f)?;
    c.requests.push(Request {
        step: row,
        name,
        method: "GET".into(),
        path_text: match &step {
            WsStep::Connect { .. } => rd.str(value, "a path")?.to_string(),
            _ => String::new(),
        },
        path,
        origin: 0,
        headers,
        body,
        extract,
        checks,
        status_checked,
        vars_check,
        abort_on_fail,
        timeout,
        keep_body: true,
        before: None,
        after: None,
        grpc: None,
        stream: None,
        ws: Some(step),
    });
    Ok(c.requests.len() - 1)
}

/// The action a `ws:` mapping names (its first key), and the keys it takes.
fn action(c: &Compiler<'_>, node: &Node) -> Result<(&'static str, Vec<&'static str>)> {
    let rd = c.rd;
    let expected = "a mapping whose first key is the action: connect, send, receive, ping or close";
    let Kind::Map(entries) = &node.kind else {
        return Err(rd.err(
            node,
            format!("expected {expected}, found {}", node.describe()),
        ));
    };
    let first = entries.first().and_then(|(k, _)| k.scalar()).unwrap_or("");
    let Some((action, others)) = ACTIONS.iter().find(|(a, _)| *a == first) else {
        let at = entries.first().map_or(node, |(k, _)| k);
        return Err(rd.err(at, format!("expected {expected}, found `{first}`")));
    };
    let mut keys = vec![*action];
    keys.extend_from_slice(others);
    Ok((action, keys))
}

/// A step's name when it gives none: its action, and a connect's path.
fn default_name(c: &Compiler<'_>, action: &str, value: &Node) -> String {
    match (action, c.rd.str(value, "a path")) {
        ("connect", Ok(path)) => format!("ws connect {path}"),
        _ => format!("ws {action}"),
    }
}

/// What a `reply:` or `receive:` awaits, and its `count:`.
fn awaited(
    c: &Compiler<'_>,
    node: &Node,
    w: &Fields<'_>,
    defined: &HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<Awaited> {
    let rd = c.rd;
    let count = match w.get("count") {
        None => 1,
        Some(n) => match rd.u64(n, "a count of messages")? {
            count @ 1..=MOST_AWAITED => count,
            other => {
                return Err(rd.err(
                    n,
                    format!("expected a count of messages from 1 to {MOST_AWAITED}, found {other}"),
                ))
            }
        },
    };
    let expected = "`any`, `echo`, `{contains: TEXT}` or `{json: PATH, equals: TEXT}`";
    let matching = match node.scalar() {
        Some("any") => WsMatch::Any,
        Some("echo") => WsMatch::Echo,
        Some(other) => {
            return Err(rd.err(node, format!("expected {expected}, found `{other}`")));
        }
        None => {
            let m = rd.map(
                node,
                "what a message must hold",
                &["contains", "json", "equals"],
            )?;
            match (m.get("contains"), m.get("json"), m.get("equals")) {
                (Some(text), None, None) => {
                    WsMatch::Contains(c.template(text, "a text", defined, feeders)?)
                }
                (None, Some(path), Some(equals)) => {
                    let (path, text) = http::json_path(c, path)?;
                    let equals = c.template(equals, "a text", defined, feeders)?;
                    WsMatch::Json(path, text, equals)
                }
                _ => return Err(rd.err(node, format!("expected {expected}"))),
            }
        }
    };
    if matches!(matching, WsMatch::Echo) && w.get("send").is_none() {
        return Err(rd.err(
            node,
            "`echo` answers a message: it goes with `send:`'s `reply:`",
        ));
    }
    Ok(Awaited { matching, count })
}

/// A `close:` step: its code (1000 unless given) and reason.
fn close(c: &Compiler<'_>, value: &Node, w: &Fields<'_>) -> Result<WsStep> {
    let rd = c.rd;
    let code = match value.is_null() {
        true => 1000,
        false => match rd.u64(value, "a close code")? {
            // RFC 6455 §7.4: 1000 and the codes 3000–4999 for libraries and applications;
            // the others of 1001–1015 are the endpoints' own or never sent.
            code @ (1000 | 1001 | 3000..=4999) => code as u16,
            other => {
                return Err(rd.err(
                    value,
                    format!("expected a close code a client may send (1000, 1001, or 3000 to 4999), found {other}"),
                ))
            }
        },
    };
    let reason = match w.get("reason") {
        None => String::new(),
        Some(n) => rd.str(n, "a close reason")?.to_string(),
    };
    if reason.len() > 123 {
        return Err(rd.err(
            w.get("reason").unwrap_or(value),
            "a close reason is at most 123 bytes (RFC 6455 §5.5)",
        ));
    }
    Ok(WsStep::Close { code, reason })
}

/// A `connect:` step: its path (under the target's base path), its headers (the plan's
/// defaults, the step's over them) and its subprotocols.
fn connect(
    c: &Compiler<'_>,
    f: &Fields<'_>,
    w: &Fields<'_>,
    value: &Node,
    defined: &HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<(Template, Headers, WsStep)> {
    let rd = c.rd;
    let raw = rd.str(value, "a path starting with `/`")?;
    if !raw.starts_with('/') {
        return Err(rd.err(
            value,
            format!("expected a path starting with `/` on the plan's target, found `{raw}`"),
        ));
    }
    let path = c
        .template(value, "a path", defined, feeders)?
        .with_prefix(&c.target.base_path);
    let headers = http::step_headers(c, f, defined, feeders)?;
    let subprotocols = match w.get("subprotocols") {
        None => Vec::new(),
        Some(n) => rd
            .strings(n, "a subprotocol")?
            .into_iter()
            .map(|n| rd.str(n, "a subprotocol").map(str::to_string))
            .collect::<Result<_>>()?,
    };
    let deflate = w
        .get("deflate")
        .map(|n| rd.bool(n, "deflate"))
        .transpose()?
        .unwrap_or(false);
    Ok((
        path,
        headers,
        WsStep::Connect {
            subprotocols,
            deflate,
        },
    ))
}

/// A `send:` step: its message and what answers it.
fn send(
    c: &Compiler<'_>,
    w: &Fields<'_>,
    value: &Node,
    defined: &HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<(Template, WsStep)> {
    let rd = c.rd;
    let text = c.template(value, "a message", defined, feeders)?;
    let binary = w
        .get("binary")
        .map(|n| rd.bool(n, "binary"))
        .transpose()?
        .unwrap_or(false);
    let reply = match w.get("reply") {
        None => {
            if let Some(key) = w.key_node("count") {
                return Err(rd.err(key, "`count` goes with `reply:`"));
            }
            None
        }
        Some(n) => Some(awaited(c, n, w, defined, feeders)?),
    };
    Ok((text, WsStep::Send { binary, reply }))
}
