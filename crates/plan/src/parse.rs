//! Plan text → [`Plan`]: the top level (target, options, variables, data, load,
//! thresholds). Scenarios and their steps are compiled in `steps`.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use crate::error::Result;
use crate::feeder::{Feeder, Order};
use crate::model::{Options, Phase, Plan, Program, Scenario, Target};
use crate::origin::Origin;
use crate::origin::Scheme;
use crate::template::{self, Reference, Segment, Template};
use crate::yaml::{self, Fields, Kind, Node, Reader};
use belier_engine::request::rules;

mod executors;
mod load;
mod options;
mod thresholds;

pub use crate::compiler::Copies;
// Re-exported for `thresholds`, which reads it as its parent's.
pub(crate) use crate::compiler::pos_in;
use crate::compiler::{env_value, Compiler, EnvLookup};
use load::load;
pub use load::DEFAULT_SEED;
use options::options;
pub use options::MAX_FOLLOW;
use thresholds::threshold;

/// Keys of the plan's top level.
const TOP_KEYS: &[&str] = &[
    "target",
    "headers",
    "timeout",
    "insecure",
    "cacert",
    "cert",
    "key",
    "sni",
    "http2",
    "http3",
    "quic_0rtt",
    "max_streams",
    "connections_per_host",
    "connection",
    "unix_socket",
    "keepalive",
    "cookies",
    "compressed",
    "follow",
    "server_timing",
    "variables",
    "data",
    "scenarios",
    "load",
    "thresholds",
    "setup",
    "teardown",
    "proto",
    "import_paths",
    "protoset",
];

/// Names the built-ins take; no variable may shadow them.
const BUILTINS: &[&str] = &["vu", "iteration", "uuid", "random_int", "random_string"];

/// The text of a scalar where only `{{ env.NAME }}` may appear (the target, plan variables):
/// resolved once, here.
fn fixed_text(rd: Reader<'_>, env: &EnvLookup<'_>, node: &Node, what: &str) -> Result<String> {
    let text = rd.str(node, what)?;
    let mut resolve = |r: Reference<'_>| {
        match r {
        Reference::Env(name, default) => env_value(env, name, default).map(Segment::Value),
        _ => Err(format!(
            "only `{{{{ env.NAME }}}}` may be used in {what} (it is resolved once, when the plan loads)"
        )),
    }
    };
    let compiled = Template::compile(text, &mut resolve)
        .map_err(|(offset, m)| rd.err_at(pos_in(node, offset), m))?;
    compiled.as_literal().ok_or_else(|| {
        rd.err(
            node,
            format!("only `{{{{ env.NAME }}}}` may be used in {what} (it is resolved once, when the plan loads)"),
        )
    })
}

/// Parses a whole plan, reading `{{ env.NAME }}` from `env`.
pub(crate) fn plan(text: &str, file: &Path, env: &EnvLookup<'_>) -> Result<Plan> {
    plan_with(text, file, env, &Copies::new())
}

/// [`plan`], reading the files it names from `copies` where they have one. The plan keeps
/// what it read of `env` ([`Plan::environment`]), so that a worker can load it with the same.
pub(crate) fn plan_with(
    text: &str,
    file: &Path,
    env: &EnvLookup<'_>,
    copies: &Copies,
) -> Result<Plan> {
    let read = RefCell::new(BTreeMap::new());
    let recording = |name: &str| {
        let value = env(name);
        // A value that is not UTF-8 fails the plan anyway: it is never sent.
        (read.borrow_mut()).insert(name.to_string(), value.as_ref().ok().cloned());
        value
    };
    let mut plan = compile(text, file, &recording, copies)?;
    plan.environment = read.into_inner();
    Ok(plan)
}

