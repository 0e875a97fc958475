//! HTTP/1.1 response framing: where the head ends and how long the body is.
//!
//! Pure functions over byte slices, so every framing rule is table-tested without sockets.

use crate::decode::Coding;
use crate::server_timing::Capture;

/// Most header lines a response may carry.
const MAX_HEADERS: usize = 100;
/// Largest response head accepted; a longer one is treated as malformed.
pub(crate) const MAX_HEAD_BYTES: usize = 64 * 1024;

/// How the body of a response is delimited.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body at all (HEAD, 204, 304).
    Empty,
    /// Exactly this many bytes follow the head.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked(ChunkedDecoder),
    /// No length given: the body runs until the server closes the connection.
    UntilClose,
}

/// A parsed response head.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Head {
    /// Bytes the head occupies in the buffer.
    pub len: usize,
    pub status: u16,
    pub framing: Framing,
    /// Whether the connection may carry another request after this response.
    pub keep_alive: bool,
    /// The body's `Content-Encoding`.
    pub coding: Coding,
}

/// Why a response could not be understood.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) struct Malformed(pub &'static str);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Parses a response head at the start of `buf`; `Ok(None)` means more bytes are needed.
/// `head_request` says the request was `HEAD`, whose response never has a body.
/// `timing`, when the run reads the server's own time, keeps that header's value once the
/// head is complete.
pub(crate) fn parse_head(
    buf: &[u8],
    head_request: bool,
    mut timing: Option<&mut Capture>,
) -> Result<Option<Head>, Malformed> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => {
            return Err(Malformed("response head larger than 64 KiB"))
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(Malformed("too many response headers")),
        Err(httparse::Error::Status) => return Err(Malformed("invalid status line")),
        Err(httparse::Error::Version) => return Err(Malformed("invalid HTTP version")),
        Err(_) => return Err(Malformed("invalid response head")),
    };
    let status = response.code.ok_or(Malformed("missing status code"))?;
    let http10 = response.version == Some(0);

    let mut content_length: Option<u64> = None;
    let mut chunked = false;
    let mut close = false;
    let mut keep_alive_token = false;
    let mut coding = Coding::Identity;
    for h in response.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(h.value)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .ok_or(Malformed("invalid Content-Length"))?;
            if content_length.is_some_and(|c| c != v) {
                return Err(Malformed("conflicting Content-Length headers"));
            }
            content_length = Some(v);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // Chunked must be the final coding; anything else means "read until close".
            chunked = last_token(h.value).eq_ignore_ascii_case(b"chunked");
        } else if h.name.eq_ignore_ascii_case("content-encoding") {
            coding = Coding::parse(h.value);
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if let Some(timing) = timing.as_deref_mut().filter(|t| t.wants(h.name.as_bytes())) {
            timing.keep(h.value);
        }
    }

    let framing = if head_request || status == 204 || status == 304 || (100..200).contains(&status)
    {
        Framing::Empty
    } else if chunked {
        Framing::Chunked(ChunkedDecoder::default())
    } else if let Some(n) = content_length {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    let keep_alive =
        !close && (!http10 || keep_alive_token) && !matches!(framing, Framing::UntilClose);
    Ok(Some(Head {
        len,
        status,
        framing,
        keep_alive,
        coding,
    }))
}

/// Whether a complete response head (as [`parse_head`] took it) says its body is an event
/// stream: `Content-Type: text/event-stream`, parameters aside. Read again only for the
/// responses that ask (SSE reconnection), so that every other head costs nothing more.
pub(crate) fn is_event_stream(head: &[u8]) -> bool {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    if !matches!(response.parse(head), Ok(httparse::Status::Complete(_))) {
        return false;
    }
    response
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-type"))
        .is_some_and(|h| {
            let media = h.value.split(|&b| b == b';').next().unwrap_or_default();
            media
                .trim_ascii()
                .eq_ignore_ascii_case(b"text/event-stream")
        })
}

fn last_token(value: &[u8]) -> &[u8] {
    value
        .rsplit(|&b| b == b',')
        .next()
        .unwrap_or(value)
        .trim_ascii()
}

/// Incremental decoder for `Transfer-Encoding: chunked` bodies; the data itself is discarded.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ChunkedDecoder {
    state: ChunkState,
}

#[derive(Debug, Default, PartialEq, Eq, Clone, Copy)]
enum ChunkState {
    /// Reading the hex size; `digits` so far.
    #[default]
    SizeStart,
    Size {
        value: u64,
    },
    /// Skipping a chunk extension up to the end of the line.
    Extension {
        value: u64,
    },
    SizeLf {
        value: u64,
    },
    Data {
        remaining: u64,
    },
    DataCr,
    DataLf,
    TrailerLineStart,
    TrailerLine,
    TrailerEndLf,
    Done,
}

