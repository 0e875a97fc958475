//! WebSocket sessions (RFC 6455, `ws://` and `wss://`): with [`Config::websocket`] each
//! request of the run is one socket's life. The engine opens the connection itself (TCP or a
//! Unix socket, TLS, timed as any request's: connect, TLS), sends the HTTP/1.1 Upgrade and
//! reads its answer (the request's "first byte": the upgrade's time), then sends the run's
//! message on it, paced or back to back, matches each reply to the message it answers and
//! closes with 1000. The sample's latency is the socket's lifetime; its messages are
//! recorded as a streaming gRPC call's are ([`belier_stats::Messages`]): counts each way,
//! time to the first reply, gaps, and each message's round trip from its intended send.
//!
//! The Upgrade is sent and its answer checked by belier ([`upgrade`], which says why); the
//! framing rules (masking, fragments, control frames, close codes) are `tungstenite`'s, run
//! over the engine's own stream from the answer on; with
//! [`WebSocket::deflate`], permessage-deflate (RFC 7692) is a layer below it
//! ([`deflating`], where the choice is explained).
//!
//! [`Config::websocket`]: crate::Config::websocket

use std::cell::Cell;
use std::collections::VecDeque;
use std::io;
use std::rc::Rc;
use std::time::{Duration, Instant};

use belier_stats::ErrorKind;
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;

use crate::connection::counted::{Counted, Watch};
use crate::connection::{
    open_stream, stamp, Cause, Failure, Phase, Progress, Response, StreamProgress,
};
use crate::endpoint::Endpoint;
use crate::tls::Tls;
use deflating::Deflating;

mod deflate;
mod deflating;
mod upgrade;

/// What each socket of a WebSocket run sends and how ([`crate::Config::websocket`]).
#[derive(Clone, Debug)]
pub struct WebSocket {
    /// The message, sent as it is but for each `{{id}}` in it, replaced by the message's
    /// number on its socket (0, 1, …): what [`Matching::Field`] finds in the reply.
    pub message: String,
    /// What frames carry it: text, binary, or pings (a held socket's: each answered by a
    /// pong, its round trip timed).
    pub frames: Frames,
    /// Messages each socket sends before it closes; `None`: until the run ends.
    pub messages: Option<u64>,
    /// Open loop on each socket: a message every `interval`, each timed from when it was due
    /// (its intended send), whatever the replies do. `None`: closed loop, the next message
    /// once the last one was answered.
    pub interval: Option<Duration>,
    /// How a reply is matched to the message it answers.
    pub matching: Matching,
    /// A message not answered within this (from its intended send) ends its socket as a
    /// [`ErrorKind::Timeout`].
    pub reply_timeout: Duration,
    /// Offered in `Sec-WebSocket-Protocol`, in order.
    pub subprotocols: Vec<String>,
    /// Offer permessage-deflate (RFC 7692), as browsers do: where the server agrees, messages
    /// go compressed both ways; where it declines, uncompressed. Either way the socket
    /// records which (`belier_stats::Messages::extensions`).
    pub deflate: bool,
}

/// The frames a socket's messages go in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frames {
    /// Text messages.
    Text,
    /// Binary messages.
    Binary,
    /// Pings (at most 125 bytes of payload), answered by pongs: a held socket, kept alive
    /// and its round trips timed, with no message of the application's.
    Ping,
}

/// Longest payload of a ping (RFC 6455 §5.5: a control frame's).
const MOST_PING_BYTES: usize = 125;

/// How replies answer messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Matching {
    /// Each reply answers the oldest message not yet answered (an echo, in order).
    Echo,
    /// A reply is a JSON object whose field of this name holds the number of the message it
    /// answers (the `{{id}}` of [`WebSocket::message`]), in any order.
    Field(String),
}

/// The placeholder of a message's number in [`WebSocket::message`].
pub const ID_PLACEHOLDER: &str = "{{id}}";

/// Messages sent but not answered that a socket follows at most; past them, it sends no
/// more until replies come (an open loop's messages then wait, and are timed from when they
/// were due all the same).
const MOST_OUTSTANDING: usize = 4096;

