//! permessage-deflate (RFC 7692): the offer a socket makes, what the server's answer agrees
//! to, and the framing maths of compressed messages, bytes in and bytes out, with no I/O
//! ([`super::deflating`] runs it on a socket's stream).
//!
//! The offer is the one browsers make, `permessage-deflate; client_max_window_bits`: both
//! sides keep their compression context from one message to the next (context takeover,
//! which compresses a run of similar messages best) unless the server's answer says
//! `client_no_context_takeover` (then each of our messages is compressed alone) or
//! `server_no_context_takeover` (then each of the server's is inflated alone). The server may
//! narrow our window (`client_max_window_bits`, 9 to 15 bits honoured by compressing with that
//! window; 8, which zlib cannot produce, by sending our messages uncompressed, as RFC 7692
//! §6 lets any message go); the server's own window needs nothing of us, since a 15-bit
//! inflater reads any narrower one.
//!
//! A compressed message is the first frame's RSV1 bit and, over its frames' payloads taken
//! together, raw DEFLATE data flushed to a byte boundary with its last four octets
//! (`00 00 ff ff`, the empty stored block of a sync flush) taken off (§7.2.1); the reader
//! puts them back before it inflates the message's end (§7.2.2).

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// What a socket offers in `Sec-WebSocket-Extensions` with [`super::WebSocket::deflate`].
pub(crate) const OFFER: &str = "permessage-deflate; client_max_window_bits";

/// The octets a sync flush ends with, taken off each compressed message (RFC 7692 §7.2.1).
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// A frame header's RSV1 bit: set on the first frame of a compressed message.
pub(crate) const RSV1: u8 = 0x40;
const FIN: u8 = 0x80;
const MASKED: u8 = 0x80;

/// What the server's answer agreed to: the parameters of permessage-deflate on one socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Agreed {
    /// The largest window our compressor may use, in bits (15 when the server set none).
    pub(crate) client_window_bits: u8,
    /// The window the server compresses with at most, in bits (15 when it set none).
    pub(crate) server_window_bits: u8,
    /// Each of our messages is compressed alone.
    pub(crate) client_no_context_takeover: bool,
    /// Each of the server's messages is compressed alone.
    pub(crate) server_no_context_takeover: bool,
}

/// The widest window RFC 7692 allows, and the default of both sides'.
const WIDEST_WINDOW_BITS: u8 = 15;

impl Agreed {
    /// What the server's `Sec-WebSocket-Extensions` answer (`values`, each a header line)
    /// agrees to: `Ok(None)` when it names no extension (the server declined), an error
    /// naming what is wrong when it names another extension than ours, a parameter we did not
    /// offer or cannot take, or a value out of range (RFC 7692 §5.1: the client fails the
    /// connection).
    pub(crate) fn from_answer<'a>(
        values: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Option<Agreed>, &'static str> {
        let mut agreed = None;
        for value in values {
            let value = std::str::from_utf8(value)
                .map_err(|_| "the server's Sec-WebSocket-Extensions is not text")?;
            for extension in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                if agreed.is_some() {
                    return Err("the server agreed to permessage-deflate twice");
                }
                agreed = Some(Agreed::parse(extension)?);
            }
        }
        Ok(agreed)
    }

    fn parse(extension: &str) -> Result<Agreed, &'static str> {
        let mut params = extension.split(';').map(str::trim);
        if params.next() != Some("permessage-deflate") {
            return Err("the server agreed to a WebSocket extension belier did not offer");
        }
        let mut agreed = Agreed {
            client_window_bits: WIDEST_WINDOW_BITS,
            server_window_bits: WIDEST_WINDOW_BITS,
            client_no_context_takeover: false,
            server_no_context_takeover: false,
        };
        let mut seen = [false; 4];
        for param in params {
            let (name, value) = match param.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim().trim_matches('"'))),
                None => (param, None),
            };
            let slot = match (name, value) {
                ("client_no_context_takeover", None) => {
                    agreed.client_no_context_takeover = true;
                    0
                }
                ("server_no_context_takeover", None) => {
                    agreed.server_no_context_takeover = true;
                    1
                }
                ("client_max_window_bits", Some(bits)) => {
                    agreed.client_window_bits = window_bits(bits)?;
                    2
                }
                ("server_max_window_bits", Some(bits)) => {
                    agreed.server_window_bits = window_bits(bits)?;
                    3
                }
                _ => return Err("the server's permessage-deflate answer has a parameter belier did not offer or without its value"),
            };
            if std::mem::replace(&mut seen[slot], true) {
                return Err("the server's permessage-deflate answer repeats a parameter");
            }
        }
        Ok(agreed)
    }

    /// The parameters as a report names them: `permessage-deflate` and those that differ from
    /// the defaults, in a fixed order (`; client_max_window_bits=12; server_no_context_takeover`).
    pub(crate) fn label(&self) -> String {
        let mut label = String::from("permessage-deflate");
        if self.client_window_bits != WIDEST_WINDOW_BITS {
            label += &format!("; client_max_window_bits={}", self.client_window_bits);
        }
        if self.server_window_bits != WIDEST_WINDOW_BITS {
            label += &format!("; server_max_window_bits={}", self.server_window_bits);
        }
        if self.client_no_context_takeover {
            label += "; client_no_context_takeover";
        }
        if self.server_no_context_takeover {
            label += "; server_no_context_takeover";
        }
        label
    }
}

