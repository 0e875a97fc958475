//! A plan run's making: a plan file becomes the engine's settings (its flags overriding the
//! plan), its setup and teardown run around the load, and once the run is over the plan's
//! thresholds are judged on what was recorded (`belier run` and `belier check` are in
//! [`crate::commands`]).

use std::sync::Arc;

use belier_engine::{Config, Profile, RequestSpec, Spacing, StopWhen};
use belier_plan::{LoadModel, Plan, Scheme};
use belier_scenario::{PlanUsers, VirtualUsers};
use belier_stats::Recorder;

use crate::args::RunArgs;
use crate::load::Finished;
use crate::settings::{self, Draft, Http2, InputError, Origin, Settings};
use crate::signals::{self, Signals};

mod thresholds;
mod watching;
pub use thresholds::{judge, Abort, Watch};
pub use watching::Watching;

/// Exit code when a threshold of the plan failed.
pub const EXIT_THRESHOLDS: u8 = 4;

/// Most virtual users `--vus` accepts (each holds a connection).
const MAX_VUS: u64 = 1_000_000;

/// A plan read and made ready to run, for what follows the run.
pub struct Prepared {
    plan: Plan,
    users: Arc<PlanUsers>,
    /// A plan whose scenarios have loads of their own: one engine load per executor, run
    /// together (empty otherwise), and the users of each.
    parts: Vec<crate::executors::Part>,
    executor_users: Vec<Arc<PlanUsers>>,
    /// The user of the plan's `teardown`, given setup's variables once setup passed.
    teardown: Option<Arc<PlanUsers>>,
    /// `--shard`: this process runs one shard, whose share does not judge the thresholds.
    shard: Option<belier_engine::Shard>,
}

/// Reads the plan of `args`, applies their overrides and returns the run's settings.
pub fn prepare(args: RunArgs, cores: usize) -> anyhow::Result<(Settings, Prepared)> {
    let env = belier_plan::Environment::Process;
    prepare_with(args, cores, &belier_plan::Copies::new(), env)
}

/// [`prepare`], the plan and the files it names read from their `copies` where they have
/// one and its `{{ env.NAME }}` from `env` (a worker's copies of its coordinator's files and
/// the values its coordinator sent).
pub fn prepare_with(
    args: RunArgs,
    cores: usize,
    copies: &belier_plan::Copies,
    env: belier_plan::Environment<'_>,
) -> anyhow::Result<(Settings, Prepared)> {
    let mut plan = belier_plan::load_with(&args.plan, copies, env)?;
    crate::executors::refuse_load_flags(&plan, &args)?;
    apply_overrides(&mut plan, &args)?;
    let shard = args.shard.shard;
    if let Some(shard) = shard {
        plan.shard(shard);
    }
    let duration = args.pace.duration;
    let executor_users = plan.executor_users();
    let users = executor_users
        .first()
        .cloned()
        .unwrap_or_else(|| plan.users());
    let mut settings = settings_for(&plan, args, Arc::clone(&users), cores)?;
    // A plan's Poisson arrivals always have a seed: its own, or the documented default.
    crate::shard::apply(&mut settings.engine, shard, true)?;
    let parts = crate::executors::parts(&plan, &settings.engine, &executor_users, duration);
    if let Some(first) = parts.first() {
        // The first executor stands for the run in its information and the live views.
        settings.engine.load = first.config.load.clone();
        settings.engine.pacing = first.config.pacing;
        settings.engine.stop = first.config.stop;
    }
    let teardown = plan.teardown();
    Ok((
        settings,
        Prepared {
            plan,
            users,
            parts,
            executor_users,
            teardown,
            shard: shard.filter(|s| !s.is_whole()),
        },
    ))
}

impl Prepared {
    /// The plan, as read.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Runs the plan's `setup`, if any, and shares what it extracted with the users and
    /// teardown. `Some(code)`: the run ends here without load (interrupted); a failed setup
    /// is an error naming why.
    pub fn setup(&self, settings: &Settings, signals: &Signals) -> anyhow::Result<Option<u8>> {
        let Some(setup) = self.plan.setup() else {
            return Ok(None);
        };
        let done = crate::phase::run(settings, &setup, Some(signals))?;
        eprintln!("belier: {}", done.line("setup"));
        if done.interrupted {
            return Ok(Some(signals::INTERRUPTED));
        }
        done.require_setup_passed()?;
        self.users.share(&done.outcome);
        for users in &self.executor_users {
            users.share(&done.outcome);
        }
        if let Some(teardown) = &self.teardown {
            teardown.share(&done.outcome);
        }
        Ok(None)
    }

