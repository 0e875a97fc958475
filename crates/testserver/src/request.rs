//! Request heads: parsing, framing, and what a connection keeps of them.

use std::time::Instant;

use crate::behaviour::Behaviour;
use crate::shared::{SeenRequest, Shared};

/// Largest request head accepted; longer ones get `400` and the connection is closed.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Headers per request; more is a `400`. Generous, as no client sends that many.
const MAX_HEADERS: usize = 100;

/// How the request body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyFraming {
    Empty,
    Length(u64),
    Chunked,
}

/// What the connection needs from a parsed request head, copied out of the read buffer so the
/// buffer can be reused for the body.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) head_len: usize,
    pub(crate) is_head: bool,
    pub(crate) http10: bool,
    pub(crate) keep_alive: bool,
    pub(crate) body: BodyFraming,
    pub(crate) expect_continue: bool,
    /// `Ok(None)`: no query string, so the server defaults apply (and their pre-built head).
    pub(crate) knobs: Result<Option<Behaviour>, crate::KnobError>,
    /// Only when requests are being recorded.
    pub(crate) seen: Option<SeenRequest>,
    /// `GET /metrics`: the server's counters, not a request to the target.
    pub(crate) metrics: bool,
    /// The `redirect` knob asked for a redirect: where to.
    pub(crate) redirect: Option<String>,
    /// The client accepts gzip (`Accept-Encoding`): bodies framed by length go compressed.
    pub(crate) gzip: bool,
    /// `/sse`, `/v1/chat/completions`: a streamed answer (its query holds its own knobs).
    pub(crate) streamed: Option<Result<crate::streamed::Streamed, String>>,
    /// A WebSocket upgrade: its `Sec-WebSocket-Key`, and the first subprotocol it offers.
    pub(crate) websocket: Option<(String, Option<String>)>,
}

impl Request {
    /// Parses the head at the start of `input`, if it is complete. `Err` is the reason for a
    /// `400`. `seq` is the connection's number, for the recorded request.
    pub(crate) fn parse(
        input: &[u8],
        shared: &Shared,
        seq: u64,
    ) -> Result<Option<Request>, &'static str> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Request::new(&mut headers);
        let head_len = match parsed.parse(input) {
            Ok(httparse::Status::Complete(n)) if n > MAX_HEAD_BYTES => {
                return Err("request head too large")
            }
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => return Err("too many headers"),
            Err(_) => return Err("malformed request head"),
        };
        let method = parsed.method.unwrap_or_default();
        let target = parsed.path.unwrap_or_default();
        let http10 = parsed.version == Some(0);

        let Fields {
            close,
            keep_alive,
            length,
            chunked,
            expect_continue,
            gzip,
            websocket_key,
            subprotocol,
        } = Fields::of(parsed.headers)?;
        let body = match (chunked, length) {
            (true, _) => BodyFraming::Chunked,
            (false, Some(n)) if n > 0 => BodyFraming::Length(n),
            (false, _) => BodyFraming::Empty,
        };
        // RFC 9112 §6.3: with both framings, chunked wins and the connection must not be
        // reused, as an intermediary may have read it the other way.
        let smuggling = chunked && length.is_some();
        let keep_alive = !close && !smuggling && (!http10 || keep_alive);

        let streamed = crate::streamed::Streamed::of(method, target);
        let knobs = match target.split_once('?') {
            Some((_, query)) if !query.is_empty() && streamed.is_none() => {
                let mut behaviour = shared.defaults.clone();
                behaviour.apply_query(query).map(|()| Some(behaviour))
            }
            _ => Ok(None),
        };
        let redirect = match &knobs {
            Ok(Some(b)) if b.redirect > 0 => {
                let hop = crate::behaviour::next_hop(target);
                Some(match b.redirect_to {
                    Some(to) => format!("http://{to}{hop}"),
                    None => hop,
                })
            }
            _ => None,
        };
        let seen = shared.recorder.as_ref().map(|_| SeenRequest {
            method: method.to_owned(),
            target: target.to_owned(),
            headers: parsed
                .headers
                .iter()
                .map(|h| {
                    let value = String::from_utf8_lossy(h.value).into_owned();
                    (h.name.to_owned(), value)
                })
                .collect(),
            body: Vec::new(),
            version: if http10 { "HTTP/1.0" } else { "HTTP/1.1" },
            connection: seq,
            arrived: Instant::now(),
        });
        Ok(Some(Request {
            head_len,
            is_head: method == "HEAD",
            http10,
            keep_alive,
            body,
            expect_continue,
            knobs,
            seen,
            metrics: method == "GET" && target == "/metrics",
            redirect,
            gzip,
            streamed,
            websocket: websocket_key.map(|key| (key, subprotocol)),
        }))
    }
}

