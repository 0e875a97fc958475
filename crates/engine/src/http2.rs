//! HTTP/2 connections shared by groups of stream slots.
//!
//! With HTTP/2 a worker's connection loop (`worker::task::connection`) drives one *stream slot*
//! instead of one connection: it still takes a request, waits for its response and records
//! it, but the exchange runs as a stream on a [`Group`]'s connection, which up to
//! `max_streams` slots share. The connection is opened lazily by the first slot that needs it
//! (that request records the connect and TLS phases and counts the connection), its driver
//! runs as a local task, and once it dies (GOAWAY, reset, EOF) the next slot that needs it
//! opens a new one. Streams in flight on a dead connection fail with their own error kind and
//! are never retried, but for those above the last stream id of a GOAWAY, which the server
//! says it never processed (RFC 9113 §6.8): they go again on a new connection, counted as
//! re-sent. A request that could not even start a stream on a connection found dead goes to a
//! new connection too, since nothing of it reached the server. Bytes are counted as frames
//! on the wire under `h2` (`wire`), which also sees the GOAWAY that ends a connection.
//!
//! A scripted user (`vu`) is a stream slot too: its group is chosen the same way, and its
//! requests go through the same [`Group::exchange`].
//!
//! Request heads are built once per run ([`Template`]) and cloned per request (a scripted
//! user's, once per request from what it asks for); response bodies are read frame by frame and
//! their flow-control capacity released as they go, so no body is ever buffered whole. When the
//! exchange's [`Progress`] asks for them (a scripted user), the response head is written out in
//! HTTP/1.1's textual form and the body kept up to its cap.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use belier_stats::ErrorKind;
use bytes::Bytes;
use h2::client::SendRequest;

use crate::connection::{
    io_kind, open_stream, Cause, Failure, OpenConnections, Phase, Progress, Response,
    StreamProgress,
};
use crate::parsed_response::Body;

mod stream;
mod wire;

use crate::connection::counted::Counted;
use crate::request::{host_header, Parts, USER_AGENT};
use crate::tls::Tls;
use crate::user::Outgoing;
use crate::{GrpcStream, RequestSpec};
use stream::{Incoming, Sending, Streaming};
use wire::Wire;

/// Per-stream receive window: large enough that a response of a few hundred KiB flows
/// without waiting for WINDOW_UPDATEs, the way browsers configure it.
const STREAM_WINDOW: u32 = 1 << 20;
/// Connection receive window, shared by all streams of a connection.
const CONNECTION_WINDOW: u32 = 16 << 20;

/// What h2 lets the DATA frames a connection has read, but its streams not yet, cost in
/// overhead (each frame under 256 bytes counts 256 less its length) before it ends the
/// connection with ENHANCE_YOUR_CALM, when it carries streaming gRPC calls: 65,536 small
/// frames, where h2's default is 100. A gRPC server sends each message in a frame of its own,
/// and a worker's streams take theirs in turn, so a hundred calls streaming small messages
/// outrun the default in a moment; the flow-control windows still bound the bytes.
const STREAMING_FRAME_BUDGET: usize = 256 * 65_536;

/// Whether a scripted user's request is a gRPC call: its `content-type` is gRPC's.
pub(crate) fn is_grpc(request: &Outgoing) -> bool {
    request.headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("content-type")
            && (v == belier_grpc::call::CONTENT_TYPE || v.starts_with("application/grpc+"))
    })
}

/// Headers HTTP/2 forbids (RFC 9113 §8.2.2); a user's `-H` with one of them is left out
/// rather than making every request malformed. `Host` becomes the `:authority`.
const CONNECTION_HEADERS: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// The request every stream sends, built once per run.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    head: http::Request<()>,
    body: Bytes,
    head_request: bool,
    /// A gRPC call: its status is read from the trailers.
    grpc: bool,
    /// A streaming gRPC call: its messages, counted both ways.
    stream: Option<Streaming>,
}

/// Why a request cannot be sent over HTTP/2.
#[derive(Debug, thiserror::Error)]
#[error("the request cannot be sent over HTTP/2: {0}")]
pub struct TemplateError(String);

