//! Response bytes: heads, reason phrases, body filler.
//!
//! Everything here appends to a connection's output buffer, so building a response never
//! allocates once that buffer has grown to its working size.

use std::io::Write;

use crate::behaviour::{Behaviour, DEFAULT_BODY};

/// How the response body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `Content-Length: n`.
    Length(usize),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// No body and no framing header: 1xx, 204 and 304 responses.
    Bodiless,
}

/// Which `Connection` header the response carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnectionHeader {
    /// None: HTTP/1.1 keeps the connection alive by default.
    Omit,
    /// `Connection: close`: the server closes after this response.
    Close,
    /// `Connection: keep-alive`: needed by HTTP/1.0 clients, whose default is to close.
    KeepAlive,
}

impl ConnectionHeader {
    /// The header of a response that `close`s its connection or not, to a client speaking
    /// HTTP/1.0 (`http10`) or 1.1.
    pub(crate) fn of(close: bool, http10: bool) -> ConnectionHeader {
        match (close, http10) {
            (true, _) => ConnectionHeader::Close,
            (false, true) => ConnectionHeader::KeepAlive,
            (false, false) => ConnectionHeader::Omit,
        }
    }
}

/// Bytes of zero-cost body: bodies of any size are written from this slice repeatedly.
pub(crate) static FILLER: [u8; 16 * 1024] = [b'x'; 16 * 1024];

/// What [`Fault::Malformed`](crate::Fault::Malformed) sends: the status code is not three
/// digits, which every HTTP/1.1 parser (httparse included) rejects.
pub(crate) const MALFORMED: &[u8] = b"HTTP/1.1 abc nonsense\r\n\r\n";

/// Interim response sent before reading a body the client is holding back for it.
pub(crate) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// Whether a response with this status may carry a body (RFC 9110 §6.4.1).
pub(crate) fn status_has_body(status: u16) -> bool {
    !(status < 200 || status == 204 || status == 304)
}

/// How a response following `behaviour` is framed; HTTP/1.0 clients cannot decode chunked.
pub(crate) fn framing(behaviour: &Behaviour, http10: bool) -> Framing {
    if !status_has_body(behaviour.status) {
        Framing::Bodiless
    } else if behaviour.chunked && !http10 {
        Framing::Chunked
    } else {
        Framing::Length(behaviour.body_size.unwrap_or(DEFAULT_BODY.len()))
    }
}

/// Appends a status line and headers, up to and including the blank line.
pub(crate) fn write_head(
    out: &mut Vec<u8>,
    status: u16,
    framing: Framing,
    connection: ConnectionHeader,
) {
    // Writing into a Vec cannot fail, hence the ignored results.
    let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
    write_head_tail(out, framing, connection);
}

/// Appends a status line and headers with `Server-Timing: app;dur=D`, D the milliseconds
/// since `handled` (see [`Behaviour::timing`]).
pub(crate) fn write_timed_head(
    out: &mut Vec<u8>,
    status: u16,
    framing: Framing,
    connection: ConnectionHeader,
    handled: std::time::Instant,
) {
    let _ = write!(
        out,
        "HTTP/1.1 {status} {}\r\nServer-Timing: {}\r\n",
        reason(status),
        server_timing(handled)
    );
    write_head_tail(out, framing, connection);
}

/// The `Server-Timing` value of a handler that took its request at `handled`: `app;dur=D`,
/// D in milliseconds to the microsecond.
pub(crate) fn server_timing(handled: std::time::Instant) -> String {
    format!("app;dur={:.3}", handled.elapsed().as_secs_f64() * 1e3)
}

/// Appends the head of a streamed answer: `200`, an event stream, chunked.
pub(crate) fn write_stream_head(out: &mut Vec<u8>, connection: ConnectionHeader) {
    let _ = write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nCache-Control: no-cache\r\n",
        crate::streamed::CONTENT_TYPE
    );
    write_head_tail(out, Framing::Chunked, connection);
}

/// The framing and connection headers and the blank line that end a head.
fn write_head_tail(out: &mut Vec<u8>, framing: Framing, connection: ConnectionHeader) {
    match framing {
        Framing::Length(n) => {
            let _ = write!(out, "Content-Length: {n}\r\n");
        }
        Framing::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        Framing::Bodiless => {}
    }
    match connection {
        ConnectionHeader::Omit => {}
        ConnectionHeader::Close => out.extend_from_slice(b"Connection: close\r\n"),
        ConnectionHeader::KeepAlive => out.extend_from_slice(b"Connection: keep-alive\r\n"),
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends a complete response whose body, the bytes the plain answer would send
/// ([`DEFAULT_BODY`] without a size, else `body_size` [`FILLER`] bytes), goes gzip-compressed
/// (`Content-Encoding: gzip`, the compressed length in `Content-Length`).
pub(crate) fn write_gzip(
    out: &mut Vec<u8>,
    status: u16,
    body_size: Option<usize>,
    connection: ConnectionHeader,
) {
    let gz = gzip_body(body_size);
    let _ = write!(
        out,
        "HTTP/1.1 {status} {}\r\nContent-Encoding: gzip\r\nVary: Accept-Encoding\r\n",
        reason(status)
    );
    write_head_tail(out, Framing::Length(gz.len()), connection);
    out.extend_from_slice(&gz);
}

/// The plain answer's body ([`DEFAULT_BODY`] without a size, else `body_size` [`FILLER`]
/// bytes), gzip-compressed.
pub(crate) fn gzip_body(body_size: Option<usize>) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing into a Vec cannot fail.
    match body_size {
        None => {
            let _ = encoder.write_all(DEFAULT_BODY);
        }
        Some(mut left) => {
            while left > 0 {
                let n = left.min(FILLER.len());
                let _ = encoder.write_all(&FILLER[..n]);
                left -= n;
            }
        }
    }
    encoder.finish().unwrap_or_default()
}

/// Appends a complete redirect to `location`, without a body.
pub(crate) fn write_redirect(
    out: &mut Vec<u8>,
    status: u16,
    location: &str,
    connection: ConnectionHeader,
) {
    let _ = write!(
        out,
        "HTTP/1.1 {status} {}\r\nLocation: {location}\r\n",
        reason(status)
    );
    write_head_tail(out, Framing::Length(0), connection);
}

/// Appends a complete `text/plain` response whose body is `message` and a newline.
pub(crate) fn write_text(
    out: &mut Vec<u8>,
    status: u16,
    connection: ConnectionHeader,
    message: &str,
) {
    write_head(out, status, Framing::Length(message.len() + 1), connection);
    out.extend_from_slice(message.as_bytes());
    out.push(b'\n');
}

/// A JSON answer (the `token` and `json` knobs): always framed by length, since these bodies
/// are small and built whole.
pub(crate) struct Json<'a> {
    /// The body, sent as is.
    pub(crate) body: &'a [u8],
    /// A `session` cookie to set, for the `token` knob.
    pub(crate) session: Option<&'a str>,
}

