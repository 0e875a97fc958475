//! Where a finished run's report goes, once it is over: the format and file its settings
//! name (with the HTML and JUnit reports if asked), and then the web console and the
//! exporter that stay up a while to offer it.

use std::io::Write;

use super::Finished;
use crate::settings::Settings;
use crate::signals::Signals;

/// A finished flag run's report (exit 0, or [`crate::signals::INTERRUPTED`] when a signal
/// cut it short), then the wait for the consoles that still read it ([`linger`]).
pub fn report_and_linger(
    settings: &Settings,
    mut finished: Finished,
    signals: &Signals,
) -> anyhow::Result<u8> {
    let code = match finished.interrupted {
        true => crate::signals::INTERRUPTED,
        false => 0,
    };
    let written = write_report(settings, &finished, code);
    linger(&mut finished, signals);
    written
}

/// Once the report is out: the web console offers it (and with `--web`, stays up for
/// `--web-linger`); with `--metrics-listen`, the final figures are served for
/// `--metrics-linger`.
pub fn linger(finished: &mut Finished, signals: &Signals) {
    if let Some(web) = finished.web.take() {
        web.end(|| finished.render_html(), finished.interrupted, signals);
    }
    if let Some(exporter) = finished.exporter.take() {
        exporter.linger(signals);
    }
}

/// Writes the report of a finished run where `settings` say (and the HTML report if asked),
/// then keeps the run in the history if asked (`--history`), and returns `code`, or an error
/// if the report could not be written where asked (it is then printed to standard output, so
/// the results are never lost) or the run could not be kept.
pub fn write_report(settings: &Settings, finished: &Finished, code: u8) -> anyhow::Result<u8> {
    let written = write_reports(settings, finished, code);
    let (Some(keep), Some(save)) = (&settings.output.keep, &settings.output.save) else {
        return written;
    };
    match crate::history::keep_run(keep, save) {
        Ok(id) => {
            eprintln!("run {id} kept in the history {}", keep.db.shown());
            written
        }
        Err(e) => written.and(Err(e.context("cannot keep the run in the history"))),
    }
}

/// The reports of [`write_report`].
fn write_reports(settings: &Settings, finished: &Finished, code: u8) -> anyhow::Result<u8> {
    let report = finished.render(settings.output.format);
    let extra = [
        (
            "HTML",
            &settings.output.html,
            Finished::render_html as fn(&Finished) -> String,
        ),
        ("JUnit", &settings.output.junit, Finished::render_junit),
    ];
    for (kind, path, render) in extra {
        if let Some(path) = path {
            if let Err(e) = std::fs::write(path, render(finished)) {
                eprintln!(
                    "error: cannot write the {kind} report to {}: {e}",
                    path.display()
                );
            }
        }
    }
    let results_on_stdout = settings
        .output
        .save
        .as_deref()
        .is_some_and(|p| p.as_os_str() == "-");
    match &settings.output.out {
        // Standard output carries the results file: the report goes to standard error.
        None if results_on_stdout => {
            eprint!("{report}");
            Ok(code)
        }
        None => {
            let mut out = std::io::stdout().lock();
            // If standard output is gone (a closed pipe) there is nowhere left to report to.
            let _ = out.write_all(report.as_bytes()).and_then(|()| out.flush());
            Ok(code)
        }
        Some(path) => match std::fs::write(path, &report) {
            Ok(()) => {
                eprintln!("report written to {}", path.display());
                Ok(code)
            }
            Err(e) => {
                // Never lose the results: print them where they can still go.
                print!("{report}");
                Err(anyhow::anyhow!(
                    "cannot write the report to {}: {e}",
                    path.display()
                ))
            }
        },
    }
}