impl Template {
    /// Builds the request head of `spec` for an `https` (or `http`) connection; `grpc`: the
    /// request is a gRPC call, whose status is read from its response's trailers.
    pub(crate) fn new(
        spec: &RequestSpec,
        https: bool,
        grpc: bool,
    ) -> Result<Template, TemplateError> {
        let built = Template::build(
            &Parts::of_spec(spec),
            &host_header(&spec.host, spec.port),
            https,
        );
        built.map(|t| Template { grpc, ..t })
    }

    /// Builds a scripted user's request; `host` is the `:authority` unless the user gives a
    /// `Host` header. Made per request, as the HTTP/1.1 bytes of a user's request are. One
    /// whose `content-type` is gRPC's (a plan's `grpc:` step) is a gRPC call: its status is
    /// read from its trailers.
    pub(crate) fn for_outgoing(
        request: &Outgoing,
        host: &str,
        https: bool,
    ) -> Result<Template, TemplateError> {
        let grpc = is_grpc(request);
        Template::build(&Parts::of_outgoing(request), host, https).map(|t| Template { grpc, ..t })
    }

    /// The HTTP/2 form of `r`: its `Host` header (else `host`) as the authority, belier's
    /// `User-Agent` unless one is given, connection-specific headers left out, and a
    /// `Content-Length` for a non-empty body.
    fn build(r: &Parts<'_>, host: &str, https: bool) -> Result<Template, TemplateError> {
        let invalid = |e: &dyn std::fmt::Display| TemplateError(e.to_string());
        // The same rules as HTTP/1.1's, with the same words, before `http`'s own checks.
        r.check(host).map_err(|e| invalid(&e))?;
        let authority = r
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("host"))
            .map_or(host, |(_, v)| v.as_str());
        let uri = http::Uri::builder()
            .scheme(if https { "https" } else { "http" })
            .authority(authority)
            .path_and_query(r.path_and_query)
            .build()
            .map_err(|e| invalid(&e))?;
        let mut builder = http::Request::builder()
            .method(r.method)
            .uri(uri)
            .version(http::Version::HTTP_2);
        if !r.has("user-agent") {
            builder = builder.header("user-agent", USER_AGENT);
        }
        for (name, value) in r.headers {
            if CONNECTION_HEADERS
                .iter()
                .any(|h| name.eq_ignore_ascii_case(h))
            {
                continue;
            }
            // HTTP/2 field names are lower case; `http` lowercases them as it parses.
            builder = builder.header(name.as_str(), value.as_str());
        }
        if !r.body.is_empty() && !r.has("content-length") {
            builder = builder.header("content-length", r.body.len());
        }
        let head = builder.body(()).map_err(|e| invalid(&e))?;
        Ok(Template {
            head,
            body: Bytes::copy_from_slice(r.body),
            head_request: crate::request::is_head(r.method),
            grpc: false,
            stream: None,
        })
    }

    /// The template of a streaming gRPC call (`stream`; `None` leaves it as it is): its
    /// body, the framed request messages, sent one at a time, the first with the head.
    pub(crate) fn streaming(self, stream: Option<GrpcStream>) -> Result<Template, TemplateError> {
        let Some(stream) = stream else {
            return Ok(self);
        };
        let streaming = Streaming::new(&self.body, stream).map_err(TemplateError)?;
        let mut head = self.head;
        // The body is not sent as it is (a message may go several times): no length.
        head.headers_mut().remove(http::header::CONTENT_LENGTH);
        Ok(Template {
            head,
            body: streaming.first(),
            stream: Some(streaming),
            ..self
        })
    }
}

impl Template {
    /// A copy of the template whose head carries `trace`'s `traceparent` (a sampled
    /// request; see `Config::trace_sample`).
    pub(crate) fn with_traceparent(&self, trace: &belier_stats::Trace) -> Template {
        let mut head = self.head.clone();
        let value = trace.traceparent();
        // Lower-case hex digits and dashes: always a valid header value.
        if let Ok(value) = http::HeaderValue::from_bytes(&value) {
            head.headers_mut()
                .insert(crate::trace_context::TRACEPARENT, value);
        }
        Template {
            head,
            body: self.body.clone(),
            head_request: self.head_request,
            grpc: self.grpc,
            stream: self.stream.clone(),
        }
    }

