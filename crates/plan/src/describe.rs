//! The resolved plan as indented text, for `belier check`.

use std::fmt::Write;

use crate::duration::show;
use crate::model::{Body, LoadModel, LoadPlan, Op, Plan, Program, Request};
use belier_engine::Spacing;

fn profile(p: &belier_engine::Profile, unit: &str) -> String {
    if p.stages().is_empty() {
        return format!("{} {unit}", p.start());
    }
    let stages: Vec<String> = p
        .stages()
        .iter()
        .map(|s| format!("{} → {}", show(s.duration), s.target))
        .collect();
    format!("from {} {unit}: {}", p.start(), stages.join(", "))
}

impl Plan {
    /// The plan as resolved: target, options, data, load, scenarios with their steps,
    /// checks and extractions, statistics rows and thresholds.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        self.write_connection(&mut out);
        self.write_inputs(&mut out);
        self.write_users(&mut out);
        let p = &self.program;
        let _ = writeln!(out, "statistics rows: {}", p.steps.join(" | "));
        if !p.metrics.is_empty() {
            let metrics: Vec<String> = p
                .metrics
                .iter()
                .map(|m| format!("{} ({})", m.name, m.kind.name()))
                .collect();
            let _ = writeln!(out, "custom metrics: {}", metrics.join(" | "));
        }
        if !self.thresholds.is_empty() {
            let _ = writeln!(out, "thresholds:");
            for t in &self.thresholds {
                match t.abort_after {
                    Some(after) => {
                        let _ = writeln!(
                            out,
                            "  {}   (stops the run when it fails, judged from {} on)",
                            t.expression,
                            crate::duration::show(after)
                        );
                    }
                    None => {
                        let _ = writeln!(out, "  {}", t.expression);
                    }
                }
            }
        }
        out
    }

    /// Where the plan's requests go and how: its file, target, other hosts, options, TLS.
    fn write_connection(&self, out: &mut String) {
        let o = &self.options;
        let _ = writeln!(out, "plan: {}", self.file.display());
        if self.target_written.contains("{{") {
            // Resolved from the environment: shown as written.
            let _ = writeln!(out, "target: {}", self.target_written);
        } else {
            let _ = writeln!(out, "target: {}", self.target.url());
        }
        if !self.hosts.is_empty() {
            // Every host the run connects to, each with a connection per user of its own.
            let others: Vec<String> = self.hosts.iter().map(|h| h.url()).collect();
            let _ = writeln!(
                out,
                "hosts: {} (the target's) and {}",
                self.target.url(),
                others.join(", ")
            );
        }
        let on = |b: bool| if b { "on" } else { "off" };
        let _ = writeln!(
            out,
            "options: timeout {}, keepalive {}, cookies {}, compressed {}, follow {}, http2 {}{}",
            o.timeout.map_or("default".into(), show),
            on(o.keepalive),
            on(o.cookies),
            on(o.compressed),
            match o.follow {
                0 => "off".to_string(),
                n => format!("{n} redirects"),
            },
            on(o.http2),
            o.max_streams
                .map_or(String::new(), |m| format!(" ({m} streams)")),
        );
        if let Some(header) = &o.server_timing {
            let _ = writeln!(out, "server timing: read from {}", header.name());
        }
        if let Some(path) = &o.unix_socket {
            let _ = writeln!(out, "unix socket: {}", path.display());
        }
        if o.insecure || o.cacert.is_some() || o.cert.is_some() || o.sni.is_some() {
            let _ = writeln!(
                out,
                "tls: insecure {}, cacert {}, cert {}, key {}, sni {}",
                on(o.insecure),
                o.cacert
                    .as_ref()
                    .map_or("-".into(), |p| p.display().to_string()),
                o.cert
                    .as_ref()
                    .map_or("-".into(), |p| p.display().to_string()),
                o.key
                    .as_ref()
                    .map_or("-".into(), |p| p.display().to_string()),
                o.sni.as_deref().unwrap_or("-"),
            );
        }
    }

    /// What the requests are made from: default headers, variables, data files.
    fn write_inputs(&self, out: &mut String) {
        let p = &self.program;
        let o = &self.options;
        if !o.headers.is_empty() {
            let _ = writeln!(out, "headers:");
            for (n, v) in &o.headers {
                let _ = writeln!(out, "  {n}: {v}");
            }
        }
        if !self.variables.is_empty() {
            let _ = writeln!(out, "variables:");
            for (n, v) in &self.variables {
                let _ = writeln!(out, "  {n}: {v}");
            }
        }
        if !p.feeders.is_empty() {
            let _ = writeln!(out, "data:");
            for f in &p.feeders {
                let _ = writeln!(
                    out,
                    "  {}: {} ({} rows; columns {}; order {})",
                    f.name,
                    f.file.display(),
                    f.len(),
                    f.columns().join(", "),
                    f.order.name()
                );
            }
        }
    }

    /// Who runs what: the load (or each executor's), setup, the scenarios and their steps,
    /// teardown.
    fn write_users(&self, out: &mut String) {
        let p = &self.program;
        let o = &self.options;
        if self.executors.is_empty() {
            load(out, "", &self.load);
        } else {
            let _ = writeln!(
                out,
                "loads: {} at once, started together (each scenario below with its own)",
                self.executors.len()
            );
        }
        if let Some(setup) = &self.setup {
            let _ = writeln!(
                out,
                "setup (once, before any user; its variables shared with every user):"
            );
            steps(
                out,
                &setup.program,
                &setup.program.scenarios[0].ops,
                &o.headers,
                true,
            );
        }
        let total: u64 = p.scenarios.iter().map(|s| s.weight).sum();
        let _ = writeln!(out, "scenarios:");
        for s in &p.scenarios {
            let _ = writeln!(
                out,
                "  {} (weight {}, {:.1} %):",
                s.name,
                s.weight,
                100.0 * s.weight as f64 / total.max(1) as f64
            );
            if let Some(e) = self.executor_of(s) {
                let pad = if e.shared {
                    let _ = writeln!(out, "    shared load ({}):", e.name);
                    "      "
                } else {
                    "    "
                };
                load(out, pad, &e.load);
            }
            steps(out, p, &s.ops, &o.headers, false);
        }
        if let Some(teardown) = &self.teardown {
            let _ = writeln!(
                out,
                "teardown (once, after the last user, Ctrl-C or failed thresholds included):"
            );
            let ops = &teardown.program.scenarios[0].ops;
            steps(out, &teardown.program, ops, &o.headers, true);
        }
    }
}

