//! HTTP/2 ([`Config::http2`](crate::Config::http2)): the same knobs, counters and recording as
//! HTTP/1.1, over the `h2` crate's server (framing, HPACK and flow control are not ours to
//! redo), on a TLS connection whose ALPN chose `h2` or a plain one that opened with the
//! HTTP/2 preface (h2c with prior knowledge).
//!
//! Each stream is a task of its own, so a delayed or stalled stream holds up no other. Faults
//! take their HTTP/2 form: `reset` resets the stream (`RST_STREAM`, `INTERNAL_ERROR`),
//! `close-before-headers` drops the connection before answering, `close-mid-body` sends half
//! the announced body then drops the connection, `stall` never answers; `close=1` answers,
//! then ends the connection gracefully (`GOAWAY`). `malformed` has no form a correct HTTP/2
//! library can send: it is answered `400` saying so. `chunked=1` sends the body in a few DATA
//! frames without `content-length` (HTTP/2 has no chunked coding); a 1xx status never ends the
//! stream, like a stall.

use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream, SendStream};
use http::{Request, Response};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use crate::answer::head_of;
use crate::behaviour::{Behaviour, Fault, CLOSE_MID_BODY_DEFAULT_LEN, DEFAULT_BODY};
use crate::connection::{OpenGuard, RECORDED_BODY_BYTES};
use crate::flow::send_flow;
use crate::handlers::Admission;
use crate::response::{self, FILLER};
use crate::shared::{SeenRequest, Shared};

/// What a plain connection that speaks HTTP/2 with prior knowledge sends first.
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What a connection's streams share: how they ask it to end, and their count.
#[derive(Default)]
struct Ending {
    /// Requests accepted on the connection so far: the next one's index, for the `token`
    /// knob (as HTTP/1.1 counts a connection's requests).
    accepted: std::sync::atomic::AtomicU64,
    /// After the streams in flight: `GOAWAY`, then close (`close=1`).
    graceful: Notify,
    /// At once, whatever the other streams are doing (the close faults).
    abrupt: Notify,
}

/// Serves a plain connection: HTTP/2 if it opens with the preface (h2c with prior
/// knowledge), HTTP/1.1 otherwise, with whatever was read while looking handed on.
pub(crate) async fn serve_plain<S>(mut stream: S, shared: Arc<Shared>, seq: u64, open: OpenGuard)
where
    S: crate::connection::Transport,
{
    use tokio::io::AsyncReadExt;
    let mut read = Vec::with_capacity(PREFACE.len());
    while read.len() < PREFACE.len() && PREFACE.starts_with(&read) {
        let mut byte = [0u8; PREFACE.len()];
        let want = PREFACE.len() - read.len();
        match stream.read(&mut byte[..want]).await {
            Ok(0) | Err(_) => break,
            Ok(n) => read.extend_from_slice(&byte[..n]),
        }
    }
    if read == PREFACE {
        serve(Rewind::new(read, stream), shared, seq, open).await;
    } else {
        crate::connection::Connection::with_input(stream, shared, seq, open, &read)
            .run()
            .await;
    }
}

/// Serves an HTTP/2 connection until it ends. `io` is a handshaken TLS stream or a plain
/// socket (with the bytes read while looking for the preface put back in front).
pub(crate) async fn serve<T>(io: T, shared: Arc<Shared>, seq: u64, open: OpenGuard)
where
    T: AsyncRead + AsyncWrite + Unpin,
{
    // A client stream's many small messages come a DATA frame each, and one read may bring
    // hundreds of them before their streams take them: h2's default budget for such frames
    // (100) would end the connection with ENHANCE_YOUR_CALM, where a load test wants to see the
    // target serve them. 65,536 small frames; the flow-control windows still bound the bytes.
    let handshake = h2::server::Builder::new()
        .data_frame_budget(256 * 65_536)
        .handshake(io)
        .await;
    let Ok(mut connection) = handshake else {
        return;
    };
    let ending = Arc::new(Ending::default());
    let mut goaway_sent = false;
    loop {
        // The connection is polled first: a poll also writes what the streams queued, so the
        // half body of `close-mid-body` is on the socket before an abrupt end drops it.
        let accepted = tokio::select! {
            biased;
            accepted = connection.accept() => accepted,
            () = ending.abrupt.notified() => break,
            () = ending.graceful.notified(), if !goaway_sent => {
                connection.graceful_shutdown();
                goaway_sent = true;
                continue;
            }
        };
        match accepted {
            Some(Ok((request, respond))) => {
                let stream = Stream {
                    shared: Arc::clone(&shared),
                    seq,
                    index: ending.accepted.fetch_add(1, Relaxed),
                    ending: Arc::clone(&ending),
                };
                tokio::spawn(stream.handle(request, respond));
            }
            Some(Err(_)) | None => break,
        }
    }
    drop(connection);
    drop(open);
}

