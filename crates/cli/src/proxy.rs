//! `--proxy URL`: an http:// URL's requests go through an HTTP proxy, in absolute form (RFC
//! 9112 §3.2.2), an https:// URL's through a `CONNECT` tunnel, with the proxy's own
//! credentials as `Proxy-Authorization`; hosts listed in `NO_PROXY` (or `no_proxy`) are
//! reached directly, as curl does.

use std::net::{SocketAddr, ToSocketAddrs};

use belier_engine::{Config, Tunnel};

use crate::settings::InputError;

const FLAG: &str = "--proxy <URL>";

/// Sends `engine`'s request for `url` (credentials already taken out) through the proxy at
/// `raw`, unless `NO_PROXY` names the URL's host.
pub fn apply(engine: &mut Config, raw: &str, url: &str) -> Result<(), InputError> {
    let no_proxy = std::env::var("NO_PROXY")
        .or_else(|_| std::env::var("no_proxy"))
        .unwrap_or_default();
    if bypassed(&no_proxy, &engine.request.host) {
        return Ok(());
    }
    // A URL parser drops CR and LF silently, which would hide the mistake.
    belier_engine::request::rules::check_line(raw)
        .map_err(|p| InputError::new(FLAG, raw.escape_debug(), p.to_string()))?;
    let mut proxy = url::Url::parse(raw)
        .map_err(|e| InputError::new(FLAG, raw, format!("{e} (e.g. http://127.0.0.1:3128)")))?;
    if proxy.scheme() != "http" {
        return Err(InputError::new(
            FLAG,
            raw,
            "only http:// proxies are supported",
        ));
    }
    let auth = belier_scenario::targets::basic_auth(&mut proxy);
    let host = proxy
        .host_str()
        .ok_or_else(|| InputError::new(FLAG, raw, "has no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = proxy.port_or_known_default().unwrap_or(80);
    let addr: SocketAddr = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| InputError::new(FLAG, raw, "its host does not resolve"))?;
    engine.connect_to = Some(addr);
    if engine.tls.is_some() {
        // https: a tunnel to the origin, the requests inside it as they would go direct.
        engine.tunnel = Some(Tunnel {
            proxy_authorization: auth.map(|(_, value)| value),
        });
        return Ok(());
    }
    let mut absolute =
        url::Url::parse(url).map_err(|e| InputError::new("<URL>", url, e.to_string()))?;
    absolute.set_fragment(None);
    engine.request.path_and_query = absolute.to_string();
    if let Some((_, value)) = auth {
        engine
            .request
            .headers
            .push(("Proxy-Authorization".to_string(), value));
    }
    Ok(())
}

/// Whether `NO_PROXY`'s list (`*`, or host names and addresses, a leading dot or not, ports
/// ignored) names `host` or a domain it is in.
fn bypassed(no_proxy: &str, host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    no_proxy
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            let entry = entry.trim_start_matches('[');
            let entry = match entry.rsplit_once(':') {
                Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
                _ => entry,
            };
            let entry = entry
                .trim_end_matches(']')
                .trim_start_matches('.')
                .to_ascii_lowercase();
            host == entry || host.ends_with(&format!(".{entry}"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_proxy_matches_hosts_domains_and_star() {
        assert!(bypassed("localhost, 127.0.0.1", "127.0.0.1"));
        assert!(bypassed(".example.com", "api.example.com"));
        assert!(bypassed("example.com:8080", "example.com"));
        assert!(bypassed("example.com", "API.Example.com"));
        assert!(bypassed("*", "anything"));
        assert!(!bypassed("example.com", "badexample.com"));
        assert!(!bypassed("", "example.com"));
        assert!(bypassed("[::1]", "::1"));
    }
}
