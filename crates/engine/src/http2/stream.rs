//! Streaming gRPC calls on an HTTP/2 stream: a client stream's request messages sent in turn
//! beside the exchange, and the response's messages read out of its body as its chunks come,
//! each stamped when it was complete.
//!
//! The first request message goes with the request's head, as a unary call's does; the rest
//! go from a task of their own ([`Sending`]), so that the exchange reads the response
//! (which a bidirectional call's server may start at once) while they go, and a timeout that
//! drops the exchange ends the sending with it.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use belier_grpc::{frame, Compression, FrameError, Frames};
use bytes::Bytes;
use h2::SendStream;

use crate::connection::{SentMessages, StreamProgress};
use crate::GrpcStream;

/// A streaming call's part of the request built once per run.
#[derive(Debug, Clone)]
pub(crate) struct Streaming {
    /// The framed request messages, sent in turn and cycled; the first goes with the head.
    messages: Arc<[Bytes]>,
    /// Request messages each call sends in all.
    count: u32,
    interval: Duration,
}

impl Streaming {
    /// `stream`'s messages from `body`, the request messages framed one after the other.
    pub(crate) fn new(body: &Bytes, stream: GrpcStream) -> Result<Streaming, String> {
        let messages =
            frame::split(body).map_err(|e| format!("the body is not gRPC messages: {e}"))?;
        if messages.is_empty() {
            return Err("a streaming gRPC call needs a request message".into());
        }
        Ok(Streaming {
            messages: messages.into(),
            count: stream.messages,
            interval: stream.interval,
        })
    }

    /// The message that goes with the request's head.
    pub(crate) fn first(&self) -> Bytes {
        self.messages[0].clone()
    }

    /// Whether messages follow the first: the stream stays open after it.
    pub(crate) fn more(&self) -> bool {
        self.count > 1
    }

    /// Sends the messages after the first on `body` from a task of its own, noting each one
    /// in `sent`; it ends when the returned [`Sending`] is dropped.
    pub(crate) fn send_rest(&self, mut body: SendStream<Bytes>, sent: Rc<SentMessages>) -> Sending {
        let messages = Arc::clone(&self.messages);
        let (count, interval) = (self.count, self.interval);
        // Each message on a schedule from the first: a late wake-up (the timer's millisecond)
        // delays one message, not all those after it.
        let first = Instant::now();
        Sending(tokio::task::spawn_local(async move {
            for i in 1..count {
                if !interval.is_zero() {
                    tokio::time::sleep_until((first + interval * i).into()).await;
                }
                let message = messages[i as usize % messages.len()].clone();
                if !send_in_window(&mut body, message, i + 1 == count).await {
                    return;
                }
                sent.sent(Instant::now());
            }
        }))
    }
}

/// Sends `message` once the peer's window takes some of it, so that a stream sent without an
/// interval is buffered a message at a time rather than whole; false once the stream is gone.
async fn send_in_window(body: &mut SendStream<Bytes>, message: Bytes, last: bool) -> bool {
    body.reserve_capacity(message.len());
    while body.capacity() == 0 {
        match std::future::poll_fn(|cx| body.poll_capacity(cx)).await {
            Some(Ok(_)) => {}
            _ => return false,
        }
    }
    body.send_data(message, last).is_ok()
}

/// The task sending a client stream's messages after the first: aborted when dropped, with
/// the exchange (done, failed or timed out), which resets the stream if it is still open.
pub(crate) struct Sending(tokio::task::JoinHandle<()>);

impl Drop for Sending {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A streaming call's response messages, read out of its body's chunks.
pub(crate) struct Incoming(Frames);

impl Incoming {
    /// Reads a body whose response headers are `headers` (their `grpc-encoding`).
    pub(crate) fn new(headers: &http::HeaderMap) -> Incoming {
        let encoding = headers
            .get("grpc-encoding")
            .and_then(|v| Compression::parse(v.as_bytes()));
        Incoming(Frames::new(encoding, frame::MAX_MESSAGE, false))
    }

    /// Takes in the next chunk of the body, read at `at`: the messages it completes arrived
    /// then.
    pub(crate) fn feed(
        &mut self,
        chunk: &[u8],
        at: Instant,
        s: &mut StreamProgress,
    ) -> Result<(), FrameError> {
        let before = self.0.messages();
        self.0.feed(chunk)?;
        let complete = self.0.messages() - before;
        if complete > 0 {
            s.arrived(complete, at);
        }
        Ok(())
    }

    /// The body ended: an error if it ended inside a message.
    pub(crate) fn finish(&self) -> Result<(), FrameError> {
        self.0.finish()
    }
}
