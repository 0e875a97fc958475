//! Request bytes, built once per run and written as they are for every request.

use std::fmt::Write as _;

use crate::RequestSpec;

/// The `User-Agent` belier sends unless the user gives one.
pub const USER_AGENT: &str = concat!("belier/", env!("CARGO_PKG_VERSION"));

/// Encodes `spec` as an HTTP/1.1 request. Without keep-alive the request asks the server to
/// close (`Connection: close`) so both sides agree the connection carries one exchange.
pub fn encode(spec: &RequestSpec, keepalive: bool) -> Vec<u8> {
    let has = |name: &str| {
        spec.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let mut head = String::with_capacity(256);
    // Writing to a String cannot fail.
    let _ = write!(head, "{} {} HTTP/1.1\r\n", spec.method, spec.path_and_query);
    if !has("host") {
        let _ = write!(head, "Host: {}\r\n", host_header(&spec.host, spec.port));
    }
    if !has("user-agent") {
        let _ = write!(head, "User-Agent: {USER_AGENT}\r\n");
    }
    for (name, value) in &spec.headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    if !spec.body.is_empty() && !has("content-length") && !has("transfer-encoding") {
        let _ = write!(head, "Content-Length: {}\r\n", spec.body.len());
    }
    if !keepalive && !has("connection") {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&spec.body);
    bytes
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
}