/// One request stream's context.
struct Stream {
    shared: Arc<Shared>,
    seq: u64,
    /// The request's position among the connection's, from 0.
    index: u64,
    ending: Arc<Ending>,
}

/// How a stream's answer went wrong: the client reset it or the connection is gone. Nobody
/// reads why, as for HTTP/1.1: the client sees the effect.
struct Gone;

impl From<h2::Error> for Gone {
    fn from(_: h2::Error) -> Self {
        Gone
    }
}

impl Stream {
    async fn handle(self, request: Request<RecvStream>, mut respond: SendResponse<Bytes>) {
        let _ = self.answer(request, &mut respond).await;
    }

    async fn answer(
        &self,
        request: Request<RecvStream>,
        respond: &mut SendResponse<Bytes>,
    ) -> Result<(), Gone> {
        self.shared.counters.requests.fetch_add(1, Relaxed);
        let (head, mut body) = request.into_parts();
        let target = head
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        if crate::grpc::is_grpc(&head.headers) {
            return self.grpc(&head, &target, body, respond).await;
        }
        let is_head = head.method == http::Method::HEAD;
        let gzip = crate::answer::accepts_gzip(&head.headers);
        self.receive(&head, &target, &mut body).await?;
        if let Some(streamed) = crate::streamed::Streamed::of(head.method.as_str(), &target) {
            return match streamed {
                Ok(streamed) => self.stream(respond, &streamed).await.map_err(Gone::from),
                Err(why) => self.text(respond, 400, &why),
            };
        }

        let behaviour = match self.shared.behaviour_of(&target) {
            Ok(behaviour) => behaviour,
            Err(err) => return self.text(respond, 400, &err.to_string()),
        };
        if head.method == http::Method::GET && target == "/metrics" {
            return self.text(respond, 200, &self.shared.metrics());
        }
        let handled = match &self.shared.pool {
            None => Instant::now(),
            Some(pool) => match pool.admit().await {
                Admission::Served(handler) => pool.serve(handler).await,
                Admission::Rejected if pool.settings.shed => {
                    return self.text(respond, 503, "overloaded");
                }
                Admission::Rejected => {
                    // HTTP/1.1 closes the connection; here the stream alone is turned away.
                    respond.send_reset(Reason::REFUSED_STREAM);
                    return Ok(());
                }
            },
        };
        if !behaviour.delay.is_zero() {
            crate::delay::sleep(behaviour.delay).await;
        }
        if let Some(fault) = behaviour.fault {
            return self.misbehave(fault, &behaviour, respond).await;
        }
        if behaviour.status < 200 {
            return stall(respond).await;
        }
        let answered = if behaviour.redirect > 0 {
            self.redirect(respond, behaviour.status, &target)
        } else if behaviour.token || behaviour.json {
            self.json(respond, &behaviour, is_head)
        } else {
            let timed = behaviour.timing.then_some(handled);
            self.plain(respond, &behaviour, is_head, gzip, timed).await
        };
        answered?;
        if behaviour.close {
            self.ending.graceful.notify_one();
        }
        Ok(())
    }

    /// A gRPC call: admitted by the handlers as any request (`--workers`), then answered by
    /// the target's gRPC service.
    async fn grpc(
        &self,
        head: &http::request::Parts,
        path: &str,
        body: RecvStream,
        respond: &mut SendResponse<Bytes>,
    ) -> Result<(), Gone> {
        if let Some(pool) = &self.shared.pool {
            match pool.admit().await {
                Admission::Served(handler) => {
                    pool.serve(handler).await;
                }
                Admission::Rejected if pool.settings.shed => {
                    return Ok(crate::grpc::shed(&self.shared, respond)?);
                }
                Admission::Rejected => {
                    respond.send_reset(Reason::REFUSED_STREAM);
                    return Ok(());
                }
            }
        }
        Ok(crate::grpc::answer(&self.shared, path, &head.headers, body, respond).await?)
    }