impl Json<'_> {
    /// Appends the whole response; a `HEAD` request or a bodiless status gets the head only.
    pub(crate) fn write(
        &self,
        out: &mut Vec<u8>,
        status: u16,
        connection: ConnectionHeader,
        is_head: bool,
    ) {
        let has_body = status_has_body(status);
        let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
        if has_body {
            let _ = write!(
                out,
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                self.body.len()
            );
        }
        if let Some(token) = self.session {
            let _ = write!(out, "Set-Cookie: session={token}; Path=/\r\n");
        }
        match connection {
            ConnectionHeader::Omit => {}
            ConnectionHeader::Close => out.extend_from_slice(b"Connection: close\r\n"),
            ConnectionHeader::KeepAlive => out.extend_from_slice(b"Connection: keep-alive\r\n"),
        }
        out.extend_from_slice(b"\r\n");
        if has_body && !is_head {
            out.extend_from_slice(self.body);
        }
    }
}

/// Appends the line that starts a chunk of `len` bytes.
pub(crate) fn write_chunk_size(out: &mut Vec<u8>, len: usize) {
    let _ = write!(out, "{len:x}\r\n");
}

/// Lengths of the chunks a chunked body of `len` bytes is split into: a few, so that clients
/// really exercise their chunk decoder, but not so many that large bodies get slow.
pub(crate) fn chunk_lengths(len: usize) -> impl Iterator<Item = usize> {
    const CHUNKS: usize = 3;
    let step = len.div_ceil(CHUNKS).max(1);
    (0..len)
        .step_by(step)
        .map(move |start| step.min(len - start))
}

/// The reason phrase for a status code; "Unknown" outside the registered set, which clients
/// ignore anyway.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        413 => "Content Too Large",
        418 => "I'm a teapot",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        let cases = [
            (
                200,
                Framing::Length(6),
                ConnectionHeader::Omit,
                "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n",
            ),
            (
                503,
                Framing::Chunked,
                ConnectionHeader::Close,
                "HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
            ),
            (
                204,
                Framing::Bodiless,
                ConnectionHeader::KeepAlive,
                "HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\n\r\n",
            ),
            (
                799,
                Framing::Length(0),
                ConnectionHeader::Omit,
                "HTTP/1.1 799 Unknown\r\nContent-Length: 0\r\n\r\n",
            ),
        ];
        for (status, framing, connection, want) in cases {
            let mut out = Vec::new();
            write_head(&mut out, status, framing, connection);
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }

    #[test]
    fn chunks_cover_the_body() {
        for len in [0, 1, 2, 3, 6, 7, 100, 65_537] {
            let chunks: Vec<usize> = chunk_lengths(len).collect();
            assert_eq!(chunks.iter().sum::<usize>(), len, "len {len}");
            assert!(chunks.len() <= 3, "len {len}: {chunks:?}");
            assert!(chunks.iter().all(|&c| c > 0), "len {len}: {chunks:?}");
        }
    }

    #[test]
    fn bodiless_statuses() {
        for (status, body) in [
            (100, false),
            (204, false),
            (304, false),
            (200, true),
            (404, true),
        ] {
            assert_eq!(status_has_body(status), body, "{status}");
        }
    }

    #[test]
    fn json_answers() {
        let cases = [
            (
                Json {
                    body: b"{}",
                    session: Some("t1-0"),
                },
                200,
                ConnectionHeader::Omit,
                false,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\
                 Set-Cookie: session=t1-0; Path=/\r\n\r\n{}",
            ),
            (
                Json {
                    body: b"[1]",
                    session: None,
                },
                201,
                ConnectionHeader::Close,
                true,
                "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\
                 Connection: close\r\n\r\n",
            ),
            (
                Json {
                    body: b"[1]",
                    session: None,
                },
                204,
                ConnectionHeader::Omit,
                false,
                "HTTP/1.1 204 No Content\r\n\r\n",
            ),
        ];
        for (json, status, connection, is_head, want) in cases {
            let mut out = Vec::new();
            json.write(&mut out, status, connection, is_head);
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }

    #[test]
    fn malformed_is_rejected_by_httparse() {
        let mut headers = [httparse::EMPTY_HEADER; 4];
        let mut response = httparse::Response::new(&mut headers);
        assert!(response.parse(MALFORMED).is_err());
    }
}
