//! A run over several workers (`--workers`, `--spawn`): the CLI's side of
//! [`belier_cluster`]. Each worker runs this run's own arguments with its shard; this process
//! merges their records interval by interval into one run, shows its progress (or the
//! `--tui` dashboard and the `--web` console, fed the merged intervals), writes one results
//! file, judges a plan's thresholds on the merged data and prints one report. The live views
//! steer a handle of this process ([`Control::detached`]); each change it records is sent to
//! every worker as the whole run's level (each worker's engine takes its shard's share, as
//! of the run's own profile) and written once to the merged results file.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use belier_cluster::coordinator::{Coordinator, Event};
use belier_cluster::protocol::{Job, PlanFile, Shard, Steering};
use belier_engine::Control;
use belier_results::{
    merge_info, Change, End, Header, ResultsWriter, RunInfo, WorkerClock, FORMAT, VERSION,
};
use belier_stats::Collector;

use crate::args::{ClusterArgs, Loss, TOKEN_ENV};
use crate::load::Finished;
use crate::settings::{InputError, Settings};
use crate::signals::{self, Signals};
use crate::steering::Changes;

pub(crate) mod files;
mod scenarios;
mod spawn;

/// Time between the start order and the start: enough for every worker to hear it.
const LEAD: Duration = Duration::from_millis(500);
/// Beyond two intervals without a line, how long a worker may stay silent before it is lost.
const GRACE: Duration = Duration::from_secs(1);
/// Longest wait for a worker's line before the live views' changes are passed on: a change
/// reaches the workers within about this long of being made.
const STEER_POLL: Duration = Duration::from_millis(10);
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
pub fn execute(
    settings: &Settings,
    cluster: &ClusterArgs,
    plan: Option<&belier_scenario::Plan>,
    signals: &Signals,
    mut watch: Option<&mut crate::plan::Watch<'_>>,
    settle: &mut dyn FnMut(&mut Finished),
) -> anyhow::Result<Outcome> {
    if let Some(n) = cluster.spawn.filter(|n| !(1..=MAX_SPAWN).contains(n)) {
        return Err(InputError::new("--spawn <N>", n, format!("must be 1 to {MAX_SPAWN}")).into());
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
    let plan = plan
        .map(|p| &p.file)
        .map(|p| -> anyhow::Result<PlanFile> {
            Ok(PlanFile {
                path: p.display().to_string(),
                text: std::fs::read_to_string(p)
                    .with_context(|| format!("cannot read {}", p.display()))?,
            })
        })
        .transpose()?;
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
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let interval = settings.engine.interval;
    // Listening before the run starts, so a taken port stops nothing that was sent.
    let web = crate::web::Live::open(settings)?;
    coordinator.start(LEAD, interval * 2 + GRACE, cluster.worker_results.clone())?;
    let started = Instant::now() + LEAD;
    let mut merge = Merge::new(settings, addrs.clone(), web);
    merge.fallback.workers = addrs
        .iter()
        .zip(&offsets)
        .enumerate()
        .map(|(i, (address, o))| WorkerClock {
            address: address.clone(),
            shard: format!("{}/{count}", i + 1),
            offset_ms: o.offset_ns as f64 / 1e6,
            rtt_ms: o.round_trip.as_secs_f64() * 1e3,
            start_skew_ms: o.round_trip.as_secs_f64() * 1e3 / 2.0,
        })
        .collect();
    let control =
        Control::detached(&settings.engine.load, started).limited(settings.engine.ceiling.clone());
    let mut changes = Changes::new(&settings.engine.load, settings.engine.users.is_some());
    if let Some(w) = &mut merge.web {
        w.begin(control.clone(), settings, &merge.fallback);
    }
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
    let mut live = crate::load::live_view(settings, control.clone(), &merge.fallback);
    let mut stopping = false;
    while !merge.over() {
        match coordinator.next_event(STEER_POLL) {
            Some(Event::Header { header, .. }) => merge.header(*header),
            Some(Event::Record { worker, record }) => {
                merge
                    .collector
                    .add(worker, record.index, &record.recorder, record.gauges);
            }
            Some(Event::Ended { worker, end }) => merge.ended(worker, end),
            Some(Event::Lost { worker, why }) => {
                let at = started.elapsed();
                eprintln!(
                    "belier: worker {} ({}) lost at {:.1} s: {why}",
                    worker + 1,
                    addrs[worker],
                    at.as_secs_f64()
                );
                merge.lost(worker, &why, at);
                if cluster.on_worker_loss == Loss::Stop && !stopping {
                    stopping = true;
                    coordinator.abort();
                }
            }
            None => {}
        }
        for change in changes.since(&control.history()) {
            if let Err(e) = coordinator.steer(Steering {
                level: change.level,
            }) {
                eprintln!("belier: {e}");
                merge
                    .warnings
                    .push(format!("a change did not reach every worker: {e}"));
            }
            merge.changes.push(*change);
        }
        merge.save();
        // A distributed run has no executor's figures of its own (see `Merge::finish`).
        let watching = watch.as_deref_mut().filter(|_| !stopping);
        if let Some(abort) = watching.and_then(|w| w.settled(&merge.collector, &[])) {
            stopping = true;
            merge.aborted = Some(abort.clone());
            coordinator.abort();
        }
        let stop_key = live.update(started.elapsed(), &merge.collector);
        let web_stop = merge
            .web
            .as_ref()
            .is_some_and(crate::web::Live::stop_requested);
        if !stopping
            && (stop_key || web_stop || control.stop_requested() || signals.stop_requested())
        {
            stopping = true;
            merge.interrupted = true;
            coordinator.abort();
        }
    }
    live.close();
    if let Some(abort) = &merge.aborted {
        eprintln!("belier: {}", abort.line());
    }
    drop(spawned);
    Ok(merge.finish(settle))
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

/// The workers' records merged interval by interval into one run, written as they settle.
struct Merge {
    workers: Vec<String>,
    collector: Collector,
    interval: Duration,
    info: Option<RunInfo>,
    /// The run's information as this process sees it, should no worker send a header; its
    /// `workers` (their clocks as measured here) go into the merged header too.
    fallback: RunInfo,
    headers: usize,
    /// Per worker: over (ended or lost).
    over: Vec<bool>,
    ends: Vec<End>,
    lost: Vec<String>,
    warnings: Vec<String>,
    interrupted: bool,
    /// The plan's threshold that stopped every worker (their ends say interrupted).
    aborted: Option<crate::plan::Abort>,
    /// Changes made through the live views, in order.
    changes: Vec<Change>,
    /// Changes written to the results file so far.
    changes_saved: usize,
    web: Option<crate::web::Live>,
    save: Option<PathBuf>,
    name: String,
    writer: Option<ResultsWriter<Box<dyn std::io::Write>>>,
}

impl Merge {
    fn new(settings: &Settings, workers: Vec<String>, web: Option<crate::web::Live>) -> Merge {
        let interval = settings.engine.interval;
        let mut collector = Collector::new(workers.len(), interval);
        collector.keep_settled();
        Merge {
            over: vec![false; workers.len()],
            workers,
            collector,
            interval,
            info: None,
            fallback: crate::load::load_info(settings),
            headers: 0,
            ends: Vec::new(),
            lost: Vec::new(),
            warnings: Vec::new(),
            interrupted: false,
            aborted: None,
            changes: Vec::new(),
            changes_saved: 0,
            web,
            save: settings.output.save.clone(),
            name: settings.output.name.clone(),
            writer: None,
        }
    }

    fn over(&self) -> bool {
        self.over.iter().all(|&o| o)
    }

    fn header(&mut self, header: Header) {
        match &mut self.info {
            Some(info) => merge_info(info, &header.run),
            None => self.info = Some(header.run),
        }
        self.headers += 1;
        if let Some(info) = &mut self.info {
            info.workers.clone_from(&self.fallback.workers);
            // The merged file is the whole run, not the first worker's shard: its workers
            // (and any lost) are listed on their own.
            info.shard = None;
        }
    }

    fn ended(&mut self, worker: usize, end: Option<End>) {
        let elapsed = end
            .as_ref()
            .map_or(Duration::ZERO, |e| Duration::from_secs_f64(e.elapsed_s));
        self.collector.finish_worker(worker, elapsed);
        self.over[worker] = true;
        if let Some(e) = end {
            self.interrupted |= e.interrupted;
            self.ends.push(e);
        }
    }

    fn lost(&mut self, worker: usize, why: &str, at: Duration) {
        self.collector.finish_worker(worker, at);
        self.over[worker] = true;
        let share = format!("1/{}", self.workers.len());
        self.lost.push(format!(
            "incomplete: worker {} ({}) was lost at {:.1} s ({why}); its share of the load ({share}) is missing from then on",
            worker + 1,
            self.workers[worker],
            at.as_secs_f64()
        ));
    }

    /// Writes the intervals settled so far (the results file opens once every header is in).
    fn save(&mut self) {
        if let Some(w) = &mut self.web {
            w.update(&self.collector);
        }
        if self.writer.is_none() && self.headers == self.workers.len() {
            if let (Some(path), Some(info)) = (&self.save, &self.info) {
                let header = Header {
                    format: FORMAT.into(),
                    version: VERSION,
                    name: self.name.clone(),
                    interval_s: self.interval.as_secs_f64(),
                    run: info.clone(),
                };
                let out = open(path).and_then(|o| ResultsWriter::new(o, &header));
                match out {
                    Ok(w) => self.writer = Some(w),
                    Err(e) => {
                        self.warnings.push(format!("results file not written: {e}"));
                        self.save = None;
                    }
                }
            }
        }
        if self.save.is_some() && self.writer.is_none() {
            return;
        }
        let mut written = Ok(());
        for s in self.collector.drain_settled() {
            if let Some(w) = &mut self.writer {
                written = written.and_then(|()| w.interval(&s));
            }
        }
        for c in &self.changes[self.changes_saved..] {
            if let Some(w) = &mut self.writer {
                written = written.and_then(|()| w.change(c));
            }
        }
        self.changes_saved = self.changes.len();
        if let Err(e) = written {
            self.warnings
                .push(format!("results file: writing stopped: {e}"));
            self.writer = None;
            self.save = None;
        }
    }

    fn finish(mut self, settle: &mut dyn FnMut(&mut Finished)) -> Outcome {
        self.collector.settle_all();
        self.save();
        let elapsed = self
            .ends
            .iter()
            .map(|e| Duration::from_secs_f64(e.elapsed_s))
            .max()
            .unwrap_or(self.collector.elapsed());
        let mut warnings = std::mem::take(&mut self.warnings);
        warnings.extend(self.lost.iter().cloned());
        for e in &self.ends {
            // A worker's note that its share leaves the thresholds to the merged results is
            // answered here: this process judges them on the merged figures.
            let judged_here = |w: &&String| w.starts_with(crate::plan::SHARD_LEAVES_THRESHOLDS);
            warnings.extend(e.warnings.iter().filter(|w| !judged_here(w)).cloned());
        }
        let part_totals = scenarios::merged_totals(&self.ends, &mut warnings);
        let (totals, series) = self.collector.finish();
        let mut finished = Finished {
            info: self.info.unwrap_or(self.fallback),
            totals,
            series,
            elapsed,
            interrupted: self.interrupted && self.aborted.is_none(),
            warnings,
            host: None,
            name: self.name,
            thresholds: Vec::new(),
            window: None,
            changes: self.changes,
            exporter: None,
            web: self.web,
            // Each executor's totals summed over the workers; their figures are the plan's
            // to make (`settle`), with its own names and loads (the workers' are shares).
            part_totals,
            scenarios: Vec::new(),
            aborted: self.aborted,
        };
        settle(&mut finished);
        if let Some(w) = self.writer {
            let end = End {
                elapsed_s: elapsed.as_secs_f64(),
                interrupted: finished.interrupted,
                warnings: finished.warnings.clone(),
                host: None,
                thresholds: finished.thresholds.clone(),
                // A stream's targets, known at its end: the workers' ends name them alike.
                targets: first_non_empty(&self.ends, |e| &e.targets),
                steps: first_non_empty(&self.ends, |e| &e.steps),
                scenarios: finished.scenarios.clone(),
                scenario_totals: crate::executors::stored(
                    &finished.part_totals,
                    &mut finished.warnings,
                ),
            };
            if let Err(e) = w.end(&end) {
                finished.warnings.push(format!(
                    "results file: the end line could not be written: {e}"
                ));
            }
        }
        Outcome {
            finished,
            lost: self.lost,
        }
    }
}

/// The first of the workers' end lines' `field` that is not empty (or an empty one).
fn first_non_empty<T: Clone>(ends: &[End], field: impl Fn(&End) -> &Vec<T>) -> Vec<T> {
    ends.iter()
        .map(field)
        .find(|v| !v.is_empty())
        .cloned()
        .unwrap_or_default()
}

/// Opens the merged results file (`-`: standard output).
fn open(path: &std::path::Path) -> std::io::Result<Box<dyn std::io::Write>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdout()));
    }
    Ok(Box::new(std::io::BufWriter::new(std::fs::File::create(
        path,
    )?)))
}

/// The exit code of a distributed run: 1 once a worker was lost (unless told to go on),
/// else what the run itself says.
pub fn code(outcome: &Outcome, loss: Loss, otherwise: u8) -> u8 {
    if !outcome.lost.is_empty() && loss == Loss::Stop {
        crate::EXIT_FAILURE
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
