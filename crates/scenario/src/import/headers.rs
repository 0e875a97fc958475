//! Which recorded request headers a plan must not replay as written.

/// Hop-by-hop headers (RFC 9110 §7.6.1) and the `Proxy-*` ones a proxy consumes: never sent
/// on by a proxy, never replayed by a plan.
pub fn is_hop_by_hop(name: &str) -> bool {
    const HOP_BY_HOP: &[&str] = &[
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    ];
    HOP_BY_HOP.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// Headers an imported plan leaves out: hop-by-hop headers ([`is_hop_by_hop`]), what the
/// engine writes itself (`Host`, `Content-Length`; `Expect: 100-continue` is how curl sent a
/// large body, not part of the request), HTTP/2 pseudo-headers (`:authority` in
/// Chromium's HAR files), cookies (the plan's per-user cookie jar sends what the server set,
/// so a recorded session is not replayed), and `Accept-Encoding`: a compressed answer would
/// hide a JSON body from the plan's extractions and checks.
pub fn is_dropped_on_import(name: &str) -> bool {
    const DROPPED: &[&str] = &[
        "host",
        "content-length",
        "expect",
        "cookie",
        "accept-encoding",
    ];
    name.starts_with(':')
        || is_hop_by_hop(name)
        || DROPPED.iter().any(|d| d.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_hop_by_hop_cookies_and_pseudo_headers() {
        for name in [
            ":authority",
            "Host",
            "Connection",
            "Cookie",
            "Accept-Encoding",
            "Expect",
        ] {
            assert!(is_dropped_on_import(name), "{name}");
        }
        for name in ["Authorization", "Content-Type", "X-Csrf-Token", "Accept"] {
            assert!(!is_dropped_on_import(name), "{name}");
        }
    }
}