/// How long a socket may live: its messages or the run's end end it first. (The run's
/// request timeout bounds its connect, TLS and upgrade.)
pub(crate) const SOCKET_LIFE: Duration = Duration::from_secs(7 * 24 * 3600);

/// The largest message, and frame, a socket reads (tungstenite's default is 64 MiB): a
/// longer one fails the socket as a malformed response naming it, so that a server cannot make
/// every socket of a run hold that much.
pub const MOST_MESSAGE_BYTES: usize = 1 << 20;

/// The close codes a socket can end with besides the server's own (RFC 6455 §7.4.1): the
/// one belier sends, the one a close frame without a code stands for, and the one for a
/// connection that ended without any close frame (which no peer sends).
pub(crate) const NORMAL_CLOSE: u16 = 1000;
pub(crate) const NO_STATUS: u16 = 1005;
pub(crate) const NO_CLOSE_FRAME: u16 = 1006;

/// What a socket that offered permessage-deflate records when the server declined it.
pub const DECLINED: &str = "declined";

/// How long a socket waits for the server's answer to its close frame.
pub(crate) const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Per socket, the frame buffers stay small: a held socket costs little, and messages of a
/// load test are small. Each socket's read buffer is sized for a reply as long as its message
/// (an echo's), within these bounds; a longer message grows the buffer as it comes.
/// tungstenite zeroes the buffer's free room before each read and keeps it for the socket's
/// life, so every byte of it is resident: 4 KiB for each of 2,000 idle sockets that send
/// "hello" was a quarter of their memory (bench/README.md, "Idle sockets").
const READ_BUFFER: std::ops::RangeInclusive<usize> = 512..=4 * 1024;

/// The read buffer of a socket whose messages are `message_len` bytes: room for a reply as
/// long and its frame header, rounded up to a power of two, within [`READ_BUFFER`].
fn read_buffer(message_len: usize) -> usize {
    let frame = message_len.saturating_add(14).next_power_of_two();
    frame.clamp(*READ_BUFFER.start(), *READ_BUFFER.end())
}

/// A WebSocket run's sessions as the workers share them: the messages and the handshake's
/// request, built once.
pub(crate) struct Sessions {
    ws: WebSocket,
    /// The message split around its placeholders (one piece: none).
    pieces: Vec<String>,
    /// The message as sent when it has no placeholder.
    fixed: Message,
    /// The handshake request but for its key.
    request: http::Request<()>,
    /// Each socket's read buffer ([`read_buffer`]).
    read_buffer: usize,
}

impl Sessions {
    /// The sessions of `ws`, to `uri` (`ws://host/path`), with `headers` besides the
    /// handshake's own.
    pub(crate) fn new(
        ws: WebSocket,
        uri: &str,
        host_header: &str,
        headers: &[(String, String)],
    ) -> Result<Sessions, &'static str> {
        let request = upgrade_request(uri, host_header, headers, &ws.subprotocols, ws.deflate)?;
        let pieces: Vec<String> = ws.message.split(ID_PLACEHOLDER).map(String::from).collect();
        if ws.frames == Frames::Ping && ws.message.len() + 20 > MOST_PING_BYTES {
            return Err("a ping's payload (--message) is at most 105 bytes");
        }
        let fixed = message(&ws.message, ws.frames);
        // A numbered message is at most 20 digits longer per placeholder.
        let longest = ws.message.len() + 20 * (pieces.len() - 1);
        Ok(Sessions {
            read_buffer: read_buffer(longest),
            ws,
            pieces,
            fixed,
            request,
        })
    }

    /// Message number `id`.
    fn message(&self, id: u64) -> Message {
        if self.pieces.len() == 1 {
            return self.fixed.clone();
        }
        let text = self.pieces.join(&id.to_string());
        message(&text, self.ws.frames)
    }
}

