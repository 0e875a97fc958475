//! One HTTP/1.1 connection: connect, write the prebuilt request, read one response. The
//! connect and TLS steps ([`open_stream`]) and the failure vocabulary serve HTTP/2 too.
//! Connections go over TCP or, with `Config::unix_socket`, a Unix domain socket.

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use belier_stats::ErrorKind;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

use crate::body::keep_body;
use crate::decode::{BodyDecoder, Coding, DecodeError};
use crate::endpoint::Endpoint;
use crate::http1::{parse_head, Framing};
use crate::streamed::{BodyStream, Splitter};
use crate::tls::{handshake_error_kind, Tls};

pub(crate) mod counted;
mod eyeballs;
mod failure;
mod held;
#[cfg(test)]
mod late_reads;
mod reuse;
mod socket;
pub(crate) mod stamp;
pub(crate) mod tunnel;

pub(crate) use failure::{io_kind, Cause, Failure, Phase};
pub(crate) use socket::Socket;

pub(crate) use reuse::{exchange_http1, Http1Request, IDLE_CHECK_AFTER};

/// Read buffer size; a typical response fits in one read.
const READ_BUFFER: usize = 16 * 1024;

/// What an exchange got so far. Kept outside the exchange future so that, when a timeout drops
/// that future half-way, the bytes received and the phase reached are still known.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    pub phase: Phase,
    /// When this exchange's own TCP connect completed (it opened the connection).
    pub connected: Option<Instant>,
    /// When this exchange's own TLS handshake completed.
    pub handshaken: Option<Instant>,
    pub sent: Option<Instant>,
    pub first_byte: Option<Instant>,
    /// The kernel's receive stamp of the read that completed the response, when the
    /// connection reads with stamps (see [`Progress::kernel_stamps`]); `first_byte` is then
    /// the stamp of the read that brought the first byte.
    pub completed: Option<Instant>,
    /// Read with the kernel's receive stamps where the socket gives them (TCP, TLS
    /// included); set before the exchange, from `Config::kernel_stamps`.
    pub kernel_stamps: bool,
    /// The source addresses a connection this exchange opens is bound to, in turn; set
    /// before the exchange, from `Config::local_addresses`.
    pub sources: Option<crate::source::Sources>,
    /// The two ends of the connection the request went over, when the run records requests
    /// by address: it spreads connections over several server addresses or source addresses.
    pub route: Option<belier_stats::Route>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// When set (a probe, a scripted user), receives the raw response head.
    pub head: Option<Vec<u8>>,
    /// When set (a scripted user that asked for it), receives the de-chunked body, up to
    /// [`MAX_KEPT_BODY_BYTES`](crate::user::MAX_KEPT_BODY_BYTES).
    pub body: Option<Vec<u8>>,
    /// Whether the body was longer than what `body` kept.
    pub body_truncated: bool,
    /// The request went out again on a new connection after the server closed its first one
    /// unread (see [`exchange_http1`]).
    pub resent: bool,
    /// Connections the server closed while they were idle, found by this exchange before it
    /// sent on them (or, when resent, the connection it first went on).
    pub idle_closes: u64,
    /// This exchange's own TLS handshake resumed an earlier session.
    pub resumed: bool,
    /// `--compressed`: decode the body in its `Content-Encoding` and count its decoded bytes
    /// in `decoded` (only then: decoding costs CPU).
    pub compressed: bool,
    /// Body bytes after decoding (with `compressed`).
    pub decoded: u64,
    /// A streaming gRPC call's messages so far, or a streamed body's (with `split`); `None`
    /// for any other request.
    pub stream: Option<StreamProgress>,
    /// `--stream`: cuts the response body into messages, counted in `stream` as reads bring
    /// them. Boxed: a request without it carries one pointer.
    pub split: Option<Box<Splitter>>,
    /// `--sse-reconnect`: how this request went out in its slot's reconnections, and whether
    /// its response allows another (see [`crate::reconnection`]).
    pub reconnect: Option<crate::reconnection::attempt::Attempt>,
    /// When the run reads the server's own time: the header's value this response brought
    /// (set before the exchange, from `Config::server_timing`).
    pub timing: Option<crate::server_timing::Capture>,
}

