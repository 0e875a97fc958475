//! A request step compiled: its method and URL, headers, body (text, JSON template, file),
//! extractions and checks, each template checked against the variables defined before it.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use belier_engine::request::{rules, InvalidRequest};
use belier_engine::BodyStream;
use regex::Regex;
use serde_json_path::JsonPath;

use crate::check::{self, Check};
use crate::compiler::Compiler;
use crate::error::Result;
use crate::extract::{Extraction, Source};
use crate::model::{Body, JsonTemplate, Request};
use crate::origin::Origin;
use crate::origin::Scheme;
use crate::script::{self, Hook};
use crate::steps::form;
use crate::template::{self, Template};
use crate::yaml::{Fields, Kind, Node};

const VERBS: &[&str] = &["get", "post", "put", "patch", "delete", "head", "options"];
/// Keys of a request step; the other step kinds' keys are listed too so that a typo such as
/// `pauze` is answered with `pause`.
pub(super) const REQUEST_KEYS: &[&str] = &[
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
    "form",
    "multipart",
    "extract",
    "check",
    "abort_on_fail",
    "timeout",
    "pause",
    "group",
    "loop",
    "steps",
    "if",
    "choice",
    "before_request",
    "after_response",
    "script",
    "grpc",
    "stream",
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
                    rules::check_method(m).map_err(|p| {
                        rd.err(n, InvalidRequest::Method(m.into(), p).to_string())
                    })?;
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

/// Where `url` text goes: the index of its origin among the plan's hosts (0: the target's;
/// another origin is added to [`Compiler::hosts`] when first seen), and its path part.
fn url_path<'t>(c: &mut Compiler<'_>, node: &Node, text: &'t str) -> Result<(usize, &'t str)> {
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
    // A URL parser drops CR and LF silently, which would hide the mistake.
    rules::check_line(origin)
        .map_err(|p| rd.err(node, format!("the URL `{}` {p}", origin.escape_debug())))?;
    if origin.contains("{{") {
        return Err(rd.err(
            node,
            "the origin (scheme, host, port) of a `url` cannot use templates",
        ));
    }
    let parsed = url::Url::parse(&format!("{origin}/"))
        .map_err(|e| rd.err(node, format!("bad URL `{origin}`: {e}")))?;
    let scheme = match parsed.scheme() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => {
            return Err(rd.err(
                node,
                format!("expected an http or https URL, found `{other}:`"),
            ))
        }
    };
    let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
        return Err(rd.err(node, format!("bad URL `{origin}`: it needs a host")));
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(rd.err(
            node,
            "a `url` cannot carry credentials; use an Authorization header",
        ));
    }
    let found = Origin {
        scheme,
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port,
    };
    let index = c.host(&found);
    Ok((index, &text[origin_end..]))
}

