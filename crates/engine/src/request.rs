//! Request bytes, built once per run and written as they are for every request.

use std::io::Write as _;

use crate::user::Outgoing;
use crate::RequestSpec;

/// The `User-Agent` belier sends unless the user gives one.
pub const USER_AGENT: &str = concat!("belier/", env!("CARGO_PKG_VERSION"));

/// Encodes `spec` as an HTTP/1.1 request. Without keep-alive the request asks the server to
/// close (`Connection: close`) so both sides agree the connection carries one exchange.
pub fn encode(spec: &RequestSpec, keepalive: bool) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(256 + spec.body.len());
    write_request(
        &mut bytes,
        Parts::of_spec(spec),
        &host_header(&spec.host, spec.port),
        keepalive,
    );
    bytes
}

/// Encodes a scripted user's request into `out` (cleared first, its allocation reused), with
/// the same rules as [`encode`]; `host` is the `Host` header used unless the user gives one.
pub(crate) fn encode_outgoing(out: &mut Vec<u8>, request: &Outgoing, host: &str, keepalive: bool) {
    out.clear();
    write_request(out, Parts::of_outgoing(request), host, keepalive);
}

/// What a request is made of, whoever describes it (a run's [`RequestSpec`], a user's
/// [`Outgoing`]); the HTTP/1.1 and HTTP/2 encoders both read it.
pub(crate) struct Parts<'a> {
    pub method: &'a str,
    pub path_and_query: &'a str,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
}

impl<'a> Parts<'a> {
    pub(crate) fn of_spec(spec: &'a RequestSpec) -> Self {
        Parts {
            method: &spec.method,
            path_and_query: &spec.path_and_query,
            headers: &spec.headers,
            body: &spec.body,
        }
    }

    pub(crate) fn of_outgoing(request: &'a Outgoing) -> Self {
        Parts {
            method: &request.method,
            path_and_query: &request.path_and_query,
            headers: &request.headers,
            body: &request.body,
        }
    }

    /// Whether a header named `name` (any case) is among the given ones.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }
}

fn write_request(out: &mut Vec<u8>, r: Parts<'_>, host: &str, keepalive: bool) {
    let has = |name: &str| r.has(name);
    // Writing to a Vec cannot fail.
    let _ = write!(out, "{} {} HTTP/1.1\r\n", r.method, r.path_and_query);
    if !has("host") {
        let _ = write!(out, "Host: {host}\r\n");
    }
    if !has("user-agent") {
        let _ = write!(out, "User-Agent: {USER_AGENT}\r\n");
    }
    for (name, value) in r.headers {
        let _ = write!(out, "{name}: {value}\r\n");
    }
    if !r.body.is_empty() && !has("content-length") && !has("transfer-encoding") {
        let _ = write!(out, "Content-Length: {}\r\n", r.body.len());
    }
    if !keepalive && !has("connection") {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(r.body);
}

/// Whether `method` is idempotent (RFC 9110 §9.2.2): sending it twice has the effect of
/// sending it once, so a request the server closed its connection on unread may go again.
pub(crate) fn is_idempotent(method: &str) -> bool {
    ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"]
        .iter()
        .any(|m| method.eq_ignore_ascii_case(m))
}

/// Whether the response to `method` never has a body, whatever its headers say.
pub fn is_head(method: &str) -> bool {
    method.eq_ignore_ascii_case("HEAD")
}

pub(crate) fn host_header(host: &str, port: u16) -> String {
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    if port == 80 {
        host
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> RequestSpec {
        RequestSpec {
            method: "GET".into(),
            host: "127.0.0.1".into(),
            port: 8080,
            path_and_query: "/a?b=1".into(),
            headers: vec![],
            body: vec![],
        }
    }

    #[test]
    fn minimal_get() {
        let got = String::from_utf8(encode(&spec(), true)).unwrap();
        assert_eq!(
            got,
            format!(
                "GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: {USER_AGENT}\r\n\r\n"
            )
        );
    }

    #[test]
    fn body_headers_and_close() {
        let mut s = spec();
        s.method = "POST".into();
        s.port = 80;
        s.headers = vec![
            ("X-Token".into(), "abc".into()),
            ("user-agent".into(), "me".into()),
        ];
        s.body = b"hello".to_vec();
        let got = String::from_utf8(encode(&s, false)).unwrap();
        assert_eq!(
            got,
            "POST /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Token: abc\r\nuser-agent: me\r\n\
             Content-Length: 5\r\nConnection: close\r\n\r\nhello"
        );
    }

    #[test]
    fn ipv6_host_is_bracketed_and_user_host_wins() {
        let mut s = spec();
        s.host = "::1".into();
        assert!(String::from_utf8(encode(&s, true))
            .unwrap()
            .contains("Host: [::1]:8080\r\n"));
        s.headers = vec![("Host".into(), "example.test".into())];
        let got = String::from_utf8(encode(&s, true)).unwrap();
        assert!(got.contains("Host: example.test\r\n"));
        assert_eq!(got.matches("Host:").count(), 1);
    }

    #[test]
    fn outgoing_reuses_the_buffer_and_matches_encode() {
        let mut s = spec();
        s.method = "POST".into();
        s.headers = vec![("X-Token".into(), "abc".into())];
        s.body = b"hi".to_vec();
        let outgoing = Outgoing {
            step: 0,
            origin: 0,
            method: s.method.clone(),
            path_and_query: s.path_and_query.clone(),
            headers: s.headers.clone(),
            body: s.body.clone(),
            keep_body: false,
            timeout: None,
        };
        let mut buf = b"stale bytes".to_vec();
        encode_outgoing(&mut buf, &outgoing, "127.0.0.1:8080", false);
        assert_eq!(buf, encode(&s, false));
    }
}
