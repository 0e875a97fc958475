//! Running a compiled script for one user: its variables, and the request or response of its
//! hook, go into a fresh scope; what it changed comes back out, with the custom metrics it
//! counted and whether it ended the iteration. An error fails the call, never the run; its
//! message is kept (a bounded few) for the run's report.

use std::sync::Mutex;

use belier_engine::user::{CustomMetric, MetricKind, Outgoing, Reply, Tally};
use rhai::{Dynamic, ImmutableString, Map, Scope};

use super::api::{with_engine, Mark, SINK};
use belier_plan::script::Script;

/// Most distinct error messages kept for the report; further ones are only counted.
const MAX_MESSAGES: usize = 20;

/// What a script may see and change besides its variables.
pub(crate) enum Call<'a, 'r> {
    /// A `script:` step.
    Step,
    /// A `before_request` hook: the rendered request, which it may change.
    Before(&'a mut Outgoing),
    /// An `after_response` hook: the response.
    After(&'a Reply<'r>),
}

/// How a call went.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Why it failed (the script's error, with its line).
    pub error: Option<String>,
    /// It called `end_iteration()`.
    pub end_iteration: bool,
}

/// Runs `script` on `vars` (slots) as `call` says; the custom metrics it counted go to `out`,
/// indexed by `metrics`.
pub(crate) fn run(
    script: &Script,
    vars: &mut [Option<String>],
    call: Call<'_, '_>,
    metrics: &[CustomMetric],
    out: &mut Vec<Tally>,
) -> Outcome {
    let mut scope = Scope::new();
    let mut map = Map::new();
    for (name, slot) in &script.vars {
        if let Some(v) = &vars[*slot] {
            map.insert(name.into(), v.clone().into());
        }
    }
    scope.push("vars", map);
    let mut request = None;
    match call {
        Call::Step => {}
        Call::Before(outgoing) => {
            let body: ImmutableString = String::from_utf8_lossy(&outgoing.body).into_owned().into();
            let mut headers = Map::new();
            for (name, value) in &outgoing.headers {
                headers.insert(name.into(), value.clone().into());
            }
            let mut r = Map::new();
            r.insert("method".into(), outgoing.method.clone().into());
            r.insert("path".into(), outgoing.path_and_query.clone().into());
            r.insert("headers".into(), headers.into());
            r.insert("body".into(), body.clone().into());
            scope.push("request", r);
            request = Some((outgoing, body));
        }
        Call::After(reply) => {
            scope.push("response", response(reply));
        }
    }
    SINK.with(|s| {
        let mut s = s.borrow_mut();
        s.marks.clear();
        s.end_iteration = false;
    });
    let result = with_engine(|e| e.run_ast_with_scope(&mut scope, &script.ast));
    let (marks, end_iteration) = SINK.with(|s| {
        let mut s = s.borrow_mut();
        (std::mem::take(&mut s.marks), s.end_iteration)
    });
    let mut outcome = Outcome {
        error: None,
        end_iteration,
    };
    for mark in marks {
        if let Err(e) = count(mark, metrics, out) {
            outcome.error.get_or_insert(e);
        }
    }
    if let Err(e) = result {
        outcome.error = Some(e.to_string());
        return outcome;
    }
    if let Some(map) = scope.get_value::<Map>("vars") {
        for &slot in &script.sets {
            let name = script
                .vars
                .iter()
                .find(|(_, s)| *s == slot)
                .map(|(n, _)| n.as_str());
            if let Some(v) = name.and_then(|n| map.get(n)) {
                vars[slot] = (!v.is_unit()).then(|| text(v));
            }
        }
    }
    if let Some((outgoing, body)) = request {
        if let Some(r) = scope.get_value::<Map>("request") {
            apply(outgoing, &r, &body);
        }
    }
    outcome
}

