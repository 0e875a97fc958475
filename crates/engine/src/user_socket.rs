//! A scripted user's WebSocket: the socket a plan's `ws:` steps open, send on, read from, ping
//! and close ([`Action::Socket`](crate::user::Action::Socket)). The framing and the upgrade
//! are `belier ws`'s (`crate::websocket`); what differs is who decides what to send and what
//! to wait for: the user, one step at a time.
//!
//! Each action is recorded under its step's row: an open as its upgrade (connect, TLS, the
//! answer's status), a send with a reply from the send to the reply, a receive from its start
//! to the last message it awaited, a ping to its pong, a close to the server's close. The
//! socket's whole life counts once in the run's totals when it ends, as a `belier ws`
//! socket's does: its lifetime, its messages each way, its round trips and its close code.
//! A step that waits in vain fails as a timeout and leaves the socket open; a socket the
//! server ends, or that breaks, fails the step under its kind, and the steps after it find
//! no socket (each fails as `closed_before_response`) until one opens another.

use std::rc::Rc;
use std::time::{Duration, Instant};

use belier_stats::{ErrorKind, Outcome, Sample};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

use crate::connection::{stamp, Cause, Failure, Progress, Response, StreamProgress};
use crate::local::Local;
use crate::plan::Plan;
use crate::user::{SocketAction, SocketOp, User};
use crate::websocket::{
    abnormal, closed_by_server, failure, note_bytes, upgrade_request, Counts, Socket, Upgrade,
    CLOSE_WAIT, NORMAL_CLOSE, NO_CLOSE_FRAME, NO_STATUS, USER_READ_BUFFER,
};

/// The longest payload of a ping (RFC 6455 §5.5: a control frame's).
const MOST_PING_BYTES: usize = 125;

/// A user's open socket.
pub(crate) struct UserSocket {
    socket: Socket,
    counts: Rc<Counts>,
    /// Its life as the run's totals record it: connect, TLS, upgrade, bytes and messages.
    life: Progress,
    /// When its open was due, and when it was taken up.
    intended: Instant,
    dispatched: Instant,
    /// The upgrade's answer (status line and headers), which each action's reply carries.
    head: Vec<u8>,
}

/// How one action ended: what the user is told, the sample of its step's row, and the
/// upgrade's answer (a reply's head).
pub(crate) struct Acted {
    /// The status (101, or a refused upgrade's) and the last message awaited (empty when the
    /// action awaited none), or the kind of its failure.
    pub result: Result<(u16, Vec<u8>), ErrorKind>,
    pub sample: Sample,
    pub head: Vec<u8>,
}

/// How the socket ended, when an action ended it: the totals' result and its close code.
struct Ended {
    result: Result<(), Failure>,
    code: u16,
}

/// What a wait for messages ended with.
enum Waited {
    /// The last message awaited, and when it arrived.
    Got(Vec<u8>, Instant),
    /// The step's time ran out; the socket lives on.
    TimedOut,
    /// The socket ended.
    Ended(Ended),
}

/// What a wait waits for.
#[derive(Clone, Copy)]
enum Want {
    /// This many messages the user awaits; the first of them answers the message that was
    /// due at `sent.0` and went at `sent.1` (its round trips), if one was sent.
    Messages {
        count: u64,
        sent: Option<(Instant, Instant)>,
    },
    /// The pong of a ping.
    Pong,
}

/// Performs `action` on `socket` (the user's, if it holds one); an open replaces it. The
/// socket's end, when an action ends it, is recorded in the totals here.
pub(crate) async fn act(
    local: &Local,
    plan: &Plan,
    socket: &mut Option<Box<UserSocket>>,
    user: &mut dyn User,
    action: &SocketAction,
    intended: Instant,
) -> Acted {
    let timeout = action.timeout.unwrap_or(plan.timeout);
    if let SocketOp::Open {
        path_and_query,
        headers,
        subprotocols,
        deflate,
    } = &action.op
    {
        if let Some(held) = socket.take() {
            held.close(local, NORMAL_CLOSE, "").await;
        }
        let target = Target {
            path: path_and_query,
            headers,
            subprotocols,
            deflate: *deflate,
        };
        let (acted, opened) = open(local, plan, action.origin, &target, timeout, intended).await;
        *socket = opened;
        return acted;
    }
    let Some(held) = socket.as_mut() else {
        let now = Instant::now();
        let kind = ErrorKind::ClosedBeforeResponse;
        return Acted {
            result: Err(kind),
            sample: step_sample(intended, now, now, Outcome::Error(kind)),
            head: Vec::new(),
        };
    };
    let (acted, ended) = held.act(&action.op, user, timeout, intended).await;
    if let Some(ended) = ended {
        if let Some(held) = socket.take() {
            held.record(local, ended);
        }
    }
    acted
}