/// [`plan_with`] but for the environment it read.
fn compile(text: &str, file: &Path, env: &EnvLookup<'_>, copies: &Copies) -> Result<Plan> {
    let root = yaml::parse(text, file)?;
    let rd = Reader { file };
    let top = rd.map(&root, "the plan", TOP_KEYS)?;
    let Some(target_node) = top.get("target") else {
        return Err(rd.err(
            &root,
            "expected `target: URL` (e.g. `target: http://127.0.0.1:8080`)",
        ));
    };
    let target = target(rd, env, target_node)?;
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut c = Compiler::new(rd, env, dir, copies, target);
    let variables = top
        .get("variables")
        .map_or(Ok(Vec::new()), |node| variables(&mut c, node))?;
    if let Some(node) = top.get("data") {
        data_sources(&mut c, node)?;
    }
    let constants: HashSet<usize> = (0..c.var_names.len()).collect();
    if let Some(node) = top.get("headers") {
        let mut used = Vec::new();
        c.default_headers = c.headers(node, &constants, &mut used)?;
        c.default_header_feeders = used;
    }
    let mut options = options(&c, &top)?;
    let load = load(rd, top.get("load"))?;
    c.schema = crate::steps::grpc::schema(&c, &top)?;

    let Some(scenarios_node) = top.get("scenarios") else {
        return Err(rd.err(
            &root,
            "expected `scenarios:`, a list of scenarios with `name` and `steps`",
        ));
    };
    let (setup, scenarios, teardown) = phases(&mut c, &top, scenarios_node, &constants)?;
    grpc_http2(&c, &top, &mut options)?;
    check_one_host(&c, &top, &root, &options)?;
    check_early(&c, &top, &options)?;

    let names: Vec<String> = scenarios.iter().map(|s| s.name.clone()).collect();
    let executors = executors::executors(rd, top.key_node("load"), scenarios_node, &names, &load)?;
    let mut thresholds = Vec::new();
    if let Some(node) = top.get("thresholds") {
        for item in rd.seq(node, "thresholds")? {
            let t = threshold(rd, item)?;
            if let Some(metric) = t
                .scope
                .as_ref()
                .and_then(|s| c.metrics.iter().find(|m| &m.name == s))
            {
                crate::script::threshold_fits(metric, &t).map_err(|m| rd.err(item, m))?;
            } else if let Some(scope) = &t.scope {
                executors::check_scope(rd, item, scope, &c.steps, &executors, &names)?;
            }
            thresholds.push(t);
        }
    }

    let program = Program {
        steps: c.steps,
        checks: c.checks,
        requests: c.requests,
        scenarios,
        initial: c.initial,
        feeders: c.feeders,
        scripts: c.scripts,
        metrics: c.metrics,
    };
    let mut plan = Plan {
        file: file.to_path_buf(),
        files: c.files.into_inner(),
        environment: BTreeMap::new(),
        target: c.target,
        hosts: c.hosts,
        target_written: target_node.scalar().unwrap_or_default().trim().to_string(),
        options,
        load,
        executors,
        thresholds,
        variables,
        program: Arc::new(program),
        setup,
        teardown,
    };
    plan.apply_options();
    check_rows(rd, &root, &plan)?;
    Ok(plan)
}

/// The plan's `variables`, as written (a value from the environment is shown as
/// `{{ env.NAME }}`); their values become the first slots, in plan order
/// (`Plan::set_variable` relies on it).
fn variables(c: &mut Compiler<'_>, node: &Node) -> Result<Vec<(String, String)>> {
    let rd = c.rd;
    let mut variables = Vec::new();
    for (name, key, value) in rd.map(node, "variables", &[])?.iter() {
        check_name(rd, key, name, "a variable")?;
        let (value, written) = match &value.kind {
            Kind::Scalar { text, .. } if !value.is_null() => {
                (fixed_text(rd, c.env, value, "a variable")?, text.clone())
            }
            _ => {
                return Err(rd.err(
                    value,
                    format!(
                        "expected a value for variable `{name}` (a string or number), found {}",
                        value.describe()
                    ),
                ))
            }
        };
        let slot = c.slot(name);
        c.initial[slot] = Some(value);
        variables.push((name.to_string(), written));
    }
    Ok(variables)
}

