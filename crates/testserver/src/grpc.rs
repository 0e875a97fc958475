//! gRPC on the built-in target's HTTP/2 connections: the service `belier.target.Target`
//! ([`TARGET_PROTO`]), unary and the three streaming kinds, each call's behaviour set by its
//! request message (delay, status code, reply size, stream length and gaps) as an HTTP
//! request's is by its query string. A request whose `content-type` is `application/grpc…`
//! comes here; everything else on the connection stays HTTP.
//!
//! Messages are read as their DATA frames arrive (a bidirectional call answers each before
//! the next comes) and counted on the server's side ([`Counts::grpc_messages_received`],
//! [`Counts::grpc_messages_sent`]); a call that completes counts as a response. A request the
//! service cannot take ends with the status gRPC gives it (UNIMPLEMENTED for an unknown
//! method or compression, INVALID_ARGUMENT for a message that does not decode) in a
//! trailers-only response.
//!
//! [`Counts::grpc_messages_received`]: crate::Counts::grpc_messages_received
//! [`Counts::grpc_messages_sent`]: crate::Counts::grpc_messages_sent

use std::io::Read as _;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use h2::server::SendResponse;
use h2::{RecvStream, SendStream};
use http::{HeaderMap, HeaderValue, Response};
use prost::Message as _;

use crate::shared::Shared;

/// The service's definition, for clients' `--proto`.
pub const TARGET_PROTO: &str = include_str!("../proto/target.proto");

/// The service's methods' path prefix.
const SERVICE: &str = "/belier.target.Target/";

/// The largest request message read: gRPC's default limit.
const MOST_MESSAGE: usize = 4 << 20;

/// Replies of a server stream whose request says 0.
const DEFAULT_COUNT: u32 = 10;

/// Bounds on what a message may ask for, so that no call holds a stream or memory for long:
/// a minute of waiting, 4 MiB a reply, 100,000 replies.
const MOST_WAIT_MS: u32 = 60_000;
const MOST_SIZE: u32 = 4 << 20;
const MOST_COUNT: u32 = 100_000;

/// gRPC status codes the service ends calls with itself.
const INVALID_ARGUMENT: u32 = 3;
const RESOURCE_EXHAUSTED: u32 = 8;
const UNIMPLEMENTED: u32 = 12;
const UNAVAILABLE: u32 = 14;

/// A request message (`belier.target.Ask`).
#[derive(Clone, PartialEq, prost::Message)]
struct Ask {
    #[prost(uint32, tag = "1")]
    delay_ms: u32,
    #[prost(uint32, tag = "2")]
    code: u32,
    #[prost(uint32, tag = "3")]
    size: u32,
    #[prost(uint32, tag = "4")]
    count: u32,
    #[prost(uint32, tag = "5")]
    gap_ms: u32,
    #[prost(string, tag = "6")]
    message: String,
}

impl Ask {
    fn delay(&self) -> Duration {
        Duration::from_millis(u64::from(self.delay_ms.min(MOST_WAIT_MS)))
    }

    fn gap(&self) -> Duration {
        Duration::from_millis(u64::from(self.gap_ms.min(MOST_WAIT_MS)))
    }

    fn count(&self) -> u32 {
        match self.count {
            0 => DEFAULT_COUNT,
            n => n.min(MOST_COUNT),
        }
    }

    /// The reply numbered `index`, framed.
    fn reply(&self, index: u32) -> Bytes {
        let reply = Reply {
            message: self.message.clone(),
            payload: vec![b'x'; self.size.min(MOST_SIZE) as usize],
            index,
        };
        frame(&reply.encode_to_vec())
    }
}

/// A reply message (`belier.target.Reply`).
#[derive(Clone, PartialEq, prost::Message)]
struct Reply {
    #[prost(string, tag = "1")]
    message: String,
    #[prost(bytes = "vec", tag = "2")]
    payload: Vec<u8>,
    #[prost(uint32, tag = "3")]
    index: u32,
}

/// The service's methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Unary,
    ServerStream,
    ClientStream,
    Bidi,
}

impl Kind {
    fn of(path: &str) -> Option<Kind> {
        match path.strip_prefix(SERVICE)? {
            "Unary" => Some(Kind::Unary),
            "ServerStream" => Some(Kind::ServerStream),
            "ClientStream" => Some(Kind::ClientStream),
            "Bidi" => Some(Kind::Bidi),
            _ => None,
        }
    }
}

/// Whether a request is a gRPC call: its `content-type` is `application/grpc` or a subtype.
pub(crate) fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}

/// How a call ends: its status code and message.
struct Status {
    code: u32,
    message: String,
}

impl Status {
    fn new(code: u32, message: impl Into<String>) -> Status {
        Status {
            code,
            message: message.into(),
        }
    }

    fn trailers(&self) -> HeaderMap {
        let mut map = HeaderMap::new();
        map.insert("grpc-status", HeaderValue::from(self.code));
        if let Ok(v) = HeaderValue::from_str(&percent_encoded(&self.message)) {
            if !self.message.is_empty() {
                map.insert("grpc-message", v);
            }
        }
        map
    }
}

