//! A run over several workers (`--workers`, `--spawn`): the CLI's side of
//! [`belier_cluster`]. Each worker runs this run's own arguments with its shard; this process
//! merges their records interval by interval into one run, shows its progress (or the
//! `--tui` dashboard and the `--web` console, fed the merged intervals), writes one results
//! file, serves and sends its metrics, judges a plan's thresholds on the merged data and
//! prints one report, with the watchers a run in this process has ([`crate::load::Watchers`]). The live views
//! steer a handle of this process ([`Control::detached`]); each change it records is sent to
//! every worker as the whole run's level (each worker's engine takes its shard's share, as
//! of the run's own profile) and written once to the merged results file.

use std::time::{Duration, Instant};

use anyhow::Context;
use belier_cluster::clock::Offset;
use belier_cluster::coordinator::Coordinator;
use belier_cluster::protocol::{Job, PlanFile, Shard};
use belier_engine::Control;
use belier_results::WorkerClock;
use belier_results::{End, HostUsage};
use belier_run::{Coordinated, Source as _};

use crate::args::{ClusterArgs, Loss, TOKEN_ENV};
use crate::load::{Asked, Finished, Opened, Origin, Sourced};
use crate::plan::Watch;
use crate::settings::{InputError, Settings};
use crate::signals::{self, Signals};

pub(crate) mod files;
mod grpc;
mod scenarios;
mod spawn;

/// Time between the start order and the start: enough for every worker to hear it.
const LEAD: Duration = Duration::from_millis(500);
/// Beyond two intervals without a line, how long a worker may stay silent before it is lost.
const GRACE: Duration = Duration::from_secs(1);
/// Clock exchanges per worker; the one with the shortest round trip counts.
const CLOCK_SAMPLES: usize = 8;
/// The flags that are the coordinator's and not the run's (they take a value).
const OWN_FLAGS: [&str; 5] = [
    "--workers",
    "--spawn",
    "--on-worker-loss",
    "--worker-results",
    "--worker-token",
];

/// Most local workers `--spawn` starts.
const MAX_SPAWN: u32 = 256;

/// What the coordinator hands on about the run.
pub struct Outcome {
    /// The merged run.
    pub finished: Finished,
    /// Workers lost, with why: the run is incomplete.
    pub lost: Vec<String>,
}

/// Runs `settings` over the workers of `cluster`; `plan` is the plan of a plan run (it and
/// the files it reads go to the workers with the job, as do the files a flag run names).
/// `watch` judges a plan's thresholds that stop the run on the merged intervals (a failed one
/// stops every worker); `settle` adds what the caller knows (a plan's thresholds) before the
/// results file ends.
pub fn run_distributed(
    settings: &Settings,
    cluster: &ClusterArgs,
    plan: Option<&belier_plan::Plan>,
    signals: &Signals,
    watch: Option<&mut Watch<'_>>,
    settle: &mut dyn FnMut(&mut Finished),
) -> anyhow::Result<Outcome> {
    refuse(settings, cluster)?;
    let workers = Workers::prepare(cluster, plan)?;
    let interval = settings.engine.interval;
    // Opened before the run starts, so a path that cannot be written or a taken port stops
    // nothing that was sent.
    let opened = Opened::open(settings)?;
    let Workers {
        mut coordinator,
        spawned,
        addrs,
        offsets,
    } = workers;
    coordinator.start(LEAD, interval * 2 + GRACE, cluster.worker_results.clone())?;
    let started = Instant::now() + LEAD;
    let mut fallback = crate::load::load_info(settings);
    fallback.workers = clocks(&addrs, &offsets);
    let control =
        Control::detached(&settings.engine.load, started).limited(settings.engine.ceiling.clone());
    let skew = offsets
        .iter()
        .map(|o| o.round_trip / 2)
        .max()
        .unwrap_or_default();
    eprintln!(
        "belier: {} workers started together; their clocks agree with this one's within {:.3} ms",
        addrs.len(),
        skew.as_secs_f64() * 1e3
    );
    let mut source = Coordinated::new(coordinator, addrs, started, control, interval, fallback)
        .stopping_on_loss(cluster.on_worker_loss == Loss::Stop);
    let info = source.info().clone();
    let asked = Asked {
        watch,
        ..Asked::default()
    };
    let control = source.control();
    let mut watchers =
        opened.watchers(settings, asked, Origin::Workers, control, &info, signals)?;
    let ran = watchers.follow(&mut source, settings, &info);
    drop(spawned);
    let finished = watchers.finish(settings, ran, merged(&source), settle);
    Ok(Outcome {
        finished,
        lost: source.lost().to_vec(),
    })
}

