//! Plan text → [`Plan`]: the top level (target, options, variables, data, load,
//! thresholds). Scenarios and their steps are compiled in `steps`.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Pos, Result};
use crate::feeder::{Feeder, Order};
use crate::model::{Plan, Program, Scheme, Target};
use crate::targets::Origin;
use crate::template::{self, Reference, Segment, Template};
use crate::yaml::{self, closest, Kind, Node, Reader};
use belier_engine::request::{rules, InvalidRequest};

mod executors;
mod load;
mod options;
mod thresholds;

use load::load;
use options::options;
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
    "max_streams",
    "unix_socket",
    "keepalive",
    "cookies",
    "compressed",
    "follow",
    "variables",
    "data",
    "scenarios",
    "load",
    "thresholds",
    "setup",
    "teardown",
];

/// Most redirects a plan's `follow:` (and the CLI's `--follow`) takes.
pub const MAX_FOLLOW: u64 = 20;

/// Seed of the users' generators when the plan sets none: runs repeat by default.
pub const DEFAULT_SEED: u64 = 1;

/// Names the built-ins take; no variable may shadow them.
const BUILTINS: &[&str] = &["vu", "iteration", "uuid", "random_int", "random_string"];

/// Where `{{ env.NAME }}` is read from: `std::env::var` outside tests.
pub(crate) type EnvLookup<'a> =
    dyn Fn(&str) -> std::result::Result<String, std::env::VarError> + 'a;

/// State of one plan's compilation.
pub(crate) struct Compiler<'p> {
    pub rd: Reader<'p>,
    pub env: &'p EnvLookup<'p>,
    pub dir: PathBuf,
    /// Local copies of the files the plan names, by the path the plan resolves them to.
    pub copies: &'p Copies,
    /// The files the plan reads, as it resolves them, in the order it names them.
    pub files: RefCell<Vec<PathBuf>>,
    pub target: Target,
    /// Variable slots by name.
    pub slots: HashMap<String, usize>,
    pub var_names: Vec<String>,
    pub initial: Vec<Option<String>>,
    pub feeders: Vec<Feeder>,
    pub steps: Vec<String>,
    pub checks: Vec<String>,
    pub requests: Vec<crate::model::Request>,
    pub default_headers: Vec<(String, Template)>,
    pub default_header_feeders: Vec<usize>,
    /// Compiled scripts (`script:` steps and request hooks), by index.
    pub scripts: Vec<crate::script::Script>,
    /// Custom metrics the scripts count, by metric number.
    pub metrics: Vec<belier_engine::user::CustomMetric>,
    /// Hosts other than the target's that `url:` steps name ([`Plan::hosts`]).
    pub hosts: Vec<Origin>,
}

/// Where a template's fault at byte `offset` is: inside a one-line plain or quoted scalar the
/// column moves to the fault; otherwise the scalar's start.
pub(crate) fn pos_in(node: &Node, offset: usize) -> Pos {
    match &node.kind {
        Kind::Scalar { text, .. } if !text.contains('\n') => {
            let chars = text.get(..offset).map_or(0, |t| t.chars().count());
            let quote = match &node.kind {
                Kind::Scalar { plain: false, .. } => 1,
                _ => 0,
            };
            Pos {
                line: node.pos.line,
                col: node.pos.col + quote + chars,
            }
        }
        _ => node.pos,
    }
}

impl<'p> Compiler<'p> {
    /// The index of `origin` among the plan's hosts (0: the target's), added if new.
    pub fn host(&mut self, origin: &Origin) -> usize {
        let t = &self.target;
        if origin.scheme == t.scheme && origin.host == t.host && origin.port == t.port {
            return 0;
        }
        if let Some(i) = self.hosts.iter().position(|h| h == origin) {
            return i + 1;
        }
        self.hosts.push(origin.clone());
        self.hosts.len()
    }

    /// Compiles a template from a scalar node; variables must be in `defined`, and feeders
    /// read are added to `feeders_used`.
    pub fn template(
        &self,
        node: &Node,
        what: &str,
        defined: &HashSet<usize>,
        feeders_used: &mut Vec<usize>,
    ) -> Result<Template> {
        let text = self.rd.str(node, what)?;
        self.template_text(node, text, 0, defined, feeders_used)
    }

