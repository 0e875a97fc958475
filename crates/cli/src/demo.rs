//! `belier demo`: a real load test against the built-in target on loopback.

use anyhow::Context;
use belier_testserver::{Config, Server};

use crate::args::{DemoArgs, Format, LoadArgs};
use crate::signals::Signals;

/// Starts the target, loads it, prints the report and the server's own count.
pub fn run(args: DemoArgs, signals: &Signals) -> anyhow::Result<u8> {
    let server = Server::start(Config::default()).context("cannot start the built-in target")?;
    let load = LoadArgs {
        url: Some(server.url("/")),
        requests: None,
        duration: Some(args.duration),
        connections: args.connections,
        rate: None,
        stages: None,
        ramp_up: None,
        arrivals: None,
        seed: None,
        max_connections: None,
        max_in_flight: None,
        threads: None,
        method: "GET".into(),
        headers: vec![],
        body: None,
        body_file: None,
        timeout: belier_engine::DEFAULT_TIMEOUT,
        no_keepalive: false,
        http2: false,
        max_streams: None,
        insecure: false,
        cacert: None,
        cert: None,
        key: None,
        sni: None,
        connect_to: None,
        output: Format::Text,
        out: None,
        save: None,
        name: None,
        interval: belier_engine::DEFAULT_INTERVAL,
        html: None,
        raw: None,
    };
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
