//! One accepted connection: parse requests, read bodies, answer or misbehave.
//!
//! A connection is a loop over pipelined requests. Responses are appended to an output buffer
//! and written when no further complete request is waiting, so a pipelined burst gets one
//! write. Anything that ends the connection (client gone, `Connection: close`, a fault, a bad
//! request) is a [`Finish`], which says how the socket is to be closed.
//!
//! The same code serves plain TCP, Unix domain sockets and TLS over either: a connection is
//! generic over its [`Transport`], and faults that are about the socket itself (reset, abrupt
//! close) reach under the TLS layer.

use std::borrow::Cow;
use std::convert::Infallible;
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

use crate::behaviour::{Behaviour, Fault, CLOSE_MID_BODY_DEFAULT_LEN, DEFAULT_BODY, JSON_BODY};
use crate::handlers::Admission;
use crate::request::{parse_chunk_size, BodyFraming, Request, MAX_HEAD_BYTES};
use crate::response::{self, ConnectionHeader, Framing, CONTINUE, FILLER, MALFORMED};
use crate::shared::Shared;
use crate::socket::Socket;

/// Request body bytes kept per [`SeenRequest`](crate::SeenRequest); the rest is counted but not
/// stored.
pub const RECORDED_BODY_BYTES: usize = 64 * 1024;

/// Longest chunk-size or trailer line in a chunked request body.
const MAX_LINE_BYTES: usize = 4 * 1024;

/// Initial read buffer: large enough for a burst of pipelined small requests in one read.
const READ_BUFFER_BYTES: usize = 16 * 1024;

/// Output is written once it reaches this size even if more pipelined requests are waiting,
/// which bounds memory per connection and streams large bodies.
const FLUSH_AT_BYTES: usize = 64 * 1024;

/// How long a graceful close keeps reading after sending FIN. Closing a socket whose receive
/// queue is not empty makes the kernel send RST instead of FIN, and an RST can make the client
/// lose the response it has not read yet; draining first avoids that (the "lingering close" of
/// Apache and nginx). Bounded so an unresponsive client cannot pin the task.
pub(crate) const LINGER: Duration = Duration::from_secs(1);

/// A connection's byte stream: a socket, or TLS over one.
pub(crate) trait Transport: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// The socket under any TLS layer.
    type Raw: Socket;
    /// The socket underneath any TLS layer, for faults that act on the socket itself.
    fn raw(&mut self) -> &mut Self::Raw;
}

impl Transport for TcpStream {
    type Raw = TcpStream;
    fn raw(&mut self) -> &mut TcpStream {
        self
    }
}

impl Transport for UnixStream {
    type Raw = UnixStream;
    fn raw(&mut self) -> &mut UnixStream {
        self
    }
}

/// How a connection ends.
#[derive(Debug)]
enum Finish {
    /// The client went away or the socket failed: just drop it.
    Drop,
    /// Write what is pending, send FIN, drain, drop. Over TLS, `close_notify` precedes the FIN.
    Close,
    /// [`Finish::Close`] without `close_notify` over TLS: the FIN goes straight onto the TCP
    /// socket, so a TLS client sees the connection end as if the server had crashed (rustls
    /// reports `UnexpectedEof`). Over plain TCP, the same as [`Finish::Close`].
    Cut,
    /// The request could not be parsed: answer `400` with this reason, then [`Finish::Close`].
    BadRequest(&'static str),
    /// Write what is pending, then abort with RST.
    Reset,
    /// Write what is pending, then hold the connection open without answering.
    Stall,
    /// A WebSocket upgrade (its key and subprotocol): answer 101, then echo each message
    /// after the delay.
    WebSocket((String, Option<String>), Duration),
}

impl From<io::Error> for Finish {
    fn from(_: io::Error) -> Self {
        // Nobody reads the error: a test server's clients see the effect on their own socket.
        Finish::Drop
    }
}

/// The socket and its buffers.
struct Io<S> {
    stream: S,
    /// Unconsumed input is `buf[start..end]`.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    out: Vec<u8>,
}

/// Counts a connection as open until dropped. A field of its own, declared last in
/// [`Connection`], so that it drops after the socket has been closed.
pub(crate) struct OpenGuard(Arc<Shared>);

impl OpenGuard {
    pub(crate) fn new(shared: &Arc<Shared>) -> Self {
        shared.counters.open.fetch_add(1, Relaxed);
        OpenGuard(Arc::clone(shared))
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.counters.open.fetch_sub(1, Relaxed);
    }
}

/// A connection task's state.
pub(crate) struct Connection<S> {
    io: Io<S>,
    shared: Arc<Shared>,
    seq: u64,
    /// Requests parsed on this connection so far: the next one's index, for the `token` knob.
    served: u64,
    _open: OpenGuard,
}

impl<S: Transport> Connection<S> {
    /// Takes over an accepted (and, for TLS, handshaken) socket, counted as open by `open`.
    pub(crate) fn new(stream: S, shared: Arc<Shared>, seq: u64, open: OpenGuard) -> Self {
        Connection {
            io: Io {
                stream,
                buf: vec![0; READ_BUFFER_BYTES],
                start: 0,
                end: 0,
                out: Vec::with_capacity(READ_BUFFER_BYTES),
            },
            _open: open,
            shared,
            seq,
            served: 0,
        }
    }

