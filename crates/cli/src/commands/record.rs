//! `belier record --listen ADDR --out PLAN`: runs the recorder (`belier_recorder`) until Ctrl-C
//! or `--max-requests`, then says what it recorded (variable names and counts, never values).

use std::path::PathBuf;
use std::time::Duration;

use belier_recorder::{RecordError, Settings};

use crate::args::RecordArgs;
use crate::settings::InputError;
use crate::signals::Signals;

/// The environment variable read for the token when `--token` is not given (it stays out of
/// `ps` and shell history).
pub const TOKEN_VARIABLE: &str = "BELIER_RECORD_TOKEN";

/// `belier record`.
pub fn run(args: RecordArgs, signals: &Signals) -> anyhow::Result<u8> {
    if args.max_requests == Some(0) {
        return Err(InputError::new("--max-requests <N>", 0, "must be at least 1").into());
    }
    let token = args
        .token
        .or_else(|| std::env::var(TOKEN_VARIABLE).ok())
        .filter(|t| !t.is_empty());
    let token = crate::token::settle(token, args.listen, "--token <TOKEN>")?.map(|t| {
        if t.generated {
            eprintln!(
                "belier record: proxy token (clients send it in Proxy-Authorization): {}",
                t.value
            );
        }
        t.value
    });
    let upstream_ca_pem = match &args.upstream_cacert {
        Some(path) => Some(
            belier_plan::files::read(path, belier_plan::files::MOST_DOCUMENT_BYTES).map_err(
                |e| InputError::new("--upstream-cacert <FILE>", path.display(), e.to_string()),
            )?,
        ),
        None => None,
    };
    let ca_dir = args.ca_dir.unwrap_or_else(|| {
        std::env::var_os("HOME")
            .map_or_else(|| PathBuf::from("."), PathBuf::from)
            .join(".belier")
    });
    let settings = Settings {
        listen: args.listen,
        token,
        out: args.out.clone(),
        max_requests: args.max_requests,
        include_hosts: args.include_hosts,
        ca_dir,
        upstream_ca_pem,
    };
    let running = match belier_recorder::start(settings) {
        Ok(r) => r,
        Err(RecordError::NeedsToken(addr)) => {
            return Err(InputError::new(
                "--listen <ADDR>",
                addr,
                "is off the loopback: give --token (or BELIER_RECORD_TOKEN) so only your clients use the proxy",
            )
            .into())
        }
        Err(e) => return Err(e.into()),
    };
    eprintln!(
        "belier record: proxy listening on http://{} (plain HTTP; HTTPS through CONNECT)",
        running.addr()
    );
    eprintln!(
        "belier record: for HTTPS, trust the CA {} (curl --cacert FILE; a browser: import it as an authority)",
        running.ca_cert().display()
    );
    eprintln!(
        "belier record: writing {} after each request; Ctrl-C stops",
        args.out.display()
    );
    while !signals.stop_requested() && !running.full() {
        std::thread::sleep(Duration::from_millis(50));
    }
    let summary = running.stop();
    for c in &summary.correlations {
        let used: Vec<String> = c.used_by.iter().map(|i| (i + 1).to_string()).collect();
        eprintln!(
            "extracted `{}` from the response of request {}, used by request {}",
            c.var,
            c.from_step + 1,
            used.join(", ")
        );
    }
    for note in &summary.notes {
        eprintln!("note: {note}");
    }
    if let Some(e) = summary.write_error {
        anyhow::bail!(e);
    }
    match summary.origin {
        Some(origin) => eprintln!(
            "recorded {} requests to {origin} in {}",
            summary.recorded,
            args.out.display()
        ),
        None => eprintln!("nothing recorded: no plan written"),
    }
    Ok(0)
}