    /// The request's head.
    pub(crate) fn head(&self) -> &http::Request<()> {
        &self.head
    }

    /// The request's body.
    pub(crate) fn body(&self) -> &Bytes {
        &self.body
    }

    /// Whether the request is a HEAD, whose response has no body.
    pub(crate) fn is_head(&self) -> bool {
        self.head_request
    }

    /// Whether the request is a gRPC call.
    pub(crate) fn is_grpc(&self) -> bool {
        self.grpc
    }

    /// Whether the request is a streaming gRPC call.
    pub(crate) fn streams(&self) -> bool {
        self.stream.is_some()
    }
}

impl From<TemplateError> for Failure {
    /// A user's request HTTP/2 cannot carry (an invalid header name or value, a path that is
    /// not a valid URI): nothing was sent, and the run goes on with the user's next request.
    fn from(e: TemplateError) -> Self {
        Failure {
            kind: ErrorKind::OtherIo,
            cause: Cause::Message(e.to_string()),
        }
    }
}

/// Where a group's connections go.
pub(crate) struct Target<'a> {
    pub addr: &'a crate::endpoint::Endpoint,
    pub tls: Option<&'a Tls>,
}

/// An open connection: the handle that starts streams on it, and what is known about it.
struct Open {
    send: SendRequest<Bytes>,
    generation: u64,
    tls_session: Option<String>,
    wire: Rc<Wire>,
    /// Its two ends, when the run records requests by address.
    route: Option<belier_stats::Route>,
}

/// One HTTP/2 connection at a time, shared by the stream slots of a group.
pub(crate) struct Group {
    open: RefCell<Option<Open>>,
    /// Held while a slot opens the connection, so the group's other slots wait for it
    /// instead of opening connections of their own.
    opening: tokio::sync::Mutex<()>,
    generations: Cell<u64>,
    /// The worker's count of open connections, which this group's connections join.
    connections: Rc<OpenConnections>,
    /// Its connections carry streaming gRPC calls (see [`STREAMING_FRAME_BUDGET`]).
    streaming: bool,
}

impl Group {
    /// A group whose connections count among `connections`; `streaming`: they carry
    /// streaming gRPC calls.
    pub(crate) fn new(connections: Rc<OpenConnections>, streaming: bool) -> Group {
        Group {
            open: RefCell::new(None),
            opening: tokio::sync::Mutex::new(()),
            generations: Cell::new(0),
            connections,
            streaming,
        }
    }

    fn current(&self) -> Option<(SendRequest<Bytes>, u64, Rc<Wire>)> {
        self.open
            .borrow()
            .as_ref()
            .map(|o| (o.send.clone(), o.generation, Rc::clone(&o.wire)))
    }

    /// Forgets connection `generation` (dead); a newer one stays.
    fn closed(&self, generation: u64) {
        let mut open = self.open.borrow_mut();
        if open.as_ref().is_some_and(|o| o.generation == generation) {
            *open = None;
        }
    }

    /// Whether the group's connection received a GOAWAY and has not closed yet.
    pub(crate) fn going_away(&self) -> bool {
        self.open.borrow().as_ref().is_some_and(|o| o.wire.goaway())
    }

    /// The TLS description of the current connection, if it is a TLS one.
    pub(crate) fn tls_session(&self) -> Option<String> {
        self.open.borrow().as_ref()?.tls_session.clone()
    }

