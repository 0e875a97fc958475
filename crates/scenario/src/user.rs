//! Virtual users: the plan's [`Users`] factory and the state machine each user runs.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use belier_engine::user::{
    Action, CustomMetric, ErrorKind, Outgoing, Reply, Tally, User, Users, Verdict,
};

use crate::cookie::{jar_at as jar, Jar};
use crate::redirect::Hosts;
use belier_plan::condition::Facts;
use belier_plan::extract::BodyJson;
use belier_plan::program::{Body, Op, Program};
use belier_plan::template::{escape_header, escape_path, Env};

mod follow;
mod phase;
mod script;
mod socket;
mod walk;

pub use phase::PhaseOutcome;
use phase::{phase_reply, PhaseLog};

/// Most ops a user walks through in one [`User::next`] call without reaching a request or a
/// pause (loops of nothing but zero-count loops); past it the iteration ends, so `next` always
/// returns.
const MAX_OPS_PER_ACTION: usize = 100_000;

/// A feeder that ran out during a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exhaustion {
    /// The data source's name.
    pub data: String,
    /// Its number of rows (all used).
    pub rows: usize,
    /// Users that stopped because it had no row left for them.
    pub users_stopped: u64,
}

/// Errors of one script with one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptError {
    /// The script's check name, e.g. `sign: before_request`.
    pub script: String,
    /// Its message, with the script's line and position.
    pub message: String,
    /// How often it came.
    pub count: u64,
}

/// The data feeders' state of a run, shared by all its users, those of every executor (a
/// scenario with a load of its own) included: a row of `order: unique` goes once in the run.
#[derive(Debug)]
pub(crate) struct Draws {
    /// Unique feeders' cursors, by feeder.
    cursors: Vec<AtomicUsize>,
    /// Users stopped for lack of rows, by feeder.
    stopped: Vec<AtomicU64>,
}

impl Draws {
    pub(crate) fn new(feeders: usize) -> Arc<Draws> {
        Arc::new(Draws {
            cursors: (0..feeders).map(|_| AtomicUsize::new(0)).collect(),
            stopped: (0..feeders).map(|_| AtomicU64::new(0)).collect(),
        })
    }
}

/// What following needs: how many hops, and where the run's hosts are (the target's first,
/// then [`belier_plan::Plan::hosts`], as `Outgoing::origin` numbers them).
#[derive(Debug)]
struct Follow {
    hops: usize,
    hosts: Hosts,
}

/// State shared by all users of a run.
#[derive(Debug)]
struct Shared {
    program: Arc<Program>,
    /// The scenarios these users pick from, by index, and the sum of their weights: all of the
    /// plan's, or one executor's.
    scenarios: Vec<usize>,
    total_weight: u64,
    draws: Arc<Draws>,
    /// Keep a cookie jar per user.
    cookies: bool,
    /// `Some` to follow redirects ([`PlanUsers::following`]).
    follow: Option<Follow>,
    /// Seed of the users' generators.
    seed: u64,
    /// Values setup extracted, by slot: every user starts with them.
    from_setup: OnceLock<Vec<(usize, String)>>,
    /// `Some` for the one user of a `setup` or `teardown`: every step must pass (2xx unless
    /// its checks say otherwise), the first failure ends it, and what it did is kept.
    phase: Option<PhaseLog>,
    /// Messages of the scripts' errors.
    script_errors: crate::script::ScriptErrors,
    /// Most connections a user opens to one host for a parallel group.
    per_host: usize,
    /// Close a user's connections at the end of every iteration.
    per_iteration: bool,
}

/// The plan's virtual users: hand it to the engine as `Arc<dyn Users>`.
#[derive(Debug)]
pub struct PlanUsers {
    shared: Arc<Shared>,
}

impl PlanUsers {
    pub(crate) fn new(program: Arc<Program>, cookies: bool, seed: u64) -> Self {
        let draws = Draws::new(program.feeders.len());
        let all = (0..program.scenarios.len()).collect();
        PlanUsers::of(program, all, draws, cookies, seed)
    }

