//! `belier web`: a web console without a run (Locust's model) that starts runs from its form
//! ([`form`]) or a plan file of the working directory, one at a time, and keeps each one's
//! report and results.

mod form;

use std::sync::mpsc;
use std::sync::Arc;

use crate::args::WebArgs;
use crate::load::report::{linger, write_report};
use crate::settings::InputError;
use crate::signals::Signals;
use crate::web::{listen_as, start, Web, POLL};
use form::Job;

/// `belier web`: serves the console, and runs what its form asks, one run at a time, until
/// Ctrl-C (which also stops a run in progress, whose report is kept), exiting 0 as `belier
/// target` does.
pub fn run(args: WebArgs, signals: &Signals, cores: usize) -> anyhow::Result<u8> {
    let listen = listen_as(
        args.listen,
        args.token,
        "--token <TOKEN>",
        "--listen <ADDR>",
    )?;
    std::fs::create_dir_all(&args.runs_dir).map_err(|e| {
        InputError::new(
            "--runs-dir <DIR>",
            args.runs_dir.display(),
            format!("cannot create it: {e}"),
        )
    })?;
    let (jobs, next_job) = mpsc::channel();
    let launcher = Arc::new(form::Launcher::new(jobs, args.runs_dir, cores)?);
    let console = start(&listen, Some(launcher))?;
    let hub = Arc::clone(console.hub());
    loop {
        if signals.stop_requested() {
            return Ok(0);
        }
        let Job { mut settings, plan } = match next_job.recv_timeout(POLL) {
            Ok(job) => job,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(0),
        };
        settings.output.web = Some(Web::Attach(Arc::clone(&hub)));
        // A plan's setup first (a failure is a run that could not start), its teardown after.
        let setup = plan.as_ref().map(|p| p.setup(&settings, signals));
        if let Some(Ok(Some(_interrupted))) = setup {
            return Ok(0);
        }
        let outcome = setup.transpose().and_then(|_| match &plan {
            Some(prepared) => prepared.execute(&settings, signals),
            None => crate::load::execute(&settings, signals),
        });
        let outcome = outcome.map(|mut finished| {
            let _ = write_report(&settings, &finished, 0);
            linger(&mut finished, signals);
        });
        if let Err(e) = outcome {
            // The page hears of it as a run that could not start; the console goes on.
            eprintln!("belier: the run failed: {e:#}");
            hub.failed(&format!("{e:#}"));
        }
    }
}
