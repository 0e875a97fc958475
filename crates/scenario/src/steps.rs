//! Scenarios and their steps (requests, pauses, groups, loops) compiled into flat programs,
//! with variables checked in document order: a template may use plan variables, data columns,
//! built-ins, and variables extracted by an earlier step of the same scenario.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;
use serde_json_path::JsonPath;

use crate::check::{self, Check};
use crate::error::Result;
use crate::extract::{Extraction, Source};
use crate::model::{Body, JsonTemplate, Op, Request, Scenario, Scheme};
use crate::parse::{is_token_byte, Compiler};
use crate::template::{self, Template};
use crate::yaml::{Fields, Kind, Node};

const SCENARIO_KEYS: &[&str] = &["name", "weight", "steps"];
const VERBS: &[&str] = &["get", "post", "put", "patch", "delete", "head", "options"];
/// Keys of a request step; the other step kinds' keys are listed too so that a typo such as
/// `pauze` is answered with `pause`.
const REQUEST_KEYS: &[&str] = &[
    "name",
    "method",
    "path",
    "url",
    "get",
    "post",
    "put",
    "patch",
    "delete",
    "head",
    "options",
    "headers",
    "body",
    "json",
    "body_file",
    "extract",
    "check",
    "abort_on_fail",
    "timeout",
    "pause",
    "group",
    "loop",
    "steps",
];
const CHECK_KEYS: &[&str] = &[
    "status",
    "body_contains",
    "body_matches",
    "json",
    "header",
    "max_latency",
];
const EXTRACT_KEYS: &[&str] = &["json", "regex", "header", "cookie"];
/// Regexes are compiled with this size limit so a plan cannot ask for a huge automaton.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

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

/// Method and path-as-written of a request step, and the node holding the path.
fn method_and_path<'n>(c: &Compiler<'_>, f: &Fields<'n>) -> Result<(String, &'n Node, bool)> {
    let rd = c.rd;
    let verbs: Vec<&str> = VERBS
        .iter()
        .copied()
        .filter(|v| f.get(v).is_some())
        .collect();
    let place: Vec<&str> = ["path", "url"]
        .into_iter()
        .filter(|k| f.get(k).is_some())
        .collect();
    match (verbs.as_slice(), place.as_slice()) {
        ([verb], []) => {
            if let Some(m) = f.key_node("method") {
                return Err(rd.err(m, format!("`method` and `{verb}:` both give the method; keep one")));
            }
            Ok((verb.to_ascii_uppercase(), f.get(verb).unwrap_or(f.node), false))
        }
        ([], [place]) => {
            let method = match f.get("method") {
                Some(n) => {
                    let m = rd.str(n, "a method")?;
                    if m.is_empty() || !m.bytes().all(is_token_byte) {
                        return Err(rd.err(n, format!("`{m}` is not a valid HTTP method")));
                    }
                    m.to_ascii_uppercase()
                }
                None => "GET".to_string(),
            };
            Ok((method, f.get(place).unwrap_or(f.node), *place == "url"))
        }
        ([], []) => Err(rd.err(
            f.node,
            "expected a step: a request (`path:`, `url:` or `get:`/`post:`/…), `pause:`, `group:` or `loop:`",
        )),
        _ => Err(rd.err(f.node, "a request has one of `path`, `url`, `get`, `post`, … (found several)")),
    }
}