    /// Opens the group's connection unless another slot did while this one waited (then `p`
    /// is left as it was).
    pub(crate) async fn connect(
        self: &Rc<Self>,
        target: &Target<'_>,
        p: &mut Progress,
    ) -> Result<(), Failure> {
        let _opening = self.opening.lock().await;
        if self.open.borrow().is_some() {
            return Ok(());
        }
        let stream = open_stream(target.addr, target.tls, p).await?;
        if target.tls.is_some() && stream.alpn() != Some(b"h2") {
            let chosen = stream
                .alpn()
                .map_or("none".into(), |a| String::from_utf8_lossy(a).into_owned());
            return Err(Failure {
                kind: ErrorKind::TlsProtocol,
                cause: Cause::Message(format!("server did not agree to HTTP/2 (ALPN {chosen})")),
            });
        }
        let tls_session = stream.tls_session(target.tls.is_some_and(Tls::pinned));
        p.phase = Phase::Exchanging;
        let (stream, stamped) = match p.kernel_stamps {
            true => stream.keeping_stamps(),
            false => (stream, false),
        };
        let wire = Rc::new(if stamped {
            Wire::stamped()
        } else {
            Wire::default()
        });
        let mut builder = h2::client::Builder::new();
        builder
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .enable_push(false);
        if self.streaming {
            builder.data_frame_budget(STREAMING_FRAME_BUDGET);
        }
        let (send, connection) = builder
            .handshake::<_, Bytes>(Counted::new(stream, Rc::clone(&wire)))
            .await
            .map_err(|e| h2_failure(e, false))?;
        let generation = self.generations.get() + 1;
        self.generations.set(generation);
        let group: Weak<Group> = Rc::downgrade(self);
        let connections = Rc::clone(&self.connections);
        connections.opened();
        let ended = Rc::clone(&wire);
        tokio::task::spawn_local(async move {
            // The driver ends when the connection does, whatever the reason: the streams on it
            // see the error themselves; the group only needs to know to open a new one.
            // Ended by the server: a GOAWAY, or an end belier did not ask for (belier ends
            // its connections by letting go of them, which ends the driver cleanly).
            let failed = connection.await.is_err();
            connections.closed(ended.goaway() || failed);
            if let Some(group) = group.upgrade() {
                group.closed(generation);
            }
        });
        *self.open.borrow_mut() = Some(Open {
            send,
            generation,
            tls_session,
            wire,
            route: p.route,
        });
        Ok(())
    }

    /// Sends `request` as a stream on the group's connection (opening it if needed) and reads
    /// the response, recording progress into `p`.
    ///
    /// A stream above the last stream id of a GOAWAY the server sent was not processed (RFC
    /// 9113 §6.8): it goes again on a new connection, and `p.resent` says so. Counted in `p`:
    /// the bytes the connection carried, frames on the wire, since the previous exchange on it
    /// ended (see [`Wire::take`]).
    pub(crate) async fn exchange(
        self: &Rc<Self>,
        target: &Target<'_>,
        request: &Template,
        p: &mut Progress,
    ) -> Result<Response, Failure> {
        // Held to the end: a client stream's messages go on while the response is read.
        let (response, wire, id, _sending) = self.respond(target, request, p).await?;
        let now = Instant::now();
        p.first_byte = Some(stamped(wire.stream_stamps(id).first, p.sent, now).unwrap_or(now));
        let (head, mut body) = response.into_parts();
        crate::parsed_response::read_head(&head, b"HTTP/2 ", p);
        if !request.head_request {
            read_body(&head, &mut body, request, p)
                .await
                .inspect_err(|_| take_bytes(&wire, p))?;
        }
        let grpc = match request.grpc {
            false => None,
            true => Some(
                grpc_code(&head, &mut body)
                    .await
                    .inspect_err(|_| take_bytes(&wire, p))?,
            ),
        };
        take_bytes(&wire, p);
        // With stamps, completed when the frame that ended the stream reached the host. A
        // streaming call's messages are timed as they are read, which no stamp says: its end
        // is too, so that its latency, first message and gaps are read on one clock.
        p.completed = match request.stream.is_some() || p.split.is_some() {
            true => None,
            false => stamped(wire.stream_stamps(id).end, p.sent, Instant::now()),
        };
        wire.forget(id);
        let status = head.status.as_u16();
        Ok(Response {
            status,
            grpc,
            reusable: true,
        })
    }