    /// The users of `scenarios` only (an executor's), drawing data from `draws`.
    pub(crate) fn of(
        program: Arc<Program>,
        scenarios: Vec<usize>,
        draws: Arc<Draws>,
        cookies: bool,
        seed: u64,
    ) -> Self {
        let total_weight = scenarios.iter().map(|&i| program.scenarios[i].weight).sum();
        PlanUsers {
            shared: Arc::new(Shared {
                program,
                scenarios,
                total_weight,
                draws,
                cookies,
                follow: None,
                seed,
                from_setup: OnceLock::new(),
                phase: None,
                script_errors: Default::default(),
                per_host: belier_engine::user::DEFAULT_CONNECTIONS_PER_HOST,
                per_iteration: false,
            }),
        }
    }

    /// The one user of a `setup` or `teardown` whose extracted `exports` are kept.
    pub(crate) fn phase(
        program: Arc<Program>,
        cookies: bool,
        seed: u64,
        exports: &[usize],
    ) -> Self {
        let mut users = PlanUsers::new(program, cookies, seed);
        if let Some(shared) = Arc::get_mut(&mut users.shared) {
            shared.phase = Some(PhaseLog {
                exports: exports.to_vec(),
                outcome: Mutex::default(),
            });
        }
        users
    }

    /// Follows up to `hops` redirects of each request step to the run's `origins` (the
    /// target's host first, then the plan's others) and, with `discover` (HTTP/1.1), to hosts
    /// the plan does not name, each resolved when first met. Call before the run.
    pub(crate) fn following(
        mut self,
        hops: usize,
        origins: Vec<belier_plan::Origin>,
        discover: bool,
    ) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.follow = (hops > 0).then(|| Follow {
                hops,
                hosts: crate::redirect::Hosts {
                    known: origins,
                    discover: discover.then(|| crate::redirect::Discover::new(None)),
                },
            });
        }
        self
    }

    /// Opens up to `per_host` connections to a host for a parallel group and, with
    /// `per_iteration`, closes a user's connections at the end of every iteration. Call
    /// before the run.
    pub(crate) fn connecting(mut self, per_host: usize, per_iteration: bool) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.per_host = per_host;
            shared.per_iteration = per_iteration;
        }
        self
    }

    /// The TLS settings (the plan's) of https hosts that redirects lead to beyond the plan's
    /// own; without them, the system's roots verify those hosts. Call before the run; a
    /// second call changes nothing.
    pub fn discovered_tls(&self, tls: belier_engine::TlsOptions) {
        if let Some(discover) = self
            .shared
            .follow
            .as_ref()
            .and_then(|f| f.hosts.discover.as_ref())
        {
            let _ = discover.tls.set(tls);
        }
    }

    /// What this `setup` or `teardown` did (empty for the users of the load).
    pub fn outcome(&self) -> PhaseOutcome {
        self.shared
            .phase
            .as_ref()
            .map(|p| p.with(|o| o.clone()))
            .unwrap_or_default()
    }

    /// Gives every user made from now on the values a passed `setup` extracted (its
    /// [`PlanUsers::outcome`]). A second call changes nothing.
    pub fn share(&self, setup: &PhaseOutcome) {
        let _ = self.shared.from_setup.set(setup.values.clone());
    }

    /// Script errors so far (the first few distinct messages, with how often each came), for
    /// the report: a failed script fails its step, never the run.
    pub fn script_errors(&self) -> Vec<ScriptError> {
        let checks = &self.shared.program.checks;
        self.shared
            .script_errors
            .messages()
            .into_iter()
            .map(|(check, message, count)| ScriptError {
                script: checks[check].clone(),
                message,
                count,
            })
            .collect()
    }

    /// Feeders that ran out so far, with how many users stopped for it, for a message such as
    /// "data `users` ran out after 500 rows; 12 users stopped".
    pub fn exhausted(&self) -> Vec<Exhaustion> {
        let shared = &self.shared;
        shared
            .program
            .feeders
            .iter()
            .zip(&shared.draws.stopped)
            .filter_map(|(f, stopped)| {
                let users_stopped = stopped.load(Ordering::Relaxed);
                (users_stopped > 0).then(|| Exhaustion {
                    data: f.name.clone(),
                    rows: f.len(),
                    users_stopped,
                })
            })
            .collect()
    }
}

impl Users for PlanUsers {
    fn steps(&self) -> &[String] {
        &self.shared.program.steps
    }

    fn checks(&self) -> &[String] {
        &self.shared.program.checks
    }