/// The plan's `setup`, `scenarios` and `teardown`, compiled in that order: the scenarios may
/// read the plan's `constants` and what setup extracts; teardown those and what it extracts.
fn phases(
    c: &mut Compiler<'_>,
    top: &Fields<'_>,
    scenarios_node: &Node,
    constants: &HashSet<usize>,
) -> Result<(Option<Phase>, Vec<Scenario>, Option<Phase>)> {
    // What setup extracts every user and teardown may read; the users' copies start with
    // setup's values (set when setup has run), so they need no `variables set` check.
    let mut shared = constants.clone();
    let setup = top
        .get("setup")
        .map(|n| crate::steps::phase(c, n, "setup", &mut shared))
        .transpose()?;
    for slot in setup.iter().flat_map(|s| &s.exports) {
        c.initial[*slot] = Some(String::new());
    }
    let scenarios = crate::steps::scenarios(c, scenarios_node, &shared)?;
    let teardown = top
        .get("teardown")
        .map(|n| crate::steps::phase(c, n, "teardown", &mut shared))
        .transpose()?;
    Ok((setup, scenarios, teardown))
}

/// Turns HTTP/2 on for a plan with `grpc:` steps (a gRPC call goes over HTTP/2, and so then
/// does every step); `http2: false` with them is an error.
fn grpc_http2(c: &Compiler<'_>, top: &Fields<'_>, options: &mut Options) -> Result<()> {
    if !c.grpc {
        return Ok(());
    }
    if let (Some(node), false) = (top.get("http2"), options.http2) {
        return Err(c.rd.err(node, "a plan with grpc steps speaks HTTP/2"));
    }
    if let (Some(node), true) = (top.get("http3"), options.http3) {
        return Err(c
            .rd
            .err(node, "a plan with grpc steps speaks HTTP/2, not HTTP/3"));
    }
    options.http2 = true;
    Ok(())
}

/// Refuses `quic_0rtt` on a plan with a request step that may not go as early data, which a
/// network attacker can replay: only GET, HEAD and OPTIONS may (RFC 9114 §4.2, RFC 8470).
fn check_early(c: &Compiler<'_>, top: &Fields<'_>, options: &Options) -> Result<()> {
    let Some(node) = top.get("quic_0rtt").filter(|_| options.quic_0rtt) else {
        return Ok(());
    };
    let unsafe_step = c
        .requests
        .iter()
        .find(|r| !matches!(r.method.as_str(), "GET" | "HEAD" | "OPTIONS"));
    match unsafe_step {
        Some(r) => Err(c.rd.err(
            node,
            format!(
                "quic_0rtt sends requests as early data, which can be replayed: only GET, HEAD \
                 and OPTIONS steps may go as it, and step `{}` is a {}",
                r.name, r.method
            ),
        )),
        None => Ok(()),
    }
}