pub(super) fn request(
    c: &mut Compiler<'_>,
    f: &Fields<'_>,
    defined: &mut HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<usize> {
    let rd = c.rd;
    let (method, path_node, is_url) = method_and_path(c, f)?;
    let raw = rd.str(path_node, "a path")?;
    let (origin, path_text, path) = path(c, path_node, raw, is_url, defined, feeders)?;
    let name = match f.get("name") {
        Some(n) => rd.str(n, "a step name")?.to_string(),
        // A step on another host is named with its URL, so its row says where it went.
        None if origin > 0 => format!("{method} {raw}"),
        None => format!("{method} {path_text}"),
    };
    let step = c.step_row(&name);

    let mut headers = step_headers(c, f, defined, feeders)?;
    let body = body(c, f, &mut headers, defined, feeders)?;
    super::framing::check(c, f, &headers, &body)?;

    let vars_check = uses_extracted(c, &path, &headers, &body)
        .then(|| c.check_row(&format!("{name}: variables set")));
    let (checks, status_checked) = checks(c, f, &name, check_kinds)?;
    let extract = extractions(c, f, &name, source)?;
    // Hooks: `before_request` sees the variables defined before the step, `after_response`
    // also the ones it extracts.
    let hook = |c: &mut Compiler<'_>, hook: Hook, defined: &mut HashSet<usize>| {
        f.get(hook.key())
            .map(|n| script::compile(c, n, hook, &name, defined))
            .transpose()
    };
    let before = hook(c, Hook::BeforeRequest, defined)?;
    for e in &extract {
        defined.insert(e.slot);
    }
    let after = hook(c, Hook::AfterResponse, defined)?;
    let abort_on_fail = abort_on_fail(c, f)?;
    let timeout = timeout(c, f)?;
    let stream = stream(c, f)?;
    let keep_body = extract.iter().any(|e| e.source.needs_body())
        || checks.iter().any(|c| c.kind.needs_body())
        || after.is_some();
    c.requests.push(Request {
        step,
        name,
        method,
        path,
        // Another host's step shows its whole URL.
        path_text: if origin > 0 { raw } else { path_text }.to_string(),
        origin,
        headers,
        body,
        extract,
        checks,
        status_checked,
        vars_check,
        abort_on_fail,
        timeout,
        keep_body,
        before,
        after,
        grpc: None,
        stream,
        ws: None,
    });
    Ok(c.requests.len() - 1)
}

/// The request target of a step whose `path:` or `url:` (`node`) reads `raw`: the index of
/// its host (0: the target's), its path as written, and its template (under the target's
/// base path, for a `path:`).
fn path<'t>(
    c: &mut Compiler<'_>,
    node: &Node,
    raw: &'t str,
    is_url: bool,
    defined: &HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<(usize, &'t str, Template)> {
    let rd = c.rd;
    let (origin, path_text, prefix) = if is_url {
        let (origin, p) = url_path(c, node, raw)?;
        (origin, if p.is_empty() { "/" } else { p }, "")
    } else {
        if !raw.starts_with('/') {
            return Err(rd.err(
                node,
                format!("expected a path starting with `/`, found `{raw}`"),
            ));
        }
        (0, raw, c.target.base_path.as_str())
    };
    let offset = raw.len() - path_text.len();
    let path = c
        .template_text(node, path_text, offset, defined, feeders)?
        .with_prefix(prefix);
    // The path's own text goes on the wire as written (what templates bring is escaped).
    for text in path.literals() {
        rules::check_target(text)
            .map_err(|p| rd.err(node, InvalidRequest::Target(raw.into(), p).to_string()))?;
    }
    Ok((origin, path_text, path))
}