impl LoadPlan {
    /// The load on one line, e.g. `open loop, 20 iterations/s, at most 10000 users, even
    /// arrivals, 5s`: reports name an executor's load with it.
    pub fn summary(&self) -> String {
        let mut text = String::new();
        load(&mut text, "", self);
        let lines: Vec<&str> = text
            .lines()
            .map(|l| l.trim().trim_start_matches("load: "))
            .filter(|l| !l.starts_with("seed:"))
            .collect();
        lines.join(", ")
    }
}

impl Plan {
    /// The executor that runs scenario `s`, when the plan has several.
    fn executor_of(&self, s: &crate::model::Scenario) -> Option<&crate::model::Executor> {
        let i = self
            .program
            .scenarios
            .iter()
            .position(|x| x.name == s.name)?;
        self.executors.iter().find(|e| e.scenarios.contains(&i))
    }
}

/// `load: …` and its bounds, each line after `pad`.
fn load(out: &mut String, pad: &str, l: &LoadPlan) {
    let model = match &l.model {
        LoadModel::Closed { vus, pacing } => format!(
            "closed loop, {}{}",
            profile(vus, "users"),
            pacing.map_or(String::new(), |d| format!(
                ", one iteration every {} per user",
                show(d)
            ))
        ),
        LoadModel::Open {
            rate,
            max_vus,
            spacing,
        } => format!(
            "open loop, {}, at most {max_vus} users, {} arrivals",
            profile(rate, "iterations/s"),
            match spacing {
                Spacing::Even => "even".to_string(),
                Spacing::Poisson { seed } => format!("poisson (seed {seed})"),
            }
        ),
    };
    let _ = writeln!(out, "{pad}load: {model}");
    if let Some(d) = l.duration {
        let _ = writeln!(out, "{pad}  duration: {}", show(d));
    }
    if let Some(n) = l.iterations {
        let _ = writeln!(out, "{pad}  iterations: {n}");
    }
    let _ = writeln!(out, "{pad}  seed: {}", l.seed);
}

/// What `check` says of a request's body: its kind, a form's field names, a multipart's parts.
fn body_label(body: &Body) -> String {
    match body {
        Body::None => String::new(),
        Body::Text(_) => " [body]".into(),
        Body::Json(_) => " [json]".into(),
        Body::Bytes(_, label) => label.to_string(),
        Body::Form(form) => {
            let names: Vec<&str> = form.fields.iter().map(|(n, _)| n.as_str()).collect();
            format!(" [form: {}]", names.join(", "))
        }
        Body::Multipart(m) => {
            let parts: Vec<String> = m
                .parts
                .iter()
                .map(|(name, file)| match file {
                    Some((file, bytes)) => format!("{name} ← file {file} ({bytes} bytes)"),
                    None => name.clone(),
                })
                .collect();
            format!(" [multipart: {}]", parts.join(", "))
        }
    }
}