    /// Reads the whole request body, counted and (up to a bound) kept, before anything else;
    /// records the request when recording.
    async fn receive(
        &self,
        head: &http::request::Parts,
        target: &str,
        body: &mut RecvStream,
    ) -> Result<(), Gone> {
        let mut seen = self
            .shared
            .recorder
            .as_ref()
            .map(|_| SeenRequest::of_parts(head, target, self.seq, "HTTP/2"));
        while let Some(data) = body.data().await {
            let data = data?;
            let _ = body.flow_control().release_capacity(data.len());
            self.shared
                .body_piece(seen.as_mut(), &data, RECORDED_BODY_BYTES);
        }
        if let Some(seen) = seen {
            self.shared.record(seen);
        }
        Ok(())
    }

    /// Misbehaves as `fault` says, in its HTTP/2 form.
    async fn misbehave(
        &self,
        fault: Fault,
        behaviour: &Behaviour,
        respond: &mut SendResponse<Bytes>,
    ) -> Result<(), Gone> {
        match fault {
            Fault::Reset => {
                respond.send_reset(Reason::INTERNAL_ERROR);
                Ok(())
            }
            Fault::CloseBeforeHeaders => {
                self.ending.abrupt.notify_one();
                // Held until the connection is gone: dropped now, it would reset the stream.
                stall(respond).await
            }
            Fault::Stall => stall(respond).await,
            Fault::Malformed => {
                let why = "fault=malformed has no HTTP/2 form: a correct HTTP/2 library cannot send an unparsable response";
                self.text(respond, 400, why)
            }
            Fault::CloseMidBody => {
                let len = behaviour
                    .body_size
                    .filter(|&n| n > 0)
                    .unwrap_or(CLOSE_MID_BODY_DEFAULT_LEN);
                let mut send = respond
                    .send_response(self.advertised(head_of(behaviour.status, Some(len))), false)?;
                send_filler(&mut send, len / 2, false).await?;
                self.ending.abrupt.notify_one();
                // Held until the connection is gone: dropped now, it would reset the stream.
                let _ = std::future::poll_fn(|cx| send.poll_reset(cx)).await;
                Ok(())
            }
        }
    }

    /// A redirect to the next hop of `target`'s chain (302 unless `status` is a redirect's).
    fn redirect(
        &self,
        respond: &mut SendResponse<Bytes>,
        status: u16,
        target: &str,
    ) -> Result<(), h2::Error> {
        let sent = respond
            .send_response(
                self.advertised(crate::answer::redirect(status, target)),
                true,
            )
            .map(drop);
        self.responded();
        sent
    }

    /// The ordinary answer: the default body or `size` filler bytes, gzipped when the client
    /// takes gzip and the body is framed by length; with `Server-Timing` when `timed` says
    /// when its handler took it (and it is not gzipped).
    async fn plain(
        &self,
        respond: &mut SendResponse<Bytes>,
        behaviour: &Behaviour,
        is_head: bool,
        gzip: bool,
        timed: Option<Instant>,
    ) -> Result<(), h2::Error> {
        if let Some((head, gz)) = crate::answer::gzipped(behaviour, is_head, gzip) {
            let mut send = respond.send_response(self.advertised(head), false)?;
            self.responded();
            return send_all(&mut send, gz).await;
        }
        let has_body = response::status_has_body(behaviour.status);
        let len = behaviour.body_size.unwrap_or(DEFAULT_BODY.len());
        let length = (has_body && !behaviour.chunked).then_some(len);
        let end = !has_body || is_head || len == 0;
        let mut head = head_of(behaviour.status, length);
        if let Some(handled) = timed {
            crate::answer::timed(&mut head, handled);
        }
        let mut send = respond.send_response(self.advertised(head), end)?;
        self.responded();
        if end {
            return Ok(());
        }
        if behaviour.body_size.is_none() {
            return send_all(&mut send, Bytes::from_static(DEFAULT_BODY)).await;
        }
        if behaviour.chunked {
            // A few DATA frames, as HTTP/1.1 sends a few chunks.
            let lengths: Vec<usize> = response::chunk_lengths(len).collect();
            for (i, piece) in lengths.iter().enumerate() {
                send_filler(&mut send, *piece, i + 1 == lengths.len()).await?;
            }
            return Ok(());
        }
        send_filler(&mut send, len, true).await
    }

