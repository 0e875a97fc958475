//! What a loaded plan is: its public settings, and the compiled scenarios its users run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use belier_engine::{Load, Profile, Spacing};

use crate::check::Check;
use crate::condition::Expr;
use crate::extract::Extraction;
use crate::feeder::Feeder;
use crate::form::{Form, Multipart};
use crate::origin::{Origin, Scheme};
use crate::template::{Env, Template};
use crate::threshold::Threshold;

/// Where every request of the plan goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// Host name or address literal (IPv6 without brackets).
    pub host: String,
    /// TCP port (the scheme's default when the URL has none).
    pub port: u16,
    /// Path prefix of every `path` step, without a trailing `/` (empty for none).
    pub base_path: String,
}

impl Target {
    /// The base URL, e.g. `https://api.example:8443/v1`.
    pub fn url(&self) -> String {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{scheme}://{host}:{}{}", self.port, self.base_path)
    }
}

/// Run-wide options, with the meanings of the CLI flags of the same names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Headers sent with every request (a step's header of the same name replaces one).
    pub headers: Vec<(String, String)>,
    /// Per-request timeout, connect included; `None`: the CLI's default.
    pub timeout: Option<Duration>,
    /// https: do not verify the certificate.
    pub insecure: bool,
    /// https: PEM CA certificates to trust instead of the system's (resolved from the plan's
    /// directory).
    pub cacert: Option<PathBuf>,
    /// https: client certificate (PEM).
    pub cert: Option<PathBuf>,
    /// https: client key (PEM).
    pub key: Option<PathBuf>,
    /// https: server name for SNI and certificate checks.
    pub sni: Option<String>,
    /// Speak HTTP/2.
    pub http2: bool,
    /// Speak HTTP/3 over QUIC (an `https` target), its streams shared as HTTP/2's.
    pub http3: bool,
    /// HTTP/3: a new connection with a ticket that allows it sends its first requests as 0-RTT
    /// early data (the CLI's `--quic-0rtt`); every request step is then a GET, HEAD or OPTIONS.
    pub quic_0rtt: bool,
    /// HTTP/2: concurrent streams per connection; `None`: the CLI's default.
    pub max_streams: Option<usize>,
    /// Connect to this Unix domain socket instead of over TCP (resolved from the plan's
    /// directory); the target still gives the Host header, the paths and the scheme.
    pub unix_socket: Option<PathBuf>,
    /// Reuse connections (default true).
    pub keepalive: bool,
    /// Keep a cookie jar per virtual user (default true).
    pub cookies: bool,
    /// Ask for compressed answers (`Accept-Encoding`, unless a header sets one) and decode
    /// them, counting decoded bytes beside wire bytes (the CLI's `--compressed`).
    pub compressed: bool,
    /// Redirects followed per request step, each hop in a row of its own (0: none).
    pub follow: usize,
    /// `server_timing: true` reads the server's own time from each response's `Server-Timing`
    /// header, `server_timing: NAME` from a single-figure header of that name (the CLI's
    /// `--server-timing` and `--server-time-header`, which win over it); `None`: neither.
    pub server_timing: Option<belier_engine::ServerTimingHeader>,
    /// Most connections a user opens to one host for a `parallel:` group (default 6, as
    /// browsers do).
    pub connections_per_host: usize,
    /// `connection: per-iteration`: a user closes its connections at the end of every
    /// iteration, so each iteration is a new visitor with new connections and full TLS
    /// handshakes; `connection: reuse` (the default) keeps them.
    pub per_iteration: bool,
}

/// The shape of the load.
#[derive(Clone, Debug, PartialEq)]
pub enum LoadModel {
    /// Closed loop: a number of virtual users over time, each running iterations back to back
    /// (or one every `pacing`).
    Closed {
        /// Active virtual users over time.
        vus: Profile,
        /// One iteration starts every this long per user; an iteration that takes longer is
        /// followed by the next at once.
        pacing: Option<Duration>,
    },
    /// Open loop: iterations start at a rate, each on an idle user.
    Open {
        /// Iterations per second over time.
        rate: Profile,
        /// Most virtual users at once.
        max_vus: usize,
        /// Even or Poisson arrivals.
        spacing: Spacing,
    },
}

/// The plan's `load` section.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadPlan {
    /// Closed or open loop, and its profile.
    pub model: LoadModel,
    /// Run length; `None`: until the profile or iteration budget ends (or the CLI's default).
    pub duration: Option<Duration>,
    /// Total iterations across all users.
    pub iterations: Option<u64>,
    /// Seed of the users' random choices (scenario weights, random data, pauses, templates)
    /// and of Poisson arrivals.
    pub seed: u64,
}

