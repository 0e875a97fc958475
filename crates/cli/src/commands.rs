//! One module per subcommand, each a function from its parsed flags to an exit code, and
//! [`run`], which dispatches a parsed command line to its subcommand and maps what went wrong
//! to belier's exit codes. Features a run is made of (settings, the live loop, its watchers,
//! plans, distributed runs) are modules of the crate root, shared by the subcommands.

mod capacity;
mod demo;
mod grpc;
mod history;
mod import;
mod k8s;
mod load;
mod probe;
mod record;
mod results;
mod run;
mod shell;
mod target;
mod web;
mod worker;
mod ws;

use crate::args::{Cli, Command};
use crate::exit::{EXIT_FAILURE, EXIT_USAGE};
use crate::limits::cores;
use crate::settings::InputError;
use crate::signals::Signals;

/// Runs what `cli` asks for and returns the exit code; an error is printed on standard error
/// (one line for invalid input, exit 2; with its causes otherwise, exit 1).
pub fn run(cli: Cli) -> u8 {
    let result = Signals::install()
        .map_err(anyhow::Error::from)
        .and_then(|signals| match cli.command {
            Some(Command::Target(a)) => target::run(a, &signals),
            Some(Command::Demo(a)) => demo::run(a, &signals),
            Some(Command::Report(a)) => results::report(a),
            Some(Command::Compare(a)) => results::compare(a),
            Some(Command::Probe(a)) => probe::run(*a),
            Some(Command::Completions(a)) => shell::completions(a.shell),
            Some(Command::Man) => shell::man(),
            Some(Command::Run(a)) => run::run(*a, &signals, cores()),
            Some(Command::Check(a)) => run::check(a),
            Some(Command::Capacity(a)) => capacity::run(*a, &signals, cores()),
            Some(Command::Import(a)) => import::run(a),
            Some(Command::Record(a)) => record::run(a, &signals),
            Some(Command::K8s(a)) => k8s::run(a),
            Some(Command::Grpc(a)) => grpc::run(*a, &signals, cores()),
            Some(Command::Ws(a)) => ws::run(*a, &signals, cores()),
            Some(Command::Web(a)) => web::run(a, &signals, cores()),
            Some(Command::Worker(a)) => worker::run(a, &signals),
            Some(Command::History(a)) => history::run(a),
            None => load::load_and_report(cli.load, &signals),
        });
    match result {
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
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    /// What the library is for: a command line parsed and run in this process, its exit code
    /// returned (here invalid input: a plan that cannot be read).
    #[test]
    fn a_command_runs_in_process() {
        let cli = Cli::try_parse_from(["belier", "check", "/nonexistent/plan.yaml"]).unwrap();
        assert_eq!(run(cli), EXIT_USAGE);
    }
}