/// The ops of a scenario or phase, indented; `strict`: a phase's rule (2xx or fail).
fn steps(out: &mut String, p: &Program, ops: &[Op], defaults: &[(String, String)], strict: bool) {
    let mut depth = 2;
    for op in ops {
        let pad = "  ".repeat(depth);
        match op {
            Op::Request(i) => request(out, &pad, p, &p.requests[*i], defaults, strict),
            Op::Script(i) => {
                let script = &p.scripts[*i];
                let name = p.checks[script.check].trim_end_matches(": script");
                let _ = writeln!(out, "{pad}- {name}: {}", script.describe());
            }
            Op::Pause(a, b) if a == b => {
                let _ = writeln!(out, "{pad}- pause {}", show(*a));
            }
            Op::Pause(a, b) => {
                let _ = writeln!(out, "{pad}- pause {}..{} (uniform)", show(*a), show(*b));
            }
            Op::LoopStart { count, .. } => {
                let _ = writeln!(out, "{pad}- loop {count} times:");
                depth += 1;
            }
            Op::Group(name) => {
                let _ = writeln!(out, "{pad}- group {name}:");
                depth += 1;
            }
            Op::Parallel { name, requests, .. } => {
                let _ = writeln!(out, "{pad}- parallel {name} (sent at once):");
                let inner = "  ".repeat(depth + 1);
                for i in requests {
                    request(out, &inner, p, &p.requests[*i], defaults, strict);
                }
            }
            Op::If { text, .. } => {
                let _ = writeln!(out, "{pad}- if {text}:");
                depth += 1;
            }
            Op::Choice { branches, .. } => {
                let _ = writeln!(out, "{pad}- choice of {} (one by weight):", branches.len());
                depth += 1;
            }
            Op::Branch { weight, total } => {
                let share = 100.0 * *weight as f64 / (*total).max(1) as f64;
                let _ = writeln!(out, "{pad}- weight {weight} ({share:.1} %):");
                depth += 1;
            }
            Op::LoopEnd { .. } | Op::GroupEnd | Op::Jump { .. } => {
                depth = depth.saturating_sub(1).max(2)
            }
        }
    }
}

/// A `ws:` step's action, as its line shows it.
fn ws_step(step: &crate::model::WsStep, path: &str) -> String {
    use crate::model::{WsMatch, WsStep};
    let awaited = |a: &crate::model::Awaited| {
        let what = match &a.matching {
            WsMatch::Any => "any message".to_string(),
            WsMatch::Echo => "its echo".to_string(),
            WsMatch::Contains(_) => "a message containing a text".to_string(),
            WsMatch::Json(_, path, _) => format!("a JSON message by {path}"),
        };
        match a.count {
            1 => what,
            n => format!("{n} × {what}"),
        }
    };
    match step {
        WsStep::Connect {
            subprotocols,
            deflate,
        } => {
            let mut line = format!("ws connect {path}");
            if !subprotocols.is_empty() {
                line += &format!(" (subprotocols {})", subprotocols.join(", "));
            }
            if *deflate {
                line += ", offering permessage-deflate";
            }
            line
        }
        WsStep::Send { binary, reply } => {
            let kind = if *binary { "binary" } else { "text" };
            match reply {
                None => format!("ws send ({kind})"),
                Some(a) => format!("ws send ({kind}), awaiting {}", awaited(a)),
            }
        }
        WsStep::Receive(a) => format!("ws receive {}", awaited(a)),
        WsStep::Ping => "ws ping".to_string(),
        WsStep::Close { code, .. } => format!("ws close {code}"),
    }
}

/// A request step's lines: its request line (a `grpc:` step's method), its headers (a `grpc:`
/// step's metadata), extractions, checks, how its status is judged, hooks and options.
fn request(
    out: &mut String,
    pad: &str,
    p: &Program,
    r: &Request,
    defaults: &[(String, String)],
    strict: bool,
) {
    let (what, body, judged) = match (&r.grpc, &r.ws) {
        (_, Some(step)) => (
            ws_step(step, &r.path_text),
            String::new(),
            "fails on a refused upgrade, a broken or closed socket, or what it awaits not coming",
        ),
        (Some(method), None) => (
            format!("grpc {}", method.name()),
            " [message]".to_string(),
            "fails on a status other than OK",
        ),
        (None, None) => (
            format!("{} {}", r.method, r.path_text),
            body_label(&r.body),
            if strict {
                "fails on a status outside 2xx"
            } else {
                "fails on status ≥ 400"
            },
        ),
    };
    // A grpc step's own headers are gRPC's; its metadata is what the plan gave.
    let own_header =
        |n: &str| r.grpc.is_some() && (n == "content-type" || n == "te" || n.starts_with("grpc-"));
    let _ = writeln!(out, "{pad}- {what}  → row `{}`{body}", r.name);
    for (n, _) in r.headers.iter() {
        if !own_header(n) && !defaults.iter().any(|(d, _)| d == n) {
            let _ = writeln!(out, "{pad}    header {n}");
        }
    }
    for e in &r.extract {
        let _ = writeln!(out, "{pad}    extract {} ← {}", e.name, e.source.describe());
    }
    for c in &r.checks {
        let _ = writeln!(out, "{pad}    check {}", p.checks[c.index]);
    }
    if !r.status_checked {
        let _ = writeln!(out, "{pad}    {judged}");
    }
    for hook in [r.before, r.after].into_iter().flatten() {
        let _ = writeln!(out, "{pad}    {}", p.scripts[hook].describe());
    }
    if let Some(t) = r.timeout {
        let _ = writeln!(out, "{pad}    timeout {}", show(t));
    }
    if r.abort_on_fail {
        let _ = writeln!(out, "{pad}    abort_on_fail: a failure ends the iteration");
    }
}
