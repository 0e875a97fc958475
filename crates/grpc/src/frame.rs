//! The length-prefixed messages of a gRPC body (gRPC over HTTP/2, "Length-Prefixed-Message"):
//! one byte, 1 if the message is compressed with the call's `grpc-encoding`, 0 if not; four
//! bytes, the message's length, big-endian; then the message.

use std::io::{Read as _, Write as _};

use bytes::{BufMut as _, Bytes, BytesMut};

/// Length of the prefix before every message.
pub const PREFIX: usize = 5;

/// The longest message [`Frames`] reads unless told otherwise: grpc-go's and grpc-java's
/// default receive limit. A length read from the wire is checked against it before anything is
/// sized by it.
pub const MAX_MESSAGE: usize = 4 << 20;

/// How a message is compressed on the wire (`grpc-encoding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Not compressed (`identity`).
    #[default]
    Identity,
    /// gzip.
    Gzip,
}

impl Compression {
    /// The `grpc-encoding` value naming it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Identity => "identity",
            Compression::Gzip => "gzip",
        }
    }

    /// The compression a `grpc-encoding` value names; `None` for one belier cannot read.
    pub fn parse(value: &[u8]) -> Option<Compression> {
        match value {
            b"identity" => Some(Compression::Identity),
            b"gzip" => Some(Compression::Gzip),
            _ => None,
        }
    }
}

/// Why a body's messages cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    /// The body ended inside a message (or its prefix).
    #[error("the body ended inside a message: {0} bytes of it left over")]
    Truncated(usize),
    /// A prefix announced a message longer than the limit.
    #[error("a message of {length} bytes is longer than the limit of {limit}")]
    TooLong {
        /// The length the prefix gave.
        length: usize,
        /// The limit.
        limit: usize,
    },
    /// The compressed flag was set on a call with no compression agreed (`grpc-encoding`).
    #[error("a message is marked compressed, but the response names no grpc-encoding")]
    CompressedWithoutEncoding,
    /// The compressed flag was neither 0 nor 1.
    #[error("a message prefix has the flag {0}, neither 0 nor 1")]
    BadFlag(u8),
    /// A compressed message did not decompress.
    #[error("a compressed message does not decompress: {0}")]
    Compression(String),
}

/// `message` framed: its prefix, then the message (compressed with `compression` unless it
/// is [`Compression::Identity`]).
pub fn encode(message: &[u8], compression: Compression) -> Bytes {
    let compressed;
    let (flag, payload) = match compression {
        Compression::Identity => (0, message),
        Compression::Gzip => {
            compressed = gzip(message);
            (1, compressed.as_slice())
        }
    };
    let mut out = BytesMut::with_capacity(PREFIX + payload.len());
    out.put_u8(flag);
    // A message over 4 GiB cannot be framed; one built from a flag's JSON never is.
    out.put_u32(u32::try_from(payload.len()).unwrap_or(u32::MAX));
    out.put_slice(payload);
    out.freeze()
}

/// The framed messages of `body` (as [`encode`] writes them, one after the other) cut apart
/// without a copy, each with its prefix: a client stream sends them one at a time. Nothing is
/// decompressed; a body that ends inside a message is [`FrameError::Truncated`].
pub fn split(body: &Bytes) -> Result<Vec<Bytes>, FrameError> {
    let mut messages = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let rest = &body[at..];
        let Some(prefix) = rest.get(..PREFIX) else {
            return Err(FrameError::Truncated(PREFIX - rest.len()));
        };
        let length = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
        let end = PREFIX.saturating_add(length);
        if rest.len() < end {
            return Err(FrameError::Truncated(end - rest.len()));
        }
        messages.push(body.slice(at..at + end));
        at += end;
    }
    Ok(messages)
}

fn gzip(message: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(message);
    encoder.finish().unwrap_or_default()
}

/// The messages of a body, read as its chunks come: how many were complete, their bytes on
/// the wire, and (when asked for) the last one's payload, decompressed. A message's prefix or
/// payload may be cut across chunks anywhere; nothing but a kept message is buffered, and only
/// up to the limit.
#[derive(Debug)]
pub struct Frames {
    /// The response's `grpc-encoding`, `None` when it named none.
    encoding: Option<Compression>,
    limit: usize,
    keep: bool,
    /// Prefix bytes of the current message seen so far (0..5), or 5 while in its payload.
    prefix_seen: usize,
    prefix: [u8; PREFIX],
    /// Payload bytes of the current message still to come.
    left: usize,
    /// The current message's payload, kept when asked for.
    current: Vec<u8>,
    last: Option<Vec<u8>>,
    messages: u64,
}

