//! Who may speak to a worker: its coordinator only. A request is refused, before its body is
//! read, when a browser could have sent it (an `Origin` or `Sec-Fetch-*` header), when it
//! names another host than the one the worker listens as (DNS rebinding: a page of
//! `attacker.example` that resolves to 127.0.0.1), without the worker's token, or when its
//! body is not JSON (a page's `no-cors` request may only send `text/plain` and forms). These
//! checks are pure, so they are tested on any input without a socket.

use std::net::{IpAddr, SocketAddr};

use axum::http::{header, HeaderMap, StatusCode, Uri};

use crate::protocol::same_secret;

/// Why a request is refused: the status and the reason the answer gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// 403, 401 or 415.
    pub status: StatusCode,
    /// The reason, as a person reads it.
    pub why: String,
}

fn refused(status: StatusCode, why: impl Into<String>) -> Refused {
    Refused {
        status,
        why: why.into(),
    }
}

/// Checks a request's head: `listen` is the address the worker is bound to, `token` the one
/// a coordinator must send.
pub fn admit(
    uri: &Uri,
    headers: &HeaderMap,
    listen: SocketAddr,
    token: &str,
) -> Result<(), Refused> {
    if headers.contains_key(header::ORIGIN)
        || headers
            .keys()
            .any(|name| name.as_str().starts_with("sec-fetch-"))
    {
        return Err(refused(
            StatusCode::FORBIDDEN,
            "a worker takes no request from a web page (Origin or Sec-Fetch-* header)",
        ));
    }
    let hosts: Vec<&str> = uri
        .authority()
        .map(|a| a.as_str())
        .into_iter()
        .chain(
            headers
                .get_all(header::HOST)
                .iter()
                .map(|h| h.to_str().unwrap_or("")),
        )
        .collect();
    if hosts.is_empty() {
        return Err(refused(
            StatusCode::FORBIDDEN,
            format!("a request to this worker names it ({listen}) as its host"),
        ));
    }
    for host in hosts {
        if !host_allowed(host, listen) {
            return Err(refused(
                StatusCode::FORBIDDEN,
                format!(
                    "this worker listens as {listen}, not as `{}`",
                    printable(host)
                ),
            ));
        }
    }
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if !given.is_some_and(|g| same_secret(g.as_bytes(), token.as_bytes())) {
        return Err(refused(
            StatusCode::UNAUTHORIZED,
            "this worker takes work only from a coordinator with its token",
        ));
    }
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(refused(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a worker's requests are JSON (Content-Type: application/json)",
        ));
    }
    Ok(())
}

/// Whether `authority` (a `Host` header or HTTP/2's `:authority`) names the worker listening
/// on `listen`: its port, and on the loopback its own address or `localhost`. Off the loopback
/// a coordinator may know the worker by any name (a Kubernetes pod's DNS name) and the token
/// guards it; an IP address must still be the one listened on, unless that is a wildcard.
pub fn host_allowed(authority: &str, listen: SocketAddr) -> bool {
    let Some((host, port)) = split_authority(authority) else {
        return false;
    };
    if port != listen.port() {
        return false;
    }
    let ip = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .parse::<IpAddr>()
        .ok();
    let listened = listen.ip();
    match ip {
        Some(ip) => ip == listened || listened.is_unspecified(),
        None if listened.is_loopback() => host.eq_ignore_ascii_case("localhost"),
        None => is_dns_name(host),
    }
}

/// `HOST:PORT` split; `None` without a port, or with anything but one.
fn split_authority(authority: &str) -> Option<(&str, u16)> {
    let (host, port) = authority.rsplit_once(':')?;
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) || host.is_empty() {
        return None;
    }
    Some((host, port.parse().ok()?))
}

/// Letters, digits, `-` and `.` only: what a DNS name is made of.
fn is_dns_name(host: &str) -> bool {
    host.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
}

/// At most 100 characters of `text`, control characters escaped: a refusal quotes the
/// request's value without echoing whatever it holds.
fn printable(text: &str) -> String {
    text.chars()
        .take(100)
        .flat_map(char::escape_debug)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_loopback_answers_to_its_own_address_and_localhost_only() {
        let listen = v4("127.0.0.1:7979");
        for ok in ["127.0.0.1:7979", "localhost:7979", "LOCALHOST:7979"] {
            assert!(host_allowed(ok, listen), "{ok}");
        }
        for refused in [
            "127.attacker.example:7979",
            "attacker.example:7979",
            "127.0.0.1:7980",
            "127.0.0.1",
            "127.0.0.2:7979",
            "[::1]:7979",
            "localhost.:7979",
            ":7979",
            "127.0.0.1:",
            "127.0.0.1:99999",
        ] {
            assert!(!host_allowed(refused, listen), "{refused}");
        }
        let (path, token) = (Uri::from_static("/v1/hello"), "t");
        let mut head = HeaderMap::new();
        head.insert(header::AUTHORIZATION, "Bearer t".parse().unwrap());
        head.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        let nameless = admit(&path, &head, listen, token).unwrap_err();
        assert_eq!(nameless.status, StatusCode::FORBIDDEN, "no host named");
        head.insert(header::HOST, "localhost:7979".parse().unwrap());
        assert_eq!(admit(&path, &head, listen, token), Ok(()));
        let six: SocketAddr = "[::1]:7979".parse().unwrap();
        assert!(host_allowed("[::1]:7979", six));
        assert!(!host_allowed("127.0.0.1:7979", six));
    }

    #[test]
    fn off_the_loopback_names_are_the_tokens_to_guard() {
        let any = v4("0.0.0.0:7979");
        assert!(host_allowed("r42-worker-0.r42-workers:7979", any));
        assert!(host_allowed("10.1.2.3:7979", any));
        assert!(!host_allowed("10.1.2.3:80", any));
        let one = v4("10.1.2.3:7979");
        assert!(host_allowed("10.1.2.3:7979", one));
        assert!(host_allowed("worker-1.lan:7979", one));
        assert!(!host_allowed("10.1.2.4:7979", one));
        assert!(!host_allowed("bad name:7979", one));
    }
}