    /// Like [`Connection::new`], for a socket from which `input` was already read.
    pub(crate) fn with_input(
        stream: S,
        shared: Arc<Shared>,
        seq: u64,
        open: OpenGuard,
        input: &[u8],
    ) -> Self {
        let mut connection = Connection::new(stream, shared, seq, open);
        connection.io.buf[..input.len()].copy_from_slice(input);
        connection.io.end = input.len();
        connection
    }

    /// Serves the connection until it ends. Cancel-safe in the sense that matters here:
    /// dropping the future (server stop) closes the socket.
    pub(crate) async fn run(mut self) {
        let finish = match self.requests().await {
            Ok(never) => match never {},
            Err(finish) => finish,
        };
        let io = &mut self.io;
        match finish {
            Finish::Drop => {}
            Finish::Close => io.close(true).await,
            Finish::Cut => io.close(false).await,
            Finish::BadRequest(why) => {
                response::write_text(&mut io.out, 400, ConnectionHeader::Close, why);
                io.close(true).await;
            }
            Finish::Reset => {
                let _ = io.flush().await;
                io.stream.raw().reset_on_close();
            }
            Finish::Stall => {
                if io.flush().await.is_ok() {
                    io.discard_until_eof().await;
                }
            }
            Finish::WebSocket((key, protocol), delay) => {
                let upgrade = crate::websocket::Upgrade {
                    key: &key,
                    protocol: protocol.as_deref(),
                    read: &io.buf[io.start..io.end],
                    delay,
                };
                crate::websocket::echo(&mut io.stream, upgrade).await;
            }
        }
    }

    /// Handles requests until one of them ends the connection.
    async fn requests(&mut self) -> Result<Infallible, Finish> {
        loop {
            let input = &self.io.buf[self.io.start..self.io.end];
            let request = match Request::parse(input, &self.shared, self.seq) {
                Ok(Some(request)) => request,
                Ok(None) => {
                    if self.io.end - self.io.start >= MAX_HEAD_BYTES {
                        return Err(Finish::BadRequest("request head too large"));
                    }
                    // Nothing complete is left: this is the moment to answer the burst so far.
                    self.io.flush().await?;
                    if self.io.fill().await? == 0 {
                        return Err(Finish::Drop);
                    }
                    continue;
                }
                Err(why) => return Err(Finish::BadRequest(why)),
            };
            self.io.start += request.head_len;
            // Counted before the body, the delay and any fault, so that a test can rely on
            // "the server saw exactly N" whatever happened next.
            self.shared.counters.requests.fetch_add(1, Relaxed);
            let index = self.served;
            self.served += 1;
            self.handle(request, index).await?;
        }
    }

