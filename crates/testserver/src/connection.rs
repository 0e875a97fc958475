//! One accepted connection: parse requests, read bodies, answer or misbehave.
//!
//! A connection is a loop over pipelined requests. Responses are appended to an output buffer
//! and written when no further complete request is waiting, so a pipelined burst gets one
//! write. Anything that ends the connection (client gone, `Connection: close`, a fault, a bad
//! request) is a [`Finish`], which says how the socket is to be closed.

use std::convert::Infallible;
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::behaviour::{Behaviour, Fault, CLOSE_MID_BODY_DEFAULT_LEN, DEFAULT_BODY};
use crate::response::{self, ConnectionHeader, Framing, CONTINUE, FILLER, MALFORMED};
use crate::server::{SeenRequest, Shared};

/// Largest request head accepted; longer ones get `400` and the connection is closed.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Request body bytes kept per [`SeenRequest`]; the rest is counted but not stored.
pub const RECORDED_BODY_BYTES: usize = 64 * 1024;

/// Headers per request; more is a `400`. Generous, as no client sends that many.
const MAX_HEADERS: usize = 100;

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
const LINGER: Duration = Duration::from_secs(1);

/// How a connection ends.
#[derive(Debug)]
enum Finish {
    /// The client went away or the socket failed: just drop it.
    Drop,
    /// Write what is pending, send FIN, drain, drop.
    Close,
    /// The request could not be parsed: answer `400` with this reason, then [`Finish::Close`].
    BadRequest(&'static str),
    /// Write what is pending, then abort with RST.
    Reset,
    /// Write what is pending, then hold the connection open without answering.
    Stall,
}

impl From<io::Error> for Finish {
    fn from(_: io::Error) -> Self {
        // Nobody reads the error: a test server's clients see the effect on their own socket.
        Finish::Drop
    }
}

/// How the request body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BodyFraming {
    Empty,
    Length(u64),
    Chunked,
}

/// What the connection needs from a parsed request head, copied out of the read buffer so the
/// buffer can be reused for the body.
#[derive(Debug)]
struct Request {
    head_len: usize,
    is_head: bool,
    http10: bool,
    keep_alive: bool,
    body: BodyFraming,
    expect_continue: bool,
    /// `Ok(None)`: no query string, so the server defaults apply (and their pre-built head).
    knobs: Result<Option<Behaviour>, crate::KnobError>,
    /// Only when requests are being recorded.
    seen: Option<SeenRequest>,
}

/// The socket and its buffers.
struct Io {
    stream: TcpStream,
    /// Unconsumed input is `buf[start..end]`.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    out: Vec<u8>,
}

/// Decrements the open-connection gauge. A field of its own, declared last in [`Connection`],
/// so that it runs after the socket has been closed.
struct OpenGuard(Arc<Shared>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.counters.open.fetch_sub(1, Relaxed);
    }
}

/// A connection task's state.
pub(crate) struct Connection {
    io: Io,
    shared: Arc<Shared>,
    seq: u64,
    _open: OpenGuard,
}

