//! `belier URL …` (no subcommand): a load test from flags, here or over workers, and its
//! report; with `--targets FILE`, many requests in one run.

use crate::args::LoadArgs;
use crate::cluster;
use crate::habits;
use crate::limits::cores;
use crate::load::report::report_and_linger;
use crate::signals::Signals;
use crate::targets_file;

/// Validates `args`, runs the load test and writes its report.
pub fn load_and_report(args: LoadArgs, signals: &Signals) -> anyhow::Result<u8> {
    for warning in habits::load_warnings(&args, cores()) {
        eprintln!("warning: {warning}");
    }
    let cluster = args.cluster.clone();
    let auto = args.http2.http3 == Some(crate::args::Http3Mode::Auto);
    let mut settings = targets_file::settings(args, cores())?;
    if auto && cluster.active() {
        return Err(crate::settings::InputError::new(
            "--http3",
            "auto",
            "is decided by one process: give a distributed run --http3 or --http2",
        )
        .into());
    }
    if auto {
        crate::load::http3_auto::decide(&mut settings)?;
    }
    if cluster.active() {
        return cluster::run_and_report(&settings, &cluster, signals);
    }
    let mut finished = crate::load::execute(&settings, signals)?;
    let stream_error = settings
        .targets
        .as_ref()
        .and_then(|t| targets_file::complete(t, &mut finished));
    let written = report_and_linger(&settings, finished, signals);
    // A stream of targets that broke off: its report is out, and the line is named.
    match stream_error {
        Some(e) => Err(e.into()),
        None => written,
    }
}