/// A window size in bits, 8 to 15 (RFC 7692 §7.1.2), as digits without a sign or a zero
/// before them.
fn window_bits(value: &str) -> Result<u8, &'static str> {
    match value {
        "8" | "9" | "10" | "11" | "12" | "13" | "14" | "15" => Ok(value.parse().unwrap_or(15)),
        _ => Err("the server's permessage-deflate window is not 8 to 15 bits"),
    }
}

/// Why a socket's compressed traffic cannot go on: the server's frames do not inflate, or
/// inflate past the longest message a socket reads, or a frame is longer than that. Carried in an I/O
/// error to tungstenite and out again ([`Broken::of`]), it ends the socket as a malformed
/// response naming it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Broken {
    /// The server's compressed message is not DEFLATE data.
    #[error("a compressed WebSocket message does not inflate (permessage-deflate)")]
    Inflate,
    /// Inflated, it is longer than a socket reads.
    #[error("a compressed WebSocket message inflates past 1 MiB")]
    TooLong,
    /// One frame is longer than a socket reads.
    #[error("a WebSocket frame is longer than 1 MiB")]
    FrameTooLong,
}

impl Broken {
    /// The I/O error that carries it through tungstenite.
    pub(crate) fn into_io(self) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, self)
    }

    /// The `Broken` an I/O error carries, if it carries one.
    pub(crate) fn of(e: &std::io::Error) -> Option<Broken> {
        e.get_ref()?.downcast_ref::<Broken>().copied()
    }
}

/// A frame's header, read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    /// Its first octet: FIN, RSV1–3 and the opcode.
    pub(crate) first: u8,
    /// Its masking key, when masked.
    pub(crate) mask: Option<[u8; 4]>,
    /// The header's length in octets.
    pub(crate) len: usize,
    /// The payload's length.
    pub(crate) payload: u64,
}

impl Head {
    /// The header at the start of `bytes`; `None` until all of it came.
    pub(crate) fn read(bytes: &[u8]) -> Option<Head> {
        let (&first, rest) = bytes.split_first()?;
        let (&second, rest) = rest.split_first()?;
        let (payload, extended) = match second & 0x7f {
            126 => (
                u64::from(u16::from_be_bytes(rest.get(..2)?.try_into().ok()?)),
                2,
            ),
            127 => (u64::from_be_bytes(rest.get(..8)?.try_into().ok()?), 8),
            n => (u64::from(n), 0),
        };
        let mask = match second & MASKED != 0 {
            true => Some(rest.get(extended..extended + 4)?.try_into().ok()?),
            false => None,
        };
        let len = 2 + extended + if mask.is_some() { 4 } else { 0 };
        Some(Head {
            first,
            mask,
            len,
            payload,
        })
    }

    fn opcode(&self) -> u8 {
        self.first & 0x0f
    }

    fn is_control(&self) -> bool {
        self.opcode() & 0x08 != 0
    }

    fn fin(&self) -> bool {
        self.first & FIN != 0
    }

    fn starts_message(&self) -> bool {
        matches!(self.opcode(), 1 | 2)
    }
}

