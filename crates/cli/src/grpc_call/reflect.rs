//! The schema asked of the server (gRPC server reflection) when neither `--proto` nor
//! `--protoset` gives it: once, before the run, on a connection of its own made as the run's
//! are (the same address, TLS settings and HTTP/2), with a call of reflection's method per
//! question ([`belier_grpc::Reflection`] says which). Version 1 of the service first; a server
//! that answers UNIMPLEMENTED is asked again under v1alpha's name.

use anyhow::{anyhow, Context as _};
use belier_engine::Config;
use belier_grpc::frame::{Frames, MAX_MESSAGE};
use belier_grpc::reflection::{Reflection, V1, V1ALPHA};
use belier_grpc::{Code, Compression, Schema, Status};
use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::settings::InputError;

/// A connection, plain or TLS, over TCP or a Unix socket.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// The schema of `service` as the server of `engine`'s target tells it. A server without
/// reflection, or without the service, is the user's to fix ([`InputError`]); a server that
/// cannot be reached, or that does not answer within the run's timeout, is not.
pub fn schema(engine: &Config, service: &str) -> anyhow::Result<Schema> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the reflection client")?;
    let authority = format!("{}:{}", engine.request.host, engine.request.port);
    let asked = runtime.block_on(async {
        tokio::time::timeout(engine.timeout, reflect(engine, &authority, service)).await
    });
    let why = |e: anyhow::Error| e.context(format!("server reflection at {authority}"));
    match asked {
        Ok(Ok(schema)) => Ok(schema),
        // Already says what to do, and stays an input error (exit 2) unwrapped.
        Ok(Err(e)) if e.is::<InputError>() => Err(e),
        Ok(Err(e)) => Err(why(e)),
        Err(_) => Err(why(anyhow!(
            "no answer within {} (--timeout)",
            humantime::format_duration(engine.timeout)
        ))),
    }
}

/// Asks the questions of [`Reflection`] one call each, v1 or else v1alpha.
async fn reflect(engine: &Config, authority: &str, service: &str) -> anyhow::Result<Schema> {
    let io = connect(engine).await?;
    let (mut client, connection) = h2::client::handshake(io)
        .await
        .context("HTTP/2 handshake")?;
    let driver = tokio::spawn(connection);
    let scheme = if engine.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let mut reflection = Reflection::new(service);
    let mut path = V1;
    while let Some(request) = reflection.request() {
        let uri = format!("{scheme}://{authority}{path}");
        match call(&mut client, &uri, request).await? {
            Ok(message) => reflection
                .answer(&message)
                .map_err(|e| InputError::in_file(format!("--call: {e}")))?,
            Err(status) if status.code == Code::Unimplemented && path == V1 => path = V1ALPHA,
            Err(status) if status.code == Code::Unimplemented => {
                return Err(InputError::in_file(format!(
                    "the server at {authority} does not serve reflection ({}): give the \
                     schema with --proto or --protoset",
                    status.message
                ))
                .into())
            }
            Err(status) => {
                return Err(anyhow!(
                    "reflection answered {}: {}",
                    status.code,
                    status.message
                ))
            }
        }
    }
    driver.abort();
    reflection
        .schema()
        .map_err(|e| InputError::in_file(format!("--call: {e}")).into())
}

/// One call of reflection's method with one request message: the answer's message, or the
/// status of a call that ended without one.
async fn call(
    client: &mut h2::client::SendRequest<Bytes>,
    uri: &str,
    request: Bytes,
) -> anyhow::Result<Result<Vec<u8>, Status>> {
    let head = http::Request::post(uri)
        .header("content-type", belier_grpc::call::CONTENT_TYPE)
        .header("te", "trailers")
        .body(())
        .context("the reflection request")?;
    let mut ready = client.clone().ready().await.context("HTTP/2")?;
    let (response, mut send) = ready.send_request(head, false).context("HTTP/2 request")?;
    send.send_data(request, true)
        .context("HTTP/2 request body")?;
    let response = response.await.context("HTTP/2 response")?;
    let (parts, mut body) = response.into_parts();
    let encoding = parts
        .headers
        .get("grpc-encoding")
        .and_then(|v| Compression::parse(v.as_bytes()));
    let mut frames = Frames::new(encoding, MAX_MESSAGE, true);
    while let Some(chunk) = body.data().await {
        let chunk = chunk.context("HTTP/2 response body")?;
        let _ = body.flow_control().release_capacity(chunk.len());
        frames.feed(&chunk).context("the reflection answer")?;
    }
    let trailers = body.trailers().await.context("HTTP/2 trailers")?;
    let status = Status::of_response(parts.status.as_u16(), &parts.headers, trailers.as_ref());
    *client = ready;
    match (status.code, frames.last()) {
        (Code::Ok, Some(message)) => Ok(Ok(message.to_vec())),
        (Code::Ok, None) => Err(anyhow!("reflection answered OK with no message")),
        _ => Ok(Err(status)),
    }
}

/// A connection to the run's target, as the run's would be: its address (`--connect-to`,
/// `--resolve`, `--unix-socket`), then TLS offering HTTP/2 when the run speaks TLS.
async fn connect(engine: &Config) -> anyhow::Result<Box<dyn Io>> {
    let spec = &engine.request;
    let plain: Box<dyn Io> = match (
        &engine.unix_socket,
        engine.connect_to.or(engine.addresses.first().copied()),
    ) {
        (Some(path), _) => Box::new(
            tokio::net::UnixStream::connect(path)
                .await
                .with_context(|| format!("connecting to {}", path.display()))?,
        ),
        (None, Some(addr)) => Box::new(tcp(addr).await?),
        (None, None) => Box::new(tcp((spec.host.as_str(), spec.port)).await?),
    };
    let Some(options) = &engine.tls else {
        return Ok(plain);
    };
    let mut options = options.clone();
    options.alpn = vec![b"h2".to_vec()];
    let (connector, name) = options.connector(&spec.host)?;
    let tls = connector.connect(name, plain).await.context("TLS")?;
    Ok(Box::new(tls))
}

async fn tcp(addr: impl tokio::net::ToSocketAddrs) -> anyhow::Result<tokio::net::TcpStream> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .context("connecting")?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}