/// The upgrade request to `uri` (`ws://host/path`) but for its key, with `headers` besides
/// its own (a `Host` among them replaces `host_header`), offering `subprotocols` and, with
/// `deflate`, permessage-deflate.
pub(crate) fn upgrade_request(
    uri: &str,
    host_header: &str,
    headers: &[(String, String)],
    subprotocols: &[String],
    deflate: bool,
) -> Result<http::Request<()>, &'static str> {
    let mut builder = http::Request::builder()
        .method("GET")
        .uri(uri)
        .header("Connection", "Upgrade")
        .header("Upgrade", "websocket")
        .header("Sec-WebSocket-Version", "13");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        builder = builder.header("Host", host_header);
    }
    for (name, value) in headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    if deflate {
        builder = builder.header("Sec-WebSocket-Extensions", deflate::OFFER);
    }
    if !subprotocols.is_empty() {
        builder = builder.header("Sec-WebSocket-Protocol", subprotocols.join(", "));
    }
    builder
        .body(())
        .map_err(|_| "a WebSocket header or the URL is not valid in an HTTP request")
}

fn message(text: &str, frames: Frames) -> Message {
    let bytes = || bytes::Bytes::copy_from_slice(text.as_bytes());
    match frames {
        Frames::Text => Message::Text(Utf8Bytes::from(text)),
        Frames::Binary => Message::Binary(bytes()),
        Frames::Ping => Message::Ping(bytes()),
    }
}

/// Bytes each way on a socket, shared between its stream and the session that reads them.
#[derive(Default)]
pub(crate) struct Counts {
    pub(crate) read: Cell<u64>,
    pub(crate) written: Cell<u64>,
}

impl Watch for Counts {
    fn wants_stamps(&self) -> bool {
        false
    }

    fn read(&self, bytes: &[u8], _stamp: Option<Duration>) {
        self.read.set(self.read.get() + bytes.len() as u64);
    }

    fn written(&self, n: u64) {
        self.written.set(self.written.get() + n);
    }
}

pub(crate) type Socket = WebSocketStream<Deflating<Counted<crate::connection::Stream, Counts>>>;

/// One socket's life: open, upgrade, send and match the messages, close. `timeout`: the
/// run's request timeout, which bounds the connect, TLS and upgrade together; `deadline`:
/// when the run ends (no message goes after it). A refused upgrade is a response with the
/// server's status; a socket that lived is one with 101.
pub(crate) async fn session(
    sessions: &Sessions,
    addr: &Endpoint,
    tls: Option<&Tls>,
    (timeout, deadline): (Duration, Option<Instant>),
    p: &mut Progress,
) -> Result<Response, Failure> {
    let counts = Rc::new(Counts::default());
    // Boxed: the connect, TLS and upgrade futures (2.6 KiB) are held only while they run, not
    // in every idle socket's task for its whole life (bench/README.md, "Idle sockets").
    let handshaking = Box::pin(handshake(sessions, addr, tls, &counts, p));
    let opened = tokio::time::timeout(timeout, handshaking).await;
    note_bytes(&counts, p);
    let mut socket = match opened {
        Err(_) => return Err(Failure::timeout(p.phase)),
        Ok(Err(refused)) => return refused,
        Ok(Ok(socket)) => socket,
    };
    p.stream = Some(StreamProgress::matching());
    if sessions.ws.deflate {
        if let Some(stream) = p.stream.as_mut() {
            stream.extension = Some(agreed_label(&socket));
        }
    }
    let exchanged = Exchange::new(sessions, deadline)
        .run(&mut socket, &counts, p)
        .await;
    let (ended, code) = match exchanged {
        Ok(Ended::Done) => (close(&mut socket).await, NORMAL_CLOSE),
        Ok(Ended::Closed(frame)) => {
            let code = frame.as_ref().map_or(NO_STATUS, |f| u16::from(f.code));
            (closed_by_server(frame.as_ref()), code)
        }
        // Any other end of an upgraded socket is without a close handshake (a dropped or
        // reset connection, a broken frame, an unanswered message): 1006, as RFC 6455
        // §7.1.5 has it.
        Err(f) => (Err(f), NO_CLOSE_FRAME),
    };
    if let Some(stream) = p.stream.as_mut() {
        stream.close = Some(code);
    }
    note_bytes(&counts, p);
    ended.map(|()| Response {
        status: 101,
        grpc: None,
        reusable: false,
    })
}