    /// Reads the body, then answers (or misbehaves) as the request's behaviour says. `index` is
    /// the request's position on this connection, from 0.
    async fn handle(&mut self, mut request: Request, index: u64) -> Result<(), Finish> {
        self.read_body(&mut request).await?;
        let close = !request.keep_alive;
        let connection = ConnectionHeader::of(close, request.http10);
        let knobs = match request.knobs {
            Ok(knobs) => knobs,
            Err(err) => {
                response::write_text(&mut self.io.out, 400, connection, &err.to_string());
                return answered(&self.shared, close);
            }
        };
        if request.metrics {
            let body = self.shared.metrics();
            response::write_text(&mut self.io.out, 200, connection, &body);
            return answered(&self.shared, close);
        }
        // A stream's wait is its own: not held by the handler pool.
        if let Some(streamed) = request.streamed.take() {
            return self.answer_streamed(streamed, connection, close).await;
        }
        let Some(handled) = self.wait_for_pool(connection).await? else {
            return answered(&self.shared, close);
        };
        let behaviour = knobs.as_ref().unwrap_or(&self.shared.defaults);
        if let Some(upgrade) = request.websocket.take() {
            return Err(Finish::WebSocket(upgrade, behaviour.delay));
        }
        if !behaviour.delay.is_zero() {
            // Earlier pipelined responses are not held back by this request's delay.
            self.io.flush().await?;
            crate::delay::sleep(behaviour.delay).await;
        }
        if let Some(fault) = behaviour.fault {
            return Err(self.io.misbehave(fault, behaviour, connection).await);
        }

        let close = close || behaviour.close;
        let connection = if close {
            ConnectionHeader::Close
        } else {
            connection
        };
        if let Some(location) = &request.redirect {
            let status = match behaviour.status {
                s @ (301 | 303 | 307 | 308) => s,
                _ => 302,
            };
            response::write_redirect(&mut self.io.out, status, location, connection);
            return answered(&self.shared, close);
        }
        if behaviour.token || behaviour.json {
            let token = behaviour.token.then(|| format!("t{}-{index}", self.seq));
            write_json(
                &mut self.io.out,
                behaviour,
                token,
                index,
                connection,
                request.is_head,
            );
            return answered(&self.shared, close);
        }
        let framing = response::framing(behaviour, request.http10);
        if request.gzip && !request.is_head && matches!(framing, Framing::Length(n) if n > 0) {
            response::write_gzip(
                &mut self.io.out,
                behaviour.status,
                behaviour.body_size,
                connection,
            );
            return answered(&self.shared, close);
        }
        if behaviour.timing {
            let (status, out) = (behaviour.status, &mut self.io.out);
            response::write_timed_head(out, status, framing, connection, handled);
        } else if knobs.is_none() && !request.http10 {
            let head = if close {
                &self.shared.default_head_close
            } else {
                &self.shared.default_head
            };
            self.io.out.extend_from_slice(head);
        } else {
            response::write_head(&mut self.io.out, behaviour.status, framing, connection);
        }
        if !request.is_head {
            self.io.push_framed_body(behaviour, framing).await?;
        }
        // Counted once the response is complete in the output buffer but before it is written,
        // so that a client which has read a response always finds it counted.
        answered(&self.shared, close)?;
        if self.io.out.len() >= FLUSH_AT_BYTES {
            self.io.flush().await?;
        }
        Ok(())
    }

    /// Answers `/sse` and the LLM paths: the stream, or a `400` naming the knob that does not
    /// read.
    async fn answer_streamed(
        &mut self,
        streamed: Result<crate::streamed::Streamed, String>,
        connection: ConnectionHeader,
        close: bool,
    ) -> Result<(), Finish> {
        match streamed {
            Ok(streamed) => self.io.stream(&streamed, connection).await?,
            Err(why) => response::write_text(&mut self.io.out, 400, connection, &why),
        }
        answered(&self.shared, close)
    }

    /// Reads the request's body (after `100 Continue` if it asks for it), keeping what
    /// recording keeps, and records the request.
    async fn read_body(&mut self, request: &mut Request) -> Result<(), Finish> {
        let received = &self.shared.counters.body_bytes_received;
        if request.body != BodyFraming::Empty {
            if request.expect_continue {
                self.io.out.extend_from_slice(CONTINUE);
                self.io.flush().await?;
            }
            let keep = request.seen.as_mut().map(|seen| &mut seen.body);
            match request.body {
                BodyFraming::Empty => {}
                BodyFraming::Length(n) => self.io.read_body(n, keep, received).await?,
                BodyFraming::Chunked => self.io.read_chunked(keep, received).await?,
            }
        }
        if let Some(seen) = request.seen.take() {
            self.shared.record(seen);
        }
        Ok(())
    }