/// The path part of `url` text on the target's origin.
fn url_path<'t>(c: &Compiler<'_>, node: &Node, text: &'t str) -> Result<&'t str> {
    let rd = c.rd;
    let origin_end = text
        .find("://")
        .map(|i| i + 3 + text[i + 3..].find(['/', '?']).unwrap_or(text.len() - i - 3));
    let Some(origin_end) = origin_end else {
        return Err(rd.err(
            node,
            format!(
                "expected a full URL (`{}/…`); use `path:` for a path",
                c.target.url()
            ),
        ));
    };
    let origin = &text[..origin_end];
    if origin.contains("{{") {
        return Err(rd.err(
            node,
            "the origin (scheme, host, port) of a `url` cannot use templates",
        ));
    }
    let parsed = url::Url::parse(&format!("{origin}/"))
        .map_err(|e| rd.err(node, format!("bad URL `{origin}`: {e}")))?;
    let scheme = match c.target.scheme {
        Scheme::Http => "http",
        Scheme::Https => "https",
    };
    let same = parsed.scheme() == scheme
        && parsed
            .host_str()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
            == Some(c.target.host.as_str())
        && parsed.port_or_known_default() == Some(c.target.port);
    if !same {
        return Err(rd.err(
            node,
            format!(
                "`{origin}` is not the target's origin ({}); a plan sends to one origin",
                c.target.url()
            ),
        ));
    }
    Ok(&text[origin_end..])
}

fn request(
    c: &mut Compiler<'_>,
    f: &Fields<'_>,
    defined: &mut HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<usize> {
    let rd = c.rd;
    let (method, path_node, is_url) = method_and_path(c, f)?;
    let raw = rd.str(path_node, "a path")?;
    let (path_text, prefix) = if is_url {
        let p = url_path(c, path_node, raw)?;
        (if p.is_empty() { "/" } else { p }, "")
    } else {
        if !raw.starts_with('/') {
            return Err(rd.err(
                path_node,
                format!("expected a path starting with `/`, found `{raw}`"),
            ));
        }
        (raw, c.target.base_path.as_str())
    };
    let offset = raw.len() - path_text.len();
    let path = c
        .template_text(path_node, path_text, offset, defined, feeders)?
        .with_prefix(prefix);
    let name = match f.get("name") {
        Some(n) => rd.str(n, "a step name")?.to_string(),
        None => format!("{method} {path_text}"),
    };
    let step = c.step_row(&name);

    let mut headers = c.default_headers.clone();
    if let Some(n) = f.get("headers") {
        for (h, t) in c.headers(n, defined, feeders)? {
            headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(&h));
            headers.push((h, t));
        }
    }
    let bodies: Vec<&str> = ["body", "json", "body_file"]
        .into_iter()
        .filter(|k| f.get(k).is_some())
        .collect();
    if bodies.len() > 1 {
        return Err(rd.err(
            f.key_node(bodies[1]).unwrap_or(f.node),
            "give one of `body`, `json` or `body_file`",
        ));
    }
    let body = if let Some(n) = f.get("body") {
        Body::Text(c.template(n, "a body", defined, feeders)?)
    } else if let Some(n) = f.get("json") {
        if !headers
            .iter()
            .any(|(h, _)| h.eq_ignore_ascii_case("content-type"))
        {
            headers.push(("Content-Type".into(), Template::literal("application/json")));
        }
        let json = json_template(c, n, defined, feeders)?;
        match fixed_json(&json) {
            // No template inside: serialise once rather than per request.
            Some(value) => Body::Bytes(Arc::from(value.to_string().into_bytes()), " [json]"),
            None => Body::Json(json),
        }
    } else if let Some(n) = f.get("body_file") {
        let path = c.relative(rd.str(n, "a body file path")?);
        let bytes = std::fs::read(&path).map_err(|e| {
            rd.err(
                n,
                format!("cannot read body file `{}`: {e}", path.display()),
            )
        })?;
        Body::Bytes(Arc::from(bytes), " [body file]")
    } else {
        Body::None
    };

    let uses_extracted = {
        let mut slots: Vec<usize> = path.vars().collect();
        for (_, t) in &headers {
            slots.extend(t.vars());
        }
        match &body {
            Body::Text(t) => slots.extend(t.vars()),
            Body::Json(j) => json_vars(j, &mut slots),
            Body::None | Body::Bytes(..) => {}
        }
        slots
            .iter()
            .any(|s| c.initial.get(*s).is_some_and(Option::is_none))
    };
    let vars_check = uses_extracted.then(|| c.check_row(&format!("{name}: variables set")));

    let mut checks = Vec::new();
    let mut status_checked = false;
    if let Some(n) = f.get("check") {
        for kind in check_kinds(c, n)? {
            status_checked |= matches!(kind, check::Kind::Status(_));
            let index = c.check_row(&format!("{name}: {}", kind.label()));
            checks.push(Check { index, kind });
        }
    }
    let mut extract = Vec::new();
    if let Some(n) = f.get("extract") {
        for (var, key, spec) in rd.map(n, "extract", &[])?.iter() {
            if !template::is_name(var) || ["vu", "iteration", "uuid"].contains(&var) {
                return Err(rd.err(key, format!("`{var}` is not a valid variable name")));
            }
            let source = source(c, spec)?;
            let slot = c.slot(var);
            let check = c.check_row(&format!("{name}: extract {var}"));
            extract.push(Extraction {
                slot,
                name: var.to_string(),
                source,
                check,
            });
        }
    }
    for e in &extract {
        defined.insert(e.slot);
    }
    let abort_on_fail = f
        .get("abort_on_fail")
        .map(|n| rd.bool(n, "abort_on_fail"))
        .transpose()?
        .unwrap_or(false);
    let timeout = f
        .get("timeout")
        .map(|n| rd.duration(n, "timeout"))
        .transpose()?;
    if timeout == Some(Duration::ZERO) {
        return Err(rd.err(
            f.get("timeout").unwrap_or(f.node),
            "expected a timeout above 0",
        ));
    }
    let keep_body =
        extract.iter().any(|e| e.source.needs_body()) || checks.iter().any(|c| c.kind.needs_body());
    c.requests.push(Request {
        step,
        name,
        method,
        path,
        path_text: path_text.to_string(),
        headers,
        body,
        extract,
        checks,
        status_checked,
        vars_check,
        abort_on_fail,
        timeout,
        keep_body,
    });
    Ok(c.requests.len() - 1)
}