impl LoadPlan {
    /// The engine's [`Load`] for this plan.
    pub fn engine_load(&self) -> Load {
        match &self.model {
            LoadModel::Closed { vus, .. } => Load::Closed {
                connections: vus.clone(),
            },
            LoadModel::Open {
                rate,
                max_vus,
                spacing,
            } => Load::Open {
                rate: rate.clone(),
                spacing: *spacing,
                max_connections: *max_vus,
                max_in_flight: None,
            },
        }
    }

    /// The iteration pacing, for closed loops.
    pub fn pacing(&self) -> Option<Duration> {
        match &self.model {
            LoadModel::Closed { pacing, .. } => *pacing,
            LoadModel::Open { .. } => None,
        }
    }
}

/// A load that some of the plan's scenarios run under, at the same time as the others: a
/// scenario with a `load:` of its own, or the plan's `load`, shared by the scenarios without
/// one. Each is its own executor (its own closed or open loop, duration and iterations).
#[derive(Clone, Debug, PartialEq)]
pub struct Executor {
    /// The scenario's name; for the plan's shared load, its scenarios' names joined by
    /// ` + `. Reports name its table row, and `NAME: p99 < 300ms` scopes a threshold to it.
    pub name: String,
    /// Its load.
    pub load: LoadPlan,
    /// Whether this is the plan's `load`, shared by the scenarios that have none of their own.
    pub shared: bool,
    /// Its scenarios, by index in the plan.
    pub(crate) scenarios: Vec<usize>,
}

impl Executor {
    /// Its scenarios, by index in the plan's [`Program::scenarios`].
    pub fn scenarios(&self) -> &[usize] {
        &self.scenarios
    }
}

/// A request body.
#[derive(Clone, Debug)]
pub enum Body {
    /// No body.
    None,
    /// Text rendered per request.
    Text(Template),
    /// A JSON document whose strings are templates, rendered per request.
    Json(JsonTemplate),
    /// Bytes fixed at load time: a `body_file` (sent as is), or a `json` body without
    /// templates (serialised once); the label says which, for `describe`.
    Bytes(Arc<[u8]>, &'static str),
    /// `form:` fields, URL-encoded per request.
    Form(Form),
    /// `multipart:` fields and files.
    Multipart(Multipart),
}

/// A JSON body whose strings are templates.
#[derive(Clone, Debug)]
pub enum JsonTemplate {
    /// A value without templates, as written.
    Fixed(serde_json::Value),
    /// A string with templates.
    Text(Template),
    /// An array of them.
    Array(Vec<JsonTemplate>),
    /// An object: its keys, in plan order, and their values.
    Object(Vec<(String, JsonTemplate)>),
}

impl JsonTemplate {
    /// The document with every template as `null` (a field's default), to check the rest
    /// against a schema before any request renders it.
    pub fn probe(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            JsonTemplate::Fixed(v) => v.clone(),
            JsonTemplate::Text(_) => Value::Null,
            JsonTemplate::Array(items) => Value::Array(items.iter().map(Self::probe).collect()),
            JsonTemplate::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.probe()))
                    .collect(),
            ),
        }
    }

    /// The document for one request, its templates rendered in `env`; `missing` is set when
    /// a variable a template reads has no value (its text renders empty).
    pub fn render(&self, env: &mut Env<'_>, missing: &mut bool) -> serde_json::Value {
        use serde_json::Value;
        match self {
            JsonTemplate::Fixed(v) => v.clone(),
            JsonTemplate::Text(t) => {
                let mut s = String::new();
                *missing |= t.render(env, &mut s).is_err();
                Value::String(s)
            }
            JsonTemplate::Array(items) => {
                Value::Array(items.iter().map(|i| i.render(env, missing)).collect())
            }
            JsonTemplate::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.render(env, missing)))
                    .collect(),
            ),
        }
    }
}