/// A metric call, resolved to its number.
fn count(mark: Mark, metrics: &[CustomMetric], out: &mut Vec<Tally>) -> Result<(), String> {
    let (name, kind) = match &mark {
        Mark::Count(name, _) => (name, MetricKind::Counter),
        Mark::Value(name, _) => (name, MetricKind::Trend),
    };
    let metric = metrics
        .iter()
        .position(|m| m.name == name.as_str() && m.kind == kind)
        .ok_or_else(|| format!("no {} named `{name}` in the plan", kind.name()))?;
    out.push(match mark {
        Mark::Count(_, n) => Tally::Count { metric, n },
        Mark::Value(_, ms) => {
            if !(ms.is_finite() && ms >= 0.0) {
                return Err(format!(
                    "trend(\"{name}\", {ms}): expected milliseconds ≥ 0"
                ));
            }
            Tally::Value {
                metric,
                us: (ms * 1000.0).round() as u64,
            }
        }
    });
    Ok(())
}

/// A variable's text: strings as they are, other values as Rhai writes them.
fn text(v: &Dynamic) -> String {
    match v.clone().into_immutable_string() {
        Ok(s) => s.to_string(),
        Err(_) => v.to_string(),
    }
}

/// The `response` a hook sees: status, headers (names in lower case; repeated ones joined
/// with `, `), body (the kept part, as text) and latency in milliseconds.
fn response(reply: &Reply<'_>) -> Map {
    let mut headers = Map::new();
    for (name, value) in reply.headers() {
        let value = String::from_utf8_lossy(value);
        let key = name.to_ascii_lowercase();
        match headers.get_mut(key.as_str()) {
            Some(existing) => {
                let joined = format!("{}, {value}", text(existing));
                *existing = joined.into();
            }
            None => {
                headers.insert(key.into(), value.into_owned().into());
            }
        }
    }
    let mut r = Map::new();
    r.insert("status".into(), i64::from(reply.status).into());
    r.insert("headers".into(), headers.into());
    r.insert(
        "body".into(),
        String::from_utf8_lossy(reply.body).into_owned().into(),
    );
    r.insert(
        "latency_ms".into(),
        Dynamic::from_float(reply.latency.as_secs_f64() * 1000.0),
    );
    r
}

/// Takes a `before_request` hook's changes to the request: method, path, headers (a header
/// it removed is not sent), and the body if it set a new one.
fn apply(outgoing: &mut Outgoing, r: &Map, body_before: &ImmutableString) {
    if let Some(m) = r.get("method") {
        outgoing.method = text(m);
    }
    if let Some(p) = r.get("path") {
        outgoing.path_and_query = text(p);
    }
    if let Some(b) = r.get("body") {
        let unchanged = b
            .clone()
            .into_immutable_string()
            .is_ok_and(|s| s.ptr_eq(body_before) || s == *body_before);
        if !unchanged {
            outgoing.body = text(b).into_bytes();
        }
    }
    let Some(headers) = r.get("headers").and_then(|h| h.read_lock::<Map>()) else {
        return;
    };
    outgoing
        .headers
        .retain(|(n, _)| headers.keys().any(|k| k.eq_ignore_ascii_case(n)));
    for (name, value) in headers.iter() {
        // CR and LF would split the header: dropped, as from templated header values. (A
        // method, path or header name a script makes unsendable is refused by the engine: the
        // request fails unsent.)
        let mut cleaned = String::new();
        belier_plan::template::escape_header(&text(value), &mut cleaned);
        let value = cleaned;
        match outgoing
            .headers
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            Some((_, v)) => *v = value,
            None => outgoing.headers.push((name.to_string(), value)),
        }
    }
}

/// Script error messages of a run, by check: the first [`MAX_MESSAGES`] distinct ones with
/// how often each came, for the report. Locked only when a script fails.
#[derive(Debug, Default)]
pub(crate) struct ScriptErrors {
    messages: Mutex<Vec<(usize, String, u64)>>,
}

impl ScriptErrors {
    /// Counts error `message` of the script whose check is `check`.
    pub(crate) fn record(&self, check: usize, message: &str) {
        let mut m = self.messages.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = m.iter_mut().find(|(c, t, _)| *c == check && t == message) {
            entry.2 += 1;
        } else if m.len() < MAX_MESSAGES {
            m.push((check, message.to_string(), 1));
        }
    }

    /// The messages kept: check number, message, count.
    pub(crate) fn messages(&self) -> Vec<(usize, String, u64)> {
        self.messages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