/// Closes the user's socket, if it holds one, normally: at the end of the iteration that
/// opened it, or of the user.
pub(crate) async fn end(local: &Local, socket: &mut Option<Box<UserSocket>>) {
    if let Some(held) = socket.take() {
        held.close(local, NORMAL_CLOSE, "").await;
    }
}

/// The sample of an action's step row: due at `intended`, its message out at `sent`, ended
/// at `done`.
fn step_sample(intended: Instant, sent: Instant, done: Instant, outcome: Outcome) -> Sample {
    Sample {
        intended,
        dispatched: intended,
        ready: None,
        connected: None,
        handshaken: None,
        sent,
        first_byte: None,
        done,
        outcome,
        bytes_in: 0,
        bytes_out: 0,
        trace: None,
    }
}

/// Where an open goes on its host.
struct Target<'a> {
    path: &'a str,
    headers: &'a [(String, String)],
    subprotocols: &'a [String],
    /// Offer permessage-deflate.
    deflate: bool,
}

/// Opens a socket to host `origin`: the action's result and sample, and the socket if it
/// opened. A refused or failed upgrade is recorded in the totals at once (the socket's whole
/// life); one that opened is recorded when it ends.
async fn open(
    local: &Local,
    plan: &Plan,
    origin: usize,
    target: &Target<'_>,
    timeout: Duration,
    intended: Instant,
) -> (Acted, Option<Box<UserSocket>>) {
    let dispatched = Instant::now();
    let mut life = Progress {
        kernel_stamps: plan.kernel_stamps,
        sources: plan.sources.clone(),
        ..Progress::default()
    };
    let counts = Rc::new(Counts::default());
    let upgrading = upgrade(plan, origin, target, &counts, &mut life);
    let opened = match tokio::time::timeout(timeout, Box::pin(upgrading)).await {
        Ok(opened) => opened,
        Err(_) => Err(Err(Failure::timeout(life.phase))),
    };
    note_bytes(&counts, &mut life);
    let done = Instant::now();
    let mut sample = Sample {
        intended,
        dispatched,
        ready: None,
        connected: life.connected,
        handshaken: life.handshaken,
        sent: life.sent.unwrap_or(done),
        first_byte: life.first_byte,
        done: life.first_byte.unwrap_or(done),
        outcome: Outcome::Response { status: 101 },
        bytes_in: life.bytes_in,
        bytes_out: life.bytes_out,
        trace: None,
    };
    let (socket, answer) = match opened {
        Ok(pair) => pair,
        Err(ended) => {
            let result = match &ended {
                Ok(refused) => Ok((refused.status, Vec::new())),
                Err(f) => Err(f.kind),
            };
            sample.outcome = match &ended {
                Ok(refused) => Outcome::Response {
                    status: refused.status,
                },
                Err(f) => Outcome::Error(f.kind),
            };
            sample.done = done;
            local.record(sample, &life, &ended, || None);
            let acted = Acted {
                result,
                sample,
                head: Vec::new(),
            };
            return (acted, None);
        }
    };
    let mut stream = StreamProgress::matching();
    if target.deflate {
        stream.extension = Some(crate::websocket::agreed_label(&socket));
    }
    life.stream = Some(stream);
    let head = answer_head(&answer);
    let acted = Acted {
        result: Ok((101, Vec::new())),
        sample,
        head: head.clone(),
    };
    let held = UserSocket {
        socket,
        counts,
        life,
        intended,
        dispatched,
        head,
    };
    (acted, Some(Box::new(held)))
}

/// Connects to host `origin` and upgrades to `target` (see [`Upgrade::open`]).
async fn upgrade(
    plan: &Plan,
    origin: usize,
    target: &Target<'_>,
    counts: &Rc<Counts>,
    life: &mut Progress,
) -> Result<(Socket, http::HeaderMap), Result<Response, Failure>> {
    let (addr, tls, host_header) = plan.dest(origin);
    let scheme = if tls.is_some() { "wss" } else { "ws" };
    let uri = format!("{scheme}://{host_header}{}", target.path);
    let request = upgrade_request(
        &uri,
        host_header,
        target.headers,
        target.subprotocols,
        target.deflate,
    )
    .map_err(|why| {
        Err(Failure {
            kind: ErrorKind::OtherIo,
            cause: Cause::Io(std::io::Error::other(why)),
        })
    })?;
    let upgrade = Upgrade {
        request,
        subprotocols: target.subprotocols,
        deflate: target.deflate,
        read_buffer: USER_READ_BUFFER,
    };
    upgrade.open(addr, tls, counts, life).await
}

