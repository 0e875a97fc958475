//! What an HTTP/2 connection carries on the wire, seen from under `h2`: every byte of every
//! frame read and written (frame headers, HPACK-compressed HEADERS, DATA, SETTINGS, WINDOW_UPDATE,
//! …; over TLS the plaintext frames, as HTTP/1.1 counts its plaintext bytes), and whether the
//! server sent a GOAWAY, which `h2` does not tell its client otherwise.
//!
//! The counting sits in a [`Counted`](crate::connection::counted::Counted) adapter around the
//! stream `h2` drives, a [`Wire`] its watcher, with per-connection counters in `Rc<Cell>`s: a
//! worker's tasks share one thread.
//!
//! With the kernel's receive stamps ([`Wire::stamped`]) it also notes, per stream, the stamp of
//! the read that brought the last byte of the stream's first HEADERS frame (its first byte) and
//! of the frame that ended it (END_STREAM, its completion): `h2` hands a response over only
//! after that read, however late. A read that brings several frames stamps them all with its
//! last segment's time, an upper bound for the earlier ones (as HTTP/1.1's reads are); under
//! TLS the stamp is that of the socket read that completed the record the frame came in (or
//! a later one).

use std::cell::{Cell, RefCell};
use std::time::Duration;

use crate::connection::counted::Watch;

/// The HTTP/2 frame type of GOAWAY (RFC 9113 §6.8).
const GOAWAY: u8 = 0x7;
/// Length of a frame header: 24-bit length, type, flags, 31-bit stream id.
const FRAME_HEADER: usize = 9;
/// Frame types and the flag that end a stream (RFC 9113 §6.1, §6.2).
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const END_STREAM: u8 = 0x1;
/// Most streams whose stamps are kept: those of streams no exchange took (a timeout dropped
/// it) go, oldest first, beyond this.
const STAMPED_STREAMS: usize = 1024;

/// The kernel's receive stamps of one stream's frames, since the Unix epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StreamStamps {
    stream: u32,
    /// The read that completed its first HEADERS frame.
    pub first: Option<Duration>,
    /// The read that completed the frame that ended it.
    pub end: Option<Duration>,
}

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
    /// Whether reads carry the kernel's receive stamps, noted per stream in `streams`.
    stamped: bool,
    streams: RefCell<Vec<StreamStamps>>,
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

    /// A connection whose reads carry the kernel's receive stamps, noted per stream.
    pub(crate) fn stamped() -> Wire {
        Wire {
            stamped: true,
            ..Wire::default()
        }
    }

    /// The stamps of `stream`'s frames so far (see the module's docs).
    pub(crate) fn stream_stamps(&self, stream: u32) -> StreamStamps {
        let streams = self.streams.borrow();
        let found = streams.iter().find(|s| s.stream == stream);
        found.copied().unwrap_or_default()
    }

    /// Forgets `stream`'s stamps, once its exchange ended.
    pub(crate) fn forget(&self, stream: u32) {
        self.streams.borrow_mut().retain(|s| s.stream != stream);
    }

    /// Takes in the bytes of one read, whose stamp is `stamp`.
    fn saw(&self, bytes: &[u8], stamp: Option<Duration>) {
        self.read.set(self.read.get() + bytes.len() as u64);
        let mut cursor = self.frames.get();
        let goaway = match stamp {
            Some(at) if self.stamped => cursor.feed(bytes, |f| self.note(f, at)),
            _ => cursor.feed(bytes, |_| {}),
        };
        if goaway {
            self.goaway.set(true);
        }
        self.frames.set(cursor);
    }

    /// Notes the stamp of a read that completed `frame`, if it marks a stream's first byte
    /// or its end.
    fn note(&self, frame: Frame, at: Duration) {
        let ends = frame.flags & END_STREAM != 0;
        let first = frame.kind == HEADERS;
        if frame.stream == 0 || !(first || (frame.kind == DATA && ends)) {
            return;
        }
        let mut streams = self.streams.borrow_mut();
        let i = match streams.iter().position(|s| s.stream == frame.stream) {
            Some(i) => i,
            None => {
                if streams.len() >= STAMPED_STREAMS {
                    streams.remove(0);
                }
                streams.push(StreamStamps {
                    stream: frame.stream,
                    ..StreamStamps::default()
                });
                streams.len() - 1
            }
        };
        let s = &mut streams[i];
        if first && s.first.is_none() {
            s.first = Some(at);
        }
        if ends {
            s.end = Some(at);
        }
    }
}

/// A frame's header, as the cursor saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
}

/// Follows frame boundaries through the bytes read: a frame header, then its payload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct FrameCursor {
    /// Header bytes of the current frame seen so far (0..9), or 9 while in its payload.
    header_seen: usize,
    /// The length, as its three header bytes come.
    length: u32,
    /// The rest of the header: type, flags, stream id.
    frame: Frame,
    /// Payload bytes still to skip.
    payload_left: u32,
}

