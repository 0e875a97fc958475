//! HTTP/3 ([`Config::http3`](crate::Config::http3)): the same knobs, counters and recording as
//! HTTP/1.1 and HTTP/2, over QUIC on the TCP listener's port (UDP), through `quinn`'s server
//! and `h3`'s (QUIC, framing, QPACK and flow control are not ours to redo), with the TLS
//! configuration's certificate and ALPN `h3`. The streamed answers (`/sse`, the LLM paths),
//! gzip'd bodies for a client that takes gzip and `Server-Timing` (`timing=1`) are HTTP/2's
//! (see `answer` and `streamed`).
//!
//! Each QUIC connection counts as a connection (its peer recorded as a TCP connection's is)
//! and its completed handshake as a TLS handshake; each stream is a task of its own. What
//! applies of the knobs: `delay`, `status`, `size`, `redirect`, `json`, `token`, `timing`
//! and the handler pool (a stream turned away is refused with `H3_REQUEST_REJECTED`, or `503`
//! with shedding). Faults take their QUIC form: `reset` resets the stream (`H3_INTERNAL_ERROR`),
//! `close-before-headers` and `close-mid-body` close the connection (the latter after the
//! head and half the body went: QUIC drops what was not sent yet when it closes, so the
//! client may see less), `stall` and a 1xx status never answer; `malformed` is answered `400`
//! saying so. `chunked=1` only drops `content-length`, and `close=1` is ignored: the
//! connection stays for the client to end.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, Bytes};
use h3::error::Code;
use http::Request;
use tokio::sync::Notify;

use crate::answer::head_of;
use crate::behaviour::{Behaviour, Fault, CLOSE_MID_BODY_DEFAULT_LEN, DEFAULT_BODY};
use crate::connection::{OpenGuard, RECORDED_BODY_BYTES};
use crate::handlers::Admission;
use crate::response::{self, FILLER};
use crate::shared::{SeenRequest, Shared};
use crate::streamed::Streamed;
use crate::tls::{invalid, TlsConfig};

type Stream = h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// The QUIC endpoint on `socket` (already bound, on the TCP listener's port), serving `tls`'s
/// certificate with ALPN `h3`. Made inside the server's runtime: quinn drives the socket on it.
pub(crate) fn endpoint(
    socket: std::net::UdpSocket,
    tls: &TlsConfig,
) -> io::Result<quinn::Endpoint> {
    let mut config = tls.server_config()?;
    config.alpn_protocols = vec![b"h3".to_vec()];
    let quic = quinn::crypto::rustls::QuicServerConfig::try_from(config)
        .map_err(|err| invalid("QUIC (TLS 1.3)", err))?;
    let server = quinn::ServerConfig::with_crypto(Arc::new(quic));
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(server),
        socket,
        Arc::new(quinn::TokioRuntime),
    )
}

/// Accepts QUIC connections until the endpoint closes, counting each and serving it on a task
/// of its own; `count` numbers a connection and records its peer as for TCP.
pub(crate) async fn accept(
    endpoint: quinn::Endpoint,
    shared: Arc<Shared>,
    count: fn(&Arc<Shared>, Option<SocketAddr>) -> u64,
) {
    while let Some(incoming) = endpoint.accept().await {
        let seq = count(&shared, Some(incoming.remote_address()));
        let open = OpenGuard::new(&shared);
        tokio::spawn(serve(incoming, Arc::clone(&shared), seq, open));
    }
}

/// Serves one QUIC connection until it ends: its handshake, then each request stream on a
/// task of its own.
async fn serve(incoming: quinn::Incoming, shared: Arc<Shared>, seq: u64, open: OpenGuard) {
    let Ok(connection) = async { incoming.accept()?.await }.await else {
        shared.counters.tls_failures.fetch_add(1, Relaxed);
        return;
    };
    shared.counters.tls_handshakes.fetch_add(1, Relaxed);
    let quic = h3_quinn::Connection::new(connection.clone());
    let Ok(mut h3) = h3::server::Connection::<_, Bytes>::new(quic).await else {
        return;
    };
    let abrupt = Arc::new(Notify::new());
    let mut index = 0;
    loop {
        let resolver = tokio::select! {
            accepted = h3.accept() => match accepted {
                Ok(Some(resolver)) => resolver,
                Ok(None) | Err(_) => break,
            },
            () = abrupt.notified() => {
                connection.close(Code::H3_INTERNAL_ERROR.value().try_into().unwrap_or_default(), b"fault");
                break;
            }
        };
        let stream = Exchange {
            shared: Arc::clone(&shared),
            seq,
            index,
            abrupt: Arc::clone(&abrupt),
            connection: connection.clone(),
        };
        index += 1;
        tokio::spawn(async move {
            if let Ok((request, mut io)) = resolver.resolve_request().await {
                let _ = stream.answer(request, &mut io).await;
            }
        });
    }
    drop(open);
}

