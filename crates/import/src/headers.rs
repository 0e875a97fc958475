//! Which recorded request headers a plan must not replay as written, and which it cannot hold.

use belier_engine::request::{rules, InvalidRequest};

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

/// Whether a plan can hold header `name: value` as the plan reader would (the engine's
/// [`rules`]): `Err` says which part is wrong (`"name"` or `"value"`) and why. An importer
/// refuses such a header where its input has it, so every plan it writes reads back.
pub fn check_header(name: &str, value: &str) -> Result<(), (&'static str, String)> {
    rules::check_header_name(name).map_err(|p| {
        (
            "name",
            InvalidRequest::HeaderName(name.into(), p).to_string(),
        )
    })?;
    rules::check_header_value(value).map_err(|p| {
        (
            "value",
            InvalidRequest::HeaderValue(name.into(), p).to_string(),
        )
    })
}

/// Headers whose recorded values are credentials: a recorded plan keeps none of them but
/// names an environment variable in their place ([`secret_variable`]). `Cookie` and
/// `Proxy-Authorization` are not kept at all ([`is_dropped_on_import`]).
const CREDENTIALS: &[&str] = &["authorization", "x-api-key", "x-auth-token"];

/// The environment variable a recorded plan reads header `name`'s value from, when that value
/// is a credential (`Authorization` → `BELIER_AUTHORIZATION`); `None` for other headers.
pub fn secret_variable(name: &str) -> Option<String> {
    CREDENTIALS
        .iter()
        .any(|c| c.eq_ignore_ascii_case(name))
        .then(|| format!("BELIER_{}", name.to_ascii_uppercase().replace('-', "_")))
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
