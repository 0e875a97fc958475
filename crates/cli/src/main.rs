//! The `belier` command: flags → validated settings → run → report → exit code.
//! This is the only crate that prints or exits.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod capacity;
mod cluster;
mod demo;
mod executors;
mod habits;
mod import;
mod k8s;
mod limits;
mod load;
mod metrics;
mod outputs;
mod phase;
mod plan;
mod probe;
mod progress;
mod prometheus;
mod proxy;
mod record;
mod resolve;
mod results;
mod settings;
mod shard;
mod shell;
mod signals;
mod target;
mod targets;
mod token;
mod tui;
mod web;
mod worker;

#[cfg(test)]
mod parsers_never_panic;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command, LoadArgs};
use load::Finished;
use settings::{InputError, Settings};
use signals::Signals;

/// Exit code when belier could not do what was asked.
const EXIT_FAILURE: u8 = 1;
/// Exit code for invalid input.
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => match habits::several_urls(std::env::args())
            .or_else(|| habits::web_address_apart(std::env::args()))
        {
            Some(why) => {
                eprintln!("error: {why}");
                return ExitCode::from(EXIT_USAGE);
            }
            None => return ExitCode::from(clap_error(e)),
        },
    };
    let result = Signals::install()
        .map_err(anyhow::Error::from)
        .and_then(|signals| match cli.command {
            Some(Command::Target(a)) => target::run(a, &signals),
            Some(Command::Demo(a)) => demo::run(a, &signals),
            Some(Command::Report(a)) => results::report(a),
            Some(Command::Compare(a)) => results::compare(a),
            Some(Command::Probe(a)) => probe::run(a),
            Some(Command::Completions(a)) => shell::completions(a.shell),
            Some(Command::Man) => shell::man(),
            Some(Command::Run(a)) => plan::run(*a, &signals, cores()),
            Some(Command::Check(a)) => plan::check(a),
            Some(Command::Capacity(a)) => capacity::run(*a, &signals, cores()),
            Some(Command::Import(a)) => import::run(a),
            Some(Command::Record(a)) => record::run(a, &signals),
            Some(Command::K8s(a)) => k8s::run(a),
            Some(Command::Web(a)) => web::run(a, &signals, cores()),
            Some(Command::Worker(a)) => worker::run(a, &signals),
            None => load_and_report(cli.load, &signals),
        });
    ExitCode::from(match result {
        Ok(code) => code,
        Err(e)
            if e.is::<InputError>()
                || e.is::<belier_plan::PlanError>()
                || e.is::<belier_import::ImportError>() =>
        {
            eprintln!("error: {e}");
            EXIT_USAGE
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            EXIT_FAILURE
        }
    })
}

/// Validates `args`, runs the load test and writes its report.
fn load_and_report(args: LoadArgs, signals: &Signals) -> anyhow::Result<u8> {
    for warning in habits::load_warnings(&args, cores()) {
        eprintln!("warning: {warning}");
    }
    let cluster = args.cluster.clone();
    let settings = targets::settings(args, cores())?;
    if cluster.active() {
        let mut outcome =
            cluster::run_distributed(&settings, &cluster, None, signals, None, &mut |_| {})?;
        let code = cluster::code(&outcome, cluster.on_worker_loss, 0);
        let written = write_report(&settings, &outcome.finished, code);
        linger(&mut outcome.finished, signals);
        return written;
    }
    let mut finished = load::execute(&settings, signals)?;
    let stream_error = settings
        .targets
        .as_ref()
        .and_then(|t| targets::complete(t, &mut finished));
    let code = if finished.interrupted {
        signals::INTERRUPTED
    } else {
        0
    };
    let written = write_report(&settings, &finished, code);
    linger(&mut finished, signals);
    // A stream of targets that broke off: its report is out, and the line is named.
    match stream_error {
        Some(e) => Err(e.into()),
        None => written,
    }
}

/// Once the report is out: the web console offers it (and with `--web`, stays up for
/// `--web-linger`); with `--metrics-listen`, the final figures are served for
/// `--metrics-linger`.
fn linger(finished: &mut Finished, signals: &Signals) {
    if let Some(web) = finished.web.take() {
        web.end(finished, signals);
    }
    if let Some(exporter) = finished.exporter.take() {
        exporter.linger(signals);
    }
}

/// Writes the report of a finished run where `settings` say (and the HTML report if asked),
/// and returns `code`, or an error if the report could not be written where asked (it is
/// then printed to standard output, so the results are never lost).
fn write_report(settings: &Settings, finished: &Finished, code: u8) -> anyhow::Result<u8> {
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

/// Logical cores of this machine.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Prints a clap error as one line (help and version go to stdout in full) and returns the
/// exit code.
fn clap_error(e: clap::Error) -> u8 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            0
        }
        _ => {
            let rendered = e.render().to_string();
            let line = rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("error: invalid arguments");
            eprintln!("{line} (see 'belier --help')");
            EXIT_USAGE
        }
    }
}