/// Opens the connection and upgrades it; `Err` holds how the session ends instead: a
/// response (the upgrade refused with a status) or a failure.
async fn handshake(
    sessions: &Sessions,
    addr: &Endpoint,
    tls: Option<&Tls>,
    counts: &Rc<Counts>,
    p: &mut Progress,
) -> Result<Socket, Result<Response, Failure>> {
    let upgrade = Upgrade {
        request: sessions.request.clone(),
        subprotocols: &sessions.ws.subprotocols,
        deflate: sessions.ws.deflate,
        read_buffer: sessions.read_buffer,
    };
    let (socket, _) = upgrade.open(addr, tls, counts, p).await?;
    Ok(socket)
}

/// An upgrade to make: its request but for its key, what it offers, and the socket's read
/// buffer.
pub(crate) struct Upgrade<'a> {
    pub request: http::Request<()>,
    pub subprotocols: &'a [String],
    pub deflate: bool,
    pub read_buffer: usize,
}

impl Upgrade<'_> {
    /// Opens the connection and upgrades it, returning the socket and the answer's headers;
    /// `Err` holds how the socket ends instead: a response (the upgrade refused with a status)
    /// or a failure.
    pub(crate) async fn open(
        self,
        addr: &Endpoint,
        tls: Option<&Tls>,
        counts: &Rc<Counts>,
        p: &mut Progress,
    ) -> Result<(Socket, http::HeaderMap), Result<Response, Failure>> {
        let stream = open_stream(addr, tls, p).await.map_err(Err)?;
        // Each reply is timed by the kernel's receive stamp of the read that completed it,
        // where the socket gives them: a worker woken late does not lengthen the round trip.
        let stream = match p.kernel_stamps {
            true => stream.keeping_stamps().0,
            false => stream,
        };
        let counted = Counted::new(stream, Rc::clone(counts));
        let mut stream = Deflating::new(counted, self.deflate, MOST_MESSAGE_BYTES);
        let mut request = self.request;
        let key = tungstenite::handshake::client::generate_key();
        let key = http::HeaderValue::from_str(&key).expect("a base64 key is a header value");
        request.headers_mut().insert("Sec-WebSocket-Key", key);
        p.phase = Phase::Exchanging;
        p.sent = Some(Instant::now());
        let config = WebSocketConfig::default()
            .read_buffer_size(self.read_buffer)
            .write_buffer_size(0)
            .max_message_size(Some(MOST_MESSAGE_BYTES))
            .max_frame_size(Some(MOST_MESSAGE_BYTES));
        let answer = upgrade::upgrade(&mut stream, request, self.subprotocols).await;
        p.first_byte = Some(Instant::now());
        let (headers, leftover) = match answer {
            Ok(upgrade::Answer::Upgraded { headers, leftover }) => (headers, leftover),
            Ok(upgrade::Answer::Refused(status)) => {
                return Err(Ok(Response {
                    status,
                    grpc: None,
                    reusable: false,
                }))
            }
            Err(e) => return Err(Err(failure(e))),
        };
        if self.deflate {
            let answer = headers.get_all("Sec-WebSocket-Extensions");
            let agreed = deflate::Agreed::from_answer(answer.iter().map(|v| v.as_bytes()))
                .map_err(|e| Err(Failure::protocol(ErrorKind::MalformedResponse, e)))?;
            stream.agree(agreed);
        }
        let socket =
            WebSocketStream::from_partially_read(stream, leftover, Role::Client, Some(config))
                .await;
        Ok((socket, headers))
    }
}

/// What a socket that offered permessage-deflate records of the server's answer: the
/// parameters agreed, or [`DECLINED`].
pub(crate) fn agreed_label(socket: &Socket) -> String {
    socket
        .get_ref()
        .agreed()
        .map_or_else(|| DECLINED.into(), |a| a.label())
}

/// The read buffer of a scripted user's socket, whose messages are not known ahead.
pub(crate) const USER_READ_BUFFER: usize = 4 * 1024;

pub(crate) fn note_bytes(counts: &Counts, p: &mut Progress) {
    p.bytes_in = counts.read.get();
    p.bytes_out = counts.written.get();
}

/// How the messages of a socket ended.
enum Ended {
    /// All sent and answered (or the run ended): belier closes.
    Done,
    /// The server closed first, with this frame.
    Closed(Option<CloseFrame>),
}