    /// With a handler pool, waits for a handler and serves for its time; false if the pool
    /// shed the request instead (its `503` written).
    async fn wait_for_pool(
        &mut self,
        connection: ConnectionHeader,
    ) -> Result<Option<Instant>, Finish> {
        let Some(pool) = &self.shared.pool else {
            return Ok(Some(Instant::now()));
        };
        // Earlier pipelined responses are not held back by this request's wait.
        self.io.flush().await?;
        match pool.admit().await {
            Admission::Served(handler) => Ok(Some(pool.serve(handler).await)),
            Admission::Rejected if pool.settings.shed => {
                response::write_text(&mut self.io.out, 503, connection, "overloaded\n");
                Ok(None)
            }
            Admission::Rejected => Err(Finish::Close),
        }
    }
}

/// Counts a complete response; the connection ends after it if `close`.
fn answered(shared: &Shared, close: bool) -> Result<(), Finish> {
    shared.counters.responses.fetch_add(1, Relaxed);
    if close {
        Err(Finish::Close)
    } else {
        Ok(())
    }
}

/// A JSON answer: the fixed body, or a session token (`t{connection}-{index}`) in the body
/// and a cookie.
fn write_json(
    out: &mut Vec<u8>,
    behaviour: &Behaviour,
    token: Option<String>,
    index: u64,
    connection: ConnectionHeader,
    is_head: bool,
) {
    let body = match &token {
        Some(token) => Cow::Owned(format!(r#"{{"token":"{token}","user":{index}}}"#)),
        None => Cow::Borrowed(JSON_BODY),
    };
    let json = response::Json {
        body: body.as_bytes(),
        session: token.as_deref(),
    };
    json.write(out, behaviour.status, connection, is_head);
}

impl<S: Transport> Io<S> {
    /// Misbehaves as `fault` says; how the connection then ends.
    async fn misbehave(
        &mut self,
        fault: Fault,
        behaviour: &Behaviour,
        connection: ConnectionHeader,
    ) -> Finish {
        match fault {
            Fault::Reset => Finish::Reset,
            Fault::CloseBeforeHeaders => Finish::Cut,
            Fault::Stall => Finish::Stall,
            Fault::Malformed => {
                self.out.extend_from_slice(MALFORMED);
                Finish::Close
            }
            Fault::CloseMidBody => {
                let len = behaviour
                    .body_size
                    .filter(|&n| n > 0)
                    .unwrap_or(CLOSE_MID_BODY_DEFAULT_LEN);
                let head = Framing::Length(len);
                response::write_head(&mut self.out, behaviour.status, head, connection);
                match self.push_body(false, 0..len / 2).await {
                    Ok(()) => Finish::Cut,
                    Err(e) => e.into(),
                }
            }
        }
    }

    /// Sends a streamed answer, each piece a chunk written when it is due.
    async fn stream(
        &mut self,
        streamed: &crate::streamed::Streamed,
        connection: ConnectionHeader,
    ) -> io::Result<()> {
        response::write_stream_head(&mut self.out, connection);
        self.flush().await?;
        let start = std::time::Instant::now();
        for (due, piece) in streamed.pieces() {
            crate::delay::sleep((start + due).saturating_duration_since(std::time::Instant::now()))
                .await;
            response::write_chunk_size(&mut self.out, piece.len());
            self.out.extend_from_slice(&piece);
            self.out.extend_from_slice(b"\r\n");
            self.flush().await?;
        }
        self.out.extend_from_slice(b"0\r\n\r\n");
        Ok(())
    }

    /// Writes the response body `framing` announces, whole or in chunks.
    async fn push_framed_body(
        &mut self,
        behaviour: &Behaviour,
        framing: Framing,
    ) -> io::Result<()> {
        let len = behaviour.body_size.unwrap_or(DEFAULT_BODY.len());
        let default_body = behaviour.body_size.is_none();
        match framing {
            Framing::Bodiless => {}
            Framing::Length(len) => self.push_body(default_body, 0..len).await?,
            Framing::Chunked => {
                let mut at = 0;
                for chunk in response::chunk_lengths(len) {
                    response::write_chunk_size(&mut self.out, chunk);
                    self.push_body(default_body, at..at + chunk).await?;
                    self.out.extend_from_slice(b"\r\n");
                    at += chunk;
                }
                self.out.extend_from_slice(b"0\r\n\r\n");
            }
        }
        Ok(())
    }
}

impl<S: Transport> Io<S> {
    /// Reads more input after what is buffered. Returns 0 at end of stream.
    async fn fill(&mut self) -> io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 && self.buf.len() - self.end < self.buf.len() / 2 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            // Only a head or line longer than the buffer gets here; callers bound both.
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let n = self.stream.read(&mut self.buf[self.end..]).await?;
        self.end += n;
        Ok(n)
    }

    async fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.stream.write_all(&self.out).await?;
            // A no-op for TCP; TLS may still hold records that `write_all` could not send.
            self.stream.flush().await?;
            self.out.clear();
        }
        Ok(())
    }