impl FrameCursor {
    /// Consumes `bytes`, calling `ended` with each frame whose last byte they hold; true if
    /// a GOAWAY frame header went by.
    fn feed(&mut self, mut bytes: &[u8], mut ended: impl FnMut(Frame)) -> bool {
        let mut goaway = false;
        while !bytes.is_empty() {
            if self.header_seen == FRAME_HEADER {
                let skip = (self.payload_left as usize).min(bytes.len());
                bytes = &bytes[skip..];
                self.payload_left -= skip as u32;
                if self.payload_left == 0 {
                    self.next(&mut ended);
                }
                continue;
            }
            let b = bytes[0];
            bytes = &bytes[1..];
            match self.header_seen {
                0..=2 => self.length = (self.length << 8) | u32::from(b),
                3 => self.frame.kind = b,
                4 => self.frame.flags = b,
                5 => self.frame.stream = u32::from(b & 0x7f),
                _ => self.frame.stream = (self.frame.stream << 8) | u32::from(b),
            }
            self.header_seen += 1;
            if self.header_seen == FRAME_HEADER {
                goaway |= self.frame.kind == GOAWAY;
                self.payload_left = self.length;
                if self.payload_left == 0 {
                    self.next(&mut ended);
                }
            }
        }
        goaway
    }

    /// The current frame ended: hands it to `ended` and waits for the next header.
    fn next(&mut self, ended: &mut impl FnMut(Frame)) {
        ended(self.frame);
        *self = FrameCursor::default();
    }
}

impl Watch for Wire {
    fn wants_stamps(&self) -> bool {
        self.stamped
    }

    fn read(&self, bytes: &[u8], stamp: Option<Duration>) {
        self.saw(bytes, stamp);
    }

    fn written(&self, n: u64) {
        self.written.set(self.written.get() + n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::counted::{Counted, LastStamp};
    use std::rc::Rc;

    impl LastStamp for tokio::io::DuplexStream {
        fn last_stamp(&self) -> Option<Duration> {
            None
        }
    }

    fn frame(kind: u8, payload: usize) -> Vec<u8> {
        frame_on(kind, 0, 1, payload)
    }

    fn frame_on(kind: u8, flags: u8, stream: u32, payload: usize) -> Vec<u8> {
        let mut f = vec![(payload >> 16) as u8, (payload >> 8) as u8, payload as u8];
        f.extend([kind, flags]);
        f.extend(stream.to_be_bytes());
        f.resize(FRAME_HEADER + payload, 0x7);
        f
    }

    #[test]
    fn each_stream_gets_the_stamps_of_the_reads_that_completed_its_frames() {
        // Stream 1: HEADERS, then DATA ending it; stream 3: HEADERS ending it (no body),
        // interleaved, with control frames on stream 0.
        let frames = [
            frame_on(0x4, 0, 0, 6),
            frame_on(HEADERS, 0x4, 1, 20),
            frame_on(HEADERS, 0x4 | END_STREAM, 3, 12),
            frame_on(DATA, 0, 1, 100),
            frame_on(0x8, 0, 0, 4),
            frame_on(DATA, END_STREAM, 1, 50),
        ];
        let ends: Vec<usize> = frames
            .iter()
            .scan(0, |at, f| {
                *at += f.len();
                Some(*at)
            })
            .collect();
        let stream: Vec<u8> = frames.concat();
        for piece in [1, 7, 9, 30, 64, stream.len()] {
            let wire = Wire::stamped();
            // Read k is stamped k seconds; the frame ending at byte e completed in read
            // (e - 1) / piece.
            for (k, chunk) in stream.chunks(piece).enumerate() {
                wire.saw(chunk, Some(Duration::from_secs(k as u64)));
            }
            let read_of = |end: usize| Some(Duration::from_secs(((end - 1) / piece) as u64));
            let one = wire.stream_stamps(1);
            assert_eq!((one.first, one.end), (read_of(ends[1]), read_of(ends[5])));
            let three = wire.stream_stamps(3);
            assert_eq!(
                (three.first, three.end),
                (read_of(ends[2]), read_of(ends[2]))
            );
            wire.forget(1);
            assert_eq!(wire.stream_stamps(1), StreamStamps::default());
            assert_eq!(wire.stream_stamps(0), StreamStamps::default());
        }
        // Without stamps nothing is noted.
        let wire = Wire::default();
        wire.saw(&stream, Some(Duration::from_secs(1)));
        assert_eq!(wire.stream_stamps(1).first, None);
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
                wire.saw(chunk, None);
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
        wire.saw(&frame(0x0, 70), None);
        wire.saw(&frame(0x8, 4), None);
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