impl ChunkedDecoder {
    /// Consumes bytes from `input`; returns how many were used and whether the body is complete.
    /// Bytes after the end of the body are left unconsumed.
    pub(crate) fn feed(&mut self, input: &[u8]) -> Result<(usize, bool), Malformed> {
        self.feed_with(input, |_| {})
    }

    /// Like [`ChunkedDecoder::feed`], handing each piece of chunk data to `on_data` as it
    /// passes (the de-chunked body, in order).
    pub(crate) fn feed_with(
        &mut self,
        input: &[u8],
        mut on_data: impl FnMut(&[u8]),
    ) -> Result<(usize, bool), Malformed> {
        use ChunkState::*;
        let mut i = 0;
        while i < input.len() {
            if self.state == Done {
                break;
            }
            if let Data { remaining } = self.state {
                let take = remaining.min((input.len() - i) as u64);
                on_data(&input[i..i + take as usize]);
                i += take as usize;
                let remaining = remaining - take;
                self.state = if remaining == 0 {
                    DataCr
                } else {
                    Data { remaining }
                };
                continue;
            }
            let b = input[i];
            i += 1;
            self.state = match (self.state, b) {
                (SizeStart, _) => match hex(b) {
                    Some(d) => Size { value: d },
                    None => return Err(Malformed("invalid chunk size")),
                },
                (Size { value }, _) => match hex(b) {
                    Some(d) => Size {
                        value: value
                            .checked_mul(16)
                            .and_then(|v| v.checked_add(d))
                            .ok_or(Malformed("chunk size overflows"))?,
                    },
                    None if b == b'\r' => SizeLf { value },
                    None if b == b'\n' => after_size(value),
                    None if b == b';' || b == b' ' || b == b'\t' => Extension { value },
                    None => return Err(Malformed("invalid chunk size")),
                },
                (Extension { value }, b'\r') => SizeLf { value },
                (Extension { value }, b'\n') => after_size(value),
                (Extension { value }, _) => Extension { value },
                (SizeLf { value }, b'\n') => after_size(value),
                (SizeLf { .. }, _) => return Err(Malformed("invalid chunk size line")),
                (DataCr, b'\r') => DataLf,
                (DataCr, b'\n') | (DataLf, b'\n') => SizeStart,
                (DataCr, _) | (DataLf, _) => return Err(Malformed("missing CRLF after chunk")),
                (TrailerLineStart, b'\r') => TrailerEndLf,
                (TrailerLineStart, b'\n') | (TrailerEndLf, b'\n') => Done,
                (TrailerEndLf, _) => return Err(Malformed("invalid chunked trailer")),
                (TrailerLineStart, _) | (TrailerLine, _) if b != b'\n' => TrailerLine,
                (TrailerLine, _) => TrailerLineStart,
                (Data { .. }, _) | (Done, _) => unreachable!("handled above"),
                (TrailerLineStart, _) => unreachable!("newline handled above"),
            };
        }
        Ok((i, self.state == Done))
    }
}

fn after_size(value: u64) -> ChunkState {
    if value == 0 {
        ChunkState::TrailerLineStart
    } else {
        ChunkState::Data { remaining: value }
    }
}