impl Progress {
    /// Cuts the response body into messages as `mode` says, counting them in `stream`.
    pub(crate) fn split_body_as(&mut self, mode: BodyStream) {
        self.stream = Some(StreamProgress::default());
        self.split = Some(Box::new(Splitter::new(mode)));
    }
}

/// A streaming gRPC call's messages, counted and stamped as they go.
#[derive(Debug, Default)]
pub(crate) struct StreamProgress {
    /// Request messages handed to the connection. Shared with the task that sends a client
    /// stream's messages after the first, which the exchange outlives only by a moment.
    pub sent: std::rc::Rc<SentMessages>,
    /// Response messages read, complete.
    pub received: u64,
    /// When the first and the latest response message were complete.
    pub first: Option<Instant>,
    pub last: Option<Instant>,
    /// Between each response message after the first and the one before it.
    pub gaps: belier_stats::MessageTimes,
    /// From each request message to the response message that answered it, taken in turn.
    pub round_trips: belier_stats::MessageTimes,
    /// A response came with no request message left to answer: they do not correlate.
    pub uncorrelated: bool,
    /// The caller matches each response to its request message itself (a WebSocket's
    /// replies, [`StreamProgress::answered`]): round trips count whenever each matched, even
    /// when the call ended with messages unanswered. Only a WebSocket's messages are so, and
    /// they are recorded as a socket's.
    pub matched: bool,
    /// A WebSocket's round trips timed from each message's actual send rather than its
    /// intended one ([`StreamProgress::answered_from_send`]).
    pub round_trips_sent: belier_stats::MessageTimes,
    /// A WebSocket's close code, once it ended (see `belier_stats::Messages::closes`).
    pub close: Option<u16>,
    /// What a WebSocket that offered permessage-deflate agreed to: the parameters, or
    /// `declined` (see `belier_stats::Messages::extensions`).
    pub extension: Option<String>,
}

/// Request messages not yet answered that a call keeps the send time of, at most: past them
/// its round trips are not followed (a server that answers none holds no memory).
const MOST_UNANSWERED: usize = 4096;

/// A streaming call's request messages as they go: how many, and when those not yet answered
/// went, oldest first (see [`StreamProgress::round_trips`]).
#[derive(Debug, Default)]
pub(crate) struct SentMessages {
    count: Cell<u64>,
    unanswered: std::cell::RefCell<std::collections::VecDeque<Instant>>,
    /// More went unanswered than [`MOST_UNANSWERED`].
    overflowed: Cell<bool>,
}

impl SentMessages {
    /// One more request message went, at `at`.
    pub(crate) fn sent(&self, at: Instant) {
        self.count.set(self.count.get() + 1);
        let mut unanswered = self.unanswered.borrow_mut();
        match unanswered.len() < MOST_UNANSWERED {
            true => unanswered.push_back(at),
            false => self.overflowed.set(true),
        }
    }

    /// One more request message went whose answer the caller matches itself
    /// ([`StreamProgress::answered`]): counted, its send time kept by the caller.
    pub(crate) fn sent_matched(&self) {
        self.count.set(self.count.get() + 1);
    }

    /// How many went.
    pub(crate) fn count(&self) -> u64 {
        self.count.get()
    }

    /// When the oldest request message not yet answered went, now answered; `None` when
    /// none is left to answer (or they are no longer followed).
    fn answered(&self) -> Option<Instant> {
        match self.overflowed.get() {
            true => None,
            false => self.unanswered.borrow_mut().pop_front(),
        }
    }
}