/// A compiled request step.
#[derive(Clone, Debug)]
pub struct Request {
    /// Statistics row.
    pub step: usize,
    /// The step's name.
    pub name: String,
    /// The HTTP method.
    pub method: String,
    /// Path and query, the target's base path included.
    pub path: Template,
    /// The path as written (a step on another host: its URL), for `describe`.
    pub path_text: String,
    /// Which of the plan's hosts it goes to: 0 for the target's, `i` for [`Plan::hosts`]`[i - 1]`
    /// (the engine's `Outgoing::origin`).
    pub origin: usize,
    /// Default headers merged with the step's.
    pub headers: Vec<(String, Template)>,
    /// The body.
    pub body: Body,
    /// Values taken from the response into variables, in plan order.
    pub extract: Vec<Extraction>,
    /// Checks of the response, in plan order.
    pub checks: Vec<Check>,
    /// Whether a `status` check replaces the default rule (status < 400).
    pub status_checked: bool,
    /// Check row counting whether every extracted variable the request uses had a value.
    pub vars_check: Option<usize>,
    /// A failed check or extraction ends the iteration.
    pub abort_on_fail: bool,
    /// The step's own timeout, instead of the run's.
    pub timeout: Option<Duration>,
    /// Whether the response body must be kept (for checks, extraction or a hook).
    pub keep_body: bool,
    /// `before_request` and `after_response` hooks: indices into [`Program::scripts`].
    pub before: Option<usize>,
    /// See `before`.
    pub after: Option<usize>,
    /// A `grpc:` step's method: the body (a JSON message) is encoded and framed as its input
    /// per request, and the reply judged by its gRPC status, its response message read back
    /// as JSON for checks and extractions.
    pub grpc: Option<belier_grpc::Method>,
    /// `stream:`: the response body cut into messages (SSE events, chunks, LLM tokens) as
    /// they come; `None`: read whole.
    pub stream: Option<belier_engine::BodyStream>,
    /// A `ws:` step: what it does on the user's WebSocket (its `path` is a connect's, its
    /// body a send's message or a ping's payload); `None`: an HTTP request.
    pub ws: Option<WsStep>,
}

/// What a `ws:` step does on the user's WebSocket.
#[derive(Clone, Debug)]
pub enum WsStep {
    /// Opens it: the step's path, with its headers, offering these subprotocols.
    Connect {
        /// Offered in `Sec-WebSocket-Protocol`, in order.
        subprotocols: Vec<String>,
        /// `deflate: true`: offer permessage-deflate.
        deflate: bool,
    },
    /// Sends the step's body as a message, then waits for the messages `reply` awaits.
    Send {
        /// A binary message rather than a text one.
        binary: bool,
        /// What answers it; `None`: only sends.
        reply: Option<Awaited>,
    },
    /// Waits for messages.
    Receive(Awaited),
    /// Sends a ping whose payload is the step's body and waits for its pong.
    Ping,
    /// Closes with this code and reason.
    Close {
        /// The close code.
        code: u16,
        /// The reason.
        reason: String,
    },
}

/// The messages a `ws:` step waits for: `count` of those that match.
#[derive(Clone, Debug)]
pub struct Awaited {
    /// Which messages count.
    pub matching: WsMatch,
    /// How many to wait for (at least 1).
    pub count: u64,
}

/// Which messages a `ws:` step awaits.
#[derive(Clone, Debug)]
pub enum WsMatch {
    /// Any message.
    Any,
    /// A message equal to the one the step sent.
    Echo,
    /// A message that contains this text.
    Contains(Template),
    /// A JSON message whose value at this path (the path's text beside it) reads as this
    /// text (a string as it is, any other value as JSON).
    Json(serde_json_path::JsonPath, String, Template),
}

/// One instruction of a scenario, flattened (groups inlined, loops as jumps).
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// A request step: an index into [`Program::requests`].
    Request(usize),
    /// A `script:` step: an index into [`Program::scripts`].
    Script(usize),
    /// A pause uniformly drawn from `[min, max]`.
    Pause(Duration, Duration),
    /// Runs the ops up to the matching `LoopEnd` (at `end`) `count` times.
    LoopStart {
        /// Times through.
        count: u64,
        /// Index of its `LoopEnd`.
        end: usize,
    },
    /// Ends a loop: back to `start` (its `LoopStart`) while rounds are left.
    LoopEnd {
        /// Index of its `LoopStart`.
        start: usize,
    },
    /// A `parallel:` group: its requests (indexes into [`Program::requests`]) sent at once,
    /// the group timed as a whole under statistics row `step`.
    Parallel {
        /// The group's name.
        name: String,
        /// The group's statistics row.
        step: usize,
        /// Its request steps, in order.
        requests: Vec<usize>,
    },
    /// Marks a group, for `describe` only.
    Group(String),
    /// Ends a group, an `if` or a `choice`, for `describe` only.
    GroupEnd,
    /// `if:`: unless `cond` holds, continues at `end` (the matching `GroupEnd`).
    If {
        /// The condition.
        cond: Box<Expr>,
        /// The condition as written, for `describe`.
        text: String,
        /// Index of the matching `GroupEnd`.
        end: usize,
    },
    /// `choice:`: continues at one branch's start, picked by weight: `(weight, start)`.
    Choice {
        /// Each branch's weight and first op.
        branches: Vec<(u64, usize)>,
        /// The sum of the weights.
        total: u64,
    },
    /// A choice branch's first op, for `describe` only.
    Branch {
        /// Its weight.
        weight: u64,
        /// The sum of its choice's weights.
        total: u64,
    },
    /// Continues at `to` (a branch's end: past its choice).
    Jump {
        /// The op to continue at.
        to: usize,
    },
}