/// The value of a JSON body with no template inside.
fn fixed_json(j: &JsonTemplate) -> Option<serde_json::Value> {
    use serde_json::Value;
    Some(match j {
        JsonTemplate::Fixed(v) => v.clone(),
        JsonTemplate::Text(_) => return None,
        JsonTemplate::Array(items) => {
            Value::Array(items.iter().map(fixed_json).collect::<Option<_>>()?)
        }
        JsonTemplate::Object(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| Some((k.clone(), fixed_json(v)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

fn json_vars(j: &JsonTemplate, out: &mut Vec<usize>) {
    match j {
        JsonTemplate::Fixed(_) => {}
        JsonTemplate::Text(t) => out.extend(t.vars()),
        JsonTemplate::Array(items) => items.iter().for_each(|i| json_vars(i, out)),
        JsonTemplate::Object(entries) => entries.iter().for_each(|(_, v)| json_vars(v, out)),
    }
}

fn json_template(
    c: &Compiler<'_>,
    node: &Node,
    defined: &HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<JsonTemplate> {
    Ok(match &node.kind {
        Kind::Scalar { text, .. } => match node.to_json() {
            serde_json::Value::String(_) if text.contains("{{") => {
                JsonTemplate::Text(c.template(node, "a JSON string", defined, feeders)?)
            }
            other => JsonTemplate::Fixed(other),
        },
        Kind::Seq(items) => JsonTemplate::Array(
            items
                .iter()
                .map(|i| json_template(c, i, defined, feeders))
                .collect::<Result<_>>()?,
        ),
        Kind::Map(entries) => {
            let mut out = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                let key = c.rd.str(k, "a JSON key")?.to_string();
                out.push((key, json_template(c, v, defined, feeders)?));
            }
            JsonTemplate::Object(out)
        }
    })
}

fn regex(c: &Compiler<'_>, node: &Node) -> Result<Regex> {
    let text = c.rd.str(node, "a regex")?;
    regex::RegexBuilder::new(text)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| {
            let why = e.to_string();
            let why = why.lines().last().unwrap_or("invalid").trim().to_string();
            c.rd.err(node, format!("bad regex `{text}`: {why}"))
        })
}

fn json_path(c: &Compiler<'_>, node: &Node) -> Result<(JsonPath, String)> {
    let text = c.rd.str(node, "a JSONPath")?;
    let path = JsonPath::parse(text).map_err(|e| {
        c.rd.err(
            node,
            format!("bad JSONPath `{text}` (e.g. `$.token`, `$.items[0].id`): {e}"),
        )
    })?;
    Ok((path, text.to_string()))
}

fn source(c: &Compiler<'_>, node: &Node) -> Result<Source> {
    let rd = c.rd;
    let f = rd.map(
        node,
        "an extraction (`json`, `regex`, `header` or `cookie`)",
        EXTRACT_KEYS,
    )?;
    let present: Vec<&str> = EXTRACT_KEYS
        .iter()
        .copied()
        .filter(|k| f.get(k).is_some())
        .collect();
    let [kind] = present.as_slice() else {
        return Err(rd.err(
            node,
            "an extraction has exactly one of `json`, `regex`, `header`, `cookie`",
        ));
    };
    let value = f.get(kind).unwrap_or(node);
    Ok(match *kind {
        "json" => {
            let (path, text) = json_path(c, value)?;
            Source::Json(path, text)
        }
        "regex" => Source::Regex(regex(c, value)?),
        "header" => Source::Header(rd.str(value, "a header name")?.to_string()),
        _ => Source::Cookie(rd.str(value, "a cookie name")?.to_string()),
    })
}

/// One or several strings.
fn strings<'n>(c: &Compiler<'_>, node: &'n Node, what: &str) -> Result<Vec<&'n Node>> {
    match &node.kind {
        Kind::Seq(items) => Ok(items.iter().collect()),
        _ => {
            c.rd.str(node, what)?;
            Ok(vec![node])
        }
    }
}

fn check_kinds(c: &Compiler<'_>, node: &Node) -> Result<Vec<check::Kind>> {
    let rd = c.rd;
    let f = rd.map(node, "check", CHECK_KEYS)?;
    let mut out = Vec::new();
    for (key, _, value) in f.iter() {
        match key {
            "status" => {
                let mut codes = Vec::new();
                for n in strings(c, value, "a status code")? {
                    match rd.u64(n, "a status code")? {
                        code @ 100..=599 => codes.push(code as u16),
                        other => {
                            return Err(rd.err(
                                n,
                                format!("expected a status code from 100 to 599, found {other}"),
                            ))
                        }
                    }
                }
                if codes.is_empty() {
                    return Err(rd.err(value, "expected at least one status code"));
                }
                out.push(check::Kind::Status(codes));
            }
            "body_contains" => {
                for n in strings(c, value, "text the body contains")? {
                    out.push(check::Kind::BodyContains(rd.str(n, "text")?.to_string()));
                }
            }
            "body_matches" => {
                for n in strings(c, value, "a regex")? {
                    out.push(check::Kind::BodyMatches(regex(c, n)?));
                }
            }
            "json" => {
                for (_, k, expected) in rd
                    .map(value, "json checks (JSONPath → expected value)", &[])?
                    .iter()
                {
                    let (path, text) = json_path(c, k)?;
                    out.push(check::Kind::Json(path, text, expected.to_json()));
                }
            }
            "header" => match &value.kind {
                Kind::Map(_) => {
                    for (name, _, v) in rd.map(value, "header checks", &[])?.iter() {
                        let expected = rd.str(v, "a header value")?.to_string();
                        out.push(check::Kind::Header(name.to_string(), Some(expected)));
                    }
                }
                _ => {
                    for n in strings(c, value, "a header name")? {
                        out.push(check::Kind::Header(
                            rd.str(n, "a header name")?.to_string(),
                            None,
                        ));
                    }
                }
            },
            _ => out.push(check::Kind::MaxLatency(rd.duration(value, "max_latency")?)),
        }
    }
    Ok(out)
}
