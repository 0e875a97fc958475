//! `belier target`: the built-in target server in the foreground.

use std::time::Duration;

use anyhow::Context;
use belier_testserver::{Behaviour, Config, Server};

use crate::args::TargetArgs;
use crate::settings::InputError;
use crate::signals::Signals;

/// Serves until Ctrl-C, then prints what the server saw.
pub fn run(args: TargetArgs, signals: &Signals) -> anyhow::Result<u8> {
    if args.threads == 0 {
        return Err(InputError::new("--threads <N>", 0, "must be at least 1").into());
    }
    let mut defaults = Behaviour::default();
    if let Some(d) = args.delay {
        defaults.delay = d;
    }
    if let Some(s) = args.status {
        if !(100..=999).contains(&s) {
            return Err(
                InputError::new("--status <CODE>", s, "must be between 100 and 999").into(),
            );
        }
        defaults.status = s;
    }
    defaults.body_size = args.size.or(defaults.body_size);
    defaults.fault = args.fault.or(defaults.fault);
    let server = Server::start(Config {
        listen: args.listen,
        threads: args.threads,
        defaults,
        record_requests: 0,
        tls: None,
    })
    .with_context(|| format!("cannot listen on {}", args.listen))?;
    eprintln!("belier target listening on {}", server.url("/"));
    eprintln!(
        "  per-request knobs: ?delay=20ms &status=503 &size=1024 &chunked=1 &close=1 \
         &token=1 &json=1 &fault=reset|close-before-headers|close-mid-body|malformed|stall"
    );
    eprintln!("  Ctrl-C stops it");
    while !signals.stop_requested() {
        std::thread::sleep(Duration::from_millis(100));
    }
    let counts = server.counts();
    server.stop();
    eprintln!(
        "belier target served {} requests on {} connections ({} responses)",
        counts.requests, counts.connections, counts.responses
    );
    Ok(0)
}