    /// [`Compiler::template`] on the part of a node's text that starts at byte `start`.
    pub fn template_text(
        &self,
        node: &Node,
        text: &str,
        start: usize,
        defined: &HashSet<usize>,
        feeders_used: &mut Vec<usize>,
    ) -> Result<Template> {
        let mut resolve = |r: Reference<'_>| -> std::result::Result<Segment, String> {
            match r {
                Reference::Builtin(s) => Ok(s),
                Reference::Env(name, default) => {
                    env_value(self.env, name, default).map(Segment::Value)
                }
                Reference::Variable(name) => match self.slots.get(name) {
                    Some(slot) if defined.contains(slot) => Ok(Segment::Var(*slot)),
                    _ => {
                        let known: Vec<&str> = self
                            .slots
                            .iter()
                            .filter(|(_, s)| defined.contains(s))
                            .map(|(n, _)| n.as_str())
                            .collect();
                        let mut m = format!(
                            "undefined variable `{name}`: not in `variables`, not extracted by an earlier step"
                        );
                        if let Some(near) = closest(name, &known) {
                            m.push_str(&format!("; did you mean `{near}`?"));
                        }
                        Err(m)
                    }
                },
                Reference::Column(data, column) => {
                    let Some(f) = self.feeders.iter().position(|f| f.name == data) else {
                        let names: Vec<&str> =
                            self.feeders.iter().map(|f| f.name.as_str()).collect();
                        let mut m = format!("unknown data `{data}` in `{{{{ {data}.{column} }}}}`");
                        if let Some(near) = closest(data, &names) {
                            m.push_str(&format!("; did you mean `{near}`?"));
                        }
                        return Err(m);
                    };
                    let feeder = &self.feeders[f];
                    let Some(c) = feeder.column(column) else {
                        return Err(format!(
                            "data `{data}` has no column `{column}` (its columns: {})",
                            feeder.columns().join(", ")
                        ));
                    };
                    Ok(Segment::Column {
                        feeder: f,
                        column: c,
                    })
                }
            }
        };
        let compiled = Template::compile(text, &mut resolve)
            .map_err(|(offset, m)| self.rd.err_at(pos_in(node, start + offset), m))?;
        for f in compiled.feeders() {
            if !feeders_used.contains(&f) {
                feeders_used.push(f);
            }
        }
        Ok(compiled)
    }

    /// The slot of variable `name`, created unset if new.
    pub fn slot(&mut self, name: &str) -> usize {
        if let Some(slot) = self.slots.get(name) {
            return *slot;
        }
        let slot = self.var_names.len();
        self.var_names.push(name.to_string());
        self.initial.push(None);
        self.slots.insert(name.to_string(), slot);
        slot
    }

    /// The statistics row of a step name (shared by steps of the same name).
    pub fn step_row(&mut self, name: &str) -> usize {
        row(&mut self.steps, name)
    }

    /// The row of a check name.
    pub fn check_row(&mut self, name: &str) -> usize {
        row(&mut self.checks, name)
    }

    /// A path relative to the plan's directory.
    pub fn relative(&self, path: &str) -> PathBuf {
        self.dir.join(path)
    }

    /// A file the plan reads (data, body, script, TLS), relative to the plan's directory:
    /// where to read it (its local copy, if there is one), noted among the plan's files.
    pub fn file(&self, path: &str) -> PathBuf {
        let named = self.relative(path);
        let local = self.copies.get(&named).cloned();
        let mut files = self.files.borrow_mut();
        if !files.contains(&named) {
            files.push(named.clone());
        }
        local.unwrap_or(named)
    }

    /// Header name → template mappings.
    pub fn headers(
        &self,
        node: &Node,
        defined: &HashSet<usize>,
        feeders_used: &mut Vec<usize>,
    ) -> Result<Vec<(String, Template)>> {
        let fields = self.rd.map(node, "headers", &[])?;
        let mut out = Vec::new();
        for (name, key, value) in fields.iter() {
            rules::check_header_name(name).map_err(|p| {
                self.rd
                    .err(key, InvalidRequest::HeaderName(name.into(), p).to_string())
            })?;
            let t = self.template(value, "a header value", defined, feeders_used)?;
            // What is fixed at load (the text, `{{ env.NAME }}`) is refused here; what changes
            // per request (variables, data, extracted values) is cleaned as it is rendered.
            for text in t.literals().chain(t.values()) {
                rules::check_header_value(text).map_err(|p| {
                    self.rd.err(
                        value,
                        InvalidRequest::HeaderValue(name.into(), p).to_string(),
                    )
                })?;
            }
            out.push((name.to_string(), t));
        }
        Ok(out)
    }
}

