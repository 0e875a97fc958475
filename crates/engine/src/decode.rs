//! Content decoding for `--compressed`: a response body in gzip, deflate, br or zstd goes
//! through a streaming decoder whose output is counted and dropped, so the decoded size of a
//! body is known without holding it; only a scripted user that reads the body (a check, an
//! extraction) has the decoded bytes kept, up to its limit. The decoders are the maintained
//! crates' (flate2, brotli, zstd), fed as the body's bytes arrive.

use std::io::{self, Write};

/// A response's `Content-Encoding`, as far as decoding goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Coding {
    /// No coding (or `identity`): the body is its own decoded form.
    #[default]
    Identity,
    Gzip,
    /// `deflate`: zlib-wrapped, as RFC 9110 defines it.
    Deflate,
    Brotli,
    Zstd,
    /// A coding belier does not decode (or several stacked): the body fails to decode.
    Other,
}

impl Coding {
    /// The coding a `Content-Encoding` value names.
    pub(crate) fn parse(value: &[u8]) -> Coding {
        let value = value.trim_ascii();
        if value.contains(&b',') {
            return Coding::Other;
        }
        match value {
            v if v.eq_ignore_ascii_case(b"gzip") || v.eq_ignore_ascii_case(b"x-gzip") => {
                Coding::Gzip
            }
            v if v.eq_ignore_ascii_case(b"deflate") => Coding::Deflate,
            v if v.eq_ignore_ascii_case(b"br") => Coding::Brotli,
            v if v.eq_ignore_ascii_case(b"zstd") => Coding::Zstd,
            v if v.is_empty() || v.eq_ignore_ascii_case(b"identity") => Coding::Identity,
            _ => Coding::Other,
        }
    }
}

/// Counts what a decoder writes, and keeps it only for a user that reads the body.
#[derive(Debug, Default)]
pub(crate) struct Count {
    decoded: u64,
    /// The decoded body, up to [`crate::user::MAX_KEPT_BODY_BYTES`], when one is kept.
    body: Option<Vec<u8>>,
    truncated: bool,
}

impl Count {
    fn new(body: Option<Vec<u8>>) -> Count {
        Count {
            decoded: 0,
            body,
            truncated: false,
        }
    }

    fn take(&mut self, buf: &[u8]) {
        self.decoded += buf.len() as u64;
        if let Some(body) = &mut self.body {
            crate::body::keep_body(body, &mut self.truncated, buf);
        }
    }
}

impl Write for Count {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.take(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A body decoded to its end.
#[derive(Debug)]
pub(crate) struct Decoded {
    /// Its decoded size.
    pub bytes: u64,
    /// The decoded body, when one was to be kept, and whether it was cut at the limit.
    pub body: Option<Vec<u8>>,
    pub truncated: bool,
}

impl From<Count> for Decoded {
    fn from(c: Count) -> Decoded {
        Decoded {
            bytes: c.decoded,
            body: c.body,
            truncated: c.truncated,
        }
    }
}

/// Brotli's working buffer, the size the crate's own examples use.
const BROTLI_BUFFER: usize = 4096;

/// Decodes one response body into a count of its decoded bytes.
pub(crate) enum BodyDecoder {
    Identity(Count),
    Gzip(flate2::write::GzDecoder<Count>),
    Deflate(flate2::write::ZlibDecoder<Count>),
    Brotli(Box<brotli::DecompressorWriter<Count>>),
    Zstd(Box<Zstd>),
}

/// zstd's streaming decoder, driven directly: its hint says whether the frame is complete,
/// which the writer wrapper does not tell.
pub(crate) struct Zstd {
    decoder: zstd::stream::raw::Decoder<'static>,
    out: Count,
    /// Bytes the frame still needs (0: complete).
    hint: usize,
}

impl Zstd {
    fn feed(&mut self, data: &[u8]) -> io::Result<()> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        let mut scratch = [0u8; 8192];
        let mut input = InBuffer::around(data);
        loop {
            let mut output = OutBuffer::around(&mut scratch[..]);
            self.hint = self.decoder.run(&mut input, &mut output)?;
            let produced = output.pos();
            self.out.take(&scratch[..produced]);
            if input.pos() == data.len() && produced < scratch.len() {
                return Ok(());
            }
        }
    }
}

/// Why a body could not be decoded.
#[derive(Debug)]
pub(crate) struct DecodeError(pub String);

impl BodyDecoder {
    /// A decoder for a body in `coding`; `keep` (a user's empty buffer) receives the decoded
    /// body, handed back by [`BodyDecoder::finish`].
    pub(crate) fn new(coding: Coding, keep: Option<Vec<u8>>) -> Result<BodyDecoder, DecodeError> {
        let out = Count::new(keep);
        Ok(match coding {
            Coding::Identity => BodyDecoder::Identity(out),
            Coding::Gzip => BodyDecoder::Gzip(flate2::write::GzDecoder::new(out)),
            Coding::Deflate => BodyDecoder::Deflate(flate2::write::ZlibDecoder::new(out)),
            Coding::Brotli => BodyDecoder::Brotli(Box::new(brotli::DecompressorWriter::new(
                out,
                BROTLI_BUFFER,
            ))),
            Coding::Zstd => BodyDecoder::Zstd(Box::new(Zstd {
                decoder: zstd::stream::raw::Decoder::new()
                    .map_err(|e| DecodeError(format!("zstd: {e}")))?,
                out,
                hint: 1,
            })),
            Coding::Other => {
                return Err(DecodeError(
                    "Content-Encoding is none of gzip, deflate, br, zstd".into(),
                ))
            }
        })
    }

