//! The gRPC call a run sends (`belier grpc`, `belier capacity --call`): the schema read from
//! .proto files or a protoset (or asked of the server: [`reflect`]), the method it names and
//! its kind (unary or streaming), the request messages built from JSON and framed once, the
//! metadata; as an engine request over HTTP/2 (POST to the method's path) that the engine
//! reads as a gRPC call, a streaming one's messages sent in turn and counted.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use belier_engine::{Config, GrpcStream};
use belier_grpc::{Call, Compression, Method, Schema};
use belier_plan::files;
use belier_plan::program::JsonTemplate;
use belier_scenario::CallUsers;

use crate::args::{GrpcCallArgs, RequestArgs};
use crate::settings::{self, InputError};

mod reflect;

/// The engine request of the call `grpc` names, to the server `request.url` gives as
/// HOST:PORT, with the request flags (TLS, timeout, --connect-to, --resolve) applied and
/// `-d`/`-D` read as the message, `-H` as metadata; and the call's URL. Without --proto or
/// --protoset the schema is asked of the server ([`reflect`]), once, before the run.
pub fn config(grpc: &GrpcCallArgs, request: &mut RequestArgs) -> anyhow::Result<(Config, String)> {
    let called = grpc.call.as_deref().unwrap_or_default();
    let schema = given(grpc)?;
    let metadata = request
        .every
        .headers
        .iter()
        .map(|h| settings::parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    let json = message_json(request.body.take(), request.body_file.take())?;
    let template = templated(&json)?;
    // The request side (TLS, timeout, --connect-to, --resolve) from the flags a load test
    // reads, for the server's root; then the call's own path, method, headers and body.
    let target = request.url.take().ok_or_else(|| {
        InputError::new(
            "<HOST:PORT>",
            "",
            "is required: the gRPC server (HOST:PORT --call …)",
        )
    })?;
    check_target(&target)?;
    let scheme = if grpc.plaintext { "http" } else { "https" };
    request.url = Some(format!("{scheme}://{target}/"));
    request.every.headers.clear();
    let (mut engine, url) = settings::request_config(request)?;
    // A call's messages are gRPC's own (`--stream`, hidden and refused here, cuts HTTP
    // bodies).
    engine.stream = None;
    let schema = match schema {
        Some(schema) => schema,
        None => reflect::schema(&engine, service(called)?)?,
    };
    let method = schema
        .method(called)
        .map_err(|e| InputError::new("--call <METHOD>", called, e.to_string()))?;
    let compression = match grpc.gzip {
        true => Compression::Gzip,
        false => Compression::Identity,
    };
    // A templated message is checked against the method with its templates as defaults.
    let checked = template.as_ref().map(|t| t.probe().to_string());
    let call = Call::new(
        &method,
        checked.as_deref().unwrap_or(&json),
        &metadata,
        Some(request.timeout),
        compression,
    )
    .map_err(|e| match e {
        belier_grpc::CallError::Reserved(_) => InputError::in_file(format!("--header: {e}")),
        _ => InputError::in_file(format!("--body: {e}")),
    })?;
    engine.grpc_stream = streaming(&call, called, grpc)?;
    if let Some(template) = template {
        refuse_for_templates(&call, called, grpc)?;
        engine.users = Some(Arc::new(CallUsers::new(
            Method::new(method.clone()),
            call.path.clone(),
            call.headers.clone(),
            template,
            settings::random_seed(),
        )));
    }
    engine.request.method = "POST".into();
    engine.request.path_and_query.clone_from(&call.path);
    engine.request.headers = call.headers;
    engine.request.body = call.body.to_vec();
    // A templated call's users send it; the engine reads their requests as gRPC calls by
    // their content type, as a plan's.
    engine.grpc = engine.users.is_none();
    let url = format!("{}{}", url.trim_end_matches('/'), call.path);
    Ok((engine, url))
}

/// How a streaming call's messages go: a server stream sends its one request message; a
/// client stream --stream-call-count of them (as many as -d gives unless told), taken in turn,
/// --stream-interval apart. `None` for a unary call. `method`: --call.
fn streaming(
    call: &Call,
    method: &str,
    grpc: &GrpcCallArgs,
) -> Result<Option<GrpcStream>, InputError> {
    let (count, interval) = (grpc.stream_call_count, grpc.stream_interval);
    if !call.kind.client_streams() {
        let given = [
            (count.is_some(), "--stream-call-count"),
            (interval.is_some(), "--stream-interval"),
        ];
        if let Some((_, flag)) = given.iter().find(|(given, _)| *given) {
            return Err(InputError::new(
                flag,
                "",
                format!(
                    "is for a method whose client streams; {method} is {}",
                    call.kind.name()
                ),
            ));
        }
        return Ok(call.kind.streams().then_some(GrpcStream {
            messages: 1,
            interval: Duration::ZERO,
        }));
    }
    Ok(Some(GrpcStream {
        messages: count.unwrap_or_else(|| u32::try_from(call.messages).unwrap_or(u32::MAX)),
        interval: interval.unwrap_or_default(),
    }))
}

/// The message's templates (`{{ uuid }}`, `{{ iteration }}`, … in its strings), rendered per
/// call; `None` when it has none or is no JSON (the call's making then names the fault).
fn templated(json: &str) -> Result<Option<JsonTemplate>, InputError> {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(json) else {
        return Ok(None);
    };
    belier_plan::json_text::templates(&value)
        .map_err(|e| InputError::in_file(format!("--body: {e}")))
}

/// What a templated message cannot go with: a streaming method (its messages are framed once,
/// before the run) and --gzip (each call's message is framed as it is made, uncompressed).
fn refuse_for_templates(call: &Call, method: &str, grpc: &GrpcCallArgs) -> Result<(), InputError> {
    if call.kind.streams() {
        return Err(InputError::in_file(format!(
            "--body: templates ({{{{ … }}}}) are rendered per call for unary methods; {method} is {} (its messages are framed once: write them without templates)",
            call.kind.name()
        )));
    }
    if grpc.gzip {
        return Err(InputError::new(
            "--gzip",
            "",
            "does not go with a templated message (each call's message is framed uncompressed as it is made)",
        ));
    }
    Ok(())
}

/// The service `--call` names.
fn service(call: &str) -> Result<&str, InputError> {
    belier_grpc::schema::split_call(call)
        .map(|(service, _)| service)
        .map_err(|e| InputError::new("--call <METHOD>", call, e.to_string()))
}

/// [`schema`], or `None` when the run names neither .proto files nor a protoset.
pub fn given(grpc: &GrpcCallArgs) -> Result<Option<Schema>, InputError> {
    match grpc.proto.is_empty() && grpc.protoset.is_none() {
        true => Ok(None),
        false => schema(grpc).map(Some),
    }
}

/// The compiled schema: the .proto files with their import paths, or the protoset.
pub fn schema(args: &GrpcCallArgs) -> Result<Schema, InputError> {
    match &args.protoset {
        Some(path) => Schema::from_protoset(path)
            .map_err(|e| InputError::new("--protoset <FILE>", path.display(), e.to_string())),
        // A bad file's error names it with its line and column already.
        None => Schema::from_proto_files(&args.proto, &args.import_paths)
            .map_err(|e| InputError::in_file(format!("--proto: {e}"))),
    }
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
