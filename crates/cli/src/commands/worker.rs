//! `belier worker`: waits for a coordinator's runs and runs each one's share in this process,
//! exactly as `belier ARGS --shard I/N` would, its results file streamed back as it is written.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use belier_cluster::files::Received;
use belier_cluster::protocol::{token_problem, Job, Steering, MIN_TOKEN_CHARS};
use belier_cluster::worker::{self, Helm, Options, Prepared};
use belier_engine::Control;
use belier_plan::Environment;
use clap::Parser;

use crate::args::{Cli, Command, WorkerArgs, TOKEN_ENV};
use crate::settings::{InputError, Settings};
use crate::signals::Signals;
use crate::token::GENERATE;

mod local;
mod spawned;

/// `belier worker --listen ADDR`: serves runs until Ctrl-C (or, `--spawned`, until its
/// coordinator is gone).
pub fn run(args: WorkerArgs, signals: &Signals) -> anyhow::Result<u8> {
    let addr: SocketAddr = args
        .listen
        .parse()
        .map_err(|e| InputError::new("--listen <ADDR>", &args.listen, format!("{e}")))?;
    let (token, made) = token(args.token, addr)?;
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| InputError::new("--listen <ADDR>", &args.listen, format!("{e}")))?;
    let dir = args.dir.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("belier-worker-{}", std::process::id()))
    });
    // The coordinator that spawned this worker reads this line for the port.
    println!("belier worker: listening on {}", listener.local_addr()?);
    if made {
        eprintln!(
            "belier worker: token {token} (give it to the coordinator: --worker-token TOKEN or {TOKEN_ENV})"
        );
    }
    eprintln!("belier worker: runs' results in {}", dir.display());
    let gone = Arc::new(AtomicBool::new(false));
    if args.spawned {
        spawned::watch_coordinator(Arc::clone(&gone), dir.clone());
    }
    let signals = signals.clone();
    let served = worker::serve(
        listener,
        Options {
            token,
            dir: dir.clone(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        Box::new(Runner {
            local_files: args.allow_local_files,
        }),
        move || signals.stop_requested() || gone.load(Ordering::Relaxed),
    );
    if args.spawned {
        spawned::remove(&dir);
    }
    served?;
    Ok(0)
}

/// The worker's token and whether it was made here (then printed once, for the user to give
/// the coordinator): `--token`, else [`TOKEN_ENV`], else one made here on the loopback.
fn token(flag: Option<String>, addr: SocketAddr) -> Result<(String, bool), InputError> {
    let (given, source) = match flag {
        Some(t) => (Some(t), "--token <TOKEN>"),
        None => (
            std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()),
            TOKEN_ENV,
        ),
    };
    let remote = !addr.ip().is_loopback();
    match given {
        Some(t) if t == GENERATE => Ok((made(source)?, true)),
        Some(t) => match token_problem(&t, remote) {
            Some(why) => Err(InputError::new(
                source,
                "",
                format!("{why}; '--token {GENERATE}' makes one"),
            )),
            None => Ok((t, false)),
        },
        None if remote => Err(InputError::new(
            "--listen <ADDR>",
            addr,
            format!(
                "beyond the loopback a worker needs a token (--token TOKEN, --token {GENERATE} \
                 or {TOKEN_ENV}), of at least {MIN_TOKEN_CHARS} characters"
            ),
        )),
        None => Ok((made(source)?, true)),
    }
}

fn made(source: &'static str) -> Result<String, InputError> {
    crate::token::generate()
        .map_err(|e| InputError::new(source, GENERATE, format!("cannot make a token: {e}")))
}

/// Runs a job's arguments as the `belier` command line would.
struct Runner {
    /// `--allow-local-files`: a job may read this machine's files, not only those sent, and
    /// its plan this machine's environment, not the values sent.
    local_files: bool,
}

/// A run ready to start: a flag run's settings, or a plan's.
struct Ready {
    settings: Settings,
    plan: Option<crate::plan::Prepared>,
    /// The run's steering handle, once its engine started.
    control: Arc<Mutex<Option<Control>>>,
    /// The files the run reads, removed when it is over.
    _files: Received,
}

/// Steers the run through its engine's handle, as the console does on one machine: the
/// coordinator's level is the whole run's, of which the shard's engine takes its share.
struct Steered(Arc<Mutex<Option<Control>>>);

impl Helm for Steered {
    fn steer(&self, steering: Steering) -> Result<(), String> {
        let held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let control = held.as_ref().ok_or("the run has not started yet")?;
        if steering.level == 0.0 {
            control.pause();
            return Ok(());
        }
        control
            .set_level(steering.level)
            .map_err(|e| e.to_string())?;
        control.resume();
        Ok(())
    }
}

