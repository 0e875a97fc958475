//! The answers HTTP/2 and HTTP/3 give alike, as `http` heads and bodies: each protocol's
//! module sends them its own way.

use std::time::Instant;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};

use crate::behaviour::{Behaviour, DEFAULT_BODY, JSON_BODY};
use crate::response;

/// A response head with this status and, when given, `content-length`.
pub(crate) fn head_of(status: u16, length: Option<usize>) -> Response<()> {
    let mut response = Response::new(());
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    if let Some(length) = length {
        response
            .headers_mut()
            .insert(http::header::CONTENT_LENGTH, HeaderValue::from(length));
    }
    response
}

/// A redirect to the next hop of `target`'s chain (302 unless `status` is a redirect's),
/// without a body.
pub(crate) fn redirect(status: u16, target: &str) -> Response<()> {
    let status = match status {
        s @ (301 | 303 | 307 | 308) => s,
        _ => 302,
    };
    let mut response = head_of(status, Some(0));
    let location = crate::behaviour::next_hop(target);
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(http::header::LOCATION, value);
    }
    response
}

/// The `token` and `json` answers, as HTTP/1.1 gives them: the `index`-th request of
/// connection `seq` gets token `t{seq}-{index}`. The body is empty when the status has none.
pub(crate) fn json(behaviour: &Behaviour, seq: u64, index: u64) -> (Response<()>, Bytes) {
    let token = behaviour.token.then(|| format!("t{seq}-{index}"));
    let body = match &token {
        Some(token) => Bytes::from(format!(r#"{{"token":"{token}","user":{index}}}"#)),
        None => Bytes::from_static(JSON_BODY.as_bytes()),
    };
    let has_body = response::status_has_body(behaviour.status);
    let mut response = head_of(behaviour.status, has_body.then_some(body.len()));
    let headers = response.headers_mut();
    if has_body {
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    if let Some(token) = &token {
        if let Ok(cookie) = HeaderValue::from_str(&format!("session={token}; Path=/")) {
            headers.insert(http::header::SET_COOKIE, cookie);
        }
    }
    (response, if has_body { body } else { Bytes::new() })
}

/// Whether a request's `Accept-Encoding` headers list gzip.
pub(crate) fn accepts_gzip(headers: &http::HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT_ENCODING)
        .iter()
        .any(|value| {
            value.as_bytes().split(|&b| b == b',').any(|coding| {
                let coding = coding.split(|&b| b == b';').next().unwrap_or_default();
                coding.trim_ascii().eq_ignore_ascii_case(b"gzip")
            })
        })
}

/// The ordinary answer gzipped, when the client takes gzip (`gzip`) and the body has bytes
/// and goes by length: its head (`Content-Encoding: gzip`, the compressed length) and the
/// compressed body, as HTTP/1.1 sends it. `None`: the answer goes as it is.
pub(crate) fn gzipped(
    behaviour: &Behaviour,
    is_head: bool,
    gzip: bool,
) -> Option<(Response<()>, Bytes)> {
    let len = behaviour.body_size.unwrap_or(DEFAULT_BODY.len());
    let plain = !response::status_has_body(behaviour.status) || behaviour.chunked || is_head;
    if !gzip || plain || len == 0 {
        return None;
    }
    let gz = response::gzip_body(behaviour.body_size);
    let mut head = head_of(behaviour.status, Some(gz.len()));
    let headers = head.headers_mut();
    headers.insert(
        http::header::CONTENT_ENCODING,
        HeaderValue::from_static("gzip"),
    );
    headers.insert(
        http::header::VARY,
        HeaderValue::from_static("accept-encoding"),
    );
    Some((head, Bytes::from(gz)))
}

/// Adds `Server-Timing: app;dur=D` to `head`, D the milliseconds since its handler took the
/// request at `handled` (with the `timing` knob).
pub(crate) fn timed(head: &mut Response<()>, handled: Instant) {
    let value = response::server_timing(handled);
    let value = HeaderValue::from_str(&value).expect("digits and punctuation");
    head.headers_mut().insert("server-timing", value);
}

/// The head of a streamed answer (see [`crate::streamed`]): `200`, an event stream, no length.
pub(crate) fn stream_head() -> Response<()> {
    let mut head = head_of(200, None);
    head.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(crate::streamed::CONTENT_TYPE),
    );
    head
}
