//! `belier run PLAN` and `belier check PLAN`: a plan run from start to report (here, or over
//! workers), exiting 4 when a threshold failed; and a plan checked without sending anything.
//! What a plan becomes and how its thresholds are judged is [`crate::plan`]'s.

use crate::args::{CheckArgs, RunArgs};
use crate::cluster;
use crate::load::report::{linger, write_report};
use crate::load::Finished;
use crate::plan::{apply_vars, prepare, EXIT_THRESHOLDS};
use crate::signals::{self, Signals};

/// `belier check PLAN`: reads the plan and its data files, sends nothing, prints the plan as
/// it was understood.
pub fn check(args: CheckArgs) -> anyhow::Result<u8> {
    let mut plan = belier_plan::load(&args.plan)?;
    apply_vars(&mut plan, &args.vars.vars)?;
    print!("{}", plan.describe());
    Ok(0)
}

/// `belier run PLAN`: runs the plan, writes the report, and exits 4 if a threshold failed.
pub fn run(args: RunArgs, signals: &Signals, cores: usize) -> anyhow::Result<u8> {
    let cluster = args.cluster.clone();
    let (settings, prepared) = prepare(args, cores)?;
    if cluster.active() {
        // Each worker runs the plan's setup and teardown itself; thresholds are judged here,
        // on everything the workers recorded (those that abort, on the merged intervals as
        // they settle).
        let mut watch = prepared.watch();
        let mut outcome = cluster::run_distributed(
            &settings,
            &cluster,
            Some(prepared.plan()),
            signals,
            watch.as_mut(),
            &mut |f| {
                prepared.figure_scenarios(f);
                prepared.conclude(f)
            },
        )?;
        let failed = thresholds_failed(&outcome.finished);
        let code = cluster::code(
            &outcome,
            cluster.on_worker_loss,
            if failed { EXIT_THRESHOLDS } else { 0 },
        );
        let written = write_report(&settings, &outcome.finished, code);
        linger(&mut outcome.finished, signals);
        return written;
    }
    if let Some(code) = prepared.setup(&settings, signals)? {
        return Ok(code);
    }
    let mut finished = prepared.execute(&settings, signals)?;
    let code = if finished.interrupted {
        signals::INTERRUPTED
    } else if thresholds_failed(&finished) {
        EXIT_THRESHOLDS
    } else {
        0
    };
    let written = write_report(&settings, &finished, code);
    linger(&mut finished, signals);
    written
}

/// Whether a threshold failed at the end, or stopped the run.
fn thresholds_failed(finished: &Finished) -> bool {
    finished.aborted.is_some() || finished.thresholds.iter().any(|t| !t.passed)
}
