//! `belier grpc HOST:PORT --call package.Service/Method …`: a load test of one gRPC method,
//! unary or streaming (its kind from the schema). The schema is read (from --proto or
//! --protoset, else asked of the server over reflection) and the request messages built and
//! framed once, before the run ([`crate::grpc_call`]); the run is then a load test over HTTP/2
//! like any other (the same settings, the same live loop, watchers and report), whose calls
//! the engine counts by gRPC status code, and a streaming call's messages each way.

use crate::args::{GrpcArgs, LoadArgs};
use crate::cluster;
use crate::settings::{self, InputError, Settings};
use crate::signals::Signals;

/// Validates `args`, runs the calls (here, or over workers: `--workers`, `--spawn`) and
/// writes the report.
pub fn run(args: GrpcArgs, signals: &Signals, cores: usize) -> anyhow::Result<u8> {
    let cluster = args.load.cluster.clone();
    let settings = settings(args, cores)?;
    cluster::run_here_or_over(&settings, &cluster, signals)
}

/// The run's settings: the call built from the schema, the message and the metadata, then the
/// load and outputs as a load test reads them.
pub(crate) fn settings(mut args: GrpcArgs, cores: usize) -> anyhow::Result<Settings> {
    refuse_http_only(&args.load)?;
    let (engine, url) = crate::grpc_call::config(&args.grpc, &mut args.load.request)?;
    args.load.http2.http2 = true;
    Ok(settings::with_request(args.load, cores, engine, url, None)?)
}

/// Flags of a load test that a gRPC call cannot follow, refused rather than ignored.
fn refuse_http_only(load: &LoadArgs) -> Result<(), InputError> {
    let refused = [
        (load.request.method != "GET", "--method"),
        (load.http2.http3(), "--http3"),
        (load.http2.quic_0rtt, "--quic-0rtt"),
        (load.request.every.compressed, "--compressed"),
        (load.no_keepalive, "--no-keepalive"),
        (load.request.proxy.is_some(), "--proxy"),
        (load.targets.targets.is_some(), "--targets"),
        (load.request.stream.is_some(), "--stream"),
        (load.request.sse_reconnect.is_some(), "--sse-reconnect"),
        (load.request.llm, "--llm"),
        (load.hold.hold.is_some(), "--hold"),
    ];
    match refused.iter().find(|(given, _)| *given) {
        Some((_, flag)) => Err(InputError::new(
            flag,
            "",
            "is not for gRPC calls (belier grpc sends POST over HTTP/2 to one host)",
        )),
        None => Ok(()),
    }
}