    /// Sends `request` and waits for its response's head; returns it with the connection's
    /// counters, the stream's id and, for a client stream, the task sending its messages.
    async fn respond(
        self: &Rc<Self>,
        target: &Target<'_>,
        request: &Template,
        p: &mut Progress,
    ) -> Result<Responded, Failure> {
        // A request goes again as often as a GOAWAY leaves its stream unprocessed: a server
        // that ends each connection after a few streams (nginx's `keepalive_requests`) with
        // more in flight than that can leave the same request above the last stream id several
        // times running. Each time a new connection is opened, and the request's timeout
        // bounds the whole, as it bounds the exchange.
        loop {
            // A streaming call counts its messages from here, whatever happens to it; a
            // stream the server never processed counts none.
            // A streamed body (`--stream`) counts its messages the same way.
            p.stream =
                (request.stream.is_some() || p.split.is_some()).then(StreamProgress::default);
            if let Some(split) = &mut p.split {
                split.reset();
            }
            let (response, generation, wire, rest) = self.start(target, request, p).await?;
            let sent = Instant::now();
            p.sent = Some(sent);
            let sending = match (&mut p.stream, &request.stream) {
                (Some(progress), Some(streaming)) => {
                    progress.sent.sent(sent);
                    rest.map(|body| streaming.send_rest(body, Rc::clone(&progress.sent)))
                }
                _ => None,
            };
            let id = u32::from(response.stream_id());
            match response.await {
                Ok(response) => return Ok((response, wire, id, sending)),
                Err(e) if e.is_go_away() && e.is_remote() => {
                    p.resent = true;
                    take_bytes(&wire, p);
                    self.closed(generation);
                }
                Err(e) => {
                    take_bytes(&wire, p);
                    return Err(h2_failure(e, false));
                }
            }
        }
    }

    /// Starts `request` as a stream on the group's connection, opening one if there is none;
    /// returns the response to come, the connection's generation and counters, and the
    /// stream's sending half when a client stream's messages follow the first.
    async fn start(
        self: &Rc<Self>,
        target: &Target<'_>,
        request: &Template,
        p: &mut Progress,
    ) -> Result<Started, Failure> {
        // The connection this call opened, if it did.
        let mut mine = None;
        loop {
            let Some((send, generation, wire)) = self.current() else {
                let before = p.connected;
                self.connect(target, p).await?;
                if p.connected != before {
                    mine = Some(self.generations.get());
                }
                continue;
            };
            p.phase = Phase::Exchanging;
            // The stream goes over the connection's route, whoever opened it.
            p.route = self.open.borrow().as_ref().and_then(|o| o.route);
            // Waits for a free stream if the server's SETTINGS_MAX_CONCURRENT_STREAMS is lower
            // than the group's slots.
            let started = async {
                let mut send = send.ready().await?;
                let more = request.stream.as_ref().is_some_and(Streaming::more);
                let end_of_stream = request.body.is_empty() && !more;
                let (response, mut body) =
                    send.send_request(request.head.clone(), end_of_stream)?;
                if !end_of_stream {
                    // h2 queues what the peer's window does not take yet.
                    body.send_data(request.body.clone(), !more)?;
                }
                Ok::<_, h2::Error>((response, more.then_some(body)))
            };
            match started.await {
                Ok((response, rest)) => return Ok((response, generation, wire, rest)),
                Err(e) => {
                    // A connection that could not even start the stream is dead (or going
                    // away): nothing was sent, so the request goes to a new one (a server
                    // that ends connections after a few streams may have sent that one a
                    // GOAWAY too by the time this slot gets to it; the timeout bounds it all).
                    // A connection this request opened that cannot start it is another
                    // matter: its failure is the request's.
                    self.closed(generation);
                    if mine == Some(generation) || !(e.is_io() || e.is_go_away()) {
                        return Err(h2_failure(e, false));
                    }
                }
            }
        }
    }
}