/// Writes a frame's header to `out`: `first` its first octet, the payload `len` octets long,
/// masked with `mask` when given.
pub(crate) fn write_head(out: &mut Vec<u8>, first: u8, mask: Option<[u8; 4]>, len: usize) {
    out.push(first);
    let masked = if mask.is_some() { MASKED } else { 0 };
    match len {
        0..=125 => out.push(masked | len as u8),
        126..=0xffff => {
            out.push(masked | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(masked | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    if let Some(mask) = mask {
        out.extend_from_slice(&mask);
    }
}

/// XORs `bytes` with `mask` (RFC 6455 §5.3), from the payload's start.
pub(crate) fn apply_mask(bytes: &mut [u8], mask: [u8; 4]) {
    for (i, b) in bytes.iter_mut().enumerate() {
        *b ^= mask[i % 4];
    }
}

/// Where a direction's messages are: between messages, in an uncompressed one's frames, or a
/// compressed one's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum InMessage {
    #[default]
    Between,
    Plain,
    Compressed,
}

impl InMessage {
    /// Where a data frame `head` leaves the messages, and whether it belongs to a compressed
    /// one. A frame that breaks the rules (RSV1 where it has no place, a continuation without
    /// a message) is left as it came, for tungstenite to refuse.
    fn after(self, head: &Head, compress_new: bool) -> (InMessage, bool) {
        let rsv1 = head.first & RSV1 != 0;
        let (now, compressed) = match (self, head.starts_message(), head.opcode()) {
            (InMessage::Between, true, _) if compress_new || rsv1 => (InMessage::Compressed, true),
            (InMessage::Between, true, _) => (InMessage::Plain, false),
            (InMessage::Compressed, false, 0) if !rsv1 => (InMessage::Compressed, true),
            (state, _, _) => (state, false),
        };
        match head.fin() {
            true => (InMessage::Between, compressed),
            false => (now, compressed),
        }
    }
}

/// The server's messages on one socket: compressed frames in, the same frames out with their
/// payloads inflated and RSV1 cleared.
pub(crate) struct Inflater {
    /// Made with the first compressed message: an idle socket holds none.
    inflate: Option<Box<Decompress>>,
    at: InMessage,
    /// Octets the message being read has inflated to so far.
    inflated: usize,
    /// The message being read ended its DEFLATE stream (a final block): the rest of it is
    /// not read.
    ended: bool,
    /// The longest message, inflated, the socket reads.
    most: usize,
}

impl Inflater {
    /// Inflates messages of at most `most` octets.
    pub(crate) fn new(most: usize) -> Inflater {
        Inflater {
            inflate: None,
            at: InMessage::Between,
            inflated: 0,
            ended: false,
            most,
        }
    }

    /// Takes one whole frame, `head` and its `payload`, and writes what tungstenite reads
    /// instead to `out`: a control frame or an uncompressed message's frame as it came, a
    /// compressed message's inflated. `no_takeover`: each message is compressed alone.
    pub(crate) fn frame(
        &mut self,
        head: &Head,
        payload: &[u8],
        no_takeover: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), Broken> {
        let compressed = match head.is_control() || head.mask.is_some() {
            true => false,
            false => {
                let (at, compressed) = self.at.after(head, false);
                self.at = at;
                compressed
            }
        };
        if !compressed {
            as_it_came(head, payload, out);
            return Ok(());
        }
        if head.starts_message() {
            self.inflated = 0;
            self.ended = false;
        }
        let inflate = self
            .inflate
            .get_or_insert_with(|| Box::new(Decompress::new(false)));
        let mut inflated = Vec::with_capacity(payload.len() * 2 + 64);
        if !self.ended {
            let most = self.most - self.inflated;
            self.ended = inflate_into(inflate, payload, &mut inflated, most)?;
        }
        if head.fin() {
            if !self.ended {
                let left = self.most - self.inflated - inflated.len();
                inflate_into(inflate, &TAIL, &mut inflated, left)?;
            }
            if no_takeover {
                inflate.reset(false);
            }
        }
        self.inflated += inflated.len();
        write_head(out, head.first & !RSV1, None, inflated.len());
        out.extend_from_slice(&inflated);
        Ok(())
    }
}

/// Writes a frame to `out` as it came.
fn as_it_came(head: &Head, payload: &[u8], out: &mut Vec<u8>) {
    write_head(out, head.first, head.mask, payload.len());
    out.extend_from_slice(payload);
}

/// Inflates `input` onto `out`, at most `most` octets more; `true` when it ended its stream.
/// A message's data that ends in a final block (BFINAL, which RFC 7692 §7.2.3.3 allows)
/// ends its stream: what follows it (the tail put back) is not read, and the next message
/// starts a new stream.
fn inflate_into(
    inflate: &mut Decompress,
    mut input: &[u8],
    out: &mut Vec<u8>,
    most: usize,
) -> Result<bool, Broken> {
    let start = out.len();
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.capacity().max(256));
        }
        let (read, wrote) = (inflate.total_in(), inflate.total_out());
        let status = inflate
            .decompress_vec(input, out, FlushDecompress::Sync)
            .map_err(|_| Broken::Inflate)?;
        input = &input[(inflate.total_in() - read) as usize..];
        if out.len() - start > most {
            return Err(Broken::TooLong);
        }
        if status == Status::StreamEnd {
            inflate.reset(false);
            return Ok(true);
        }
        // Room left in the output: the inflater took all it could.
        if out.len() < out.capacity() {
            if input.is_empty() {
                return Ok(false);
            }
            if inflate.total_in() == read && inflate.total_out() == wrote {
                return Err(Broken::Inflate);
            }
        }
    }
}