/// A socket's messages as they go.
struct Exchange<'a> {
    sessions: &'a Sessions,
    deadline: Option<Instant>,
    /// The next message's number.
    next: u64,
    /// When the next message is due (open loop), from the socket's upgrade.
    due: Instant,
    /// Messages not yet answered, oldest first.
    outstanding: VecDeque<Pending>,
}

/// A message sent and not yet answered (or answered after one that was not).
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// Its number.
    id: u64,
    /// When it was due (open loop), or sent (closed loop): its round trip is timed from it.
    due: Instant,
    /// When it went: its round trip from the actual send is timed from it.
    sent: Instant,
    answered: bool,
}

impl<'a> Exchange<'a> {
    fn new(sessions: &'a Sessions, deadline: Option<Instant>) -> Self {
        Exchange {
            sessions,
            deadline,
            next: 0,
            due: Instant::now(),
            outstanding: VecDeque::new(),
        }
    }

    /// Whether another message is to go (now or when due).
    fn more(&self, now: Instant) -> bool {
        let ws = &self.sessions.ws;
        ws.messages.is_none_or(|m| self.next < m)
            && self.deadline.is_none_or(|d| now < d)
            && self.outstanding.len() < MOST_OUTSTANDING
            && (ws.interval.is_some() || self.outstanding.is_empty())
    }

    /// Sends and reads until every message went and was answered, the server closed, or a
    /// failure.
    async fn run(
        &mut self,
        socket: &mut Socket,
        counts: &Counts,
        p: &mut Progress,
    ) -> Result<Ended, Failure> {
        let send_timer = tokio::time::sleep_until(self.due.into());
        let reply_timer = tokio::time::sleep_until(self.due.into());
        tokio::pin!(send_timer, reply_timer);
        loop {
            let now = Instant::now();
            let more = self.more(now);
            if !more && self.outstanding.is_empty() {
                return Ok(Ended::Done);
            }
            if more && (self.sessions.ws.interval.is_none() || self.due <= now) {
                self.send(socket, now, p).await?;
                continue;
            }
            if more {
                send_timer.as_mut().reset(self.due.into());
            }
            let waiting = self.outstanding.front().map(|m| m.due);
            if let Some(due) = waiting {
                reply_timer
                    .as_mut()
                    .reset((due + self.sessions.ws.reply_timeout).into());
            }
            tokio::select! {
                biased;
                read = socket.next() => {
                    let stamp = socket.get_ref().get_ref().get_ref().last_stamp();
                    if let Some(ended) = self.read(read, stamp, p)? {
                        return Ok(ended);
                    }
                    note_bytes(counts, p);
                }
                () = &mut send_timer, if more => {}
                () = &mut reply_timer, if waiting.is_some() => {
                    return Err(Failure::protocol(
                        ErrorKind::Timeout,
                        "a WebSocket message was not answered within the reply timeout",
                    ));
                }
            }
        }
    }

    /// Sends the next message, due at `self.due` (open loop) or now.
    async fn send(
        &mut self,
        socket: &mut Socket,
        now: Instant,
        p: &mut Progress,
    ) -> Result<(), Failure> {
        let id = self.next;
        let due = match self.sessions.ws.interval {
            Some(interval) => {
                let due = self.due;
                self.due += interval;
                due
            }
            None => now,
        };
        self.next += 1;
        self.outstanding.push_back(Pending {
            id,
            due,
            sent: Instant::now(),
            answered: false,
        });
        if let Some(stream) = &p.stream {
            stream.sent.sent_matched();
        }
        socket
            .send(self.sessions.message(id))
            .await
            .map_err(failure)
    }

