//! `belier probe URL`: one request on a new connection, taken apart phase by phase.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::Context;
use belier_engine::Probe;

use crate::args::{ProbeArgs, ProbeFormat};
use crate::settings::request_config;

/// Runs the probe and prints it; exits 0 when a response arrived (any status), 1 otherwise.
pub fn run(args: ProbeArgs) -> anyhow::Result<u8> {
    let every = &args.request.every;
    for (given, flag) in [
        (every.server_timing, "--server-timing"),
        (every.server_time_header.is_some(), "--server-time-header"),
    ] {
        if given {
            return Err(crate::settings::InputError::new(
                flag,
                "",
                "is for load runs: belier probe shows the response's head, its Server-Timing \
                 header among it",
            )
            .into());
        }
    }
    if every.trace_sample.is_some() {
        return Err(crate::settings::InputError::new(
            "--trace-sample <SHARE>",
            "",
            "is for load runs: give the probe a trace context with -H 'traceparent: …'",
        )
        .into());
    }
    let (mut config, url) = request_config(&args.request)?;
    if args.http3 && config.tls.is_none() {
        return Err(crate::settings::InputError::new(
            "--http3",
            "",
            "needs an https:// URL: QUIC is always TLS 1.3",
        )
        .into());
    }
    config.http3 = args.http3;
    let probe = belier_engine::probe(&config).context("cannot probe")?;
    match args.output {
        ProbeFormat::Text => print!("{}", render(&url, &config.request.method, &probe)),
        ProbeFormat::Json => println!("{}", render_json(&url, &config.request.method, &probe)),
    }
    Ok(if probe.error.is_none() { 0 } else { 1 })
}

/// What a timeout that ran out in `phase` was waiting for.
fn waiting_for(phase: &str) -> &'static str {
    match phase {
        "connect" => "the TCP connect did not complete",
        "tls" => "the TLS handshake did not complete",
        "first byte" => "the request was sent and no response byte came",
        _ => "the response started and did not finish",
    }
}

/// The probe as one JSON object: durations in milliseconds, `null` for phases that did not
/// happen.
fn render_json(url: &str, method: &str, p: &Probe) -> String {
    let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1000.0);
    let doc = serde_json::json!({
        "url": url,
        "method": method,
        "address": p.addr.to_string(),
        "dns_ms": ms(Some(p.phases.dns)),
        "connect_ms": ms(p.phases.connect),
        "tls_ms": ms(p.phases.tls),
        "ttfb_ms": ms(p.phases.ttfb),
        "transfer_ms": ms(p.phases.transfer),
        "total_ms": ms(Some(p.phases.total)),
        "tls_session": p.tls_session,
        "status": p.status,
        "head": p.head,
        "bytes_out": p.bytes_out,
        "bytes_in": p.bytes_in,
        "error": p.error.as_ref().map(|(kind, message)| serde_json::json!({
            "kind": kind.name(),
            "message": message,
            "timed_out_in": p.timed_out_in,
        })),
    });
    serde_json::to_string_pretty(&doc).expect("a JSON value serializes")
}

// A phase's duration in milliseconds, right-aligned.
use belier_vocabulary::format::ms_column as ms;

fn render(url: &str, method: &str, p: &Probe) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = writeln!(out, "{method} {url}  →  {}", p.addr);
    let _ = writeln!(out, "  dns      {}", ms(p.phases.dns));
    for (name, d) in p.phases.on_the_connection() {
        if let Some(d) = d {
            let _ = writeln!(out, "  {name:<9}{}", ms(d));
        }
    }
    let _ = writeln!(
        out,
        "  total    {}   (connect to last byte)",
        ms(p.phases.total)
    );
    if let Some(session) = &p.tls_session {
        let _ = writeln!(out, "  TLS      {session}");
    }
    let _ = writeln!(out, "  bytes    {} out, {} in", p.bytes_out, p.bytes_in);
    match (&p.error, p.status) {
        (Some((kind, message)), _) => {
            match p.timed_out_in {
                // The kind alone (a connect timeout, a request timeout) does not say which
                // phase the time ran out in.
                Some(phase) => {
                    let _ = writeln!(
                        out,
                        "  error    timed out in the {phase} phase: {}",
                        waiting_for(phase)
                    );
                }
                None => {
                    let _ = writeln!(out, "  error    {}: {message}", kind.description());
                }
            }
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