    /// Appends `range` of the body (the default body, or filler), writing out as it fills up.
    async fn push_body(&mut self, default_body: bool, mut range: Range<usize>) -> io::Result<()> {
        while !range.is_empty() {
            let piece = if default_body {
                &DEFAULT_BODY[range.clone()]
            } else {
                &FILLER[..range.len().min(FILLER.len())]
            };
            self.out.extend_from_slice(piece);
            range.start += piece.len();
            if self.out.len() >= FLUSH_AT_BYTES {
                self.flush().await?;
            }
        }
        Ok(())
    }

    /// Consumes `len` body bytes, keeping the first [`RECORDED_BODY_BYTES`] in `keep`.
    async fn read_body(
        &mut self,
        len: u64,
        mut keep: Option<&mut Vec<u8>>,
        received: &AtomicU64,
    ) -> Result<(), Finish> {
        let mut remaining = len;
        while remaining > 0 {
            if self.start == self.end && self.fill().await? == 0 {
                return Err(Finish::Drop);
            }
            let available = self.end - self.start;
            let take = usize::try_from(remaining).map_or(available, |r| r.min(available));
            if let Some(keep) = keep.as_deref_mut() {
                let room = RECORDED_BODY_BYTES.saturating_sub(keep.len());
                keep.extend_from_slice(&self.buf[self.start..self.start + take.min(room)]);
            }
            self.start += take;
            remaining -= take as u64;
            received.fetch_add(take as u64, Relaxed);
        }
        Ok(())
    }

    /// Consumes a chunked body, counting and keeping the decoded bytes.
    async fn read_chunked(
        &mut self,
        mut keep: Option<&mut Vec<u8>>,
        received: &AtomicU64,
    ) -> Result<(), Finish> {
        loop {
            let line = self.read_line().await?;
            let size =
                parse_chunk_size(&self.buf[line]).ok_or(Finish::BadRequest("bad chunk size"))?;
            if size == 0 {
                // Trailers, ignored, up to the blank line.
                while !self.read_line().await?.is_empty() {}
                return Ok(());
            }
            self.read_body(size, keep.as_deref_mut(), received).await?;
            if !self.read_line().await?.is_empty() {
                return Err(Finish::BadRequest("chunk data longer than its size"));
            }
        }
    }

    /// Consumes one line and returns where it is in `buf`, without its line ending. Valid until
    /// the next read.
    async fn read_line(&mut self) -> Result<Range<usize>, Finish> {
        loop {
            let buffered = &self.buf[self.start..self.end];
            if let Some(newline) = buffered.iter().position(|&b| b == b'\n') {
                let line_start = self.start;
                let mut line_end = self.start + newline;
                self.start = line_end + 1;
                if line_end > line_start && self.buf[line_end - 1] == b'\r' {
                    line_end -= 1;
                }
                return Ok(line_start..line_end);
            }
            if buffered.len() > MAX_LINE_BYTES {
                return Err(Finish::BadRequest("chunk line too long"));
            }
            if self.fill().await? == 0 {
                return Err(Finish::Drop);
            }
        }
    }

    /// Writes what is pending, sends FIN (after `close_notify` over TLS, if `notify`), then
    /// drains for at most [`LINGER`].
    async fn close(&mut self, notify: bool) {
        if self.flush().await.is_err() {
            return;
        }
        let shutdown = if notify {
            self.stream.shutdown().await
        } else {
            self.stream.raw().shutdown().await
        };
        if shutdown.is_ok() {
            let _ = tokio::time::timeout(LINGER, self.discard_until_eof()).await;
        }
    }

    /// Reads and drops input until the client closes. Reads the socket directly: nothing
    /// read is used, so there is no point in decrypting it.
    async fn discard_until_eof(&mut self) {
        discard_until_eof(self.stream.raw(), &mut self.buf).await;
    }
}

/// Reads and drops input from `stream` until it ends or fails.
pub(crate) async fn discard_until_eof(stream: &mut (impl AsyncRead + Unpin), buf: &mut [u8]) {
    while let Ok(n) = stream.read(buf).await {
        if n == 0 {
            break;
        }
    }
}