impl Frames {
    /// Reads a body whose `grpc-encoding` was `encoding` (`None`: none given), refusing a
    /// message over `limit` bytes; `keep`: the last complete message's payload is kept.
    pub fn new(encoding: Option<Compression>, limit: usize, keep: bool) -> Frames {
        Frames {
            encoding,
            limit,
            keep,
            prefix_seen: 0,
            prefix: [0; PREFIX],
            left: 0,
            current: Vec::new(),
            last: None,
            messages: 0,
        }
    }

    /// Takes in the next chunk of the body.
    pub fn feed(&mut self, mut chunk: &[u8]) -> Result<(), FrameError> {
        while !chunk.is_empty() {
            if self.prefix_seen < PREFIX {
                let take = (PREFIX - self.prefix_seen).min(chunk.len());
                self.prefix[self.prefix_seen..self.prefix_seen + take]
                    .copy_from_slice(&chunk[..take]);
                self.prefix_seen += take;
                chunk = &chunk[take..];
                if self.prefix_seen == PREFIX {
                    self.start_message()?;
                }
                continue;
            }
            let take = self.left.min(chunk.len());
            if self.keep {
                self.current.extend_from_slice(&chunk[..take]);
            }
            self.left -= take;
            chunk = &chunk[take..];
            if self.left == 0 {
                self.end_message()?;
            }
        }
        Ok(())
    }

    /// A prefix is complete: checks it and waits for its payload.
    fn start_message(&mut self) -> Result<(), FrameError> {
        match self.prefix[0] {
            0 => {}
            1 if self.encoding.is_some_and(|e| e != Compression::Identity) => {}
            1 => return Err(FrameError::CompressedWithoutEncoding),
            flag => return Err(FrameError::BadFlag(flag)),
        }
        let length = u32::from_be_bytes([
            self.prefix[1],
            self.prefix[2],
            self.prefix[3],
            self.prefix[4],
        ]) as usize;
        if length > self.limit {
            return Err(FrameError::TooLong {
                length,
                limit: self.limit,
            });
        }
        self.left = length;
        if self.keep {
            self.current = Vec::with_capacity(length);
        }
        if length == 0 {
            self.end_message()?;
        }
        Ok(())
    }

    /// A message is complete: counts it, keeps it (decompressed) if asked to.
    fn end_message(&mut self) -> Result<(), FrameError> {
        self.messages += 1;
        self.prefix_seen = 0;
        if self.keep {
            let payload = std::mem::take(&mut self.current);
            self.last = Some(match self.prefix[0] {
                1 => self.gunzip(&payload)?,
                _ => payload,
            });
        }
        Ok(())
    }

    fn gunzip(&self, payload: &[u8]) -> Result<Vec<u8>, FrameError> {
        let mut out = Vec::new();
        // The limit bounds the decompressed message too: a small bomb cannot grow unbounded.
        flate2::read::GzDecoder::new(payload)
            .take(self.limit as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| FrameError::Compression(e.to_string()))?;
        if out.len() > self.limit {
            return Err(FrameError::TooLong {
                length: out.len(),
                limit: self.limit,
            });
        }
        Ok(out)
    }

    /// The body ended: an error if it ended inside a message.
    pub fn finish(&self) -> Result<(), FrameError> {
        match self.prefix_seen {
            0 => Ok(()),
            PREFIX => Err(FrameError::Truncated(PREFIX + self.left)),
            seen => Err(FrameError::Truncated(PREFIX - seen)),
        }
    }