/// One call's answer, as far as it has gone.
struct Call<'a> {
    shared: &'a Shared,
    respond: &'a mut SendResponse<Bytes>,
    /// The reply stream, once the response head is sent.
    send: Option<SendStream<Bytes>>,
}

/// Answers the call on `path`: reads its messages from `body` and replies as its method and
/// messages say. `Err` when the client or the connection went away.
pub(crate) async fn answer(
    shared: &Shared,
    path: &str,
    headers: &HeaderMap,
    body: RecvStream,
    respond: &mut SendResponse<Bytes>,
) -> Result<(), h2::Error> {
    let mut call = Call {
        shared,
        respond,
        send: None,
    };
    let Some(kind) = Kind::of(path) else {
        let why = format!(
            "unknown method {path}: the target serves {SERVICE}Unary, ServerStream, ClientStream and Bidi"
        );
        return call.end(&Status::new(UNIMPLEMENTED, why));
    };
    let gzip = match headers.get("grpc-encoding").map(HeaderValue::as_bytes) {
        None | Some(b"identity") => false,
        Some(b"gzip") => true,
        Some(other) => {
            let why = format!(
                "compression {} is not served",
                String::from_utf8_lossy(other)
            );
            return call.end(&Status::new(UNIMPLEMENTED, why));
        }
    };
    let status = call.serve(kind, Messages::new(body, gzip)).await?;
    call.end(&status)
}

/// Turns a call away for load (`--workers` with `--shed`, the queue full): UNAVAILABLE, as
/// HTTP's 503 reads in gRPC.
pub(crate) fn shed(shared: &Shared, respond: &mut SendResponse<Bytes>) -> Result<(), h2::Error> {
    let mut call = Call {
        shared,
        respond,
        send: None,
    };
    call.end(&Status::new(UNAVAILABLE, "overloaded"))
}

impl Call<'_> {
    /// Reads the call's messages and replies; the status it ends with.
    async fn serve(&mut self, kind: Kind, mut messages: Messages) -> Result<Status, h2::Error> {
        let mut first: Option<Ask> = None;
        let mut received = 0u32;
        let mut last_code = 0;
        while let Some(ask) = messages.next(self.shared).await? {
            let ask = match ask {
                Ok(ask) => ask,
                Err(status) => return Ok(status),
            };
            received += 1;
            last_code = ask.code;
            if kind == Kind::Bidi {
                crate::delay::sleep(ask.delay()).await;
                self.send(ask.reply(received - 1)).await?;
            }
            first.get_or_insert(ask);
        }
        let ask = first.unwrap_or_default();
        let code = match kind {
            Kind::Unary | Kind::ServerStream => ask.code,
            Kind::ClientStream | Kind::Bidi => last_code,
        };
        match kind {
            Kind::Bidi => {}
            Kind::Unary | Kind::ClientStream => {
                crate::delay::sleep(ask.delay()).await;
                // A failed unary call has no reply: its status alone (trailers-only).
                if code == 0 {
                    let index = if kind == Kind::Unary { 0 } else { received };
                    self.send(ask.reply(index)).await?;
                }
            }
            Kind::ServerStream => {
                crate::delay::sleep(ask.delay()).await;
                for index in 0..ask.count() {
                    if index > 0 {
                        crate::delay::sleep(ask.gap()).await;
                    }
                    self.send(ask.reply(index)).await?;
                }
            }
        }
        Ok(Status::new(code, ""))
    }

    /// Sends one framed reply, the response head first if it is the call's first.
    async fn send(&mut self, framed: Bytes) -> Result<(), h2::Error> {
        let send = match &mut self.send {
            Some(send) => send,
            None => self
                .send
                .insert(self.respond.send_response(grpc_head(), false)?),
        };
        crate::flow::send_flow(send, framed, false).await?;
        self.shared
            .counters
            .grpc_messages_sent
            .fetch_add(1, Relaxed);
        Ok(())
    }

    /// Ends the call with `status`: in trailers after the replies, or as a trailers-only
    /// response when there were none.
    fn end(&mut self, status: &Status) -> Result<(), h2::Error> {
        match &mut self.send {
            Some(send) => send.send_trailers(status.trailers())?,
            None => {
                let mut head = grpc_head();
                head.headers_mut().extend(status.trailers());
                self.respond.send_response(head, true)?;
            }
        }
        self.shared.counters.responses.fetch_add(1, Relaxed);
        Ok(())
    }
}

/// The call's request messages, decoded as their DATA frames arrive.
struct Messages {
    body: RecvStream,
    gzip: bool,
    buffer: BytesMut,
}

impl Messages {
    fn new(body: RecvStream, gzip: bool) -> Messages {
        Messages {
            body,
            gzip,
            buffer: BytesMut::new(),
        }
    }