    /// Decodes the next piece of the body.
    pub(crate) fn feed(&mut self, data: &[u8]) -> Result<(), DecodeError> {
        let written = match self {
            BodyDecoder::Identity(c) => c.write_all(data),
            BodyDecoder::Gzip(d) => d.write_all(data),
            BodyDecoder::Deflate(d) => d.write_all(data),
            BodyDecoder::Brotli(d) => d.write_all(data),
            BodyDecoder::Zstd(d) => d.feed(data),
        };
        written.map_err(|e| self.error(e))
    }

    /// Ends the body: its decoded size (and body, if kept), or why it did not decode (a
    /// stream cut short).
    pub(crate) fn finish(self) -> Result<Decoded, DecodeError> {
        let name = self.name();
        let error = |e: io::Error| DecodeError(format!("{name}: {e}"));
        match self {
            BodyDecoder::Identity(c) => Ok(c.into()),
            BodyDecoder::Gzip(d) => d.finish().map(Decoded::from).map_err(error),
            BodyDecoder::Deflate(d) => d.finish().map(Decoded::from).map_err(error),
            BodyDecoder::Brotli(d) => d.into_inner().map(Decoded::from).map_err(|_| {
                DecodeError(format!("{name}: the stream ended before its last block"))
            }),
            BodyDecoder::Zstd(d) if d.hint == 0 => Ok(d.out.into()),
            BodyDecoder::Zstd(_) => Err(DecodeError(format!(
                "{name}: the stream ended before its frame did"
            ))),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            BodyDecoder::Identity(_) => "identity",
            BodyDecoder::Gzip(_) => "gzip",
            BodyDecoder::Deflate(_) => "deflate",
            BodyDecoder::Brotli(_) => "br",
            BodyDecoder::Zstd(_) => "zstd",
        }
    }

    fn error(&self, e: io::Error) -> DecodeError {
        DecodeError(format!("{}: {e}", self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(coding: Coding, body: &[u8], piece: usize) -> Result<u64, DecodeError> {
        let mut d = BodyDecoder::new(coding, None)?;
        for chunk in body.chunks(piece.max(1)) {
            d.feed(chunk)?;
        }
        d.finish().map(|d| d.bytes)
    }

    /// Every coding that decodes.
    const DECODED: [Coding; 5] = [
        Coding::Identity,
        Coding::Gzip,
        Coding::Deflate,
        Coding::Brotli,
        Coding::Zstd,
    ];

    fn plain() -> Vec<u8> {
        b"belier counts decoded bytes. ".repeat(500)
    }

    fn encoded(coding: Coding) -> Vec<u8> {
        let plain = plain();
        match coding {
            Coding::Gzip => {
                let mut e =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(&plain).unwrap();
                e.finish().unwrap()
            }
            Coding::Deflate => {
                let mut e =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(&plain).unwrap();
                e.finish().unwrap()
            }
            Coding::Brotli => {
                let mut out = Vec::new();
                {
                    let mut e = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
                    e.write_all(&plain).unwrap();
                }
                out
            }
            Coding::Zstd => zstd::encode_all(&plain[..], 3).unwrap(),
            Coding::Identity | Coding::Other => plain,
        }
    }

    #[test]
    fn codings_are_named_as_http_names_them() {
        let cases: &[(&[u8], Coding)] = &[
            (b"gzip", Coding::Gzip),
            (b" GZIP ", Coding::Gzip),
            (b"x-gzip", Coding::Gzip),
            (b"deflate", Coding::Deflate),
            (b"br", Coding::Brotli),
            (b"zstd", Coding::Zstd),
            (b"identity", Coding::Identity),
            (b"", Coding::Identity),
            (b"compress", Coding::Other),
            (b"gzip, br", Coding::Other),
        ];
        for (value, want) in cases {
            assert_eq!(Coding::parse(value), *want, "{value:?}");
        }
    }

    #[test]
    fn every_coding_decodes_to_the_plain_size_in_any_pieces() {
        let size = plain().len() as u64;
        for coding in DECODED {
            let body = encoded(coding);
            for piece in [1, 7, 1000, body.len()] {
                assert_eq!(
                    decoded(coding, &body, piece).unwrap(),
                    size,
                    "{coding:?} in pieces of {piece}"
                );
            }
        }
    }

    #[test]
    fn corrupt_or_cut_bodies_fail() {
        for coding in [Coding::Gzip, Coding::Deflate, Coding::Brotli, Coding::Zstd] {
            let body = encoded(coding);
            let cut = &body[..body.len() / 2];
            assert!(decoded(coding, cut, 100).is_err(), "{coding:?} cut short");
            let garbage = b"this is not compressed at all, not a single bit of it";
            assert!(decoded(coding, garbage, 100).is_err(), "{coding:?} garbage");
        }
        assert!(BodyDecoder::new(Coding::Other, None).is_err());
    }

    #[test]
    fn a_kept_body_is_the_decoded_one_up_to_the_limit() {
        for coding in DECODED {
            let mut d = BodyDecoder::new(coding, Some(Vec::new())).unwrap();
            for chunk in encoded(coding).chunks(100) {
                d.feed(chunk).unwrap();
            }
            let done = d.finish().unwrap();
            assert_eq!(done.body.as_deref(), Some(&plain()[..]), "{coding:?}");
            assert!(!done.truncated);
        }
        let big = vec![b'x'; crate::user::MAX_KEPT_BODY_BYTES + 10];
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&big).unwrap();
        let mut d = BodyDecoder::new(Coding::Gzip, Some(Vec::new())).unwrap();
        d.feed(&e.finish().unwrap()).unwrap();
        let done = d.finish().unwrap();
        assert_eq!(done.bytes, big.len() as u64);
        assert_eq!(done.body.unwrap().len(), crate::user::MAX_KEPT_BODY_BYTES);
        assert!(done.truncated);
    }
}
