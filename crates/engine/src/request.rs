//! Request bytes, built once per run and written as they are for every request; nothing is
//! built that breaks the [`rules`] of what may go on the wire.

use std::io::Write as _;

use crate::user::Outgoing;
use crate::RequestSpec;

pub(crate) mod added;
pub mod rules;

pub use rules::InvalidRequest;

/// The `User-Agent` belier sends unless the user gives one.
pub const USER_AGENT: &str = concat!("belier/", env!("CARGO_PKG_VERSION"));

/// Encodes `spec` as an HTTP/1.1 request. Without keep-alive the request asks the server to
/// close (`Connection: close`) so both sides agree the connection carries one exchange.
/// A request that breaks the [`rules`] (a CR or LF in a header, a `Content-Length` that is not
/// the body's) is refused, whoever made it.
pub fn encode(spec: &RequestSpec, keepalive: bool) -> Result<Vec<u8>, InvalidRequest> {
    let parts = Parts::of_spec(spec);
    let host = host_header(&spec.host, spec.port);
    parts.check(&host)?;
    let mut bytes = Vec::with_capacity(256 + spec.body.len());
    write_request(&mut bytes, parts, &host, keepalive, None);
    Ok(bytes)
}

/// Encodes a scripted user's request into `out` (cleared first, its allocation reused), with
/// the same rules as [`encode`]; `host` is the `Host` header used unless the user gives one,
/// `trace` the trace context of a sampled request. A refused request leaves `out` empty.
pub(crate) fn encode_outgoing(
    out: &mut Vec<u8>,
    request: &Outgoing,
    host: &str,
    keepalive: bool,
    trace: Option<&belier_stats::Trace>,
) -> Result<(), InvalidRequest> {
    out.clear();
    let parts = Parts::of_outgoing(request);
    parts.check(host)?;
    write_request(out, parts, host, keepalive, trace);
    Ok(())
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

    /// Checks every part against the [`rules`] (with `host`, the `Host` written unless a header
    /// gives one): the one place every encoder, HTTP/1.1 and HTTP/2, asks before building a
    /// request. A scan of a few hundred bytes, next to a system call per request.
    pub(crate) fn check(&self, host: &str) -> Result<(), InvalidRequest> {
        use rules::{check_header_name, check_header_value, check_method, check_target};
        check_method(self.method).map_err(|p| InvalidRequest::Method(self.method.into(), p))?;
        check_target(self.path_and_query)
            .map_err(|p| InvalidRequest::Target(self.path_and_query.into(), p))?;
        if !self.has("host") {
            check_header_value(host).map_err(|p| InvalidRequest::Host(host.into(), p))?;
        }
        for (name, value) in self.headers {
            check_header_name(name).map_err(|p| InvalidRequest::HeaderName(name.clone(), p))?;
            check_header_value(value).map_err(|p| InvalidRequest::HeaderValue(name.clone(), p))?;
        }
        rules::check_framing(self.headers, self.body)?;
        Ok(())
    }

    /// Whether a header named `name` (any case) is among the given ones.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }
}

fn write_request(
    out: &mut Vec<u8>,
    r: Parts<'_>,
    host: &str,
    keepalive: bool,
    trace: Option<&belier_stats::Trace>,
) {
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
    if let Some(trace) = trace {
        crate::trace_context::write_header(out, trace);
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
        let got = String::from_utf8(encode(&spec(), true).unwrap()).unwrap();
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
        let got = String::from_utf8(encode(&s, false).unwrap()).unwrap();
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
        assert!(String::from_utf8(encode(&s, true).unwrap())
            .unwrap()
            .contains("Host: [::1]:8080\r\n"));
        s.headers = vec![("Host".into(), "example.test".into())];
        let got = String::from_utf8(encode(&s, true).unwrap()).unwrap();
        assert!(got.contains("Host: example.test\r\n"));
        assert_eq!(got.matches("Host:").count(), 1);
    }

    /// The scripted user's request that `s` is.
    fn outgoing_of(s: &RequestSpec) -> Outgoing {
        Outgoing {
            step: 0,
            origin: 0,
            method: s.method.clone(),
            path_and_query: s.path_and_query.clone(),
            headers: s.headers.clone(),
            body: s.body.clone(),
            keep_body: false,
            timeout: None,
            stream: None,
        }
    }

    #[test]
    fn outgoing_reuses_the_buffer_and_matches_encode() {
        let mut s = spec();
        s.method = "POST".into();
        s.headers = vec![("X-Token".into(), "abc".into())];
        s.body = b"hi".to_vec();
        let outgoing = outgoing_of(&s);
        let mut buf = b"stale bytes".to_vec();
        encode_outgoing(&mut buf, &outgoing, "127.0.0.1:8080", false, None).unwrap();
        assert_eq!(buf, encode(&s, false).unwrap());
    }

    #[test]
    fn a_request_that_breaks_the_rules_is_never_encoded() {
        use rules::{Framing, Problem};
        type Change = fn(&mut RequestSpec);
        let cases: Vec<(Change, InvalidRequest)> = vec![
            (
                |s| s.headers = vec![("X-A".into(), "a\r\nX-Injected: 1".into())],
                InvalidRequest::HeaderValue("X-A".into(), Problem::LineBreak('\r')),
            ),
            (
                |s| s.headers = vec![("X-A\r\nX-Injected".into(), "1".into())],
                InvalidRequest::HeaderName("X-A\r\nX-Injected".into(), Problem::LineBreak('\r')),
            ),
            (
                |s| s.method = "GET / HTTP/1.1\r\n".into(),
                InvalidRequest::Method("GET / HTTP/1.1\r\n".into(), Problem::NotToken(' ')),
            ),
            (
                |s| s.path_and_query = "/a HTTP/1.0\r\nX: 1".into(),
                InvalidRequest::Target("/a HTTP/1.0\r\nX: 1".into(), Problem::Blank(' ')),
            ),
            (
                |s| s.host = "h\nX: 1".into(),
                InvalidRequest::Host("[h\nX: 1]:8080".into(), Problem::LineBreak('\n')),
            ),
            (
                |s| {
                    s.headers = vec![("Content-Length".into(), "100".into())];
                    s.body = b"hello".to_vec();
                },
                InvalidRequest::Framing(Framing::Mismatch {
                    given: 100,
                    body: 5,
                }),
            ),
        ];
        for (change, expected) in cases {
            let mut s = spec();
            change(&mut s);
            assert_eq!(encode(&s, true), Err(expected.clone()));
            let outgoing = outgoing_of(&s);
            let mut buf = b"stale bytes".to_vec();
            let host = host_header(&s.host, s.port);
            assert_eq!(
                encode_outgoing(&mut buf, &outgoing, &host, true, None),
                Err(expected)
            );
            assert!(buf.is_empty(), "nothing of a refused request is kept");
        }
    }
}