    /// The next request message; `None` at the end of the request stream, `Some(Err)` for one
    /// the service cannot read (the call then ends with that status).
    async fn next(&mut self, shared: &Shared) -> Result<Option<Result<Ask, Status>>, h2::Error> {
        loop {
            if let Some(message) = self.take() {
                shared.counters.grpc_messages_received.fetch_add(1, Relaxed);
                return Ok(Some(message));
            }
            let Some(data) = self.body.data().await else {
                if self.buffer.is_empty() {
                    return Ok(None);
                }
                let why = "the request stream ended inside a message";
                return Ok(Some(Err(Status::new(INVALID_ARGUMENT, why))));
            };
            let data = data?;
            let _ = self.body.flow_control().release_capacity(data.len());
            let received = &shared.counters.body_bytes_received;
            received.fetch_add(data.len() as u64, Relaxed);
            self.buffer.extend_from_slice(&data);
        }
    }

    /// A complete message from the front of the buffer, decoded, if one is there.
    fn take(&mut self) -> Option<Result<Ask, Status>> {
        if self.buffer.len() < 5 {
            return None;
        }
        let compressed = self.buffer[0] == 1;
        let len = u32::from_be_bytes([
            self.buffer[1],
            self.buffer[2],
            self.buffer[3],
            self.buffer[4],
        ]) as usize;
        if len > MOST_MESSAGE {
            let why = format!("a message of {len} bytes; the target reads at most {MOST_MESSAGE}");
            return Some(Err(Status::new(RESOURCE_EXHAUSTED, why)));
        }
        if self.buffer.len() < 5 + len {
            return None;
        }
        self.buffer.advance(5);
        let bytes = self.buffer.split_to(len).freeze();
        Some(self.decode(bytes, compressed))
    }

    fn decode(&self, bytes: Bytes, compressed: bool) -> Result<Ask, Status> {
        let plain = match (compressed, self.gzip) {
            (false, _) => bytes,
            (true, true) => gunzip(&bytes)?,
            (true, false) => {
                let why = "a compressed message without grpc-encoding";
                return Err(Status::new(INVALID_ARGUMENT, why));
            }
        };
        Ask::decode(plain)
            .map_err(|e| Status::new(INVALID_ARGUMENT, format!("not a belier.target.Ask: {e}")))
    }
}

fn gunzip(bytes: &[u8]) -> Result<Bytes, Status> {
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take(MOST_MESSAGE as u64 + 1)
        .read_to_end(&mut plain)
        .map_err(|e| Status::new(INVALID_ARGUMENT, format!("bad gzip: {e}")))?;
    if plain.len() > MOST_MESSAGE {
        let why = format!("a message over {MOST_MESSAGE} bytes once decompressed");
        return Err(Status::new(RESOURCE_EXHAUSTED, why));
    }
    Ok(plain.into())
}

/// A message with gRPC's prefix: not compressed, then its length.
fn frame(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + message.len());
    out.put_u8(0);
    out.put_u32(message.len() as u32);
    out.put_slice(message);
    out.freeze()
}

/// A gRPC response head: 200, `application/grpc`.
fn grpc_head() -> Response<()> {
    let mut head = Response::new(());
    head.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    head
}

/// `grpc-message`'s encoding: printable ASCII but `%` as is, everything else percent-encoded.
fn percent_encoded(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for b in message.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_are_the_services_four() {
        assert_eq!(Kind::of("/belier.target.Target/Unary"), Some(Kind::Unary));
        assert_eq!(Kind::of("/belier.target.Target/Bidi"), Some(Kind::Bidi));
        assert_eq!(Kind::of("/belier.target.Target/Other"), None);
        assert_eq!(Kind::of("/other.Service/Unary"), None);
    }

    #[test]
    fn asks_are_bounded() {
        let ask = Ask {
            delay_ms: u32::MAX,
            count: u32::MAX,
            ..Ask::default()
        };
        assert_eq!(ask.delay(), Duration::from_secs(60));
        assert_eq!(ask.count(), MOST_COUNT);
        assert_eq!(Ask::default().count(), DEFAULT_COUNT);
    }

    #[test]
    fn a_reply_is_framed_with_its_length() {
        let ask = Ask {
            size: 3,
            message: "hi".into(),
            ..Ask::default()
        };
        let framed = ask.reply(7);
        assert_eq!(framed[0], 0);
        let len = u32::from_be_bytes([framed[1], framed[2], framed[3], framed[4]]) as usize;
        assert_eq!(len, framed.len() - 5);
        let reply = Reply::decode(&framed[5..]).unwrap();
        assert_eq!(
            (reply.message.as_str(), reply.payload.len(), reply.index),
            ("hi", 3, 7)
        );
    }

    #[test]
    fn grpc_message_is_percent_encoded() {
        assert_eq!(percent_encoded("quota 100% used"), "quota 100%25 used");
        assert_eq!(percent_encoded("é"), "%C3%A9");
    }
}