impl StreamProgress {
    /// `count` more response messages were complete at `at` (read in one piece).
    pub(crate) fn arrived(&mut self, count: u64, at: Instant) {
        for _ in 0..count {
            let sent = self.sent.answered();
            self.answered(sent, at);
        }
    }

    /// A calls whose caller matches responses to request messages itself (see
    /// [`StreamProgress::matched`]).
    pub(crate) fn matching() -> Self {
        StreamProgress {
            matched: true,
            ..StreamProgress::default()
        }
    }

    /// One response message, complete at `at`, answering the request message that went at
    /// `sent` (`None`: it answers none).
    pub(crate) fn answered(&mut self, sent: Option<Instant>, at: Instant) {
        match self.last {
            None => self.first = Some(at),
            Some(last) => self.gaps.push(micros(at.saturating_duration_since(last))),
        }
        self.last = Some(at);
        match sent {
            Some(sent) => self
                .round_trips
                .push(micros(at.saturating_duration_since(sent))),
            None => self.uncorrelated = true,
        }
        self.received += 1;
    }

    /// One message, complete at `at`, that answers none and asks for no answer (a message a
    /// scripted user's socket reads beside those it awaits): counted, its gap timed, the
    /// socket's round trips kept.
    pub(crate) fn unasked(&mut self, at: Instant) {
        let uncorrelated = self.uncorrelated;
        self.answered(None, at);
        self.uncorrelated = uncorrelated;
    }

    /// The reply, complete at `at`, to the message that actually went at `sent` (a
    /// WebSocket's, besides [`StreamProgress::answered`] from when it was due).
    pub(crate) fn answered_from_send(&mut self, sent: Instant, at: Instant) {
        self.round_trips_sent
            .push(micros(at.saturating_duration_since(sent)));
    }

    /// What the recorder keeps of it; `sent`: when the request went. Its round trips count
    /// when its responses answered its request messages one for one.
    pub(crate) fn call(&self, sent: Option<Instant>) -> belier_stats::CallMessages<'_> {
        let one_for_one = !self.uncorrelated
            && (self.matched
                || (!self.sent.overflowed.get() && self.received == self.sent.count()));
        belier_stats::CallMessages {
            sent: self.sent.count(),
            received: self.received,
            first_message_us: self
                .first
                .zip(sent)
                .map(|(first, sent)| micros(first.saturating_duration_since(sent))),
            gaps: &self.gaps,
            round_trips: one_for_one.then_some(&self.round_trips),
        }
    }
}

impl StreamProgress {
    /// What a streamed body `split` cut adds beside its messages, and how it went in its
    /// slot's reconnections (`attempt`).
    pub(crate) fn body(
        &self,
        split: &Splitter,
        attempt: Option<crate::reconnection::attempt::Attempt>,
    ) -> belier_stats::StreamedBody {
        belier_stats::StreamedBody {
            reconnection: attempt.and_then(|a| a.sent_as),
            stopped_reconnection: attempt.is_some_and(|a| a.stopped()),
            unit: split.mode().unit(),
            tokens: split.tokens(),
            first_to_last_us: self.first.zip(self.last).map_or(0, |(first, last)| {
                micros(last.saturating_duration_since(first))
            }),
        }
    }
}

