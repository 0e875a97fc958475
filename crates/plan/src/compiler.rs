//! The state of one plan's compilation ([`Compiler`]), shared by the parts that compile the
//! plan's top level (`parse`), its steps (`steps`) and its scripts (`script`): variable slots,
//! data feeders, statistics and check rows, hosts, and the templates checked against them.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use crate::error::{Pos, Result};
use crate::feeder::Feeder;
use crate::model::Target;
use crate::origin::Origin;
use crate::template::{Reference, Segment, Template};
use crate::yaml::{closest, Kind, Node, Reader};
use belier_engine::request::{rules, InvalidRequest};

/// Where `{{ env.NAME }}` is read from: `std::env::var` outside tests.
pub(crate) type EnvLookup<'a> =
    dyn Fn(&str) -> std::result::Result<String, std::env::VarError> + 'a;

/// Local copies of files, by the path a plan names them with (resolved against its
/// directory): a worker reads its coordinator's files from its own copies.
pub type Copies = HashMap<PathBuf, PathBuf>;

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
    /// The plan's gRPC schema (`proto:` or `protoset:`), which `grpc:` steps call into.
    pub schema: Option<belier_grpc::Schema>,
    /// Whether a step is a `grpc:` call (the plan then speaks HTTP/2).
    pub grpc: bool,
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
    /// The compilation of a plan in `dir` on `target`, nothing compiled yet.
    pub fn new(
        rd: Reader<'p>,
        env: &'p EnvLookup<'p>,
        dir: PathBuf,
        copies: &'p Copies,
        target: Target,
    ) -> Self {
        Compiler {
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
            schema: None,
            grpc: false,
        }
    }

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
pub(crate) fn env_value(
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

fn row(rows: &mut Vec<String>, name: &str) -> usize {
    match rows.iter().position(|r| r == name) {
        Some(i) => i,
        None => {
            rows.push(name.to_string());
            rows.len() - 1
        }
    }
}