/// A started stream: its response to come, its connection's generation and counters, and
/// its sending half when a client stream's messages follow the first.
type Started = (
    h2::client::ResponseFuture,
    u64,
    Rc<Wire>,
    Option<h2::SendStream<Bytes>>,
);

/// A response's head come: the response, its connection's counters, the stream's id, and
/// the task sending a client stream's messages.
type Responded = (
    http::Response<h2::RecvStream>,
    Rc<Wire>,
    u32,
    Option<Sending>,
);

/// Reads the response's body frame by frame, releasing its flow-control capacity as it goes:
/// kept, decoded and cut into messages as `p` asks (see [`Body`]), a streaming call's
/// messages counted and stamped.
async fn read_body(
    head: &http::response::Parts,
    body: &mut h2::RecvStream,
    request: &Template,
    p: &mut Progress,
) -> Result<(), Failure> {
    let mut reading = Body::new(head, p)?;
    let mut incoming = request
        .stream
        .as_ref()
        .map(|_| Incoming::new(&head.headers));
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| h2_failure(e, true))?;
        if reading.wanted() {
            reading.take(p, &chunk)?;
        }
        if let (Some(incoming), Some(stream)) = (&mut incoming, &mut p.stream) {
            incoming
                .feed(&chunk, Instant::now(), stream)
                .map_err(grpc_failure)?;
        }
        // Returning the window at once keeps the server sending.
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    if let Some(incoming) = &incoming {
        incoming.finish().map_err(grpc_failure)?;
    }
    reading.finish(p)
}

/// A streaming call's response whose messages cannot be read.
fn grpc_failure(e: belier_grpc::FrameError) -> Failure {
    Failure {
        kind: ErrorKind::MalformedResponse,
        cause: Cause::Message(format!("gRPC response: {e}")),
    }
}

/// A gRPC call's status code, once its body has been read: from its trailers, or from its
/// headers when it has none (a trailers-only response), else what its HTTP status stands for
/// (see [`belier_grpc::Code::of_response`]).
async fn grpc_code(head: &http::response::Parts, body: &mut h2::RecvStream) -> Result<u8, Failure> {
    let trailers = body.trailers().await.map_err(|e| h2_failure(e, true))?;
    let code =
        belier_grpc::Code::of_response(head.status.as_u16(), &head.headers, trailers.as_ref());
    Ok(code.number())
}

/// The instant of a kernel receive stamp, clamped between the request's send and `now`.
fn stamped(stamp: Option<Duration>, sent: Option<Instant>, now: Instant) -> Option<Instant> {
    Some(crate::connection::stamp::to_instant(stamp?, sent?, now))
}

/// Adds what the connection carried since the last exchange on it took its bytes.
fn take_bytes(wire: &Wire, p: &mut Progress) {
    let (read, written) = wire.take();
    p.bytes_in += read;
    p.bytes_out += written;
}

