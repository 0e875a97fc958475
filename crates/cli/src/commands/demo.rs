//! `belier demo`: a real load test against the built-in target on loopback.

use anyhow::Context;
use belier_testserver::{Config, Server};

use clap::Parser;

use crate::args::DemoArgs;
use crate::signals::Signals;

/// Starts the target, loads it, prints the report and the server's own count.
pub fn run(args: DemoArgs, signals: &Signals) -> anyhow::Result<u8> {
    let defaults = Config::default();
    // QUIC is always TLS: --http3 brings --tls.
    let tls = (args.tls || args.http3).then(|| super::target::self_signed(defaults.listen));
    let server = Server::start(Config {
        tls: tls.as_ref().map(|(config, _)| config.clone()),
        http2: true,
        http3: args.http3,
        ..defaults
    })
    .context("cannot start the built-in target")?;
    // Built as the command line a user would type, so the demo runs exactly that.
    let mut argv = vec![
        "belier".to_string(),
        server.url("/"),
        "-z".into(),
        humantime::format_duration(args.duration).to_string(),
        "-c".into(),
        args.connections.to_string(),
    ];
    // Removed when the demo ends, with the target it trusts.
    let ca_file = match &tls {
        Some((config, ca)) => Some(super::target::write_ca(&server, config, ca)?),
        None => None,
    };
    if let Some(file) = &ca_file {
        argv.extend(["--cacert".to_string(), file.path().display().to_string()]);
    }
    if args.http2 {
        argv.push("--http2".into());
    }
    if args.http3 {
        argv.push("--http3".into());
    }
    let load = crate::args::Cli::try_parse_from(argv)
        .context("demo arguments")?
        .load;
    eprintln!(
        "belier demo: loading the built-in target at {} over {} with {} connections for {}",
        server.url("/"),
        match (args.http2, args.http3) {
            (_, true) => "HTTP/3",
            (true, false) => "HTTP/2",
            (false, false) => "HTTP/1.1",
        },
        args.connections,
        humantime::format_duration(args.duration)
    );
    let code = super::load::load_and_report(load, signals)?;
    let seen = server.counts();
    println!(
        "\nThe target counted {} requests on {} connections on its side.",
        seen.requests, seen.connections
    );
    Ok(code)
}
