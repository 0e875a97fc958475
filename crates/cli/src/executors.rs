//! A plan whose scenarios have loads of their own: one engine load per executor, started
//! together ([`belier_engine::start_together`]), each with the run's connection settings and
//! its own load, bounds and users. The run's figures are their sum; each executor's are kept
//! apart for the report and for thresholds scoped to it.

use std::sync::Arc;

use belier_engine::{Config, StopWhen};
use belier_plan::{LoadModel, Plan};
use belier_scenario::PlanUsers;

use crate::args::RunArgs;
use crate::settings::InputError;

/// One executor of a run: its name and load for the report, and its engine configuration.
pub struct Part {
    /// The scenario's name (the shared load: its scenarios' names joined by ` + `).
    pub name: String,
    /// Its load in words.
    pub load: String,
    /// Whether it is an open loop (arrivals), whose report counts arrivals.
    pub open_loop: bool,
    /// The engine's configuration.
    pub config: Config,
}

/// Refuses the flags that set one load (`--vus`, `--rate`, `--iterations`) on a plan of
/// several: which one they would set is not said. `--duration` bounds every one.
pub fn refuse_load_flags(plan: &Plan, args: &RunArgs) -> Result<(), InputError> {
    if plan.executors.is_empty() {
        return Ok(());
    }
    let why = "cannot apply: the plan's scenarios have loads of their own (set them in the plan)";
    if let Some(n) = args.vus {
        return Err(InputError::new("--vus <N>", n, why));
    }
    if let Some(r) = args.pace.rate {
        return Err(InputError::new("--rate <R>", r, why));
    }
    if let Some(n) = args.iterations {
        return Err(InputError::new("--iterations <N>", n, why));
    }
    Ok(())
}

/// The executors of `plan` (none for a plan of one load), each from the run's configuration
/// `base` (connections, TLS, timeouts, threads) with its own load, bounds and `users`;
/// `duration` (`--duration`) bounds every one.
pub fn parts(
    plan: &Plan,
    base: &Config,
    users: &[Arc<PlanUsers>],
    duration: Option<std::time::Duration>,
) -> Vec<Part> {
    plan.executors
        .iter()
        .zip(users)
        .map(|(e, users)| {
            let mut config = base.clone();
            config.load = e.load.engine_load();
            config.pacing = e.load.pacing();
            config.users = Some(Arc::clone(users) as _);
            // Neither a duration, iterations nor stages that end: the documented default
            // length, as for a plan of one load.
            let unbounded = e.load.iterations.is_none() && config.load.end().is_none();
            config.stop = StopWhen {
                requests: None,
                duration: duration
                    .or(e.load.duration)
                    .or(unbounded.then_some(belier_engine::DEFAULT_DURATION)),
                iterations: e.load.iterations,
            };
            Part {
                name: e.name.clone(),
                load: e.load.summary(),
                open_loop: matches!(e.load.model, LoadModel::Open { .. }),
                config,
            }
        })
        .collect()
}

/// Each executor's figures from what it recorded (`totals`, in the order of `parts`) over a
/// run of `elapsed`.
pub fn figures(
    parts: &[Part],
    totals: &[belier_stats::Recorder],
    elapsed: std::time::Duration,
) -> Vec<belier_results::ScenarioFigures> {
    parts
        .iter()
        .zip(totals)
        .map(|(p, t)| {
            belier_results::ScenarioFigures::of(&p.name, &p.load, p.open_loop, t, elapsed)
        })
        .collect()
}

/// Executors' totals as a results file's end line keeps them, so that shards' and workers'
/// per-scenario figures merge exactly; a warning for the report if they cannot be.
pub fn stored(
    totals: &[belier_stats::Recorder],
    warnings: &mut Vec<String>,
) -> Vec<belier_results::StoredRecorder> {
    let stored: std::io::Result<Vec<_>> = totals
        .iter()
        .map(belier_results::StoredRecorder::encode)
        .collect();
    stored.unwrap_or_else(|e| {
        warnings.push(format!(
            "results file: each scenario's totals not written: {e}"
        ));
        Vec::new()
    })
}