/// A compiled scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Its name.
    pub name: String,
    /// Its weight: how often users pick it, against the others'.
    pub weight: u64,
    /// Its steps, flattened.
    pub ops: Vec<Op>,
    /// Feeders its templates read: one row is drawn from each per iteration.
    pub feeders: Vec<usize>,
}

/// Everything users need, shared by all of them.
#[derive(Clone, Debug)]
pub struct Program {
    /// Statistics row names.
    pub steps: Vec<String>,
    /// Check row names.
    pub checks: Vec<String>,
    /// Request steps, by index ([`Op::Request`]).
    pub requests: Vec<Request>,
    /// Scenarios, by index.
    pub scenarios: Vec<Scenario>,
    /// Initial values of the variable slots (plan variables; extracted ones start unset).
    pub initial: Vec<Option<String>>,
    /// Data sources, by index.
    pub feeders: Vec<Feeder>,
    /// Scripts of `script:` steps and request hooks, by index.
    pub scripts: Vec<crate::script::Script>,
    /// Custom metrics the scripts count, by metric number.
    pub metrics: Vec<belier_engine::user::CustomMetric>,
}

impl Program {
    /// Gives every statistics row `hops` rows more for the redirects its steps follow: row
    /// `r` becomes `r·(hops+1)`, and its hop `k` is the row after it by `k`, named
    /// `NAME → redirect k`.
    pub(crate) fn follow_rows(&mut self, hops: usize) {
        let rows = std::mem::take(&mut self.steps);
        self.steps = rows
            .iter()
            .flat_map(|name| {
                (0..=hops).map(move |k| match k {
                    0 => name.clone(),
                    k => format!("{name} → redirect {k}"),
                })
            })
            .collect();
        for request in &mut self.requests {
            request.step *= hops + 1;
        }
    }
}

/// A loaded plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The plan file.
    pub file: PathBuf,
    /// The files the plan reads (data, body, script and TLS files), as it resolves them
    /// against its directory, each once: what a worker needs besides the plan itself.
    pub files: Vec<PathBuf>,
    /// The environment variables the plan read (`{{ env.NAME }}`) as it loaded, each with its
    /// value (`None`: not set): what a worker needs to load it as it loaded here. The values
    /// may be secrets: they are sent to workers, never shown.
    pub environment: BTreeMap<String, Option<String>>,
    /// Where requests go.
    pub target: Target,
    /// The plan's other hosts, in the order its steps' `url:`s first name them: each gets a
    /// connection per user (and, with cookies, a jar per user) of its own.
    pub hosts: Vec<Origin>,
    /// The target as written, `{{ env.NAME }}` unresolved, for `describe`.
    pub(crate) target_written: String,
    /// Run-wide options.
    pub options: Options,
    /// The load (of the scenarios without a `load:` of their own).
    pub load: LoadPlan,
    /// The loads that run at the same time when a scenario has a `load:` of its own: one per
    /// such scenario, plus the plan's `load` if some scenario has none. Empty when no scenario
    /// has one: the plan's `load` drives every user, as one executor.
    pub executors: Vec<Executor>,
    /// Thresholds, in plan order.
    pub thresholds: Vec<Threshold>,
    /// Plan variables, in plan order, as written: a value from the environment reads
    /// `{{ env.NAME }}` here, so that showing the plan never shows a secret.
    pub variables: Vec<(String, String)>,
    pub(crate) program: Arc<Program>,
    /// `setup:`: run once before any user starts.
    pub(crate) setup: Option<Phase>,
    /// `teardown:`: run once after the last user stopped.
    pub(crate) teardown: Option<Phase>,
}

