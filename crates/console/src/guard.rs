//! Who may use the console: the token (when there is one) on every request, as a cookie set
//! once from `?token=` or as `Authorization: Bearer`; a `Host` naming the loopback when there
//! is no token (so a page of another site cannot reach a loopback console by DNS rebinding);
//! and for the control endpoints, no request from another origin (so another tab cannot steer
//! a run).

use axum::http::{header, HeaderMap, StatusCode};

use crate::server::{loopback_host, same};

/// The name of the cookie that carries the token after `?token=` opened the page: with the
/// port, because cookies are kept per host, not per port, so that consoles on two ports of
/// 127.0.0.1 each keep their own.
pub fn cookie(port: u16) -> String {
    format!("belier_console_{port}")
}

/// What a request may do.
pub struct Guard {
    /// The token every request must carry, if any.
    pub token: Option<String>,
    /// Without a token the console is on the loopback: `Host` must then be a loopback name.
    pub loopback_only: bool,
    /// The cookie's name ([`cookie`]).
    pub cookie: String,
}

impl Guard {
    /// Whether `headers` carry the token (always, when there is none).
    pub fn authorized(&self, headers: &HeaderMap) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let cookie = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().strip_prefix(&self.cookie)?.strip_prefix('='))
            .next();
        [bearer, cookie]
            .into_iter()
            .flatten()
            .any(|t| same(t.as_bytes(), token.as_bytes()))
    }

    /// Whether `given` (a `?token=` value) is the token.
    pub fn matches(&self, given: &str) -> bool {
        self.token
            .as_ref()
            .is_some_and(|t| same(given.as_bytes(), t.as_bytes()))
    }

    /// Checks the `Host` of any request: on a loopback console without a token, it must name
    /// the loopback ([`loopback_host`]).
    pub fn host(&self, headers: &HeaderMap) -> Result<(), (StatusCode, &'static str)> {
        if !self.loopback_only {
            return Ok(());
        }
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if loopback_host(host) {
            Ok(())
        } else {
            Err((
                StatusCode::FORBIDDEN,
                "this console answers requests for the loopback only (Host)\n",
            ))
        }
    }

    /// Checks a control request (a POST): refused if it comes from another origin than the
    /// console's own, as browsers say in `Origin` and `Sec-Fetch-Site`. Scripts that send
    /// neither (curl) pass.
    pub fn same_origin(&self, headers: &HeaderMap) -> Result<(), (StatusCode, &'static str)> {
        let refuse = Err((
            StatusCode::FORBIDDEN,
            "cross-origin requests may not steer a run\n",
        ));
        if let Some(site) = headers.get("sec-fetch-site") {
            if !matches!(site.as_bytes(), b"same-origin" | b"none") {
                return refuse;
            }
        }
        let Some(origin) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let host = headers.get(header::HOST).map(|h| h.as_bytes());
        let own = origin
            .as_bytes()
            .strip_prefix(b"http://")
            .is_some_and(|rest| Some(rest) == host);
        if own {
            Ok(())
        } else {
            refuse
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn the_token_comes_as_a_bearer_or_the_cookie() {
        let g = Guard {
            token: Some("s3cret".into()),
            loopback_only: false,
            cookie: cookie(5665),
        };
        assert!(!g.authorized(&headers(&[])));
        assert!(g.authorized(&headers(&[("authorization", "Bearer s3cret")])));
        assert!(!g.authorized(&headers(&[("authorization", "Bearer s3cre")])));
        assert!(g.authorized(&headers(&[("cookie", "a=b; belier_console_5665=s3cret")])));
        // Another port's console's cookie, or the unported name, opens nothing here.
        assert!(!g.authorized(&headers(&[("cookie", "belier_console_5666=s3cret")])));
        assert!(!g.authorized(&headers(&[("cookie", "belier_console=s3cret")])));
        assert!(!g.authorized(&headers(&[("cookie", "belier_console_56650=s3cret")])));
        assert!(g.matches("s3cret") && !g.matches("s3cretx"));
        let open = Guard {
            token: None,
            loopback_only: true,
            cookie: cookie(5665),
        };
        assert!(open.authorized(&headers(&[])));
        assert!(!open.matches(""));
    }

    #[test]
    fn other_origins_and_hosts_are_refused() {
        let g = Guard {
            token: None,
            loopback_only: true,
            cookie: cookie(5665),
        };
        let own = [
            ("host", "127.0.0.1:5665"),
            ("origin", "http://127.0.0.1:5665"),
        ];
        assert!(g.same_origin(&headers(&own)).is_ok());
        assert!(g
            .same_origin(&headers(&[("host", "127.0.0.1:5665")]))
            .is_ok());
        let other = [
            ("host", "127.0.0.1:5665"),
            ("origin", "http://evil.example"),
        ];
        assert_eq!(g.same_origin(&headers(&other)).unwrap_err().0, 403);
        let site = [("host", "127.0.0.1:5665"), ("sec-fetch-site", "cross-site")];
        assert_eq!(g.same_origin(&headers(&site)).unwrap_err().0, 403);
        assert!(g.host(&headers(&[("host", "localhost:5665")])).is_ok());
        assert!(g.host(&headers(&[("host", "[::1]:5665")])).is_ok());
        for rebound in [
            "rebound.example:5665",
            "127.attacker.example:5665",
            "localhost.attacker.example",
        ] {
            assert_eq!(g.host(&headers(&[("host", rebound)])).unwrap_err().0, 403);
        }
        assert_eq!(g.host(&headers(&[])).unwrap_err().0, 403, "no Host");
    }
}