/// The error kind of an HTTP/2 failure; `head_seen` says whether the response head had come.
fn h2_failure(e: h2::Error, head_seen: bool) -> Failure {
    let closed = if head_seen {
        ErrorKind::ClosedMidBody
    } else {
        ErrorKind::ClosedBeforeResponse
    };
    let kind = if let Some(io) = e.get_io() {
        match io.kind() {
            // h2 reports a connection that reached EOF (no GOAWAY) as a broken pipe.
            std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::UnexpectedEof => closed,
            other => io_kind(other, false),
        }
    } else if e.is_reset() && e.is_remote() {
        ErrorKind::StreamReset
    } else if e.is_go_away() && e.is_remote() {
        // The server closed the connection (gracefully or not) before this stream ended.
        closed
    } else if e.is_library() || e.is_reset() || e.is_go_away() {
        // h2 found the server's frames invalid and reset the stream or the connection.
        ErrorKind::MalformedResponse
    } else {
        ErrorKind::OtherIo
    };
    Failure {
        kind,
        cause: Cause::Http2(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user::Reply;

    fn outgoing(headers: &[(&str, &str)], body: &[u8]) -> Outgoing {
        Outgoing {
            step: 0,
            origin: 0,
            method: "POST".into(),
            path_and_query: "/items?page=2".into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: body.to_vec(),
            keep_body: false,
            timeout: None,
            stream: None,
        }
    }

    #[test]
    fn a_users_request_becomes_an_http2_head() {
        let request = outgoing(
            &[
                ("X-Token", "abc"),
                ("Connection", "keep-alive"),
                ("Upgrade", "websocket"),
            ],
            b"hello",
        );
        let t = Template::for_outgoing(&request, "api.test:8080", true).unwrap();
        assert_eq!(t.head.method(), "POST");
        assert_eq!(t.head.uri(), "https://api.test:8080/items?page=2");
        let h = t.head.headers();
        assert_eq!(h["x-token"], "abc");
        assert_eq!(h["user-agent"], USER_AGENT);
        assert_eq!(h["content-length"], "5");
        assert!(h.get("connection").is_none() && h.get("upgrade").is_none());
        assert_eq!(&t.body[..], b"hello");
        assert!(!t.head_request);
    }

    #[test]
    fn a_host_header_is_the_authority_and_a_user_agent_replaces_belier_s() {
        let request = outgoing(&[("Host", "other.test"), ("User-Agent", "me")], b"");
        let t = Template::for_outgoing(&request, "api.test:8080", false).unwrap();
        assert_eq!(t.head.uri(), "http://other.test/items?page=2");
        assert!(t.head.headers().get("host").is_none());
        assert_eq!(t.head.headers()["user-agent"], "me");
        assert!(t.head.headers().get("content-length").is_none());
    }

    #[test]
    fn a_request_http2_cannot_carry_is_an_error() {
        let request = outgoing(&[("Bad Name", "x")], b"");
        let e = Template::for_outgoing(&request, "api.test", false).unwrap_err();
        assert!(e.to_string().contains("HTTP/2"), "{e}");
        assert_eq!(Failure::from(e).kind, ErrorKind::OtherIo);
    }

    #[test]
    fn a_request_that_could_split_is_refused_before_http_sees_it_and_by_http_too() {
        for (headers, path) in [
            (&[("X-A", "a\r\nX-Injected: 1")][..], "/"),
            (&[("X-A\r\nX-Injected", "1")][..], "/"),
            (&[("X-A", "a\0")][..], "/"),
            (&[][..], "/a\r\nX-Injected: 1"),
        ] {
            let mut request = outgoing(headers, b"");
            request.path_and_query = path.into();
            let e = Template::for_outgoing(&request, "api.test", false).unwrap_err();
            assert!(
                e.to_string().contains("line break") || e.to_string().contains("NUL"),
                "{e}"
            );
        }
        // `http`'s own checks, which stood alone before the rules above: they refuse the same.
        assert!(http::HeaderValue::from_str("a\r\nX: 1").is_err());
        assert!(http::HeaderValue::from_bytes(b"a\0").is_err());
        assert!(http::HeaderName::from_bytes(b"X-A\r\nX").is_err());
        assert!(http::Method::from_bytes(b"GET\r\n").is_err());
        assert!("/a\r\nX: 1".parse::<http::uri::PathAndQuery>().is_err());
    }

    #[test]
    fn the_response_head_reads_like_http1() {
        let (head, ()) = http::Response::builder()
            .status(404)
            .header("content-type", "text/plain")
            .header("set-cookie", "a=1")
            .header("set-cookie", "b=2")
            .body(())
            .unwrap()
            .into_parts();
        let mut out = Vec::new();
        crate::parsed_response::write_head(&mut out, b"HTTP/2 ", &head);
        assert_eq!(
            out,
            b"HTTP/2 404\r\ncontent-type: text/plain\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n\r\n"
        );
        let reply = Reply {
            status: 404,
            head: &out,
            body: b"",
            body_truncated: false,
            latency: std::time::Duration::ZERO,
            grpc: None,
        };
        assert_eq!(reply.header("Content-Type"), Some(&b"text/plain"[..]));
        assert_eq!(
            reply.headers().filter(|(n, _)| *n == "set-cookie").count(),
            2
        );
    }
}
