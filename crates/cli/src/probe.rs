//! `belier probe URL`: one request on a new connection, taken apart phase by phase.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::Context;
use belier_engine::Probe;

use crate::args::RequestArgs;
use crate::settings::request_config;

/// Runs the probe and prints it; exits 0 when a response arrived (any status), 1 otherwise.
pub fn run(args: RequestArgs) -> anyhow::Result<u8> {
    let (config, url) = request_config(&args)?;
    let probe = belier_engine::probe(&config).context("cannot probe")?;
    print!("{}", render(&url, &config.request.method, &probe));
    Ok(if probe.error.is_none() { 0 } else { 1 })
}

fn ms(d: Duration) -> String {
    format!("{:>10.3} ms", d.as_secs_f64() * 1000.0)
}

fn render(url: &str, method: &str, p: &Probe) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = writeln!(out, "{method} {url}  →  {}", p.addr);
    let _ = writeln!(out, "  dns      {}", ms(p.dns));
    let phases = [
        ("connect", p.connect),
        ("tls", p.tls),
        ("ttfb", p.ttfb),
        ("transfer", p.transfer),
    ];
    for (name, d) in phases {
        if let Some(d) = d {
            let _ = writeln!(out, "  {name:<9}{}", ms(d));
        }
    }
    let _ = writeln!(out, "  total    {}   (connect to last byte)", ms(p.total));
    if let Some(session) = &p.tls_session {
        let _ = writeln!(out, "  TLS      {session}");
    }
    let _ = writeln!(out, "  bytes    {} out, {} in", p.bytes_out, p.bytes_in);
    match (&p.error, p.status) {
        (Some((kind, message)), _) => {
            let _ = writeln!(out, "  error    {}: {message}", kind.description());
        }
        (None, Some(status)) => {
            let _ = writeln!(out, "  status   {status}");
        }
        (None, None) => {}
    }
    if !p.head.is_empty() {
        let _ = writeln!(out, "\n{}", p.head.trim_end());
    }
    out
}