    /// Runs the plan's `teardown`, if any (a stop signal does not cut it short; its requests'
    /// timeouts bound it). A failed teardown is a warning for the report.
    pub fn teardown(&self, settings: &Settings) -> anyhow::Result<Option<String>> {
        let Some(teardown) = &self.teardown else {
            return Ok(None);
        };
        let done = crate::phase::run(settings, teardown, None)?;
        eprintln!("belier: {}", done.line("teardown"));
        Ok((!done.outcome.passed()).then(|| done.line("teardown")))
    }

    /// Runs the load (after [`Prepared::setup`]), then the teardown whatever happened to the
    /// load (Ctrl-C, failed thresholds, an error), then judges the thresholds. Teardown and
    /// judgement come before the results file's end line, so that it keeps the outcomes
    /// (`belier report FILE --type junit` shows them) and a failed teardown's warning.
    pub fn execute(&self, settings: &Settings, signals: &Signals) -> anyhow::Result<Finished> {
        let mut torn_down = None;
        let mut settle = |finished: &mut Finished| {
            let teardown = self.teardown(settings);
            if let Ok(Some(warning)) = &teardown {
                finished.warnings.push(warning.clone());
            }
            torn_down = Some(teardown);
            self.conclude(finished);
        };
        let mut watch = self.watch();
        let finished = if self.parts.is_empty() {
            crate::load::execute_then(settings, signals, watch.as_mut(), &mut settle)
        } else {
            crate::load::execute_parts(settings, signals, &self.parts, watch.as_mut(), &mut settle)
        };
        // The load could not start: the teardown still undoes what setup did.
        let teardown = torn_down.unwrap_or_else(|| self.teardown(settings));
        let finished = finished?;
        teardown?;
        Ok(finished)
    }

    /// The watch over the thresholds that stop the run when they fail, if any; none on a
    /// shard, whose share does not judge them.
    pub fn watch(&self) -> Option<Watch<'_>> {
        Watch::new(&self.plan).filter(|_| self.shard.is_none())
    }

    /// A distributed run's per-scenario figures, from its executors' totals as merged from
    /// the workers' (whose own figures are their shares'): the plan's names and loads.
    pub fn figure_scenarios(&self, finished: &mut Finished) {
        finished.scenarios =
            crate::executors::figures(&self.parts, &finished.part_totals, finished.elapsed);
    }

    /// Adds to a finished run what only the plan knows: data files that ran out, and the
    /// thresholds judged (the one that stopped the run marked so).
    pub fn conclude(&self, finished: &mut Finished) {
        for e in self.users.exhausted() {
            finished.warnings.push(format!(
                "data `{}` ran out after {} rows: {} users stopped for want of a row",
                e.data, e.rows, e.users_stopped
            ));
        }
        for e in self.users.script_errors() {
            finished.warnings.push(format!(
                "script `{}` failed {} time{}: {}",
                e.script,
                e.count,
                if e.count == 1 { "" } else { "s" },
                e.message
            ));
        }
        match self.shard {
            None => {
                let scenarios: Vec<(&str, &Recorder)> = finished
                    .scenarios
                    .iter()
                    .map(|s| s.name.as_str())
                    .zip(&finished.part_totals)
                    .collect();
                finished.thresholds =
                    judge(&self.plan, &finished.totals, finished.elapsed, &scenarios);
                if let Some(abort) = &finished.aborted {
                    abort.mark(&mut finished.thresholds);
                }
            }
            // Thresholds are about the whole run: a shard's share would pass or fail them
            // wrongly (counts, rates), so they are judged on the merged results instead.
            Some(shard) if !self.plan.thresholds.is_empty() => finished.warnings.push(format!(
                "{SHARD_LEAVES_THRESHOLDS} {shard}'s share: judge them on the merged results with `belier report FILES --thresholds-from PLAN`"
            )),
            Some(_) => {}
        }
    }
}

/// How a shard's warning that it left the plan's thresholds to the merged results begins
/// (a coordinator, which judges them itself, drops it).
pub const SHARD_LEAVES_THRESHOLDS: &str = "thresholds not judged on shard";

