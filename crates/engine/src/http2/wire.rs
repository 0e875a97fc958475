//! What an HTTP/2 connection carries on the wire, seen from under `h2`: every byte of every
//! frame read and written (frame headers, HPACK-compressed HEADERS, DATA, SETTINGS, WINDOW_UPDATE,
//! …; over TLS the plaintext frames, as HTTP/1.1 counts its plaintext bytes), and whether the
//! server sent a GOAWAY, which `h2` does not tell its client otherwise.
//!
//! The counting sits in an [`AsyncRead`]/[`AsyncWrite`] adapter around the stream `h2` drives,
//! with per-connection counters in `Rc<Cell>`s: a worker's tasks share one thread.

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The HTTP/2 frame type of GOAWAY (RFC 9113 §6.8).
const GOAWAY: u8 = 0x7;
/// Length of a frame header: 24-bit length, type, flags, 31-bit stream id.
const FRAME_HEADER: usize = 9;

/// One connection's counters.
#[derive(Debug, Default)]
pub(crate) struct Wire {
    /// Bytes read since the last [`Wire::take`].
    read: Cell<u64>,
    /// Bytes written since the last [`Wire::take`].
    written: Cell<u64>,
    /// The server sent a GOAWAY.
    goaway: Cell<bool>,
    /// Where the reader is in the frame stream.
    frames: Cell<FrameCursor>,
}

impl Wire {
    /// Bytes read and written since the last call, `(in, out)`; each exchange that ends on the
    /// connection takes what the connection carried since the one before, so the run's totals
    /// hold every byte, and a request's share is what went by while it was the latest.
    pub(crate) fn take(&self) -> (u64, u64) {
        (self.read.take(), self.written.take())
    }

    /// Whether the server sent a GOAWAY on this connection.
    pub(crate) fn goaway(&self) -> bool {
        self.goaway.get()
    }

    fn saw(&self, bytes: &[u8]) {
        self.read.set(self.read.get() + bytes.len() as u64);
        let mut cursor = self.frames.get();
        if cursor.feed(bytes) {
            self.goaway.set(true);
        }
        self.frames.set(cursor);
    }
}

/// Follows frame boundaries through the bytes read: a frame header, then its payload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct FrameCursor {
    /// Header bytes of the current frame seen so far (0..9), or 9 while in its payload.
    header_seen: usize,
    /// The first four header bytes (length and type), as they come.
    length: u32,
    kind: u8,
    /// Payload bytes still to skip.
    payload_left: u32,
}

impl FrameCursor {
    /// Consumes `bytes`; true if a GOAWAY frame header went by.
    fn feed(&mut self, mut bytes: &[u8]) -> bool {
        let mut goaway = false;
        while !bytes.is_empty() {
            if self.header_seen == FRAME_HEADER {
                let skip = (self.payload_left as usize).min(bytes.len());
                bytes = &bytes[skip..];
                self.payload_left -= skip as u32;
                if self.payload_left == 0 {
                    self.header_seen = 0;
                    self.length = 0;
                }
                continue;
            }
            let b = bytes[0];
            bytes = &bytes[1..];
            match self.header_seen {
                0..=2 => self.length = (self.length << 8) | u32::from(b),
                3 => self.kind = b,
                _ => {}
            }
            self.header_seen += 1;
            if self.header_seen == FRAME_HEADER {
                goaway |= self.kind == GOAWAY;
                self.payload_left = self.length;
                if self.payload_left == 0 {
                    self.header_seen = 0;
                    self.length = 0;
                }
            }
        }
        goaway
    }
}

/// A stream whose bytes are counted into a [`Wire`].
pub(crate) struct Counted<S> {
    inner: S,
    wire: Rc<Wire>,
}

impl<S> Counted<S> {
    pub(crate) fn new(inner: S, wire: Rc<Wire>) -> Self {
        Counted { inner, wire }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            this.wire.saw(&buf.filled()[before..]);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            this.wire.written.set(this.wire.written.get() + n as u64);
        }
        polled
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, payload: usize) -> Vec<u8> {
        let mut f = vec![
            (payload >> 16) as u8,
            (payload >> 8) as u8,
            payload as u8,
            kind,
            0,
            0,
            0,
            0,
            1,
        ];
        f.resize(FRAME_HEADER + payload, 0x7);
        f
    }

    #[test]
    fn finds_a_goaway_among_frames_however_the_reads_cut_them() {
        // SETTINGS, HEADERS, DATA whose payload is full of 0x7 bytes, then GOAWAY.
        let mut stream = frame(0x4, 6);
        stream.extend(frame(0x1, 20));
        stream.extend(frame(0x0, 300));
        let before_goaway = stream.len();
        stream.extend(frame(GOAWAY, 8));
        for piece in [1, 2, 5, 9, 10, 64, stream.len()] {
            let wire = Wire::default();
            let mut seen_at = None;
            let mut at = 0;
            for chunk in stream.chunks(piece) {
                wire.saw(chunk);
                at += chunk.len();
                if wire.goaway() && seen_at.is_none() {
                    seen_at = Some(at);
                }
            }
            let seen_at = seen_at.expect("GOAWAY found");
            assert!(seen_at > before_goaway, "pieces of {piece}: at {seen_at}");
            assert_eq!(wire.take(), (stream.len() as u64, 0));
            assert_eq!(wire.take(), (0, 0));
        }
        // No GOAWAY: none found, even with 0x7 in payloads.
        let wire = Wire::default();
        wire.saw(&frame(0x0, 70));
        wire.saw(&frame(0x8, 4));
        assert!(!wire.goaway());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn counts_what_goes_through() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (a, mut b) = tokio::io::duplex(1024);
        let wire = Rc::new(Wire::default());
        let mut counted = Counted::new(a, Rc::clone(&wire));
        counted.write_all(b"hello").await.unwrap();
        b.write_all(&frame(0x4, 0)).await.unwrap();
        let mut buf = [0u8; 9];
        counted.read_exact(&mut buf).await.unwrap();
        assert_eq!(wire.take(), (9, 5));
    }
}