/// Our messages on one socket: tungstenite's frames in, the same frames out with their
/// payloads compressed and the first one's RSV1 set.
pub(crate) struct Deflater {
    /// Made with the first message: an idle socket holds none.
    deflate: Option<Box<Compress>>,
    /// The window our compressor may use; `None`: one zlib cannot make (8 bits), and our
    /// messages go uncompressed.
    window_bits: Option<u8>,
    at: InMessage,
}

impl Deflater {
    /// Compresses with a window of at most `window_bits`.
    pub(crate) fn new(window_bits: u8) -> Deflater {
        Deflater {
            deflate: None,
            window_bits: (9..=15).contains(&window_bits).then_some(window_bits),
            at: InMessage::Between,
        }
    }

    /// Takes one whole frame of ours, `head` and its (masked) `payload`, and writes what goes
    /// on the wire instead to `out`. `no_takeover`: each message is compressed alone.
    pub(crate) fn frame(
        &mut self,
        head: &Head,
        payload: &[u8],
        no_takeover: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), Broken> {
        let compressed = match (head.is_control(), self.window_bits) {
            (false, Some(_)) => {
                let (at, compressed) = self.at.after(head, true);
                self.at = at;
                compressed
            }
            _ => false,
        };
        if !compressed {
            as_it_came(head, payload, out);
            return Ok(());
        }
        let mut plain = payload.to_vec();
        if let Some(mask) = head.mask {
            apply_mask(&mut plain, mask);
        }
        let bits = self.window_bits.unwrap_or(WIDEST_WINDOW_BITS);
        let deflate = self
            .deflate
            .get_or_insert_with(|| Box::new(compressor(bits)));
        let mut packed = Vec::with_capacity(plain.len() / 2 + 64);
        deflate_into(deflate, &plain, &mut packed)?;
        if head.fin() {
            if packed.ends_with(&TAIL) {
                packed.truncate(packed.len() - TAIL.len());
            }
            if no_takeover {
                deflate.reset();
            }
        }
        if let Some(mask) = head.mask {
            apply_mask(&mut packed, mask);
        }
        let first = match head.starts_message() {
            true => head.first | RSV1,
            false => head.first,
        };
        write_head(out, first, head.mask, packed.len());
        out.extend_from_slice(&packed);
        Ok(())
    }
}

/// A raw DEFLATE compressor with a window of `bits`. The fastest level: a load generator's
/// CPU goes to sending, and the server's inflating costs the same whatever the level.
fn compressor(bits: u8) -> Compress {
    Compress::new_with_window_bits(Compression::fast(), false, bits)
}

/// Compresses `input` onto `out` and flushes it to a byte boundary (a sync flush, which
/// ends in [`TAIL`]).
fn deflate_into(deflate: &mut Compress, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), Broken> {
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.capacity().max(256));
        }
        let read = deflate.total_in();
        deflate
            .compress_vec(input, out, FlushCompress::Sync)
            .map_err(|_| Broken::Inflate)?;
        input = &input[(deflate.total_in() - read) as usize..];
        // A sync flush is complete once it left room in the output (zlib's rule).
        if input.is_empty() && out.len() < out.capacity() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests;
