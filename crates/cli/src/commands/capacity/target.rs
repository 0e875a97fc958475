//! What `belier capacity` searches on: the URL or plan file its positional argument names,
//! with the request flags (and a plan's `--var`s) applied.

use std::path::PathBuf;

use super::step::{self, Target};
use crate::args::{CapacityArgs, DimensionArg};
use crate::settings::{self, Http2, InputError, Origin};

/// A gRPC method (`--call`) on the server the positional argument names as HOST:PORT, sent
/// as `belier grpc` sends it, over HTTP/2.
fn grpc_target(args: &CapacityArgs) -> anyhow::Result<Target> {
    let r = &args.request;
    let refused = [
        (!args.vars.vars.is_empty(), "--var"),
        (r.method != "GET", "--method"),
        (r.every.compressed, "--compressed"),
        (r.proxy.is_some(), "--proxy"),
        // A call's messages are gRPC's own, not a streamed body's events.
        (r.stream.is_some(), "--stream"),
        (r.llm, "--llm"),
        (
            args.dimension == DimensionArg::ConnectionRate,
            "--dimension connection-rate",
        ),
    ];
    if let Some((_, flag)) = refused.iter().find(|(given, _)| *given) {
        return Err(InputError::new(
            flag,
            "",
            "is not for a gRPC method (--call): its calls go as POST over HTTP/2 connections it keeps",
        )
        .into());
    }
    let mut request = args.request.clone();
    let (mut engine, url) = crate::grpc_call::config(&args.grpc, &mut request)?;
    engine.resend = !args.sending.no_resend;
    Ok(Target::Url {
        engine: Box::new(engine),
        url,
        http2: Http2 {
            on: true,
            http3: false,
            auto: false,
            early: false,
            max_streams: args.http2.max_streams,
            origin: Origin::Flags,
        },
    })
}

/// The target the positional argument names, with the request flags applied: a URL, or a
/// plan file.
pub(super) fn target(args: &CapacityArgs) -> anyhow::Result<Target> {
    let given = args.request.url.as_deref().unwrap_or("");
    if args.grpc.call.is_some() {
        return grpc_target(args);
    }
    let grpc_only = [
        (!args.grpc.proto.is_empty(), "--proto"),
        (args.grpc.protoset.is_some(), "--protoset"),
        (args.grpc.gzip, "--gzip"),
        (args.grpc.plaintext, "--plaintext"),
    ];
    if let Some((_, flag)) = grpc_only.iter().find(|(given, _)| *given) {
        return Err(InputError::new(flag, "", "is for a gRPC method: give --call too").into());
    }
    if !step::is_plan(given) {
        return url_target(args);
    }
    plan_target(args, given)
}

/// A URL, with the request flags applied.
fn url_target(args: &CapacityArgs) -> anyhow::Result<Target> {
    if !args.vars.vars.is_empty() {
        return Err(InputError::new(
            "--var <NAME=VALUE>",
            "",
            "sets a plan's variable: give a plan file, not a URL",
        )
        .into());
    }
    if args.request.sse_reconnect.is_some() {
        return Err(InputError::new(
            "--sse-reconnect",
            "",
            "is not for capacity searches: it makes a closed loop's connections EventSources",
        )
        .into());
    }
    let (mut engine, url) = settings::request_config(&args.request)?;
    engine.resend = !args.sending.no_resend;
    if args.dimension == DimensionArg::ConnectionRate && args.http2.http2 {
        return Err(InputError::new(
            "--dimension <D>",
            "connection-rate",
            "opens a connection per request: not with --http2, whose streams share them",
        )
        .into());
    }
    if (args.hold.hold.is_some() || args.dimension == DimensionArg::HeldConnections)
        && args.http2.http2
    {
        return Err(InputError::new(
            "--http2",
            "",
            "held connections speak HTTP/1.1: not with --hold or --dimension held-connections",
        )
        .into());
    }
    if args.http2.http3 == Some(crate::args::Http3Mode::Auto) {
        return Err(InputError::new(
            "--http3",
            "auto",
            "is for a load run: a capacity search gives --http3 or --http2",
        )
        .into());
    }
    Ok(Target::Url {
        engine: Box::new(engine),
        url,
        http2: Http2 {
            on: args.http2.http2,
            http3: args.http2.http3.is_some(),
            auto: false,
            early: args.http2.quic_0rtt,
            max_streams: args.http2.max_streams,
            origin: Origin::Flags,
        },
    })
}

/// A plan file, `given`, which the request flags may not rewrite but for its headers, and
/// the connection flags apply to.
fn plan_target(args: &CapacityArgs, given: &str) -> anyhow::Result<Target> {
    let r = &args.request;
    for (given, flag) in [
        (r.method != "GET", "--method"),
        (r.body.is_some(), "--body"),
        (r.body_file.is_some(), "--body-file"),
        (r.cacert.is_some(), "--cacert"),
        (r.cert.is_some(), "--cert"),
        (r.sni.is_some(), "--sni"),
        (args.http2.http2, "--http2"),
        (args.http2.max_streams.is_some(), "--max-streams"),
    ] {
        if given {
            return Err(InputError::new(
                flag,
                "",
                format!("does not apply to a plan ({given}): its requests and options are in it"),
            )
            .into());
        }
    }
    if args.hold.hold.is_some() || args.dimension == DimensionArg::HeldConnections {
        return Err(InputError::new(
            "--hold <N>",
            "",
            format!("holds connections beside a URL's load: a plan ({given}) has users, not one request to hold them with"),
        )
        .into());
    }
    if args.dimension == DimensionArg::Connections {
        return Err(InputError::new(
            "--dimension <D>",
            "connections",
            format!("a plan ({given}) is searched on its iteration rate (or connection-rate)"),
        )
        .into());
    }
    let path = PathBuf::from(given);
    let mut plan = belier_plan::load(&path)?;
    crate::plan::apply_headers(&mut plan, &r.every.headers, r.every.insecure)?;
    crate::plan::apply_vars(&mut plan, &args.vars.vars)?;
    // The search steers one rate; several loads at once have no one rate to search.
    if !plan.executors.is_empty() {
        return Err(InputError::new(
            "PLAN",
            given,
            "belier capacity searches one load; this plan's scenarios have loads of their own (use `belier run`)",
        )
        .into());
    }
    if args.dimension == DimensionArg::ConnectionRate {
        plan.options.keepalive = false;
    }
    Ok(Target::Plan {
        plan: Box::new(plan),
        path,
        connection: crate::plan::Connection {
            tls_resume: r.every.tls_resume,
            connect_to: r.every.connect_to,
            dns_policy: r.every.dns_policy.into(),
            dns_server: r.every.dns_server,
            dns_ttl: r.every.dns_ttl,
            no_resend: args.sending.no_resend,
            server_timing: crate::settings::server_timing(&args.request.every)?,
        },
        setup: None,
    })
}