impl Connection {
    /// Takes over an accepted socket; the caller has already counted it as open.
    pub(crate) fn new(stream: TcpStream, shared: Arc<Shared>, seq: u64) -> Self {
        Connection {
            io: Io {
                stream,
                buf: vec![0; READ_BUFFER_BYTES],
                start: 0,
                end: 0,
                out: Vec::with_capacity(READ_BUFFER_BYTES),
            },
            _open: OpenGuard(Arc::clone(&shared)),
            shared,
            seq,
        }
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
            Finish::Close => io.close_gracefully().await,
            Finish::BadRequest(why) => {
                response::write_text(&mut io.out, 400, ConnectionHeader::Close, why);
                io.close_gracefully().await;
            }
            Finish::Reset => {
                let _ = io.flush().await;
                // Zero linger is the one SO_LINGER setting that does not block on close, which
                // is why tokio's deprecation of `set_linger` does not apply; `set_zero_linger`
                // would say the same but needs tokio 1.50, newer than the workspace minimum.
                #[allow(deprecated)]
                let _ = io.stream.set_linger(Some(Duration::ZERO));
            }
            Finish::Stall => {
                if io.flush().await.is_ok() {
                    io.discard_until_eof().await;
                }
            }
        }
    }

    /// Handles requests until one of them ends the connection.
    async fn requests(&mut self) -> Result<Infallible, Finish> {
        loop {
            let request = match self.parse_request() {
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
            self.handle(request).await?;
        }
    }

    /// Parses the head at the start of the buffered input, if it is complete.
    fn parse_request(&self) -> Result<Option<Request>, &'static str> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Request::new(&mut headers);
        let head_len = match parsed.parse(&self.io.buf[self.io.start..self.io.end]) {
            Ok(httparse::Status::Complete(n)) if n > MAX_HEAD_BYTES => {
                return Err("request head too large")
            }
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => return Err("too many headers"),
            Err(_) => return Err("malformed request head"),
        };
        let method = parsed.method.unwrap_or_default();
        let target = parsed.path.unwrap_or_default();
        let http10 = parsed.version == Some(0);

        let mut close = false;
        let mut keep_alive = false;
        let mut length = None;
        let mut chunked = false;
        let mut expect_continue = false;
        for header in parsed.headers.iter() {
            let name = header.name;
            if name.eq_ignore_ascii_case("connection") {
                for token in header.value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                    close |= token.eq_ignore_ascii_case(b"close");
                    keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            } else if name.eq_ignore_ascii_case("content-length") {
                let n = parse_decimal(header.value).ok_or("invalid content-length")?;
                if length.is_some_and(|prev| prev != n) {
                    return Err("conflicting content-length headers");
                }
                length = Some(n);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                let last = header
                    .value
                    .rsplit(|&b| b == b',')
                    .next()
                    .unwrap_or_default();
                if !last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                    return Err("unsupported transfer-encoding");
                }
                chunked = true;
            } else if name.eq_ignore_ascii_case("expect") {
                expect_continue |= header
                    .value
                    .trim_ascii()
                    .eq_ignore_ascii_case(b"100-continue");
            }
        }
        let body = match (chunked, length) {
            (true, _) => BodyFraming::Chunked,
            (false, Some(n)) if n > 0 => BodyFraming::Length(n),
            (false, _) => BodyFraming::Empty,
        };
        // RFC 9112 §6.3: with both framings, chunked wins and the connection must not be
        // reused, as an intermediary may have read it the other way.
        let smuggling = chunked && length.is_some();
        let keep_alive = !close && !smuggling && (!http10 || keep_alive);

        let knobs = match target.split_once('?') {
            Some((_, query)) if !query.is_empty() => {
                let mut behaviour = self.shared.defaults.clone();
                behaviour.apply_query(query).map(|()| Some(behaviour))
            }
            _ => Ok(None),
        };
        let seen = self.shared.recorder.as_ref().map(|_| SeenRequest {
            method: method.to_owned(),
            target: target.to_owned(),
            headers: parsed
                .headers
                .iter()
                .map(|h| {
                    let value = String::from_utf8_lossy(h.value).into_owned();
                    (h.name.to_owned(), value)
                })
                .collect(),
            body: Vec::new(),
            connection: self.seq,
            arrived: Instant::now(),
        });
        Ok(Some(Request {
            head_len,
            is_head: method == "HEAD",
            http10,
            keep_alive,
            body,
            expect_continue,
            knobs,
            seen,
        }))
    }

    /// Reads the body, then answers (or misbehaves) as the request's behaviour says.
    async fn handle(&mut self, mut request: Request) -> Result<(), Finish> {
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

        let close = !request.keep_alive;
        let connection = if close {
            ConnectionHeader::Close
        } else if request.http10 {
            ConnectionHeader::KeepAlive
        } else {
            ConnectionHeader::Omit
        };
        let knobs = match request.knobs {
            Ok(knobs) => knobs,
            Err(err) => {
                response::write_text(&mut self.io.out, 400, connection, &err.to_string());
                self.shared.counters.responses.fetch_add(1, Relaxed);
                return if close { Err(Finish::Close) } else { Ok(()) };
            }
        };
        let behaviour = knobs.as_ref().unwrap_or(&self.shared.defaults);

        if !behaviour.delay.is_zero() {
            // Earlier pipelined responses are not held back by this request's delay.
            self.io.flush().await?;
            tokio::time::sleep(behaviour.delay).await;
        }
        match behaviour.fault {
            None => {}
            Some(Fault::Reset) => return Err(Finish::Reset),
            Some(Fault::CloseBeforeHeaders) => return Err(Finish::Close),
            Some(Fault::Stall) => return Err(Finish::Stall),
            Some(Fault::Malformed) => {
                self.io.out.extend_from_slice(MALFORMED);
                return Err(Finish::Close);
            }
            Some(Fault::CloseMidBody) => {
                let len = behaviour
                    .body_size
                    .filter(|&n| n > 0)
                    .unwrap_or(CLOSE_MID_BODY_DEFAULT_LEN);
                let head = Framing::Length(len);
                response::write_head(&mut self.io.out, behaviour.status, head, connection);
                self.io.push_body(false, 0..len / 2).await?;
                return Err(Finish::Close);
            }
        }

        let close = close || behaviour.close;
        let connection = if close {
            ConnectionHeader::Close
        } else {
            connection
        };
        let len = behaviour.body_size.unwrap_or(DEFAULT_BODY.len());
        let framing = response::framing(behaviour, request.http10);
        if knobs.is_none() && !request.http10 {
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
            let default_body = behaviour.body_size.is_none();
            match framing {
                Framing::Bodiless => {}
                Framing::Length(len) => self.io.push_body(default_body, 0..len).await?,
                Framing::Chunked => {
                    let mut at = 0;
                    for chunk in response::chunk_lengths(len) {
                        response::write_chunk_size(&mut self.io.out, chunk);
                        self.io.push_body(default_body, at..at + chunk).await?;
                        self.io.out.extend_from_slice(b"\r\n");
                        at += chunk;
                    }
                    self.io.out.extend_from_slice(b"0\r\n\r\n");
                }
            }
        }
        // Counted once the response is complete in the output buffer but before it is written,
        // so that a client which has read a response always finds it counted.
        self.shared.counters.responses.fetch_add(1, Relaxed);
        if close {
            return Err(Finish::Close);
        }
        if self.io.out.len() >= FLUSH_AT_BYTES {
            self.io.flush().await?;
        }
        Ok(())
    }
}