/// The step's body (one of `body`, `json`, `body_file`, `form`, `multipart`), with the
/// `Content-Type` it goes with added to `headers` unless they have one (a multipart body's
/// replaces theirs: the boundary is the body's own).
fn body(
    c: &Compiler<'_>,
    f: &Fields<'_>,
    headers: &mut Vec<(String, Template)>,
    defined: &HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<Body> {
    let rd = c.rd;
    let bodies: Vec<&str> = ["body", "json", "body_file", "form", "multipart"]
        .into_iter()
        .filter(|k| f.get(k).is_some())
        .collect();
    if bodies.len() > 1 {
        return Err(rd.err(
            f.key_node(bodies[1]).unwrap_or(f.node),
            "give one of `body`, `json`, `body_file`, `form` or `multipart`",
        ));
    }
    let has_content_type = |headers: &[(String, Template)]| {
        headers
            .iter()
            .any(|(h, _)| h.eq_ignore_ascii_case("content-type"))
    };
    Ok(if let Some(n) = f.get("body") {
        let t = c.template(n, "a body", defined, feeders)?;
        match t.as_literal() {
            // Nothing that changes per request: made once.
            Some(text) => Body::Bytes(Arc::from(text.into_bytes()), " [body]"),
            None => Body::Text(t),
        }
    } else if let Some(n) = f.get("json") {
        if !has_content_type(headers) {
            headers.push(("Content-Type".into(), Template::literal("application/json")));
        }
        let json = json_template(c, n, defined, feeders)?;
        match fixed_json(&json) {
            // No template inside: serialise once rather than per request.
            Some(value) => Body::Bytes(Arc::from(value.to_string().into_bytes()), " [json]"),
            None => Body::Json(json),
        }
    } else if let Some(n) = f.get("body_file") {
        let path = c.file(rd.str(n, "a body file path")?);
        let bytes = crate::files::read(&path, crate::files::MOST_BODY_BYTES).map_err(|e| {
            rd.err(
                n,
                format!("cannot read body file `{}`: {e}", path.display()),
            )
        })?;
        Body::Bytes(Arc::from(bytes), " [body file]")
    } else if let Some(n) = f.get("form") {
        if !has_content_type(headers) {
            headers.push((
                "Content-Type".into(),
                Template::literal("application/x-www-form-urlencoded"),
            ));
        }
        let form = form::form(c, n, defined, feeders)?;
        match form.fixed() {
            // No field changes per request: encoded once.
            Some(bytes) => Body::Bytes(Arc::from(bytes), " [form]"),
            None => Body::Form(form),
        }
    } else if let Some(n) = f.get("multipart") {
        let body = form::multipart(c, n, defined, feeders)?;
        // The boundary is the body's own: any other Content-Type would make it unreadable.
        headers.retain(|(h, _)| !h.eq_ignore_ascii_case("content-type"));
        headers.push((
            "Content-Type".into(),
            Template::literal(&format!("multipart/form-data; boundary={}", body.boundary)),
        ));
        Body::Multipart(body)
    } else {
        Body::None
    })
}

/// Whether the request's path, headers or body read a variable that starts unset (one an
/// earlier step extracts): it then gets a `variables set` check.
pub(super) fn uses_extracted(
    c: &Compiler<'_>,
    path: &Template,
    headers: &[(String, Template)],
    body: &Body,
) -> bool {
    let mut slots: Vec<usize> = path.vars().collect();
    for (_, t) in headers {
        slots.extend(t.vars());
    }
    match body {
        Body::Text(t) => slots.extend(t.vars()),
        Body::Json(j) => json_vars(j, &mut slots),
        Body::Form(form) => slots.extend(form.fields.iter().flat_map(|(_, t)| t.vars())),
        Body::Multipart(m) => slots.extend(m.vars()),
        Body::None | Body::Bytes(..) => {}
    }
    slots
        .iter()
        .any(|s| c.initial.get(*s).is_some_and(Option::is_none))
}

/// What a step's `check:` mapping reads as, by step kind.
pub(super) type CheckKinds = fn(&Compiler<'_>, &Node) -> Result<Vec<check::Kind>>;
/// What an `extract:` entry's value reads as, by step kind.
pub(super) type Sources = fn(&Compiler<'_>, &Node) -> Result<Source>;

/// The step's `check`s (read by `kinds`), each with its row, and whether one of them judges
/// the status.
pub(super) fn checks(
    c: &mut Compiler<'_>,
    f: &Fields<'_>,
    name: &str,
    kinds: CheckKinds,
) -> Result<(Vec<Check>, bool)> {
    let mut checks = Vec::new();
    let mut status_checked = false;
    if let Some(n) = f.get("check") {
        for kind in kinds(c, n)? {
            status_checked |= matches!(kind, check::Kind::Status(_) | check::Kind::GrpcStatus(_));
            let index = c.check_row(&format!("{name}: {}", kind.label()));
            checks.push(Check { index, kind });
        }
    }
    Ok((checks, status_checked))
}

/// The step's `extract`ions (each read by `source`), each into a variable's slot and with its
/// check row.
pub(super) fn extractions(
    c: &mut Compiler<'_>,
    f: &Fields<'_>,
    name: &str,
    source: Sources,
) -> Result<Vec<Extraction>> {
    let rd = c.rd;
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
    Ok(extract)
}

/// The step's `abort_on_fail` (false unless given).
pub(super) fn abort_on_fail(c: &Compiler<'_>, f: &Fields<'_>) -> Result<bool> {
    let given = f
        .get("abort_on_fail")
        .map(|n| c.rd.bool(n, "abort_on_fail"));
    Ok(given.transpose()?.unwrap_or(false))
}

/// The plan's default headers with the step's `headers:` over them (a step's header
/// replaces a default of the same name).
pub(super) fn step_headers(
    c: &Compiler<'_>,
    f: &Fields<'_>,
    defined: &HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<Vec<(String, Template)>> {
    let mut headers = c.default_headers.clone();
    if let Some(n) = f.get("headers") {
        for (h, t) in c.headers(n, defined, feeders)? {
            headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(&h));
            headers.push((h, t));
        }
    }
    Ok(headers)
}

/// The step's own `timeout`, above 0.
pub(super) fn timeout(c: &Compiler<'_>, f: &Fields<'_>) -> Result<Option<Duration>> {
    let rd = c.rd;
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
    Ok(timeout)
}

/// The step's `stream:` (`sse`, `chunks` or `llm`): its response body cut into messages as
/// they come, as `belier URL --stream` does.
fn stream(c: &Compiler<'_>, f: &Fields<'_>) -> Result<Option<BodyStream>> {
    let Some(node) = f.get("stream") else {
        return Ok(None);
    };
    match c.rd.str(node, "stream")? {
        "sse" => Ok(Some(BodyStream::Sse)),
        "chunks" => Ok(Some(BodyStream::Chunks)),
        "llm" => Ok(Some(BodyStream::Llm)),
        other => Err(c.rd.err(
            node,
            format!("expected `stream: sse`, `chunks` or `llm`, found `{other}`"),
        )),
    }
}

/// The value of a JSON body with no template inside.
pub(super) fn fixed_json(j: &JsonTemplate) -> Option<serde_json::Value> {
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

pub(super) fn json_template(
    c: &Compiler<'_>,
    node: &Node,
    defined: &HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<JsonTemplate> {
    Ok(match &node.kind {
        Kind::Scalar { text, .. } => match node.to_json() {
            serde_json::Value::String(_) if text.contains("{{") => {
                let t = c.template(node, "a JSON string", defined, feeders)?;
                match t.as_literal() {
                    // Only `{{ env.NAME }}`: fixed since the plan loaded.
                    Some(text) => JsonTemplate::Fixed(serde_json::Value::String(text)),
                    None => JsonTemplate::Text(t),
                }
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

pub(super) fn json_path(c: &Compiler<'_>, node: &Node) -> Result<(JsonPath, String)> {
    let text = c.rd.str(node, "a JSONPath")?;
    let path = JsonPath::parse(text).map_err(|e| {
        c.rd.err(
            node,
            format!("bad JSONPath `{text}` (e.g. `$.token`, `$.items[0].id`): {e}"),
        )
    })?;
    Ok((path, text.to_string()))
}

pub(super) fn source(c: &Compiler<'_>, node: &Node) -> Result<Source> {
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

pub(super) fn check_kinds(c: &Compiler<'_>, node: &Node) -> Result<Vec<check::Kind>> {
    let rd = c.rd;
    let f = rd.map(node, "check", CHECK_KEYS)?;
    let mut out = Vec::new();
    for (key, _, value) in f.iter() {
        match key {
            "status" => {
                let mut codes = Vec::new();
                for n in c.rd.strings(value, "a status code")? {
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
                for n in c.rd.strings(value, "text the body contains")? {
                    out.push(check::Kind::BodyContains(rd.str(n, "text")?.to_string()));
                }
            }
            "body_matches" => {
                for n in c.rd.strings(value, "a regex")? {
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
                    for n in c.rd.strings(value, "a header name")? {
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