/// `-H` and `--insecure` on a plan: headers every request of the plan sends, and no
/// certificate check.
pub fn apply_headers(
    plan: &mut Plan,
    headers: &[String],
    insecure: bool,
) -> Result<(), InputError> {
    for raw in headers {
        let (name, value) = settings::parse_header(raw)?;
        // One length for every step's body would contradict most of them (issue 28).
        if name.eq_ignore_ascii_case("content-length")
            || name.eq_ignore_ascii_case("transfer-encoding")
        {
            return Err(InputError::new(
                "--header <'NAME: VALUE'>",
                raw,
                "cannot apply to every step of a plan: leave it out (belier writes each body's length) or set it on a step with a fixed body",
            ));
        }
        plan.set_header(&name, &value);
    }
    if insecure {
        plan.options.insecure = true;
    }
    Ok(())
}

/// `--var NAME=VALUE` on a plan: each replaces the value of one of the plan's variables. The
/// value is never echoed in an error: it may be a secret.
pub fn apply_vars(plan: &mut Plan, vars: &[String]) -> Result<(), InputError> {
    for raw in vars {
        let Some((name, value)) = raw.split_once('=') else {
            return Err(InputError::new(
                "--var <NAME=VALUE>",
                "",
                "expects NAME=VALUE (found no `=`)",
            ));
        };
        plan.set_variable(name.trim(), value)
            .map_err(|why| InputError::new("--var <NAME=VALUE>", "", why))?;
    }
    Ok(())
}

/// The flags that change the plan itself before its users are made.
fn apply_overrides(plan: &mut Plan, args: &RunArgs) -> Result<(), InputError> {
    apply_headers(plan, &args.every.headers, args.every.insecure)?;
    apply_vars(plan, &args.vars.vars)?;
    if args.every.compressed {
        plan.ask_compressed();
    }
    if let Some(n) = args.vus {
        if !(1..=MAX_VUS).contains(&n) {
            return Err(InputError::new(
                "--vus <N>",
                n,
                format!("must be between 1 and {MAX_VUS}"),
            ));
        }
        let pacing = plan.load.pacing();
        plan.load.model = LoadModel::Closed {
            vus: Profile::constant(n as f64),
            pacing,
        };
    }
    if let Some(rate) = args.pace.rate {
        if !rate.is_finite() || rate <= 0.0 {
            return Err(InputError::new(
                "--rate <R>",
                rate,
                "must be a positive number of iterations per second",
            ));
        }
        let (max_vus, spacing) = match &plan.load.model {
            LoadModel::Open {
                max_vus, spacing, ..
            } => (*max_vus, *spacing),
            LoadModel::Closed { .. } => (belier_engine::DEFAULT_MAX_CONNECTIONS, Spacing::Even),
        };
        plan.load.model = LoadModel::Open {
            rate: Profile::constant(rate),
            max_vus,
            spacing,
        };
    }
    if let Some(d) = args.pace.duration {
        plan.load.duration = Some(d);
    }
    if let Some(n) = args.iterations {
        if n == 0 {
            return Err(InputError::new("--iterations <N>", n, "must be at least 1"));
        }
        plan.load.iterations = Some(n);
    }
    Ok(())
}

/// The engine settings of a plan run.
fn settings_for(
    plan: &Plan,
    args: RunArgs,
    users: Arc<PlanUsers>,
    cores: usize,
) -> Result<Settings, InputError> {
    let mut engine = engine_for(
        plan,
        &Connection {
            tls_resume: args.every.tls_resume,
            connect_to: args.every.connect_to,
            dns_policy: args.every.dns_policy.into(),
            dns_server: args.every.dns_server,
            dns_ttl: args.every.dns_ttl,
            no_resend: args.sending.no_resend,
            server_timing: settings::server_timing(&args.every)?,
        },
        users,
    )?;
    engine.trace_sample = settings::trace_sample(&args.every, &[])?;
    engine.stop = StopWhen {
        requests: None,
        duration: plan.load.duration,
        iterations: plan.load.iterations,
    };
    let threads = settings::threads(args.sending.threads, cores)?;
    let output = settings::output(args.results, &mut engine)?;
    Draft {
        engine,
        url: plan.target.url(),
        output,
        raw: None,
        http2: http2(plan, &args.plan),
        plan: Some(args.plan),
        threads,
        // A plan's open loop names its users' cap (`max_vus`, or its default).
        cap_given: matches!(plan.load.model, LoadModel::Open { .. }),
        part: args
            .shard
            .shard
            .unwrap_or_else(|| args.cluster.first_part()),
    }
    .finish()
}