impl Io {
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

    async fn close_gracefully(&mut self) {
        if self.flush().await.is_err() || self.stream.shutdown().await.is_err() {
            return;
        }
        let _ = tokio::time::timeout(LINGER, self.discard_until_eof()).await;
    }

    async fn discard_until_eof(&mut self) {
        while let Ok(n) = self.stream.read(&mut self.buf).await {
            if n == 0 {
                break;
            }
        }
    }
}

/// An unsigned decimal with no sign, spaces or other decoration, as `Content-Length` requires.
fn parse_decimal(text: &[u8]) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    text.iter().try_fold(0u64, |n, &b| {
        let digit = (b as char).to_digit(10)?;
        n.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// The hex size at the start of a chunk-size line, ignoring chunk extensions.
fn parse_chunk_size(line: &[u8]) -> Option<u64> {
    let end = line.iter().position(|&b| b == b';').unwrap_or(line.len());
    let digits = line[..end].trim_ascii();
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| {
        let digit = (b as char).to_digit(16)?;
        Some((n << 4) | u64::from(digit))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals() {
        let cases: &[(&[u8], Option<u64>)] = &[
            (b"0", Some(0)),
            (b"1234", Some(1234)),
            (b"", None),
            (b"+1", None),
            (b"1 2", None),
            (b"-1", None),
            (b"18446744073709551616", None),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_decimal(text),
                *want,
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
    }

    #[test]
    fn chunk_sizes() {
        let cases: &[(&[u8], Option<u64>)] = &[
            (b"0", Some(0)),
            (b"1a", Some(26)),
            (b"FF;name=value", Some(255)),
            (b"10 ", Some(16)),
            (b"", None),
            (b"g", None),
            (b"11111111111111111", None),
        ];
        for (line, want) in cases {
            assert_eq!(
                parse_chunk_size(line),
                *want,
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }
}