fn micros(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Hands a piece of the body, which a read that arrived `at` brought, to what wants it: the
/// kept body, the decoder, the splitter.
fn take_body(
    p: &mut Progress,
    decoder: &mut Option<BodyDecoder>,
    data: &[u8],
    at: Instant,
) -> Result<(), Failure> {
    if let Some(body) = &mut p.body {
        keep_body(body, &mut p.body_truncated, data);
    }
    split_body(p, data, at)?;
    match decoder {
        Some(d) => d.feed(data).map_err(Failure::from),
        None => Ok(()),
    }
}

/// Cuts a piece of the body that arrived `at` into messages, with `--stream`.
pub(crate) fn split_body(p: &mut Progress, data: &[u8], at: Instant) -> Result<(), Failure> {
    if let (Some(split), Some(stream)) = (&mut p.split, &mut p.stream) {
        let complete = split
            .feed(data, at)
            .map_err(|e| Failure::protocol(ErrorKind::MalformedResponse, e.0))?;
        if complete > 0 {
            stream.arrived(complete, at);
        }
    }
    Ok(())
}

/// Ends the body for the decoder, counting its decoded bytes; a kept body is the decoded one.
pub(crate) fn finish_body(p: &mut Progress, decoder: Option<BodyDecoder>) -> Result<(), Failure> {
    if let Some(d) = decoder {
        let done = d.finish()?;
        p.decoded += done.bytes;
        if done.body.is_some() {
            p.body = done.body;
            p.body_truncated |= done.truncated;
        }
    }
    Ok(())
}

/// A decoder for a body in `coding`, given the kept body's buffer (if the user reads the
/// body): it keeps the decoded bytes rather than the wire's.
pub(crate) fn decoder(p: &mut Progress, coding: Coding) -> Result<BodyDecoder, DecodeError> {
    BodyDecoder::new(coding, p.body.take())
}

impl counted::LastStamp for Stream {
    fn last_stamp(&self) -> Option<std::time::Duration> {
        Stream::last_stamp(self)
    }
}

/// A worker's open connections: how many now, the most at once since the last reading, and
/// how many the server ended (HTTP/2 connections, whose end no request may see: a GOAWAY after
/// the last stream). Shared by the worker and its HTTP/2 groups.
#[derive(Debug, Default)]
pub(crate) struct OpenConnections {
    now: Cell<u64>,
    peak: Cell<u64>,
    server_ended: Cell<u64>,
}

impl OpenConnections {
    pub(crate) fn opened(&self) {
        let now = self.now.get() + 1;
        self.now.set(now);
        self.peak.set(self.peak.get().max(now));
    }

    /// One connection closed; `by_server` when the server ended it.
    pub(crate) fn closed(&self, by_server: bool) {
        self.now.set(self.now.get().saturating_sub(1));
        if by_server {
            self.server_ended.set(self.server_ended.get() + 1);
        }
    }

    /// The most open at once since the last call, which starts the next reading at the
    /// number open now.
    pub(crate) fn take_peak(&self) -> u64 {
        self.peak.replace(self.now.get())
    }

    /// The most open at once since the last [`OpenConnections::take_peak`].
    pub(crate) fn peak(&self) -> u64 {
        self.peak.get()
    }

    /// Connections the server ended since the last call.
    pub(crate) fn take_server_ended(&self) -> u64 {
        self.server_ended.take()
    }
}

/// A complete response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Response {
    pub status: u16,
    /// A gRPC call's status code, read from its trailers; `None` for any other request.
    pub grpc: Option<u8>,
    /// Whether the connection can carry the next request.
    pub reusable: bool,
}

