//! `belier demo`: a real load test against the built-in target on loopback.

use anyhow::Context;
use belier_testserver::{Config, Server};

use clap::Parser;

use crate::args::DemoArgs;
use crate::signals::Signals;

/// Starts the target, loads it, prints the report and the server's own count.
pub fn run(args: DemoArgs, signals: &Signals) -> anyhow::Result<u8> {
    let server = Server::start(Config::default()).context("cannot start the built-in target")?;
    // Built as the command line a user would type, so the demo runs exactly that.
    let argv = [
        "belier".to_string(),
        server.url("/"),
        "-z".into(),
        humantime::format_duration(args.duration).to_string(),
        "-c".into(),
        args.connections.to_string(),
    ];
    let load = crate::args::Cli::try_parse_from(argv)
        .context("demo arguments")?
        .load;
    eprintln!(
        "belier demo: loading the built-in target at {} with {} connections for {}",
        server.url("/"),
        args.connections,
        humantime::format_duration(args.duration)
    );
    let code = crate::load_and_report(load, signals)?;
    let seen = server.counts();
    println!(
        "\nThe target counted {} requests on {} connections on its side.",
        seen.requests, seen.connections
    );
    Ok(code)
}