    /// Takes what the socket read, `stamp` the kernel's receive stamp of the read that
    /// completed it (if the socket keeps them); `Some` when it ends the messages.
    fn read(
        &mut self,
        read: Option<Result<Message, tungstenite::Error>>,
        stamp: Option<Duration>,
        p: &mut Progress,
    ) -> Result<Option<Ended>, Failure> {
        let now = Instant::now();
        // Never before the oldest message waiting went, nor after the read returned.
        let earliest = self.outstanding.front().map_or(now, |m| m.due);
        let at = stamp.map_or(now, |stamp| stamp::to_instant(stamp, earliest, now));
        let message = match read {
            None => return Err(abnormal(None)),
            Some(Err(e)) => return Err(failure(e)),
            Some(Ok(message)) => message,
        };
        let pings = self.sessions.ws.frames == Frames::Ping;
        let payload: &[u8] = match &message {
            Message::Text(text) if !pings => text.as_bytes(),
            Message::Binary(bytes) | Message::Pong(bytes) if pings == message.is_pong() => bytes,
            Message::Close(frame) => return Ok(Some(Ended::Closed(frame.clone()))),
            // Pings are answered by tungstenite as it reads; a pong answers only our pings,
            // and a held socket's pings nothing but pongs.
            _ => return Ok(None),
        };
        let answered = self.answered(payload);
        if let Some(stream) = &mut p.stream {
            stream.answered(answered.map(|m| m.due), at);
            if let Some(m) = answered {
                stream.answered_from_send(m.sent, at);
            }
        }
        Ok(None)
    }

    /// The message `payload` answers, taken off those outstanding; `None` when it answers
    /// none of them.
    fn answered(&mut self, payload: &[u8]) -> Option<Pending> {
        let index = match &self.sessions.ws.matching {
            Matching::Echo => self.outstanding.iter().position(|m| !m.answered)?,
            Matching::Field(field) => {
                let id = field_id(payload, field)?;
                let first = self.outstanding.front()?.id;
                let index = usize::try_from(id.checked_sub(first)?).ok()?;
                match self.outstanding.get(index) {
                    Some(m) if !m.answered => index,
                    _ => return None,
                }
            }
        };
        let entry = &mut self.outstanding[index];
        entry.answered = true;
        let answered = *entry;
        while self.outstanding.front().is_some_and(|m| m.answered) {
            self.outstanding.pop_front();
        }
        Some(answered)
    }
}