/// The byte stream under HTTP: plain TCP, a plain Unix domain socket, or TLS over either. An
/// enum rather than a trait object keeps the plain path free of dynamic dispatch.
pub(crate) enum Stream {
    Plain(TcpStream),
    /// Plain TCP read through a stamping [`Socket`], which keeps its last read's stamp for
    /// what reads above it (HTTP/2 without TLS: `h2` makes the reads).
    Stamped(Socket),
    Unix(UnixStream),
    Tls(Box<tokio_rustls::client::TlsStream<Socket>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Stamped(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Stamped(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Stamped(s) => Pin::new(s).poll_flush(cx),
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Stamped(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// An open connection with its read buffer.
pub(crate) struct Connection {
    stream: Stream,
    buf: Vec<u8>,
    /// How much a read asks room for ([`READ_BUFFER`], or less for a held connection).
    read_size: usize,
    /// When the connection last became idle: its last response ended (or it opened).
    idle_since: Instant,
    /// Whether its certificate was accepted as pinned by `--cacert`.
    pinned: bool,
    /// Whether it carried a complete response: a request on it is a reuse. The first request
    /// on a connection (one an open loop opened ahead, too) that fails is the server's answer
    /// to it, never re-sent.
    reused: bool,
    /// Whether its reads carry the kernel's receive stamps (`SO_TIMESTAMPNS` is on).
    stamped: bool,
    /// Its two ends, when the run records requests by address (see [`Progress::route`]).
    route: Option<belier_stats::Route>,
}

/// Opens a connection to `endpoint` (TCP or a Unix domain socket), then a TLS session over it
/// when `tls` is given, noting when each step completed in `p`.
pub(crate) async fn open_stream(
    endpoint: &Endpoint,
    tls: Option<&Tls>,
    p: &mut Progress,
) -> Result<Stream, Failure> {
    p.phase = Phase::Connecting;
    // A run that spreads its connections records each request under its route, a failed
    // connect under the address it was tried at.
    let track = matches!(endpoint, Endpoint::Addresses(_)) || p.sources.is_some();
    let tried = std::cell::Cell::new(None);
    let connected = Socket::connect(endpoint, p.sources.as_ref(), track.then_some(&tried)).await;
    p.route = tried.get();
    let mut socket = connected?;
    p.connected = Some(Instant::now());
    if track {
        p.route = socket.route();
    }
    if let Some(connect) = tls.and_then(|t| t.tunnel.as_deref()) {
        // Through a proxy: its tunnel is part of the handshake.
        p.phase = Phase::Handshaking;
        tunnel::open(&mut socket, connect).await?;
    }
    let stream = match (tls, socket) {
        (None, Socket::Tcp(tcp) | Socket::Stamped(tcp, _)) => Stream::Plain(tcp),
        (None, Socket::Unix(unix)) => Stream::Unix(unix),
        (Some(tls), socket) => {
            p.phase = Phase::Handshaking;
            // Under TLS the socket keeps its reads' stamps for the session above it.
            let socket = if p.kernel_stamps {
                socket.stamp()
            } else {
                socket
            };
            let session = tls
                .connector
                .connect(tls.server_name.clone(), socket)
                .await
                .map_err(|e| match handshake_error_kind(&e) {
                    Some(kind) => Failure {
                        kind,
                        cause: Cause::Io(e),
                    },
                    None => Failure::io(e, false),
                })?;
            p.handshaken = Some(Instant::now());
            p.resumed = crate::tls::resumed(session.get_ref().1);
            Stream::Tls(Box::new(session))
        }
    };
    Ok(stream)
}

impl Stream {
    /// The TLS session's version, cipher and ALPN protocol, for a TLS connection; `pinned`
    /// says its certificate was accepted as pinned.
    pub(crate) fn tls_session(&self, pinned: bool) -> Option<String> {
        match self {
            Stream::Plain(_) | Stream::Stamped(_) | Stream::Unix(_) => None,
            Stream::Tls(s) => Some(crate::tls::describe(s.get_ref().1, pinned)),
        }
    }

    /// The kernel's receive stamp of the socket's last read, on a stream that reads through a
    /// stamping [`Socket`]: under a TLS session, the read that completed the record of the
    /// plaintext last handed over.
    pub(crate) fn last_stamp(&self) -> Option<std::time::Duration> {
        match self {
            Stream::Plain(_) | Stream::Unix(_) => None,
            Stream::Stamped(s) => s.last_stamp(),
            Stream::Tls(s) => s.get_ref().0.last_stamp(),
        }
    }

    /// This stream with its reads keeping the kernel's receive stamps for what reads above
    /// it (see [`Stream::last_stamp`]) where the socket gives them, and whether it does.
    /// TLS streams were stamped when opened, if asked.
    pub(crate) fn keeping_stamps(self) -> (Stream, bool) {
        let stream = match self {
            Stream::Plain(tcp) => Stream::Stamped(Socket::Tcp(tcp).stamp()),
            other => other,
        };
        let stamped = match &stream {
            Stream::Stamped(s) => s.stamped(),
            Stream::Tls(s) => s.get_ref().0.stamped(),
            Stream::Plain(_) | Stream::Unix(_) => false,
        };
        (stream, stamped)
    }

    /// The ALPN protocol the server chose, for a TLS connection.
    pub(crate) fn alpn(&self) -> Option<&[u8]> {
        match self {
            Stream::Plain(_) | Stream::Stamped(_) | Stream::Unix(_) => None,
            Stream::Tls(s) => s.get_ref().1.alpn_protocol(),
        }
    }
}

impl Connection {
    /// Opens a connection (see [`open_stream`]).
    pub(crate) async fn open(
        endpoint: &Endpoint,
        tls: Option<&Tls>,
        p: &mut Progress,
    ) -> Result<Connection, Failure> {
        Connection::open_reading_in(endpoint, tls, p, READ_BUFFER).await
    }

    /// Opens a connection whose reads ask room for `read_size` bytes at a time.
    pub(crate) async fn open_reading_in(
        endpoint: &Endpoint,
        tls: Option<&Tls>,
        p: &mut Progress,
        read_size: usize,
    ) -> Result<Connection, Failure> {
        let stream = open_stream(endpoint, tls, p).await?;
        let stamped = p.kernel_stamps
            && match &stream {
                Stream::Plain(tcp) => stamp::enable(tcp),
                Stream::Stamped(s) => s.stamped(),
                Stream::Tls(tls) => tls.get_ref().0.stamped(),
                // Linux stamps no Unix stream socket's reads (datagrams only).
                Stream::Unix(_) => false,
            };
        Ok(Connection {
            stamped,
            stream,
            pinned: tls.is_some_and(Tls::pinned),
            buf: Vec::with_capacity(read_size),
            read_size,
            idle_since: Instant::now(),
            reused: false,
            route: p.route,
        })
    }

    /// Whether the server has closed this idle connection, or sent something no request asked
    /// for (a `408`, a TLS alert), since its last response: then it must not carry the next
    /// request. Looks only after [`IDLE_CHECK_AFTER`] of idleness, with a non-blocking peek
    /// at the socket; over TLS, bytes waiting may be the session tickets a TLS 1.3 server sends
    /// after the handshake, so they go through the TLS session, which takes those in and
    /// reports a `close_notify` as the end of the stream.
    pub(crate) fn closed_while_idle(&mut self, now: Instant) -> bool {
        if now.saturating_duration_since(self.idle_since) < IDLE_CHECK_AFTER {
            return false;
        }
        let socket = match &self.stream {
            Stream::Plain(tcp) => socket2::SockRef::from(tcp),
            Stream::Stamped(s) => s.sock_ref(),
            Stream::Unix(unix) => socket2::SockRef::from(unix),
            Stream::Tls(tls) => tls.get_ref().0.sock_ref(),
        };
        let mut byte = [std::mem::MaybeUninit::<u8>::uninit(); 1];
        // The socket is non-blocking (tokio's): nothing to read is `WouldBlock`.
        match socket.peek(&mut byte) {
            Err(e) => return e.kind() != io::ErrorKind::WouldBlock,
            // The end of the stream.
            Ok(0) => return true,
            Ok(_) => {}
        }
        let Stream::Tls(tls) = &mut self.stream else {
            // Bytes no request asked for.
            return true;
        };
        let mut plain = [0u8; 1];
        let mut buf = ReadBuf::new(&mut plain);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        // Pending: only TLS records for the session itself, nothing for HTTP. Ready: a
        // `close_notify` (no data), an error, or response bytes nobody asked for.
        Pin::new(tls.as_mut())
            .poll_read(&mut cx, &mut buf)
            .is_ready()
    }

    /// How long the connection has been idle at `now`.
    fn idle_for(&self, now: Instant) -> std::time::Duration {
        now.saturating_duration_since(self.idle_since)
    }

    /// The TLS session's version, cipher and ALPN protocol, for a TLS connection.
    pub(crate) fn tls_session(&self) -> Option<String> {
        self.stream.tls_session(self.pinned)
    }

    /// Writes what it can of `request` without waiting (plain sockets only; 0 for TLS, or when
    /// the socket takes nothing now or fails: [`Connection::exchange`] then writes the rest and
    /// meets the error). Returns the bytes written.
    pub(crate) fn try_send(&mut self, request: &[u8]) -> usize {
        match &self.stream {
            Stream::Plain(tcp) => tcp.try_write(request).unwrap_or(0),
            Stream::Unix(unix) => unix.try_write(request).unwrap_or(0),
            Stream::Stamped(_) | Stream::Tls(_) => 0,
        }
    }

    /// Writes `request` (but for its first `written` bytes, already sent) and reads one
    /// response, recording progress into `p` as it goes.
    pub(crate) async fn exchange(
        &mut self,
        request: &[u8],
        written: usize,
        head_request: bool,
        p: &mut Progress,
    ) -> Result<Response, Failure> {
        if self.route.is_some() {
            p.route = self.route;
        }
        self.stream
            .write_all(&request[written.min(request.len())..])
            .await
            .map_err(|e| Failure::io(e, false))?;
        if let Stream::Tls(_) = self.stream {
            // TLS may hold records back until flushed; plain TCP has nothing to flush.
            self.stream
                .flush()
                .await
                .map_err(|e| Failure::io(e, false))?;
        }
        p.bytes_out += request.len() as u64;

        self.buf.clear();
        let mut pos = 0;
        let mut status = None;
        let mut keep_alive = false;
        let mut framing = Framing::Empty;
        let mut decoder = None;
        // When the read that brought what the buffer holds arrived (`--stream` stamps its
        // messages with it).
        // (Set by each read before it is used: a response's bytes come from a read.)
        let mut arrived = p.sent.unwrap_or_else(Instant::now);
        let wants_body = p.body.is_some() || p.split.is_some();
        loop {
            // Consume what the buffer holds.
            loop {
                let Some(code) = status else {
                    match parse_head(&self.buf[pos..], head_request, p.timing.as_mut())? {
                        None => break,
                        Some(head) if (100..200).contains(&head.status) && head.status != 101 => {
                            // Interim response (100 Continue, 103 Early Hints): the final one follows.
                            pos += head.len;
                            if let Some(timing) = &mut p.timing {
                                timing.clear();
                            }
                        }
                        Some(head) => {
                            let whole = &self.buf[pos..pos + head.len];
                            if let Some(keep) = &mut p.head {
                                keep.extend_from_slice(whole);
                            }
                            if let Some(attempt) = &mut p.reconnect {
                                let event_stream = crate::http1::is_event_stream(whole);
                                attempt.accepted = Some(head.status == 200 && event_stream);
                            }
                            pos += head.len;
                            status = Some(head.status);
                            keep_alive = head.keep_alive;
                            framing = head.framing;
                            if p.compressed && framing != Framing::Empty {
                                decoder = Some(self::decoder(p, head.coding)?);
                            }
                        }
                    }
                    continue;
                };
                let done = match &mut framing {
                    Framing::Empty => true,
                    Framing::Length(remaining) => {
                        let take = (*remaining).min((self.buf.len() - pos) as u64);
                        if wants_body || decoder.is_some() {
                            let data = &self.buf[pos..pos + take as usize];
                            take_body(p, &mut decoder, data, arrived)?;
                        }
                        pos += take as usize;
                        *remaining -= take;
                        *remaining == 0
                    }
                    Framing::Chunked(chunks) => {
                        let (used, done) = if !wants_body && decoder.is_none() {
                            chunks.feed(&self.buf[pos..])?
                        } else {
                            let mut failed = Ok(());
                            let fed = chunks.feed_with(&self.buf[pos..], |data| {
                                if failed.is_ok() {
                                    failed = take_body(p, &mut decoder, data, arrived);
                                }
                            })?;
                            failed?;
                            fed
                        };
                        pos += used;
                        done
                    }
                    Framing::UntilClose => {
                        take_body(p, &mut decoder, &self.buf[pos..], arrived)?;
                        pos = self.buf.len();
                        false
                    }
                };
                if done {
                    finish_body(p, decoder)?;
                    // Bytes beyond the response mean the framing is off: never reuse.
                    let reusable = keep_alive && pos == self.buf.len();
                    return Ok(Response {
                        status: code,
                        grpc: None,
                        reusable,
                    });
                }
                break;
            }

            // Body bytes already counted are dropped so the buffer never grows with the body.
            if status.is_some() && pos == self.buf.len() {
                self.buf.clear();
                pos = 0;
            }
            if self.buf.capacity() - self.buf.len() < self.read_size / 4 {
                self.buf.reserve(self.read_size);
            }
            let read = match (&self.stream, self.stamped) {
                (Stream::Plain(_), true) => recv_stamped(&self.stream, &mut self.buf).await,
                (Stream::Tls(_) | Stream::Stamped(_), true) => {
                    let n = self.stream.read_buf(&mut self.buf).await;
                    n.map(|n| (n, self.stream.last_stamp()))
                }
                _ => {
                    let plain = self.stream.read_buf(&mut self.buf).await;
                    plain.map(|n| (n, None))
                }
            };
            let (n, stamp) = match read {
                Ok(read) => read,
                // A TLS peer that closes without close_notify (a crash, a proxy cutting the
                // connection) shows up as UnexpectedEof: it is a close, judged like one.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => (0, None),
                Err(e) => return Err(Failure::io(e, false)),
            };
            if n == 0 {
                return match (status, &framing) {
                    (Some(code), Framing::UntilClose) => {
                        finish_body(p, decoder)?;
                        Ok(Response {
                            status: code,
                            grpc: None,
                            reusable: false,
                        })
                    }
                    (Some(_), _) => Err(Failure::protocol(
                        ErrorKind::ClosedMidBody,
                        "connection closed before the body was complete",
                    )),
                    (None, _) if p.bytes_in == 0 => Err(Failure::protocol(
                        ErrorKind::ClosedBeforeResponse,
                        "connection closed before any response byte",
                    )),
                    (None, _) => Err(Failure::protocol(
                        ErrorKind::ClosedBeforeResponse,
                        "connection closed in the middle of the response head",
                    )),
                };
            }
            let now = Instant::now();
            // A stamp is never before the request went out nor after this read returned.
            p.completed = match (stamp, p.sent) {
                (Some(stamp), Some(sent)) => Some(stamp::to_instant(stamp, sent, now)),
                _ => None,
            };
            let at = p.completed.unwrap_or(now);
            arrived = at;
            if p.first_byte.is_none() {
                p.first_byte = Some(at);
            }
            p.bytes_in += n as u64;
        }
    }
}

/// Reads what has arrived on a TCP socket with `SO_TIMESTAMPNS` on, appending to `buf`,
/// with the kernel's receive stamp of its last segment.
async fn recv_stamped(
    stream: &Stream,
    buf: &mut Vec<u8>,
) -> io::Result<(usize, Option<std::time::Duration>)> {
    use std::os::fd::AsRawFd;
    let Stream::Plain(tcp) = stream else {
        unreachable!("stamps are read on plain TCP sockets only")
    };
    let fd = tcp.as_raw_fd();
    loop {
        tcp.readable().await?;
        let read = socket::try_read(tcp, || {
            let room = buf.spare_capacity_mut().len();
            let (n, stamp) = stamp::recv(fd, buf)?;
            Ok(((n, stamp), socket::drained(n, room)))
        });
        match read {
            // Readiness was stale; try_io cleared it, so the next wait is for more.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            other => return other,
        }
    }
}