/// How a plan's connections are made, beyond what the plan says: flags of `belier run` and
/// `belier capacity`.
pub struct Connection {
    /// `--tls-resume`.
    pub tls_resume: bool,
    /// `--connect-to`.
    pub connect_to: Option<std::net::SocketAddr>,
    /// Which of a host's addresses each new connection uses (`--dns-policy`).
    pub dns_policy: belier_engine::DnsPolicy,
    /// The DNS server hosts are looked up on (`--dns-server`).
    pub dns_server: Option<std::net::SocketAddr>,
    /// How often hosts are looked up again (`--dns-ttl`).
    pub dns_ttl: Option<std::time::Duration>,
    /// `--no-resend`.
    pub no_resend: bool,
    /// The header the server's own time is read from (`--server-timing`,
    /// `--server-time-header`): not how connections are made, but read from every response
    /// they bring.
    pub server_timing: Option<belier_engine::ServerTimingHeader>,
}

/// HTTP/2 or HTTP/3 as `plan` (at `path`) asks for it: its `http2`, `http3`, `quic_0rtt`
/// and `max_streams` mean what `--http2`, `--http3`, `--quic-0rtt` and `--max-streams` do.
pub fn http2(plan: &Plan, path: &std::path::Path) -> Http2 {
    Http2 {
        on: plan.options.http2,
        http3: plan.options.http3,
        auto: false,
        early: plan.options.quic_0rtt,
        max_streams: plan.options.max_streams,
        origin: Origin::Plan(path.to_path_buf()),
    }
}

/// The engine's configuration for `plan` and its `users`, with the plan's own load; the
/// caller sets the stop condition, and [`Draft::finish`] HTTP/2 and the threads.
pub fn engine_for(
    plan: &Plan,
    connection: &Connection,
    users: Arc<PlanUsers>,
) -> Result<Config, InputError> {
    let options = &plan.options;
    let target = &plan.target;
    let mut engine = Config::new(RequestSpec {
        method: "GET".into(),
        host: target.host.clone(),
        port: target.port,
        path_and_query: if target.base_path.is_empty() {
            "/".into()
        } else {
            target.base_path.clone()
        },
        // The users send their own requests, default headers included; this one only says
        // where to connect.
        headers: Vec::new(),
        body: Vec::new(),
    });
    // Redirects may lead to https hosts the plan does not name (not over HTTP/2): they get
    // the plan's TLS settings too.
    let discovering = options.follow > 0 && !options.http2 && !options.http3;
    let any_https = discovering
        || target.scheme == Scheme::Https
        || plan.hosts.iter().any(|h| h.scheme == Scheme::Https);
    if connection.tls_resume && options.per_iteration {
        return Err(InputError::new(
            "--tls-resume",
            "",
            format!(
                "contradicts the plan's `connection: per-iteration` ({}): each iteration is a new visitor, with full TLS handshakes",
                plan.file.display()
            ),
        ));
    }
    if any_https {
        engine.tls = Some(settings::tls_from_files(
            options.insecure,
            options.cacert.as_deref(),
            options.cert.as_deref().zip(options.key.as_deref()),
            options.sni.clone(),
            connection.tls_resume,
        )?);
    }
    if let Some(t) = options.timeout {
        engine.timeout = t;
    }
    engine.connect_to = connection.connect_to;
    engine.dns_policy = connection.dns_policy;
    engine.dns_server = connection.dns_server;
    engine.dns_ttl = connection.dns_ttl;
    engine.unix_socket.clone_from(&options.unix_socket);
    engine.keepalive = options.keepalive;
    engine.compressed = options.compressed;
    // The hosts of the plan's `url:` steps beside the target's: a connection pool each.
    engine.origins = crate::targets_file::engine_origins(&plan.hosts, engine.tls.as_ref());
    if discovering {
        users.discovered_tls(crate::targets_file::discovered_tls(engine.tls.as_ref()));
    }
    if target.scheme == Scheme::Http {
        // The TLS options were the other hosts'.
        engine.tls = None;
    }
    engine.resend = !connection.no_resend;
    // The flags win over the plan's `server_timing`.
    engine.server_timing = connection
        .server_timing
        .clone()
        .or_else(|| options.server_timing.clone());
    engine.load = plan.load.engine_load();
    engine.pacing = plan.load.pacing();
    engine.users = Some(users);
    Ok(engine)
}