/// The upgrade's answer (its headers) written out as a response head, for checks and
/// extractions.
fn answer_head(headers: &http::HeaderMap) -> Vec<u8> {
    let mut head = b"HTTP/1.1 101 Switching Protocols\r\n".to_vec();
    for (name, value) in headers {
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    head
}

impl UserSocket {
    /// Sends, waits, pings or closes; the socket's end when the action ended it.
    async fn act(
        &mut self,
        op: &SocketOp,
        user: &mut dyn User,
        timeout: Duration,
        intended: Instant,
    ) -> (Acted, Option<Ended>) {
        let (bytes_in, bytes_out) = (self.counts.read.get(), self.counts.written.get());
        let sent = Instant::now();
        let until = intended.max(sent) + timeout;
        let waited = match op {
            SocketOp::Open { .. } => unreachable!("an open replaces the socket"),
            SocketOp::Send {
                message,
                binary,
                awaited,
            } => match self.send(message, *binary).await {
                Err(ended) => Waited::Ended(ended),
                Ok(()) if *awaited == 0 => Waited::Got(Vec::new(), Instant::now()),
                Ok(()) => {
                    let want = Want::Messages {
                        count: *awaited,
                        sent: Some((intended, sent)),
                    };
                    self.wait(user, want, until).await
                }
            },
            SocketOp::Receive { awaited } => {
                let want = Want::Messages {
                    count: *awaited,
                    sent: None,
                };
                self.wait(user, want, until).await
            }
            SocketOp::Ping(payload) => {
                let mut payload = payload.clone();
                payload.truncate(MOST_PING_BYTES);
                match self.socket.send(Message::Ping(payload.into())).await {
                    Err(e) => Waited::Ended(broken(failure(e))),
                    Ok(()) => self.wait(user, Want::Pong, until).await,
                }
            }
            SocketOp::Close { code, reason } => {
                let ended = self.close_handshake(*code, reason).await;
                let done = Instant::now();
                let outcome = match &ended.result {
                    Ok(()) => Outcome::Response { status: 101 },
                    Err(f) => Outcome::Error(f.kind),
                };
                let result = ended.result.as_ref().map(|()| (101, Vec::new()));
                let acted = self.acted(result.map_err(|f| f.kind), intended, sent, done, outcome);
                return (acted, Some(ended));
            }
        };
        note_bytes(&self.counts, &mut self.life);
        let (acted, ended) = match waited {
            Waited::Got(message, at) => {
                let outcome = Outcome::Response { status: 101 };
                (
                    self.acted(Ok((101, message)), intended, sent, at, outcome),
                    None,
                )
            }
            Waited::TimedOut => {
                let kind = ErrorKind::Timeout;
                let now = Instant::now();
                (
                    self.acted(Err(kind), intended, sent, now, Outcome::Error(kind)),
                    None,
                )
            }
            Waited::Ended(ended) => {
                // A server that closes normally while a step waits fails the step all the
                // same: what it waited for never came.
                let kind = match &ended.result {
                    Ok(()) => ErrorKind::ClosedMidBody,
                    Err(f) => f.kind,
                };
                let now = Instant::now();
                let acted = self.acted(Err(kind), intended, sent, now, Outcome::Error(kind));
                (acted, Some(ended))
            }
        };
        let mut acted = acted;
        acted.sample.bytes_in = self.counts.read.get() - bytes_in;
        acted.sample.bytes_out = self.counts.written.get() - bytes_out;
        (acted, ended)
    }

    fn acted(
        &self,
        result: Result<(u16, Vec<u8>), ErrorKind>,
        intended: Instant,
        sent: Instant,
        done: Instant,
        outcome: Outcome,
    ) -> Acted {
        Acted {
            result,
            sample: step_sample(intended, sent, done, outcome),
            head: self.head.clone(),
        }
    }

    /// Sends one message.
    async fn send(&mut self, message: &[u8], binary: bool) -> Result<(), Ended> {
        let message = match binary {
            true => Message::Binary(bytes::Bytes::copy_from_slice(message)),
            false => match std::str::from_utf8(message) {
                Ok(text) => Message::Text(Utf8Bytes::from(text)),
                // A text message must be UTF-8: one that is not goes as binary.
                Err(_) => Message::Binary(bytes::Bytes::copy_from_slice(message)),
            },
        };
        if let Some(stream) = &self.life.stream {
            stream.sent.sent_matched();
        }
        self.socket
            .send(message)
            .await
            .map_err(|e| broken(failure(e)))
    }

    /// Reads until `want` is met, the time runs out or the socket ends.
    async fn wait(&mut self, user: &mut dyn User, want: Want, until: Instant) -> Waited {
        let mut awaited = 0;
        loop {
            let read = match tokio::time::timeout_at(until.into(), self.socket.next()).await {
                Err(_) => return Waited::TimedOut,
                Ok(read) => read,
            };
            let now = Instant::now();
            let stamp = self.socket.get_ref().get_ref().get_ref().last_stamp();
            let at = stamp.map_or(now, |stamp| stamp::to_instant(stamp, self.dispatched, now));
            let message = match read {
                None => return Waited::Ended(broken(abnormal(None))),
                Some(Err(e)) => return Waited::Ended(broken(failure(e))),
                Some(Ok(message)) => message,
            };
            let payload: &[u8] = match (&message, want) {
                (Message::Text(text), Want::Messages { .. }) => text.as_bytes(),
                (Message::Binary(bytes), Want::Messages { .. }) => bytes,
                // A pong is timed by its step's row, not counted among the messages in.
                (Message::Pong(_), Want::Pong) => return Waited::Got(Vec::new(), at),
                (Message::Close(frame), _) => {
                    let code = frame.as_ref().map_or(NO_STATUS, |f| u16::from(f.code));
                    let result = closed_by_server(frame.as_ref());
                    return Waited::Ended(Ended { result, code });
                }
                // Pings are answered as they are read; other frames await nothing here.
                _ => continue,
            };
            let Want::Messages { count, sent } = want else {
                self.answered(None, at);
                continue;
            };
            if !user.awaits(payload) {
                self.answered(None, at);
                continue;
            }
            awaited += 1;
            self.answered(sent.filter(|_| awaited == 1), at);
            if awaited >= count {
                return Waited::Got(payload.to_vec(), at);
            }
        }
    }

    /// Counts a message in, the answer to one sent (due, went) when it is one.
    fn answered(&mut self, sent: Option<(Instant, Instant)>, at: Instant) {
        let Some(stream) = self.life.stream.as_mut() else {
            return;
        };
        match sent {
            Some((due, went)) => {
                stream.answered(Some(due), at);
                stream.answered_from_send(went, at);
            }
            None => stream.unasked(at),
        }
    }

    /// Sends a close frame and waits a moment for the server's.
    async fn close_handshake(&mut self, code: u16, reason: &str) -> Ended {
        let frame = CloseFrame {
            code: CloseCode::from(code),
            reason: Utf8Bytes::from(reason),
        };
        if let Err(e) = self.socket.close(Some(frame)).await {
            return broken(failure(e));
        }
        let _ = tokio::time::timeout(CLOSE_WAIT, async {
            while let Some(Ok(_)) = self.socket.next().await {}
        })
        .await;
        Ended {
            result: Ok(()),
            code,
        }
    }

    /// Closes the socket with `code` and records its life.
    async fn close(mut self: Box<Self>, local: &Local, code: u16, reason: &str) {
        let ended = self.close_handshake(code, reason).await;
        self.record(local, ended);
    }

    /// Records the socket's life in the run's totals, once it ended.
    fn record(mut self: Box<Self>, local: &Local, ended: Ended) {
        note_bytes(&self.counts, &mut self.life);
        if let Some(stream) = self.life.stream.as_mut() {
            stream.close = Some(ended.code);
        }
        let done = Instant::now();
        let life = &self.life;
        let sample = Sample {
            intended: self.intended,
            dispatched: self.dispatched,
            ready: None,
            connected: life.connected,
            handshaken: life.handshaken,
            sent: life.sent.unwrap_or(done),
            first_byte: life.first_byte,
            done,
            outcome: match &ended.result {
                Ok(()) => Outcome::Response { status: 101 },
                Err(f) => Outcome::Error(f.kind),
            },
            bytes_in: life.bytes_in,
            bytes_out: life.bytes_out,
            trace: None,
        };
        let result = ended.result.map(|()| Response {
            status: 101,
            grpc: None,
            reusable: false,
        });
        local.record(sample, life, &result, || None);
    }
}

/// A socket that broke: no close handshake (1006).
fn broken(f: Failure) -> Ended {
    Ended {
        result: Err(f),
        code: NO_CLOSE_FRAME,
    }
}