impl worker::Runner for Runner {
    fn prepare(&self, job: &Job, dir: &Path) -> Result<Box<dyn Prepared>, String> {
        let mut argv = vec!["belier".to_string()];
        argv.extend(job.args.iter().cloned());
        if job.shard.count > 1 {
            argv.push("--shard".into());
            argv.push(format!("{}/{}", job.shard.index, job.shard.count));
        }
        let cli = Cli::try_parse_from(&argv).map_err(|e| {
            let text = e.render().to_string();
            text.lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments")
                .to_string()
        })?;
        // The run reads the coordinator's files from copies of its own, whatever this
        // process's working directory holds.
        let mut files = Received::write(&job.files, &dir.join("files"))?;
        if let Some(plan) = &job.plan {
            files.insert(&plan.path, plan.text.as_bytes())?;
        }
        let cores = crate::limits::cores();
        let (mut settings, plan) = match cli.command {
            None => {
                let mut load = cli.load;
                if !self.local_files {
                    local::refuse_unsent(&mut load, files.copies())?;
                }
                crate::cluster::files::localise(&mut load, files.copies());
                let settings =
                    crate::targets_file::settings(load, cores).map_err(|e| format!("{e:#}"))?;
                (settings, None)
            }
            Some(Command::Run(a)) => {
                // `{{ env.NAME }}` reads the coordinator's values, sent with the job: this
                // machine's environment is its own, unless it lets jobs read its files too.
                let env = match self.local_files {
                    true => Environment::Process,
                    false => Environment::Only(&job.env),
                };
                let (s, p) = crate::plan::prepare_with(*a, cores, files.copies(), env)
                    .map_err(|e| format!("{e:#}"))?;
                if !self.local_files {
                    local::refuse_unsent_in_plan(p.plan(), files.copies())?;
                }
                (s, Some(p))
            }
            Some(Command::Grpc(mut grpc)) => {
                if !self.local_files {
                    local::refuse_unsent_grpc(&mut grpc, files.copies())?;
                }
                crate::cluster::files::localise_grpc(&mut grpc, files.copies());
                let settings = super::grpc::settings(*grpc, cores).map_err(|e| format!("{e:#}"))?;
                (settings, None)
            }
            Some(Command::Ws(mut ws)) => {
                if !self.local_files {
                    local::refuse_unsent_ws(&mut ws, files.copies())?;
                }
                crate::cluster::files::localise_ws(&mut ws, files.copies());
                let settings = super::ws::settings(*ws, cores).map_err(|e| format!("{e:#}"))?;
                (settings, None)
            }
            Some(_) => {
                return Err(
                    "a worker runs load tests, gRPC calls, WebSockets and plans only".into(),
                )
            }
        };
        // The coordinator reports, saves, keeps and shows the run: the worker only records.
        let output = &mut settings.output;
        output.save = Some(dir.join("results.jsonl"));
        output.keep = None;
        (output.out, output.html, output.junit) = (None, None, None);
        (output.tui, output.metrics, output.web) = (false, None, None);
        output.metrics_out.clear();
        settings.raw = None;
        Ok(Box::new(Ready {
            settings,
            plan,
            control: Arc::default(),
            _files: files,
        }))
    }
}

impl Prepared for Ready {
    fn helm(&self) -> Arc<dyn Helm> {
        Arc::new(Steered(Arc::clone(&self.control)))
    }

    fn run(
        mut self: Box<Self>,
        start: Instant,
        results: &Path,
        stop: Arc<AtomicBool>,
    ) -> Result<(), String> {
        self.settings.output.save = Some(results.to_path_buf());
        // The engine starts now and begins its schedule at the agreed instant, so that its
        // start-up is spent before it, whatever it costs on this machine.
        self.settings.engine.start_at = Some(start);
        let signals = Signals::from_flag(stop).steered_through(Arc::clone(&self.control));
        let finished = match &self.plan {
            None => crate::load::execute(&self.settings, &signals),
            Some(plan) => plan
                .setup(&self.settings, &signals)
                .and_then(|_| plan.execute(&self.settings, &signals)),
        };
        finished.map(|_| ()).map_err(|e| format!("{e:#}"))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use belier_engine::{Ceiling, Load, Profile};

    use super::*;

    #[test]
    fn a_steer_above_the_runs_ceiling_is_refused_with_the_limit() {
        let load = Load::Closed {
            connections: Profile::constant(4.0),
        };
        let control = Control::detached(&load, Instant::now()).limited(Some(Ceiling {
            level: 36.0,
            what: "the open-file limit".into(),
        }));
        let helm = Steered(Arc::new(Mutex::new(Some(control.clone()))));
        let e = helm.steer(Steering { level: 1e9 }).unwrap_err();
        assert_eq!(
            e,
            "1000000000 is above this run's limit of 36: the open-file limit"
        );
        assert!(control.history().is_empty(), "nothing changed");
        assert!(helm.steer(Steering { level: 36.0 }).is_ok());
    }
}