/// Refuses `http2` on a plan whose steps go to other hosts than the target's.
fn check_one_host(
    c: &Compiler<'_>,
    top: &Fields<'_>,
    root: &Node,
    options: &Options,
) -> Result<()> {
    if !(options.http2 || options.http3) || c.hosts.is_empty() {
        return Ok(());
    }
    let key = if options.http3 { "http3" } else { "http2" };
    Err(c.rd.err(
        top.get(key).unwrap_or(root),
        format!(
            "{key} takes a plan on one host: its steps also go to {} (several hosts need \
             HTTP/1.1)",
            c.hosts
                .iter()
                .map(Origin::url)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

impl Plan {
    /// What `compressed` and `follow` change in the compiled programs: requests that ask for
    /// compressed answers, and a statistics row per redirect hop.
    fn apply_options(&mut self) {
        if self.options.compressed {
            self.ask_compressed();
        }
        if self.options.follow > 0 {
            let hops = self.options.follow;
            let phases = self.setup.iter_mut().chain(&mut self.teardown);
            for program in std::iter::once(&mut self.program).chain(phases.map(|p| &mut p.program))
            {
                Arc::make_mut(program).follow_rows(hops);
            }
        }
    }
}

/// Refuses a plan whose statistics rows (its steps, each with a row per redirect hop it may
/// follow, and its scripts' metrics) are more than a results file may hold: the run would
/// record what `belier report` then refuses to read.
fn check_rows(rd: Reader<'_>, root: &Node, plan: &Plan) -> Result<()> {
    let phases = plan.setup.iter().chain(&plan.teardown).map(|p| &p.program);
    for program in std::iter::once(&plan.program).chain(phases) {
        for (what, rows) in [
            (
                "statistics rows (steps, with one per redirect hop followed)",
                program.steps.len(),
            ),
            ("script metrics", program.metrics.len()),
        ] {
            if rows > belier_stats::MOST_ROWS {
                return Err(rd.err(
                    root,
                    format!(
                        "the plan has {rows} {what}, more than the {} a results file holds",
                        belier_stats::MOST_ROWS
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn check_name(rd: Reader<'_>, key: &Node, name: &str, what: &str) -> Result<()> {
    if !template::is_name(name) {
        return Err(rd.err(
            key,
            format!("`{name}` is not a valid name for {what} (letters, digits, `_` and `-`, starting with a letter or `_`)"),
        ));
    }
    if BUILTINS.contains(&name) {
        return Err(rd.err(
            key,
            format!("`{name}` is a built-in and cannot name {what}"),
        ));
    }
    Ok(())
}

fn target(rd: Reader<'_>, env: &EnvLookup<'_>, node: &Node) -> Result<Target> {
    let text = &fixed_text(rd, env, node, "the target URL")?;
    // A URL parser drops CR and LF silently, which would hide the mistake.
    rules::check_line(text).map_err(|p| rd.err(node, format!("the target URL {p}")))?;
    let url = url::Url::parse(text.trim()).map_err(|e| {
        rd.err(
            node,
            format!("expected a base URL such as `http://127.0.0.1:8080/api`: {e}"),
        )
    })?;
    let scheme = match url.scheme() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => {
            return Err(rd.err(
                node,
                format!("expected an http or https URL, found scheme `{other}`"),
            ))
        }
    };
    let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
        return Err(rd.err(node, "the target URL needs a host"));
    };
    if url.query().is_some() || url.fragment().is_some() {
        return Err(rd.err(node, "the target URL is a base: no query or fragment"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(rd.err(
            node,
            "the target URL cannot carry credentials; use an Authorization header",
        ));
    }
    let port = url.port_or_known_default().unwrap_or(80);
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    Ok(Target {
        scheme,
        host,
        port,
        base_path: url.path().trim_end_matches('/').to_string(),
    })
}

/// The plan's `data`: its feeders, in plan order.
fn data_sources(c: &mut Compiler<'_>, node: &Node) -> Result<()> {
    let rd = c.rd;
    for (name, key, value) in rd.map(node, "data", &[])?.iter() {
        check_name(rd, key, name, "a data source")?;
        let feeder = data(c, name, value)?;
        c.feeders.push(feeder);
    }
    Ok(())
}

fn data(c: &Compiler<'_>, name: &str, node: &Node) -> Result<Feeder> {
    let rd = c.rd;
    let (file_node, order) = match &node.kind {
        Kind::Scalar { .. } => (node, Order::Sequential),
        _ => {
            let f = rd.map(node, "a data source", &["file", "order"])?;
            let Some(file_node) = f.get("file") else {
                return Err(rd.err(
                    node,
                    format!("data `{name}` needs `file:` (a CSV or JSON lines file)"),
                ));
            };
            let order = match f.get("order") {
                None => Order::Sequential,
                Some(n) => match rd.str(n, "order")? {
                    "sequential" => Order::Sequential,
                    "random" => Order::Random,
                    "unique" => Order::Unique,
                    other => {
                        return Err(rd.err(
                            n,
                            format!(
                            "expected order `sequential`, `random` or `unique`, found `{other}`"
                        ),
                        ))
                    }
                },
            };
            (file_node, order)
        }
    };
    let path = c.file(rd.str(file_node, "a data file path")?);
    // Asked here, so that a missing, special or oversized file is told at the plan's line.
    if let Err(e) = crate::files::check(&path, crate::files::MOST_DATA_BYTES) {
        return Err(rd.err(
            file_node,
            format!("cannot read data file `{}`: {e}", path.display()),
        ));
    }
    Feeder::read(name, &path, order)
}