/// One request stream's context.
struct Exchange {
    shared: Arc<Shared>,
    seq: u64,
    /// The request's position among the connection's, from 0 (for the `token` knob).
    index: u64,
    /// Closes the connection at once (the close faults).
    abrupt: Arc<Notify>,
    connection: quinn::Connection,
}

/// The stream or its connection went away; nobody reads why, as for HTTP/2.
struct Gone;

impl From<h3::error::StreamError> for Gone {
    fn from(_: h3::error::StreamError) -> Self {
        Gone
    }
}

impl Exchange {
    async fn answer(&self, request: Request<()>, io: &mut Stream) -> Result<(), Gone> {
        self.shared.counters.requests.fetch_add(1, Relaxed);
        let (head, ()) = request.into_parts();
        let target = head
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        let is_head = head.method == http::Method::HEAD;
        let gzip = crate::answer::accepts_gzip(&head.headers);
        self.receive(&head, &target, io).await?;
        if let Some(streamed) = crate::streamed::Streamed::of(head.method.as_str(), &target) {
            return match streamed {
                Ok(streamed) => self.stream(io, &streamed).await,
                Err(why) => self.text(io, 400, &why).await,
            };
        }
        let behaviour = match self.shared.behaviour_of(&target) {
            Ok(behaviour) => behaviour,
            Err(err) => return self.text(io, 400, &err.to_string()).await,
        };
        if head.method == http::Method::GET && target == "/metrics" {
            return self.text(io, 200, &self.shared.metrics()).await;
        }
        let handled = match &self.shared.pool {
            None => Instant::now(),
            Some(pool) => match pool.admit().await {
                Admission::Served(handler) => pool.serve(handler).await,
                Admission::Rejected if pool.settings.shed => {
                    return self.text(io, 503, "overloaded").await;
                }
                Admission::Rejected => {
                    io.stop_stream(Code::H3_REQUEST_REJECTED);
                    return Ok(());
                }
            },
        };
        if !behaviour.delay.is_zero() {
            crate::delay::sleep(behaviour.delay).await;
        }
        if let Some(fault) = behaviour.fault {
            return self.misbehave(fault, &behaviour, io).await;
        }
        if behaviour.status < 200 {
            // Never answered: held until the connection ends.
            self.connection.closed().await;
            return Ok(());
        }
        if let Some((head, gz)) = crate::answer::gzipped(&behaviour, is_head, gzip) {
            return self.send(io, head, gz).await;
        }
        let timed = behaviour.timing.then_some(handled);
        let (mut response, body) = self.response(&behaviour, &target, timed);
        let has_body = response::status_has_body(behaviour.status);
        if !has_body {
            response.headers_mut().remove(http::header::CONTENT_LENGTH);
        }
        if !has_body || is_head {
            return self.send(io, response, Bytes::new()).await;
        }
        if behaviour.chunked {
            response.headers_mut().remove(http::header::CONTENT_LENGTH);
        }
        self.send(io, response, body).await
    }

    /// The response head and body `behaviour` asks for (a redirect, the JSON answers, the
    /// default body or `size` filler bytes), with `content-length`; the last with
    /// `Server-Timing` when `timed` says when its handler took the request.
    fn response(
        &self,
        behaviour: &Behaviour,
        target: &str,
        timed: Option<Instant>,
    ) -> (http::Response<()>, Bytes) {
        if behaviour.redirect > 0 {
            return (
                crate::answer::redirect(behaviour.status, target),
                Bytes::new(),
            );
        }
        if behaviour.token || behaviour.json {
            return crate::answer::json(behaviour, self.seq, self.index);
        }
        let body = Self::plain_body(behaviour);
        let mut head = head_of(behaviour.status, Some(body.len()));
        if let Some(handled) = timed {
            crate::answer::timed(&mut head, handled);
        }
        (head, body)
    }