/// What the server reads from a request's headers.
struct Fields {
    /// `Connection: close`.
    close: bool,
    /// `Connection: keep-alive` (HTTP/1.0).
    keep_alive: bool,
    /// `Content-Length`.
    length: Option<u64>,
    /// `Transfer-Encoding: chunked`.
    chunked: bool,
    /// `Expect: 100-continue`.
    expect_continue: bool,
    /// The client accepts gzip.
    gzip: bool,
    /// `Sec-WebSocket-Key`: a WebSocket upgrade.
    websocket_key: Option<String>,
    /// The first protocol of `Sec-WebSocket-Protocol`.
    subprotocol: Option<String>,
}

impl Fields {
    /// Reads `headers`; `Err` is the reason for a `400`.
    fn of(headers: &[httparse::Header<'_>]) -> Result<Fields, &'static str> {
        let mut close = false;
        let mut keep_alive = false;
        let mut length = None;
        let mut chunked = false;
        let mut expect_continue = false;
        let mut gzip = false;
        let (mut websocket_key, mut subprotocol) = (None, None);
        for header in headers.iter() {
            let name = header.name;
            if name.eq_ignore_ascii_case("accept-encoding") {
                gzip |= header.value.split(|&b| b == b',').any(|coding| {
                    let coding = coding.split(|&b| b == b';').next().unwrap_or_default();
                    coding.trim_ascii().eq_ignore_ascii_case(b"gzip")
                });
            } else if name.eq_ignore_ascii_case("connection") {
                for token in header.value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                    close |= token.eq_ignore_ascii_case(b"close");
                    keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            } else if name.eq_ignore_ascii_case("content-length") {
                let n = parse_decimal(header.value).ok_or("invalid content-length")?;
                if length.is_some_and(|prev| prev != n) {
                    return Err("conflicting content-length headers");
                }
                length = Some(n);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                let last = header
                    .value
                    .rsplit(|&b| b == b',')
                    .next()
                    .unwrap_or_default();
                if !last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                    return Err("unsupported transfer-encoding");
                }
                chunked = true;
            } else if name.eq_ignore_ascii_case("expect") {
                expect_continue |= header
                    .value
                    .trim_ascii()
                    .eq_ignore_ascii_case(b"100-continue");
            } else if name.eq_ignore_ascii_case("sec-websocket-key") {
                websocket_key = Some(String::from_utf8_lossy(header.value).into_owned());
            } else if name.eq_ignore_ascii_case("sec-websocket-protocol") {
                let first = header
                    .value
                    .split(|&b| b == b',')
                    .next()
                    .unwrap_or_default();
                subprotocol = Some(String::from_utf8_lossy(first.trim_ascii()).into_owned());
            }
        }
        Ok(Fields {
            close,
            keep_alive,
            length,
            chunked,
            expect_continue,
            gzip,
            websocket_key,
            subprotocol,
        })
    }
}

/// An unsigned decimal with no sign, spaces or other decoration, as `Content-Length` requires.
fn parse_decimal(text: &[u8]) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    text.iter().try_fold(0u64, |n, &b| {
        let digit = (b as char).to_digit(10)?;
        n.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// The hex size at the start of a chunk-size line, ignoring chunk extensions.
pub(crate) fn parse_chunk_size(line: &[u8]) -> Option<u64> {
    let end = line.iter().position(|&b| b == b';').unwrap_or(line.len());
    let digits = line[..end].trim_ascii();
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| {
        let digit = (b as char).to_digit(16)?;
        Some((n << 4) | u64::from(digit))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals() {
        let cases: &[(&[u8], Option<u64>)] = &[
            (b"0", Some(0)),
            (b"1234", Some(1234)),
            (b"", None),
            (b"+1", None),
            (b"1 2", None),
            (b"-1", None),
            (b"18446744073709551616", None),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_decimal(text),
                *want,
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
    }

    #[test]
    fn chunk_sizes() {
        let cases: &[(&[u8], Option<u64>)] = &[
            (b"0", Some(0)),
            (b"1a", Some(26)),
            (b"FF;name=value", Some(255)),
            (b"10 ", Some(16)),
            (b"", None),
            (b"g", None),
            (b"11111111111111111", None),
        ];
        for (line, want) in cases {
            assert_eq!(
                parse_chunk_size(line),
                *want,
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }
}