    /// How many messages were complete.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// The last complete message's payload (decompressed), if messages are kept.
    pub fn last(&self) -> Option<&[u8]> {
        self.last.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_in_pieces(body: &[u8], piece: usize, encoding: Option<Compression>) -> Frames {
        let mut frames = Frames::new(encoding, MAX_MESSAGE, true);
        for chunk in body.chunks(piece) {
            frames.feed(chunk).unwrap();
        }
        frames.finish().unwrap();
        frames
    }

    #[test]
    fn a_message_is_its_prefix_then_its_bytes() {
        assert_eq!(
            &encode(b"hello", Compression::Identity)[..],
            b"\0\0\0\0\x05hello"
        );
        assert_eq!(&encode(b"", Compression::Identity)[..], b"\0\0\0\0\0");
    }

    #[test]
    fn messages_are_read_back_however_the_chunks_cut_them() {
        let mut body = encode(b"first", Compression::Identity).to_vec();
        body.extend_from_slice(&encode(b"", Compression::Identity));
        body.extend_from_slice(&encode(&[7; 300], Compression::Identity));
        for piece in [1, 2, 4, 5, 6, 13, body.len()] {
            let frames = read_in_pieces(&body, piece, None);
            assert_eq!(frames.messages(), 3, "pieces of {piece}");
            assert_eq!(frames.last(), Some(&[7u8; 300][..]));
        }
    }

    #[test]
    fn a_body_of_messages_splits_into_them_with_their_prefixes() {
        let first = encode(b"first", Compression::Identity);
        let second = encode(&[7; 300], Compression::Gzip);
        let empty = encode(b"", Compression::Identity);
        let body = Bytes::from([&first[..], &second, &empty].concat());
        assert_eq!(split(&body).unwrap(), [first, second, empty]);
        assert_eq!(split(&Bytes::new()).unwrap(), Vec::<Bytes>::new());
        assert_eq!(
            split(&Bytes::from_static(b"\0\0\0")),
            Err(FrameError::Truncated(2))
        );
        assert_eq!(
            split(&Bytes::from_static(b"\0\0\0\0\x05hel")),
            Err(FrameError::Truncated(2))
        );
    }

    #[test]
    fn gzip_goes_both_ways_and_is_flagged() {
        let message = b"a message that compresses, compresses, compresses".repeat(10);
        let framed = encode(&message, Compression::Gzip);
        assert_eq!(framed[0], 1);
        assert!(framed.len() < message.len());
        let frames = read_in_pieces(&framed, 3, Some(Compression::Gzip));
        assert_eq!(frames.last(), Some(&message[..]));
    }

    #[test]
    fn a_bad_body_is_refused_with_its_reason() {
        let cases: [(&[u8], Option<Compression>, FrameError); 4] = [
            (
                b"\x01\0\0\0\x01x",
                None,
                FrameError::CompressedWithoutEncoding,
            ),
            (
                b"\x01\0\0\0\x01x",
                Some(Compression::Identity),
                FrameError::CompressedWithoutEncoding,
            ),
            (b"\x02\0\0\0\x01x", None, FrameError::BadFlag(2)),
            (
                b"\0\xff\xff\xff\xff",
                None,
                FrameError::TooLong {
                    length: u32::MAX as usize,
                    limit: MAX_MESSAGE,
                },
            ),
        ];
        for (body, encoding, expected) in cases {
            let mut frames = Frames::new(encoding, MAX_MESSAGE, false);
            assert_eq!(frames.feed(body), Err(expected));
        }
        let mut frames = Frames::new(Some(Compression::Gzip), MAX_MESSAGE, true);
        assert!(matches!(
            frames.feed(b"\x01\0\0\0\x03abc"),
            Err(FrameError::Compression(_))
        ));
    }

    #[test]
    fn a_body_that_ends_inside_a_message_is_truncated() {
        for (body, left) in [(&b"\0\0\0"[..], 2), (b"\0\0\0\0\x05he", 8)] {
            let mut frames = Frames::new(None, MAX_MESSAGE, false);
            frames.feed(body).unwrap();
            assert_eq!(frames.finish(), Err(FrameError::Truncated(left)));
        }
    }

    #[test]
    fn a_compressed_message_larger_than_the_limit_once_inflated_is_refused() {
        let framed = encode(&[0; 10_000], Compression::Gzip);
        let mut frames = Frames::new(Some(Compression::Gzip), 1000, true);
        assert!(matches!(
            frames.feed(&framed),
            Err(FrameError::TooLong { limit: 1000, .. })
        ));
    }

    #[test]
    fn grpc_encoding_names() {
        assert_eq!(Compression::parse(b"gzip"), Some(Compression::Gzip));
        assert_eq!(Compression::parse(b"identity"), Some(Compression::Identity));
        assert_eq!(Compression::parse(b"br"), None);
        assert_eq!(Compression::Gzip.name(), "gzip");
    }
}