/// Refuses a `--spawn` out of bounds, and `--raw`: its rows are each request's, recorded on
/// the workers, and no worker sends them.
fn refuse(settings: &Settings, cluster: &ClusterArgs) -> Result<(), InputError> {
    if let Some(n) = cluster.spawn.filter(|n| !(1..=MAX_SPAWN).contains(n)) {
        return Err(InputError::new(
            "--spawn <N>",
            n,
            format!("must be 1 to {MAX_SPAWN}"),
        ));
    }
    if let Some(path) = &settings.raw {
        return Err(InputError::new(
            "--raw <FILE>",
            path.display(),
            "not offered on a distributed run: each request's row stays on the worker that \
             sent it; run without --raw (a worker's results file, --worker-results DIR, keeps \
             its intervals)",
        ));
    }
    Ok(())
}

/// The workers, connected, their clocks measured and their jobs handed out: ready to start.
struct Workers {
    coordinator: Coordinator,
    /// `--spawn`'s local workers, stopped when dropped.
    spawned: Option<spawn::Spawned>,
    addrs: Vec<String>,
    offsets: Vec<Offset>,
}

impl Workers {
    fn prepare(cluster: &ClusterArgs, plan: Option<&belier_plan::Plan>) -> anyhow::Result<Workers> {
        // Read before any worker starts: a file that cannot go stops the run here.
        let (args, schema) = grpc::portable(run_args(std::env::args().skip(1)))?;
        let files = files::sent(plan, &args)?;
        drop(schema);
        // The workers load the plan with the environment it was loaded with here, not theirs.
        let env = plan.map(|p| p.environment.clone()).unwrap_or_default();
        if let Some(why) = belier_cluster::environment::problem(&env) {
            return Err(InputError::in_file(why).into());
        }
        let spawned = cluster.spawn.map(spawn::Spawned::start).transpose()?;
        let addrs = match &spawned {
            Some(s) => s.addrs.clone(),
            None => cluster.workers.clone(),
        };
        if let Some(s) = &spawned {
            for (i, (addr, pid)) in s.addrs.iter().zip(s.pids()).enumerate() {
                eprintln!("belier: worker {} at {addr} (pid {pid})", i + 1);
            }
        }
        let token = match &spawned {
            Some(s) => s.token.clone(),
            None => worker_token(cluster)?,
        };
        let mut coordinator = Coordinator::connect(&addrs, token)?;
        let offsets = coordinator.measure_clocks(CLOCK_SAMPLES)?;
        let plan = plan.map(|p| plan_file(&p.file)).transpose()?;
        let count = u32::try_from(addrs.len()).unwrap_or(u32::MAX);
        let jobs: Vec<Job> = (1..=count)
            .map(|index| Job {
                args: args.clone(),
                shard: Shard { index, count },
                plan: plan.clone(),
                files: files.clone(),
                env: env.clone(),
            })
            .collect();
        coordinator.prepare(&jobs)?;
        if let Some(dir) = &cluster.worker_results {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        Ok(Workers {
            coordinator,
            spawned,
            addrs,
            offsets,
        })
    }
}

/// The plan file as it goes to the workers.
fn plan_file(path: &std::path::Path) -> anyhow::Result<PlanFile> {
    Ok(PlanFile {
        path: path.display().to_string(),
        text: std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?,
    })
}

/// The workers' clocks as measured here, for the run's information.
fn clocks(addrs: &[String], offsets: &[Offset]) -> Vec<WorkerClock> {
    let count = addrs.len();
    addrs
        .iter()
        .zip(offsets)
        .enumerate()
        .map(|(i, (address, o))| WorkerClock {
            address: address.clone(),
            shard: format!("{}/{count}", i + 1),
            offset_ms: o.offset_ns as f64 / 1e6,
            rtt_ms: o.round_trip.as_secs_f64() * 1e3,
            start_skew_ms: o.round_trip.as_secs_f64() * 1e3 / 2.0,
        })
        .collect()
}

/// What the coordinator knows of the merged run once it is over: the workers' headers
/// merged, their losses, warnings and executors' totals, their own host readings (the load
/// was sent from their machines) and a stream's targets, from their end lines.
fn merged(source: &Coordinated) -> Sourced {
    let ends = source.ends();
    let mut warnings = source.lost().to_vec();
    for e in ends {
        // A worker's note that its share leaves the thresholds to the merged results is
        // answered here: this process judges them on the merged figures.
        let judged_here = |w: &&String| w.starts_with(crate::plan::SHARD_LEAVES_THRESHOLDS);
        warnings.extend(e.warnings.iter().filter(|w| !judged_here(w)).cloned());
    }
    Sourced {
        info: source.info().clone(),
        interrupted: source.interrupted(),
        // Each executor's totals summed over the workers; their figures are the plan's to
        // make (`settle`), with its own names and loads (the workers' are shares).
        part_totals: scenarios::merged_totals(ends, &mut warnings),
        scenarios: Vec::new(),
        warnings,
        host: ends.iter().map(|e| e.host).fold(None, HostUsage::merged),
        // A stream's targets, known at its end: the workers' ends name them alike.
        targets: first_non_empty(ends, |e| &e.targets),
        steps: first_non_empty(ends, |e| &e.steps),
    }
}

/// The workers' token: `--worker-token`, else [`TOKEN_ENV`]; every worker has one.
fn worker_token(cluster: &ClusterArgs) -> Result<String, InputError> {
    let (token, source) = match &cluster.worker_token {
        Some(t) => (Some(t.clone()), "--worker-token <TOKEN>"),
        None => (std::env::var(TOKEN_ENV).ok(), TOKEN_ENV),
    };
    let token = token.filter(|t| !t.is_empty()).ok_or_else(|| {
        InputError::new(
            "--workers <HOST:PORT,…>",
            "",
            format!(
                "needs the workers' token (--worker-token TOKEN or {TOKEN_ENV}): each worker \
                 prints the one it made when it starts, or takes yours with --token"
            ),
        )
    })?;
    match belier_cluster::protocol::token_problem(&token, false) {
        Some(why) => Err(InputError::new(source, "", why)),
        None => Ok(token),
    }
}

/// This run's own arguments, without the coordinator's flags.
fn run_args(argv: impl Iterator<Item = String>) -> Vec<String> {
    let mut args = Vec::new();
    let mut skip_value = false;
    for arg in argv {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        let own = OWN_FLAGS
            .iter()
            .find(|f| arg == **f || arg.starts_with(&format!("{f}=")));
        match own {
            Some(f) => skip_value = arg == *f,
            None => args.push(arg),
        }
    }
    args
}

/// The first of the workers' end lines' `field` that is not empty (or an empty one).
fn first_non_empty<T: Clone>(ends: &[End], field: impl Fn(&End) -> &Vec<T>) -> Vec<T> {
    ends.iter()
        .map(field)
        .find(|v| !v.is_empty())
        .cloned()
        .unwrap_or_default()
}

/// Runs `settings` here, or over the workers of `cluster` when it names some (`belier grpc`,
/// `belier ws`), writes its report and lingers; returns its exit code.
pub fn run_here_or_over(
    settings: &Settings,
    cluster: &ClusterArgs,
    signals: &Signals,
) -> anyhow::Result<u8> {
    if cluster.active() {
        return run_and_report(settings, cluster, signals);
    }
    let finished = crate::load::execute(settings, signals)?;
    crate::load::report::report_and_linger(settings, finished, signals)
}

/// Runs `settings` over the workers of `cluster` (a run from flags: `belier URL`, `belier
/// grpc`, `belier ws`), writes its report and lingers as a run here does; returns its exit
/// code.
pub fn run_and_report(
    settings: &Settings,
    cluster: &ClusterArgs,
    signals: &Signals,
) -> anyhow::Result<u8> {
    let mut outcome = run_distributed(settings, cluster, None, signals, None, &mut |_| {})?;
    let code = code(&outcome, cluster.on_worker_loss, 0);
    let written = crate::load::report::write_report(settings, &outcome.finished, code);
    crate::load::report::linger(&mut outcome.finished, signals);
    written
}

/// The exit code of a distributed run: 1 once a worker was lost (unless told to go on),
/// else what the run itself says.
pub fn code(outcome: &Outcome, loss: Loss, otherwise: u8) -> u8 {
    if !outcome.lost.is_empty() && loss == Loss::Stop {
        crate::exit::EXIT_FAILURE
    } else if outcome.finished.interrupted {
        signals::INTERRUPTED
    } else {
        otherwise
    }
}

#[cfg(test)]
mod tests {
    use super::run_args;

    #[test]
    fn the_coordinators_flags_are_not_the_runs() {
        let argv = [
            "http://127.0.0.1:8080/",
            "--rate",
            "100",
            "--spawn",
            "4",
            "--workers=a:1,b:2",
            "--on-worker-loss",
            "continue",
            "--worker-results",
            "dir",
            "--worker-token=t",
            "-z",
            "5s",
        ];
        assert_eq!(
            run_args(argv.iter().map(ToString::to_string)),
            ["http://127.0.0.1:8080/", "--rate", "100", "-z", "5s"]
        );
    }
}