/// The number in `field` of the JSON object `payload` (a number, or a string of one).
fn field_id(payload: &[u8], field: &str) -> Option<u64> {
    let value: serde_json::Value = serde_json::from_slice(payload).ok()?;
    match value.get(field)? {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// Closes with 1000 and waits a moment for the server's close frame.
pub(crate) async fn close(socket: &mut Socket) -> Result<(), Failure> {
    let frame = CloseFrame {
        code: CloseCode::Normal,
        reason: Utf8Bytes::default(),
    };
    socket.close(Some(frame)).await.map_err(failure)?;
    let _ = tokio::time::timeout(CLOSE_WAIT, async {
        while let Some(Ok(_)) = socket.next().await {}
    })
    .await;
    Ok(())
}

/// The server closed first: fine with 1000 (normal) or 1001 (going away), else a failure
/// naming the code.
pub(crate) fn closed_by_server(frame: Option<&CloseFrame>) -> Result<(), Failure> {
    match frame.map(|f| f.code) {
        Some(CloseCode::Normal | CloseCode::Away) => Ok(()),
        code => Err(abnormal(code.map(u16::from))),
    }
}

/// A close other than a normal one: with the server's code, or without a close frame
/// (1006, which no peer sends).
pub(crate) fn abnormal(code: Option<u16>) -> Failure {
    let message = match code {
        Some(code) => format!("the server closed the WebSocket with code {code}"),
        None => "the WebSocket closed without a close frame (1006)".to_string(),
    };
    Failure {
        kind: ErrorKind::ClosedMidBody,
        cause: Cause::Io(io::Error::other(message)),
    }
}

/// The failure of a WebSocket error: I/O as any request's, a broken protocol as a
/// malformed response.
pub(crate) fn failure(e: tungstenite::Error) -> Failure {
    match e {
        tungstenite::Error::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => abnormal(None),
        tungstenite::Error::Io(e) if deflate::Broken::of(&e).is_some() => Failure {
            kind: ErrorKind::MalformedResponse,
            cause: Cause::Io(e),
        },
        tungstenite::Error::Io(e) => Failure::io(e, false),
        tungstenite::Error::ConnectionClosed
        | tungstenite::Error::AlreadyClosed
        | tungstenite::Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => {
            abnormal(None)
        }
        other => Failure {
            kind: ErrorKind::MalformedResponse,
            cause: Cause::Io(io::Error::other(format!("WebSocket: {other}"))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(message: &str, matching: Matching) -> Sessions {
        let ws = WebSocket {
            message: message.into(),
            frames: Frames::Text,
            messages: Some(3),
            interval: None,
            matching,
            reply_timeout: Duration::from_secs(1),
            subprotocols: vec!["chat".into()],
            deflate: false,
        };
        Sessions::new(ws, "ws://h:1/ws", "h:1", &[("X-A".into(), "b".into())]).unwrap()
    }

    #[test]
    fn each_message_carries_its_number() {
        let s = sessions(r#"{"id":{{id}},"n":"{{id}}"}"#, Matching::Echo);
        assert_eq!(s.message(7), Message::Text(r#"{"id":7,"n":"7"}"#.into()));
        let plain = sessions("hello", Matching::Echo);
        assert_eq!(plain.message(7), Message::Text("hello".into()));
        assert_eq!(s.request.headers()["Sec-WebSocket-Protocol"], "chat");
        assert_eq!(s.request.headers()["Host"], "h:1");
    }

    #[test]
    fn a_server_message_that_does_not_inflate_is_a_malformed_response_naming_it() {
        for broken in [deflate::Broken::Inflate, deflate::Broken::TooLong] {
            let f = failure(tungstenite::Error::Io(broken.into_io()));
            assert_eq!(f.kind, ErrorKind::MalformedResponse);
            assert_eq!(f.cause.to_string(), broken.to_string());
        }
        assert!(deflate::Broken::Inflate
            .to_string()
            .contains("does not inflate"));
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_ne!(
            failure(tungstenite::Error::Io(reset)).kind,
            ErrorKind::MalformedResponse
        );
    }

    #[test]
    fn the_read_buffer_fits_an_echo_of_the_message_within_its_bounds() {
        assert_eq!(read_buffer(5), 512);
        assert_eq!(read_buffer(500), 1024);
        assert_eq!(read_buffer(1010), 1024);
        assert_eq!(read_buffer(1011), 2048);
        assert_eq!(read_buffer(1 << 20), 4096);
        assert_eq!(sessions("{{id}}", Matching::Echo).read_buffer, 512);
    }

    #[test]
    fn the_offer_goes_in_the_upgrade_only_with_deflate() {
        let mut ws = sessions("hi", Matching::Echo).ws;
        let plain = Sessions::new(ws.clone(), "ws://h:1/", "h:1", &[]).unwrap();
        assert!(plain
            .request
            .headers()
            .get("Sec-WebSocket-Extensions")
            .is_none());
        ws.deflate = true;
        let offering = Sessions::new(ws, "ws://h:1/", "h:1", &[]).unwrap();
        let offer = &offering.request.headers()["Sec-WebSocket-Extensions"];
        assert_eq!(offer, "permessage-deflate; client_max_window_bits");
    }

    #[test]
    fn replies_match_by_field_in_any_order_and_by_echo_in_turn() {
        let s = sessions("{{id}}", Matching::Field("id".into()));
        let mut x = Exchange::new(&s, None);
        let t0 = Instant::now();
        let pending = |id: u64| Pending {
            id,
            due: t0 + Duration::from_millis(id),
            sent: t0 + Duration::from_millis(id + 10),
            answered: false,
        };
        for i in 0..3 {
            x.outstanding.push_back(pending(i));
        }
        let due_and_sent = |m: Pending| (m.due, m.sent);
        assert_eq!(
            x.answered(br#"{"id":1}"#).map(due_and_sent),
            Some((
                t0 + Duration::from_millis(1),
                t0 + Duration::from_millis(11)
            ))
        );
        assert!(x.answered(br#"{"id":1}"#).is_none(), "answered once");
        assert_eq!(x.answered(br#"{"id":"0"}"#).map(|m| m.due), Some(t0));
        assert_eq!(x.outstanding.len(), 1);
        assert!(x.answered(br#"{"other":2}"#).is_none());
        assert!(x.answered(b"not json").is_none());
        let e = sessions("hi", Matching::Echo);
        let mut y = Exchange::new(&e, None);
        y.outstanding.push_back(pending(0));
        assert_eq!(y.answered(b"hi").map(|m| m.due), Some(t0));
        assert!(y.answered(b"hi").is_none());
    }
}