fn hex(b: u8) -> Option<u64> {
    (b as char).to_digit(16).map(u64::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_stream_is_told_by_its_media_type_alone() {
        let head = |content_type: &str| {
            format!("HTTP/1.1 200 OK\r\n{content_type}Content-Length: 0\r\n\r\n").into_bytes()
        };
        assert!(is_event_stream(&head(
            "Content-Type: text/event-stream\r\n"
        )));
        assert!(is_event_stream(&head(
            "content-type: Text/Event-Stream; charset=utf-8\r\n"
        )));
        assert!(!is_event_stream(&head("Content-Type: text/plain\r\n")));
        assert!(!is_event_stream(&head(
            "Content-Type: text/event-streams\r\n"
        )));
        assert!(!is_event_stream(&head("")));
    }

    fn head(raw: &str) -> Head {
        parse_head(raw.as_bytes(), false, None).unwrap().unwrap()
    }

    #[test]
    fn framing_rules() {
        let cases: &[(&str, bool, Framing, bool)] = &[
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n",
                false,
                Framing::Length(6),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\n",
                false,
                Framing::Length(6),
                false,
            ),
            (
                "HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\n",
                false,
                Framing::Length(6),
                false,
            ),
            (
                "HTTP/1.0 200 OK\r\nContent-Length: 6\r\nConnection: Keep-Alive\r\n\r\n",
                false,
                Framing::Length(6),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                false,
                Framing::Chunked(ChunkedDecoder::default()),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n",
                false,
                Framing::Chunked(ChunkedDecoder::default()),
                true,
            ),
            ("HTTP/1.1 200 OK\r\n\r\n", false, Framing::UntilClose, false),
            (
                "HTTP/1.1 204 No Content\r\n\r\n",
                false,
                Framing::Empty,
                true,
            ),
            (
                "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
                false,
                Framing::Empty,
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n",
                true,
                Framing::Empty,
                true,
            ),
        ];
        for (raw, head_request, framing, keep_alive) in cases {
            let h = parse_head(raw.as_bytes(), *head_request, None)
                .unwrap()
                .unwrap();
            assert_eq!(&h.framing, framing, "{raw:?}");
            assert_eq!(h.keep_alive, *keep_alive, "{raw:?}");
            assert_eq!(h.len, raw.len());
        }
    }

    #[test]
    fn partial_and_malformed_heads() {
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false, None),
            Ok(None)
        );
        assert_eq!(parse_head(b"", false, None), Ok(None));
        for raw in [
            "HTTP/1.1 abc nonsense\r\n\r\n",
            "HTTP/9.1 200 OK\r\n\r\n",
            "garbage\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        ] {
            assert!(parse_head(raw.as_bytes(), false, None).is_err(), "{raw:?}");
        }
        let huge = format!("HTTP/1.1 200 OK\r\nX: {}", "a".repeat(MAX_HEAD_BYTES));
        assert!(parse_head(huge.as_bytes(), false, None).is_err());
    }

    #[test]
    fn the_server_timing_headers_of_a_complete_head_are_kept() {
        let buffers = crate::server_timing::Buffers::default();
        let header = std::sync::Arc::new(crate::ServerTimingHeader::ServerTiming);
        let mut timing = buffers.capture(&header);
        let raw = "HTTP/1.1 200 OK\r\nserver-timing: app;dur=4\r\nContent-Length: 0\r\n\
                   SERVER-TIMING: db;dur=1\r\n\r\n";
        // An incomplete head keeps nothing yet.
        assert_eq!(
            parse_head(&raw.as_bytes()[..40], false, Some(&mut timing)),
            Ok(None)
        );
        assert_eq!(timing.value(), None);
        parse_head(raw.as_bytes(), false, Some(&mut timing))
            .unwrap()
            .unwrap();
        assert_eq!(timing.value(), Some(&b"app;dur=4,db;dur=1"[..]));
    }

    #[test]
    fn content_encoding_is_read() {
        let cases = [
            ("", Coding::Identity),
            ("Content-Encoding: gzip\r\n", Coding::Gzip),
            ("content-encoding: br\r\n", Coding::Brotli),
            ("Content-Encoding: zstd\r\n", Coding::Zstd),
            ("Content-Encoding: deflate\r\n", Coding::Deflate),
            ("Content-Encoding: gzip, br\r\n", Coding::Other),
        ];
        for (line, want) in cases {
            let raw = format!("HTTP/1.1 200 OK\r\n{line}Content-Length: 3\r\n\r\n");
            assert_eq!(head(&raw).coding, want, "{raw:?}");
        }
    }

    #[test]
    fn status_is_kept() {
        assert_eq!(
            head("HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n").status,
            503
        );
    }

    #[test]
    fn chunked_whole_and_byte_by_byte() {
        let body = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT";
        let mut d = ChunkedDecoder::default();
        assert_eq!(d.feed(body), Ok((body.len() - 4, true)));

        let mut d = ChunkedDecoder::default();
        let mut used = 0;
        let mut done = false;
        for chunk in body.chunks(1) {
            if done {
                break;
            }
            let (n, d2) = d.feed(chunk).unwrap();
            used += n;
            done = d2;
        }
        assert!(done);
        assert_eq!(used, body.len() - 4);
    }

    #[test]
    fn chunked_without_trailers_and_large_chunk() {
        let mut d = ChunkedDecoder::default();
        assert_eq!(d.feed(b"0\r\n\r\n"), Ok((5, true)));
        let mut d = ChunkedDecoder::default();
        assert_eq!(d.feed(b"100000\r\n"), Ok((8, false)));
        assert_eq!(d.feed(&vec![b'x'; 0x100000]), Ok((0x100000, false)));
        assert_eq!(d.feed(b"\r\n0\r\n\r\n"), Ok((7, true)));
    }

    #[test]
    fn chunked_data_is_handed_over_in_order() {
        let body = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n";
        for piece in [1, 3, body.len()] {
            let mut d = ChunkedDecoder::default();
            let mut data = Vec::new();
            for chunk in body.chunks(piece) {
                d.feed_with(chunk, |b| data.extend_from_slice(b)).unwrap();
            }
            assert_eq!(data, b"hello world", "pieces of {piece}");
        }
    }

    #[test]
    fn chunked_errors() {
        for bad in [
            &b"zz\r\n"[..],
            b"5\r\nhelloXX",
            b"ffffffffffffffffff\r\n",
            b"5\rX",
        ] {
            assert!(ChunkedDecoder::default().feed(bad).is_err(), "{bad:?}");
        }
    }
}