/// The value of environment variable `name`, or `default`.
fn env_value(
    env: &EnvLookup<'_>,
    name: &str,
    default: Option<&str>,
) -> std::result::Result<String, String> {
    match (env(name), default) {
        (Ok(value), _) => Ok(value),
        (Err(std::env::VarError::NotPresent), Some(default)) => Ok(default.to_string()),
        (Err(std::env::VarError::NotPresent), None) => Err(format!(
            "environment variable `{name}` is not set (or give a default: `{{{{ env.{name} | default(\"…\") }}}}`)"
        )),
        (Err(std::env::VarError::NotUnicode(_)), _) => {
            Err(format!("environment variable `{name}` is not valid UTF-8"))
        }
    }
}

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

fn row(rows: &mut Vec<String>, name: &str) -> usize {
    match rows.iter().position(|r| r == name) {
        Some(i) => i,
        None => {
            rows.push(name.to_string());
            rows.len() - 1
        }
    }
}

/// Local copies of files, by the path a plan names them with (resolved against its
/// directory): a worker reads its coordinator's files from its own copies.
pub type Copies = HashMap<PathBuf, PathBuf>;

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
    let mut c = Compiler {
        rd,
        env,
        dir,
        copies,
        files: RefCell::default(),
        target,
        slots: HashMap::new(),
        var_names: Vec::new(),
        initial: Vec::new(),
        feeders: Vec::new(),
        steps: Vec::new(),
        checks: Vec::new(),
        requests: Vec::new(),
        default_headers: Vec::new(),
        default_header_feeders: Vec::new(),
        scripts: Vec::new(),
        metrics: Vec::new(),
        hosts: Vec::new(),
    };

    // Plan variables take the first slots, in plan order (`Plan::set_variable` relies on it).
    let mut variables = Vec::new();
    if let Some(node) = top.get("variables") {
        for (name, key, value) in rd.map(node, "variables", &[])?.iter() {
            check_name(rd, key, name, "a variable")?;
            let (value, written) = match &value.kind {
                Kind::Scalar { text, .. } if !value.is_null() => {
                    (fixed_text(rd, env, value, "a variable")?, text.clone())
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
            // As written: a value from the environment is shown as `{{ env.NAME }}`.
            variables.push((name.to_string(), written));
        }
    }
    if let Some(node) = top.get("data") {
        for (name, key, value) in rd.map(node, "data", &[])?.iter() {
            check_name(rd, key, name, "a data source")?;
            let feeder = data(&c, name, value)?;
            c.feeders.push(feeder);
        }
    }
    let constants: HashSet<usize> = (0..c.var_names.len()).collect();
    if let Some(node) = top.get("headers") {
        let mut used = Vec::new();
        c.default_headers = c.headers(node, &constants, &mut used)?;
        c.default_header_feeders = used;
    }
    let options = options(&c, &top)?;
    let load = load(rd, top.get("load"))?;

    let Some(scenarios_node) = top.get("scenarios") else {
        return Err(rd.err(
            &root,
            "expected `scenarios:`, a list of scenarios with `name` and `steps`",
        ));
    };
    // What setup extracts every user and teardown may read; the users' copies start with
    // setup's values (set when setup has run), so they need no `variables set` check.
    let mut shared = constants.clone();
    let setup = top
        .get("setup")
        .map(|n| crate::steps::phase(&mut c, n, "setup", &mut shared))
        .transpose()?;
    for slot in setup.iter().flat_map(|s| &s.exports) {
        c.initial[*slot] = Some(String::new());
    }
    let scenarios = crate::steps::scenarios(&mut c, scenarios_node, &shared)?;
    let teardown = top
        .get("teardown")
        .map(|n| crate::steps::phase(&mut c, n, "teardown", &mut shared))
        .transpose()?;

    if options.http2 && !c.hosts.is_empty() {
        return Err(rd.err(
            top.get("http2").unwrap_or(&root),
            format!(
                "http2 takes a plan on one host: its steps also go to {} (several hosts need \
                 HTTP/1.1)",
                c.hosts
                    .iter()
                    .map(Origin::url)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }

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
    if plan.options.compressed {
        plan.ask_compressed();
    }
    if plan.options.follow > 0 {
        let hops = plan.options.follow;
        let phases = plan.setup.iter_mut().chain(&mut plan.teardown);
        for program in std::iter::once(&mut plan.program).chain(phases.map(|p| &mut p.program)) {
            Arc::make_mut(program).follow_rows(hops);
        }
    }
    check_rows(rd, &root, &plan)?;
    Ok(plan)
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

#[cfg(test)]
mod tests;