    /// A streamed answer, each piece a DATA frame sent when it is due. (Not held by the
    /// handler pool: a stream's wait is its own.)
    async fn stream(
        &self,
        respond: &mut SendResponse<Bytes>,
        streamed: &crate::streamed::Streamed,
    ) -> Result<(), h2::Error> {
        let head = crate::answer::stream_head();
        let mut send = respond.send_response(self.advertised(head), false)?;
        self.responded();
        let start = std::time::Instant::now();
        for (due, piece) in streamed.pieces() {
            crate::delay::sleep((start + due).saturating_duration_since(std::time::Instant::now()))
                .await;
            send_flow(&mut send, Bytes::from(piece), false).await?;
        }
        send.send_data(Bytes::new(), true)
    }

    /// The `token` and `json` answers, as HTTP/1.1 gives them.
    fn json(
        &self,
        respond: &mut SendResponse<Bytes>,
        behaviour: &Behaviour,
        is_head: bool,
    ) -> Result<(), h2::Error> {
        let (response, body) = crate::answer::json(behaviour, self.seq, self.index);
        let has_body = !body.is_empty();
        let end = !has_body || is_head;
        let mut send = respond.send_response(self.advertised(response), end)?;
        self.responded();
        if !end {
            send.send_data(body, true)?;
        }
        Ok(())
    }

    /// A `text/plain` answer: `message` and a newline.
    fn text(
        &self,
        respond: &mut SendResponse<Bytes>,
        status: u16,
        message: &str,
    ) -> Result<(), Gone> {
        let body = Bytes::from(format!("{message}\n"));
        let mut send =
            respond.send_response(self.advertised(head_of(status, Some(body.len()))), false)?;
        self.responded();
        send.send_data(body, true)?;
        Ok(())
    }

    /// `head` with the server's `Alt-Svc` when it also speaks HTTP/3.
    fn advertised(&self, mut head: Response<()>) -> Response<()> {
        if let Some(alt_svc) = &self.shared.alt_svc {
            head.headers_mut()
                .insert(http::header::ALT_SVC, alt_svc.clone());
        }
        head
    }

    /// Counts a response, once its head is on its way: HTTP/2 sends the rest as flow control
    /// allows, so "complete in the output buffer" has no meaning here.
    fn responded(&self) {
        self.shared.counters.responses.fetch_add(1, Relaxed);
    }
}

/// Never answers; returns when the client resets the stream or the connection goes.
async fn stall(respond: &mut SendResponse<Bytes>) -> Result<(), Gone> {
    let _ = std::future::poll_fn(|cx| respond.poll_reset(cx)).await;
    Ok(())
}

/// Sends `len` filler bytes, as flow control allows; `end` ends the stream with the last.
async fn send_filler(send: &mut SendStream<Bytes>, len: usize, end: bool) -> Result<(), h2::Error> {
    let filler = Bytes::from_static(&FILLER);
    let mut left = len;
    if left == 0 && end {
        return send.send_data(Bytes::new(), true);
    }
    while left > 0 {
        let n = left.min(filler.len());
        left -= n;
        send_flow(send, filler.slice(..n), end && left == 0).await?;
    }
    Ok(())
}

/// Sends `data` and ends the stream.
async fn send_all(send: &mut SendStream<Bytes>, data: Bytes) -> Result<(), h2::Error> {
    send_flow(send, data, true).await
}

/// A plain socket with the bytes already read from it put back in front, so the HTTP/2
/// server reads the preface the HTTP/1.1 side looked at.
pub(crate) struct Rewind<S> {
    read: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S> Rewind<S> {
    pub(crate) fn new(read: Vec<u8>, inner: S) -> Self {
        Rewind { read, at: 0, inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewind<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.at < this.read.len() {
            let n = (this.read.len() - this.at).min(buf.remaining());
            buf.put_slice(&this.read[this.at..this.at + n]);
            this.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewind<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