/// A `setup` or `teardown` list of steps, compiled as a one-scenario program of its own (its
/// own statistics and check rows, so its requests stay apart from the users' figures).
#[derive(Clone, Debug)]
pub struct Phase {
    /// Its program: one scenario.
    pub program: Arc<Program>,
    /// Variable slots the phase extracts (setup's are shared with users and teardown).
    pub exports: Vec<usize>,
}

impl Plan {
    /// The compiled program the plan's users walk (`belier-scenario`'s runtime).
    pub fn program(&self) -> &Arc<Program> {
        &self.program
    }

    /// The compiled `setup:`, if the plan has one.
    pub fn setup_phase(&self) -> Option<&Phase> {
        self.setup.as_ref()
    }

    /// The compiled `teardown:`, if the plan has one.
    pub fn teardown_phase(&self) -> Option<&Phase> {
        self.teardown.as_ref()
    }

    /// The data feeders.
    pub fn feeders(&self) -> &[Feeder] {
        &self.program.feeders
    }

    /// Statistics row names, one per distinct request step name.
    pub fn steps(&self) -> &[String] {
        &self.program.steps
    }

    /// Check names.
    pub fn checks(&self) -> &[String] {
        &self.program.checks
    }

    /// The custom metrics the plan's scripts count, by metric number.
    pub fn metrics(&self) -> &[belier_engine::user::CustomMetric] {
        &self.program.metrics
    }

    /// Sets plan variable `name` to `value` (a command line's `--var`), in place of the plan's
    /// own value; an unknown name is an error listing the plan's variables.
    pub fn set_variable(&mut self, name: &str, value: &str) -> Result<(), String> {
        let Some(slot) = self.variables.iter().position(|(n, _)| n == name) else {
            let names: Vec<&str> = self.variables.iter().map(|(n, _)| n.as_str()).collect();
            return Err(if names.is_empty() {
                format!("the plan has no `variables`, so none named `{name}`")
            } else {
                format!(
                    "the plan has no variable `{name}` (its variables: {})",
                    names.join(", ")
                )
            });
        };
        // Plan variables hold the first slots, in plan order (`parse::plan`).
        Arc::make_mut(&mut self.program).initial[slot] = Some(value.to_string());
        self.variables[slot].1 = "(set by --var)".to_string();
        Ok(())
    }

    /// Makes this plan shard `shard` of a run split across processes (`--shard`): unique
    /// data rows are dealt to shards (row `r` to shard `r mod N`), so no row is used by two
    /// shards. The load itself is split by the engine (`belier_engine::Config::shard`).
    pub fn shard(&mut self, shard: belier_engine::Shard) {
        let phases = self.setup.iter_mut().chain(&mut self.teardown);
        let programs = std::iter::once(&mut self.program).chain(phases.map(|p| &mut p.program));
        for feeder in programs.flat_map(|p| &mut Arc::make_mut(p).feeders) {
            feeder.keep_shard(shard);
        }
    }

    /// Asks for compressed answers: every request without an `Accept-Encoding` header of its
    /// own (the plan's or its step's) gets one naming every coding the engine decodes, and
    /// [`Options::compressed`] says to decode. For a plan's `compressed: true`, or a command
    /// line's `--compressed` on top of a plan.
    pub fn ask_compressed(&mut self) {
        self.options.compressed = true;
        let phases = self.setup.iter_mut().chain(&mut self.teardown);
        let programs = std::iter::once(&mut self.program).chain(phases.map(|p| &mut p.program));
        for request in programs.flat_map(|p| &mut Arc::make_mut(p).requests) {
            if !request
                .headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("accept-encoding"))
            {
                request.headers.push((
                    "Accept-Encoding".to_string(),
                    Template::literal(belier_engine::ACCEPT_ENCODING),
                ));
            }
        }
    }

    /// Sends header `name: value` (a literal) with every request, replacing any header of the
    /// same name the plan sets: for a command line's `-H` given on top of a plan.
    pub fn set_header(&mut self, name: &str, value: &str) {
        self.options
            .headers
            .retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.options
            .headers
            .push((name.to_string(), value.to_string()));
        let phases = self.setup.iter_mut().chain(&mut self.teardown);
        let programs = std::iter::once(&mut self.program).chain(phases.map(|p| &mut p.program));
        for request in programs.flat_map(|p| &mut Arc::make_mut(p).requests) {
            request
                .headers
                .retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            request
                .headers
                .push((name.to_string(), Template::literal(value)));
        }
    }
}
