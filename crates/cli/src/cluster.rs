//! A run over several workers (`--workers`, `--spawn`): the CLI's side of
//! [`belier_cluster`]. Each worker runs this run's own arguments with its shard; this process
//! merges their records interval by interval into one run, shows its progress (or the
//! `--tui` dashboard and the `--web` console, fed the merged intervals), writes one results
//! file, judges a plan's thresholds on the merged data and prints one report. The live views
//! steer a handle of this process ([`Control::detached`]); each change it records is sent to
//! every worker as the whole run's level (each worker's engine takes its shard's share, as
//! of the run's own profile) and written once to the merged results file.

use std::time::{Duration, Instant};

use anyhow::Context;
use belier_cluster::clock::Offset;
use belier_cluster::coordinator::Coordinator;
use belier_cluster::protocol::{Job, PlanFile, Shard};
use belier_engine::Control;
use belier_results::End;
use belier_results::WorkerClock;
use belier_run::watchers::results_file::ResultsFile;
use belier_run::{Changes, Coordinated, Ran, Seen, Watcher};

use crate::args::{ClusterArgs, Loss, TOKEN_ENV};
use crate::load::Finished;
use crate::plan::{Watch, Watching};
use crate::settings::{InputError, Settings};
use crate::signals::{self, Signals};

pub(crate) mod files;
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
    mut signals: &Signals,
    watch: Option<&mut Watch<'_>>,
    settle: &mut dyn FnMut(&mut Finished),
) -> anyhow::Result<Outcome> {
    refuse_or_warn(settings, cluster)?;
    let workers = Workers::prepare(cluster, plan)?;
    let interval = settings.engine.interval;
    // Listening before the run starts, so a taken port stops nothing that was sent.
    let web = crate::web::Live::open(settings)?;
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
    let live = crate::load::live_view(settings, control.clone(), &fallback);
    let mut source = Coordinated::new(coordinator, addrs, started, control, interval, fallback)
        .stopping_on_loss(cluster.on_worker_loss == Loss::Stop);
    let mut watchers = MergedWatchers {
        narrator: Narrator,
        results: settings
            .output
            .save
            .clone()
            .map(|path| ResultsFile::merged(path, settings.output.name.clone(), interval)),
        web,
        live,
        watching: watch.map(|w| Watching::new(w, Vec::new())),
    };
    let info = source.info().clone();
    let changes = Changes::new(&settings.engine.load, settings.engine.users.is_some());
    let ran = belier_run::run(
        &mut source,
        changes,
        &info,
        Vec::new(),
        &mut watchers.all(&mut signals),
    );
    drop(spawned);
    Ok(conclude(settings, &source, ran, watchers, settle))
}

/// Refuses a `--spawn` out of bounds; says which flags a distributed run goes without.
fn refuse_or_warn(settings: &Settings, cluster: &ClusterArgs) -> Result<(), InputError> {
    if let Some(n) = cluster.spawn.filter(|n| !(1..=MAX_SPAWN).contains(n)) {
        return Err(InputError::new(
            "--spawn <N>",
            n,
            format!("must be 1 to {MAX_SPAWN}"),
        ));
    }
    for (asked, flag) in [
        (settings.output.metrics.is_some(), "--metrics-listen"),
        (!settings.output.metrics_out.is_empty(), "--metrics-out"),
        (settings.raw.is_some(), "--raw"),
    ] {
        if asked {
            eprintln!(
                "belier: {flag} is not offered on a distributed run yet; going on without it"
            );
        }
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
        let args = run_args(std::env::args().skip(1));
        let files = files::sent(plan, &args)?;
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

/// The watchers of a distributed run (no exporter, outputs or raw file yet).
struct MergedWatchers<'a, 'p> {
    narrator: Narrator,
    results: Option<ResultsFile>,
    web: Option<crate::web::Live>,
    live: crate::load::Live,
    watching: Option<Watching<'a, 'p>>,
}

impl MergedWatchers<'_, '_> {
    /// Every watcher, in the order they are handed the run (see `load::Watchers::all`).
    fn all<'s>(&'s mut self, signals: &'s mut &Signals) -> Vec<&'s mut dyn Watcher> {
        let mut all: Vec<&mut dyn Watcher> = vec![&mut self.narrator];
        if let Some(w) = &mut self.results {
            all.push(w);
        }
        if let Some(w) = &mut self.web {
            all.push(w);
        }
        all.push(&mut self.live);
        if let Some(w) = &mut self.watching {
            all.push(w);
        }
        all.push(signals);
        all
    }
}

/// Says on standard error what befell the workers: a loss, a change that did not reach them.
struct Narrator;

impl Watcher for Narrator {
    fn seen(&mut self, seen: &Seen<'_>, warnings: &mut Vec<String>) {
        match seen {
            Seen::Lost {
                worker,
                address,
                why,
                at,
            } => eprintln!(
                "belier: worker {} ({address}) lost at {:.1} s: {why}",
                worker + 1,
                at.as_secs_f64()
            ),
            Seen::Unsteered { why } => {
                eprintln!("belier: {why}");
                warnings.push(format!("a change did not reach every worker: {why}"));
            }
            _ => {}
        }
    }
}

/// The merged run, finished: the workers' warnings and losses added, `settle` given what the
/// caller knows, then the results file's end line.
fn conclude(
    settings: &Settings,
    source: &Coordinated,
    ran: Ran,
    watchers: MergedWatchers<'_, '_>,
    settle: &mut dyn FnMut(&mut Finished),
) -> Outcome {
    let ends = source.ends();
    let mut warnings = ran.warnings;
    warnings.extend(source.lost().iter().cloned());
    for e in ends {
        // A worker's note that its share leaves the thresholds to the merged results is
        // answered here: this process judges them on the merged figures.
        let judged_here = |w: &&String| w.starts_with(crate::plan::SHARD_LEAVES_THRESHOLDS);
        warnings.extend(e.warnings.iter().filter(|w| !judged_here(w)).cloned());
    }
    let part_totals = scenarios::merged_totals(ends, &mut warnings);
    let aborted = watchers.watching.and_then(|w| w.stopped().cloned());
    let mut finished = Finished {
        info: source.info().clone(),
        totals: ran.totals,
        series: ran.series,
        elapsed: ran.elapsed,
        // The workers' ends say interrupted when a failed threshold stopped them.
        interrupted: (ran.asked || source.interrupted()) && aborted.is_none(),
        warnings,
        host: None,
        name: settings.output.name.clone(),
        thresholds: Vec::new(),
        window: None,
        changes: ran.changes,
        exporter: None,
        web: watchers.web,
        // Each executor's totals summed over the workers; their figures are the plan's
        // to make (`settle`), with its own names and loads (the workers' are shares).
        part_totals,
        scenarios: Vec::new(),
        aborted,
    };
    settle(&mut finished);
    if let Some(results) = watchers.results {
        let end = End {
            elapsed_s: finished.elapsed.as_secs_f64(),
            interrupted: finished.interrupted,
            warnings: finished.warnings.clone(),
            host: None,
            thresholds: finished.thresholds.clone(),
            // A stream's targets, known at its end: the workers' ends name them alike.
            targets: first_non_empty(ends, |e| &e.targets),
            steps: first_non_empty(ends, |e| &e.steps),
            scenarios: finished.scenarios.clone(),
            scenario_totals: crate::executors::stored(
                &finished.part_totals,
                &mut finished.warnings,
            ),
        };
        results.finish(&end, &mut finished.warnings);
    }
    Outcome {
        finished,
        lost: source.lost().to_vec(),
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