    fn metrics(&self) -> &[CustomMetric] {
        &self.shared.program.metrics
    }

    fn connections_per_host(&self) -> usize {
        self.shared.per_host
    }

    fn connection_per_iteration(&self) -> bool {
        self.shared.per_iteration
    }

    fn origin(&self, index: usize) -> Option<belier_engine::Origin> {
        self.shared.follow.as_ref()?.hosts.engine_origin(index)
    }

    fn user(&self, vu: u64) -> Box<dyn User> {
        let program = &self.shared.program;
        // Seeds spread by a large odd constant so neighbouring users' sequences differ.
        let seed = self.shared.seed ^ vu.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut vars = program.initial.clone();
        for (slot, value) in self.shared.from_setup.get().into_iter().flatten() {
            vars[*slot] = Some(value.clone());
        }
        Box::new(VirtualUser {
            shared: Arc::clone(&self.shared),
            local: Local {
                vu,
                rng: fastrand::Rng::with_seed(seed),
                vars,
                jars: Vec::new(),
                rows: vec![None; program.feeders.len()],
                draws: vec![0; program.feeders.len()],
                iteration: 0,
                state: State::Idle,
                pending: None,
                queued: std::collections::VecDeque::new(),
                hop: None,
                next_hop: None,
                last_status: 0,
                last_failed: false,
                check_results: vec![false; program.checks.len()],
                tallies: Vec::new(),
                awaiting: None,
            },
        })
    }
}

#[derive(Debug)]
enum State {
    /// Between iterations.
    Idle,
    Running {
        scenario: usize,
        pc: usize,
        /// Passes left of each loop being run, innermost last.
        loops: Vec<u64>,
        /// A failed step with `abort_on_fail`: end the iteration at the next `next`.
        abort: bool,
    },
    Stopped,
}

/// The request awaiting its reply.
#[derive(Debug)]
struct Pending {
    request: usize,
    /// The host and path of the request (following redirects: of its latest hop).
    origin: usize,
    path: String,
    /// Some variable the request uses had no value when it was rendered.
    missing_var: bool,
}

/// What the step under way awaits, its templates rendered.
#[derive(Debug)]
struct Awaiting {
    /// The step (an index into the program's requests).
    request: usize,
    /// The message it sent (for `echo`), or its rendered `contains:` or `equals:` text.
    text: Vec<u8>,
}

/// A virtual user: the run's shared plan, and its own state.
struct VirtualUser {
    /// Read-only during the run; borrowed (never cloned) per call, so the reference count's
    /// cache line is not bounced between worker threads on every request.
    shared: Arc<Shared>,
    local: Local,
}

/// What belongs to one user.
struct Local {
    vu: u64,
    rng: fastrand::Rng,
    vars: Vec<Option<String>>,
    /// A cookie jar per host (by `Outgoing::origin`), made when the host is first sent to:
    /// cookies stay with the host that set them, as a browser keeps them.
    jars: Vec<Jar>,
    rows: Vec<Option<usize>>,
    /// Rows drawn so far from each feeder (sequential order walks on with it).
    draws: Vec<u64>,
    iteration: u64,
    state: State,
    pending: Option<Pending>,
    /// A parallel group's requests after the one pending, in the order the engine reports
    /// their ends.
    queued: std::collections::VecDeque<Pending>,
    /// Following redirects: the request in flight (before cookies) and its hop number; then
    /// the next hop to send, if its answer was a redirect.
    hop: Option<(Outgoing, usize)>,
    next_hop: Option<(Outgoing, usize)>,
    /// For `if:` conditions: the last response's status (0: none), whether the last request
    /// step failed, and each check's latest result.
    last_status: u16,
    last_failed: bool,
    check_results: Vec<bool>,
    /// Script checks and custom metrics counted since the engine last drained them.
    tallies: Vec<Tally>,
    /// The messages the `ws:` step under way awaits.
    awaiting: Option<Awaiting>,
}