    /// The default body, or `size` filler bytes.
    fn plain_body(behaviour: &Behaviour) -> Bytes {
        match behaviour.body_size {
            None => Bytes::from_static(DEFAULT_BODY),
            Some(len) => filler(len),
        }
    }

    /// Reads the whole request body, counted and (up to a bound) kept, before anything else;
    /// records the request when recording.
    async fn receive(
        &self,
        head: &http::request::Parts,
        target: &str,
        io: &mut Stream,
    ) -> Result<(), Gone> {
        let mut seen = self
            .shared
            .recorder
            .as_ref()
            .map(|_| SeenRequest::of_parts(head, target, self.seq, "HTTP/3"));
        while let Some(mut data) = io.recv_data().await? {
            while data.has_remaining() {
                let piece = data.chunk();
                self.shared
                    .body_piece(seen.as_mut(), piece, RECORDED_BODY_BYTES);
                let n = piece.len();
                data.advance(n);
            }
        }
        if let Some(seen) = seen {
            self.shared.record(seen);
        }
        Ok(())
    }

    /// Misbehaves as `fault` says, in its QUIC form.
    async fn misbehave(
        &self,
        fault: Fault,
        behaviour: &Behaviour,
        io: &mut Stream,
    ) -> Result<(), Gone> {
        match fault {
            Fault::Reset => io.stop_stream(Code::H3_INTERNAL_ERROR),
            Fault::CloseBeforeHeaders => {
                self.abrupt.notify_one();
                // Held until the connection is gone: dropped now, the stream would end
                // cleanly (a FIN without a response) before the close reached the client.
                self.connection.closed().await;
            }
            Fault::Stall => {
                self.connection.closed().await;
            }
            Fault::Malformed => {
                let why = "fault=malformed has no HTTP/3 form: a correct HTTP/3 library cannot send an unparsable response";
                return self.text(io, 400, why).await;
            }
            Fault::CloseMidBody => {
                let len = behaviour
                    .body_size
                    .filter(|&n| n > 0)
                    .unwrap_or(CLOSE_MID_BODY_DEFAULT_LEN);
                io.send_response(head_of(behaviour.status, Some(len)))
                    .await?;
                self.responded();
                io.send_data(filler(len / 2)).await?;
                self.abrupt.notify_one();
                // Held until the connection is gone, as above.
                self.connection.closed().await;
            }
        }
        Ok(())
    }

    /// Sends `head`, counted as a response, then `body`, and ends the stream.
    async fn send(
        &self,
        io: &mut Stream,
        head: http::Response<()>,
        body: Bytes,
    ) -> Result<(), Gone> {
        io.send_response(head).await?;
        self.responded();
        if !body.is_empty() {
            io.send_data(body).await?;
        }
        io.finish().await?;
        Ok(())
    }

    /// A streamed answer, each piece sent when it is due. (Not held by the handler pool: a
    /// stream's wait is its own.)
    async fn stream(&self, io: &mut Stream, streamed: &Streamed) -> Result<(), Gone> {
        io.send_response(crate::answer::stream_head()).await?;
        self.responded();
        let start = Instant::now();
        for (due, piece) in streamed.pieces() {
            crate::delay::sleep((start + due).saturating_duration_since(Instant::now())).await;
            io.send_data(Bytes::from(piece)).await?;
        }
        io.finish().await?;
        Ok(())
    }

    /// A `text/plain` answer: `message` and a newline.
    async fn text(&self, io: &mut Stream, status: u16, message: &str) -> Result<(), Gone> {
        let body = Bytes::from(format!("{message}\n"));
        self.send(io, head_of(status, Some(body.len())), body).await
    }

    /// Counts a response, once its head is on its way (as for HTTP/2).
    fn responded(&self) {
        self.shared.counters.responses.fetch_add(1, Relaxed);
    }
}

/// `len` filler bytes: a slice of [`FILLER`] when it is long enough.
fn filler(len: usize) -> Bytes {
    if len <= FILLER.len() {
        return Bytes::from_static(&FILLER[..len]);
    }
    Bytes::from(vec![FILLER[0]; len])
}
