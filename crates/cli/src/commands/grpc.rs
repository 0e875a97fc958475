//! `belier grpc HOST:PORT --call package.Service/Method …`: a load test of one unary gRPC
//! method. The schema is read (from --proto or --protoset, else asked of the server over
//! reflection: see [`reflect`]) and the request message built and framed once, before the
//! run; the run is then a load test over HTTP/2 like any other (the same settings, the same
//! live loop, watchers and report), whose calls the engine counts by gRPC status code.

use std::path::PathBuf;

use belier_grpc::{Call, Compression};
use belier_plan::files;

use crate::args::{GrpcArgs, LoadArgs};
use crate::load::report::{linger, write_report};
use crate::settings::{self, InputError, Settings};
use crate::signals::{self, Signals};

mod reflect;

/// Validates `args`, runs the calls and writes the report.
pub fn run(args: GrpcArgs, signals: &Signals, cores: usize) -> anyhow::Result<u8> {
    let settings = settings(args, cores)?;
    let mut finished = crate::load::execute(&settings, signals)?;
    let code = if finished.interrupted {
        signals::INTERRUPTED
    } else {
        0
    };
    let written = write_report(&settings, &finished, code);
    linger(&mut finished, signals);
    written
}

/// The run's settings: the call built from the schema, the message and the metadata, then the
/// load and outputs as a load test reads them.
pub(crate) fn settings(mut args: GrpcArgs, cores: usize) -> anyhow::Result<Settings> {
    refuse_http_only(&args.load)?;
    let schema = crate::grpc_schema::given(&args)?;
    let request = &mut args.load.request;
    let metadata = request
        .every
        .headers
        .iter()
        .map(|h| settings::parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    let json = message_json(request.body.take(), request.body_file.take())?;
    // The request side (TLS, timeout, --connect-to, --resolve) from the flags a load test
    // reads, for the server's root; then the call's own path, method, headers and body.
    let target = request.url.take().ok_or_else(|| {
        InputError::new(
            "<HOST:PORT>",
            "",
            "is required (usage: belier grpc HOST:PORT --call …)",
        )
    })?;
    check_target(&target)?;
    let scheme = if args.plaintext { "http" } else { "https" };
    request.url = Some(format!("{scheme}://{target}/"));
    request.every.headers.clear();
    let (mut engine, url) = settings::request_config(request)?;
    let schema = match schema {
        Some(schema) => schema,
        None => reflect::schema(&engine, service(&args.call)?)?,
    };
    let method = schema
        .method(&args.call)
        .map_err(|e| InputError::new("--call <METHOD>", &args.call, e.to_string()))?;
    let compression = match args.gzip {
        true => Compression::Gzip,
        false => Compression::Identity,
    };
    let call = Call::unary(
        &method,
        &json,
        &metadata,
        Some(request.timeout),
        compression,
    )
    .map_err(|e| match e {
        belier_grpc::CallError::Reserved(_) => InputError::in_file(format!("--header: {e}")),
        _ => InputError::in_file(format!("--body: {e}")),
    })?;
    engine.request.method = "POST".into();
    engine.request.path_and_query.clone_from(&call.path);
    engine.request.headers = call.headers;
    engine.request.body = call.body.to_vec();
    engine.grpc = true;
    args.load.http2.http2 = true;
    let url = format!("{}{}", url.trim_end_matches('/'), call.path);
    Ok(settings::with_request(args.load, cores, engine, url, None)?)
}

/// The service `--call` names.
fn service(call: &str) -> Result<&str, InputError> {
    belier_grpc::schema::split_call(call)
        .map(|(service, _)| service)
        .map_err(|e| InputError::new("--call <METHOD>", call, e.to_string()))
}

/// The request message's JSON: -d, or the file of -D, or an empty message.
fn message_json(body: Option<String>, file: Option<PathBuf>) -> Result<String, InputError> {
    match (body, file) {
        (Some(json), _) => Ok(json),
        (None, Some(path)) => {
            let bytes = files::read(&path, files::MOST_BODY_BYTES).map_err(|e| {
                InputError::new(
                    "--body-file <FILE>",
                    path.display(),
                    settings::read_error(&e),
                )
            })?;
            String::from_utf8(bytes).map_err(|_| {
                InputError::new("--body-file <FILE>", path.display(), "is not UTF-8 JSON")
            })
        }
        (None, None) => Ok("{}".into()),
    }
}

/// HOST:PORT, with no scheme or path (the call makes the path).
fn check_target(target: &str) -> Result<(), InputError> {
    let port = target.rsplit_once(':').map(|(_, p)| p);
    if target.contains('/') || !port.is_some_and(|p| p.parse::<u16>().is_ok_and(|p| p > 0)) {
        return Err(InputError::new(
            "<HOST:PORT>",
            target,
            "expected HOST:PORT, e.g. 127.0.0.1:50051 (no scheme: TLS unless --plaintext)",
        ));
    }
    Ok(())
}

/// Flags of a load test that a gRPC call cannot follow, refused rather than ignored.
fn refuse_http_only(load: &LoadArgs) -> Result<(), InputError> {
    let refused = [
        (load.request.method != "GET", "--method"),
        (load.request.every.compressed, "--compressed"),
        (load.no_keepalive, "--no-keepalive"),
        (load.request.proxy.is_some(), "--proxy"),
        (load.targets.targets.is_some(), "--targets"),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_host_and_port_only() {
        for ok in ["127.0.0.1:50051", "localhost:443", "[::1]:8080"] {
            assert!(check_target(ok).is_ok(), "{ok}");
        }
        for bad in ["127.0.0.1", "http://h:1", "h:1/x", "h:0", "h:http"] {
            let e = check_target(bad).unwrap_err().to_string();
            assert!(e.contains("expected HOST:PORT"), "{bad}: {e}");
        }
    }
}