impl Local {
    /// Starts an iteration: picks a scenario by weight and draws its data rows.
    fn start_iteration(&mut self, shared: &Shared) -> Option<usize> {
        let program = &shared.program;
        let mut pick = self.rng.u64(0..shared.total_weight.max(1));
        let mut scenario = shared.scenarios.first().copied().unwrap_or(0);
        for &i in &shared.scenarios {
            let weight = program.scenarios[i].weight;
            if pick < weight {
                scenario = i;
                break;
            }
            pick -= weight;
        }
        for &f in &program.scenarios[scenario].feeders {
            let feeder = &program.feeders[f];
            match feeder.draw(
                self.vu,
                self.draws[f],
                &mut self.rng,
                &shared.draws.cursors[f],
            ) {
                Some(row) => {
                    self.rows[f] = Some(row);
                    self.draws[f] += 1;
                }
                None => {
                    shared.draws.stopped[f].fetch_add(1, Ordering::Relaxed);
                    return None;
                }
            }
        }
        Some(scenario)
    }

    /// What the user's templates read: its variables, data rows, numbers and random draws.
    fn env<'a>(&'a mut self, program: &'a Program) -> Env<'a> {
        Env {
            vars: &self.vars,
            feeders: &program.feeders,
            rows: &self.rows,
            vu: self.vu,
            iteration: self.iteration,
            rng: &mut self.rng,
        }
    }

    fn render(&mut self, shared: &Shared, index: usize) -> Outgoing {
        let program = &shared.program;
        let request = &program.requests[index];
        let mut env = self.env(program);
        let mut missing = false;
        let mut path = String::new();
        missing |= request
            .path
            .render_with(&mut env, &mut path, escape_path)
            .is_err();
        let mut headers = Vec::with_capacity(request.headers.len() + 1);
        for (name, template) in &request.headers {
            let mut value = String::new();
            missing |= template
                .render_with(&mut env, &mut value, escape_header)
                .is_err();
            headers.push((name.clone(), value));
        }
        let body = match &request.body {
            Body::None => Vec::new(),
            Body::Bytes(bytes, _) => bytes.to_vec(),
            Body::Text(t) => {
                let mut text = String::new();
                missing |= t.render(&mut env, &mut text).is_err();
                text.into_bytes()
            }
            Body::Json(j) => {
                let value = j.render(&mut env, &mut missing);
                match &request.grpc {
                    // A message its values do not fit (a number field given `abc`) goes
                    // empty: the server refuses it, and the call fails under its status.
                    Some(method) => method
                        .frame(&value.to_string())
                        .map(|framed| framed.to_vec())
                        .unwrap_or_default(),
                    None => serde_json::to_vec(&value).unwrap_or_default(),
                }
            }
            Body::Form(form) => {
                let mut bytes = Vec::new();
                missing |= form.render(&mut env, &mut bytes).is_err();
                bytes
            }
            Body::Multipart(multipart) => {
                let mut bytes = Vec::new();
                missing |= multipart.render(&mut env, &mut bytes).is_err();
                bytes
            }
        };
        self.pending = Some(Pending {
            request: index,
            origin: request.origin,
            path: path.clone(),
            missing_var: missing,
        });
        let outgoing = Outgoing {
            step: request.step,
            origin: request.origin,
            method: request.method.clone(),
            path_and_query: path,
            headers,
            body,
            keep_body: request.keep_body,
            timeout: request.timeout,
            stream: request.stream,
        };
        self.send(shared, outgoing, 0)
    }

    /// Ends the step: with `abort_on_fail`, a failure ends the iteration.
    fn conclude(&mut self, shared: &Shared, request: usize, failed: bool) -> Verdict {
        self.last_failed = failed;
        if failed && (shared.program.requests[request].abort_on_fail || shared.phase.is_some()) {
            if let State::Running { abort, .. } = &mut self.state {
                *abort = true;
            }
        }
        Verdict { failed }
    }
}

impl User for VirtualUser {
    fn next(&mut self) -> Action {
        self.local.next(&self.shared)
    }

    fn reply(&mut self, reply: &Reply<'_>, tally: &mut dyn FnMut(usize, bool)) -> Verdict {
        self.local.reply(&self.shared, reply, tally)
    }

    fn failed(&mut self, kind: ErrorKind) -> Verdict {
        self.local.failed(&self.shared, kind)
    }

    fn awaits(&mut self, message: &[u8]) -> bool {
        self.local.awaits(&self.shared, message)
    }

    fn drain(&mut self, record: &mut dyn FnMut(Tally)) {
        for tally in self.local.tallies.drain(..) {
            record(tally);
        }
    }
}
