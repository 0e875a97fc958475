//! Runs a load test in this process: starts the engine as a run session ([`belier_run`])
//! with the watchers its settings ask for ([`watchers`]: the same set a run over workers
//! gets), and returns what was recorded, whatever happened on the way.

use std::time::Duration;

use anyhow::Context;
use belier_run::{LocalRun, Source as _};

use crate::executors::Part;
use crate::plan::Watch;
use crate::settings::Settings;
use crate::signals::Signals;

mod feed;
mod finished;
pub mod http3_auto;
mod info;
mod live;
mod narrator;
pub mod report;
mod spans;
mod watchers;
pub use finished::Finished;
pub use info::load_info;
pub use live::unit;
pub use watchers::{Asked, Opened, Origin, Sourced};

/// Runs `settings` to the end (or until a stop signal) and returns everything recorded.
pub fn execute(settings: &Settings, signals: &Signals) -> anyhow::Result<Finished> {
    run_local(settings, signals, Asked::default(), &mut |_| {})
}

/// Like [`execute`]; `watch` judges a plan's thresholds that stop the run when they fail as
/// intervals settle; `settle` adds to the finished run what the caller knows of it (a plan's
/// judged thresholds, its warnings) before the results file's end line is written, so that
/// the file keeps them.
pub fn execute_then(
    settings: &Settings,
    signals: &Signals,
    watch: Option<&mut Watch<'_>>,
    settle: &mut dyn FnMut(&mut Finished),
) -> anyhow::Result<Finished> {
    let asked = Asked {
        watch,
        ..Asked::default()
    };
    run_local(settings, signals, asked, settle)
}

/// Like [`execute_then`], for a plan whose scenarios have loads of their own: `parts` start
/// together (`settings.engine` stands for them in the run information and the live views),
/// and what each recorded is kept apart ([`Finished::part_totals`]).
pub fn execute_parts(
    settings: &Settings,
    signals: &Signals,
    parts: &[Part],
    watch: Option<&mut Watch<'_>>,
    settle: &mut dyn FnMut(&mut Finished),
) -> anyhow::Result<Finished> {
    let asked = Asked {
        parts,
        watch,
        judge_from: None,
    };
    run_local(settings, signals, asked, settle)
}

/// Like [`execute`]; with `judge_from`, also keeps apart what the intervals from that offset on
/// recorded ([`Finished::window`]): a capacity step's judged window, after its warm-up. The
/// offset should fall on an interval boundary.
pub fn execute_judged(
    settings: &Settings,
    signals: &Signals,
    judge_from: Option<Duration>,
) -> anyhow::Result<Finished> {
    let asked = Asked {
        judge_from,
        ..Asked::default()
    };
    run_local(settings, signals, asked, &mut |_| {})
}

/// Runs `settings` in this process as `asked`, with the watchers its settings ask for;
/// `settle` adds what the caller knows before the results file ends.
fn run_local(
    settings: &Settings,
    signals: &Signals,
    asked: Asked<'_, '_>,
    settle: &mut dyn FnMut(&mut Finished),
) -> anyhow::Result<Finished> {
    let opened = Opened::open(settings)?;
    let parts = asked.parts;
    let mut source = start(settings, parts).context("cannot start the run")?;
    let Some(engine) = source.engine() else {
        anyhow::bail!("the run ended before it began");
    };
    let origin = Origin::Here {
        start: engine.start_instant(),
    };
    let info = info::run_info(settings, engine);
    let control = source.control();
    let mut watchers = opened.watchers(settings, asked, origin, control, &info, signals)?;
    let mut ran = watchers.follow(&mut source, settings, &info);
    let part_totals = std::mem::take(&mut ran.parts);
    // A stream's targets are known now only: the header could not name them.
    let (targets, steps) = match &settings.targets {
        Some(run) if run.users.is_stream() => run.rows_and_names(),
        _ => Default::default(),
    };
    let sourced = Sourced {
        info,
        interrupted: false,
        warnings: Vec::new(),
        scenarios: crate::executors::figures(parts, &part_totals, ran.elapsed),
        part_totals,
        host: None,
        targets,
        steps,
    };
    Ok(watchers.finish(settings, ran, sourced, settle))
}

/// Starts the engine: one load, or a plan's `parts` together.
fn start(settings: &Settings, parts: &[Part]) -> Result<LocalRun, belier_engine::StartError> {
    if parts.is_empty() {
        LocalRun::start(&settings.engine)
    } else {
        let configs: Vec<_> = parts.iter().map(|p| p.config.clone()).collect();
        LocalRun::start_together(&configs)
    }
}
