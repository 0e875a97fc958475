//! Following redirects (`--follow N`, a plan's `follow:`): where a `3xx` answer sends the
//! next request, as browsers and curl do it.

use belier_engine::user::Outgoing;

use super::Origin;
use crate::model::Scheme;

/// The request a redirect answer (`status`, its `location`) to `sent` asks for next, its
/// statistics row `step`: the `Location` resolved against the URL `sent` went to (on
/// `origins[sent.origin]`); `303`, and `301`/`302` after a `POST`, go on as a `GET` without a
/// body (RFC 9110 §15.4), `307`/`308` keep the method and body. A hop to another of `origins`
/// goes there (on that host's connection) without the `Authorization`, `Cookie` and `Host`
/// headers `sent` carried, as curl leaves credentials with the host they were meant for.
/// `None` for another status, a `Location` that does not parse, or one on a host that is not
/// among `origins` (the run's connections go to its hosts only, resolved at its start).
pub(crate) fn next_hop(
    sent: &Outgoing,
    origins: &[Origin],
    status: u16,
    location: &str,
    step: usize,
) -> Option<Outgoing> {
    if !matches!(status, 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let from = origins.get(sent.origin)?;
    let base = url::Url::parse(&format!("{}{}", from.url(), sent.path_and_query)).ok()?;
    let next = base.join(location.trim()).ok()?;
    let scheme = match next.scheme() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        _ => return None,
    };
    let host = next
        .host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = next.port_or_known_default()?;
    let origin = origins
        .iter()
        .position(|o| o.scheme == scheme && o.host.eq_ignore_ascii_case(host) && o.port == port)?;
    let mut path_and_query = next.path().to_string();
    if let Some(q) = next.query() {
        path_and_query.push('?');
        path_and_query.push_str(q);
    }
    let to_get = status == 303 || (matches!(status, 301 | 302) && sent.method == "POST");
    let mut hop = sent.clone();
    hop.step = step;
    hop.path_and_query = path_and_query;
    if origin != sent.origin {
        hop.origin = origin;
        hop.headers.retain(|(n, _)| {
            !["authorization", "cookie", "host"]
                .iter()
                .any(|h| n.eq_ignore_ascii_case(h))
        });
    }
    if to_get {
        hop.method = "GET".into();
        hop.body.clear();
        hop.headers.retain(|(n, _)| {
            !n.eq_ignore_ascii_case("content-type") && !n.eq_ignore_ascii_case("content-length")
        });
    }
    Some(hop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(method: &str, path: &str) -> Outgoing {
        Outgoing {
            step: 0,
            origin: 0,
            method: method.into(),
            path_and_query: path.into(),
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: b"x=1".to_vec(),
            keep_body: false,
            timeout: None,
        }
    }

    fn origins() -> Vec<Origin> {
        vec![
            Origin {
                scheme: Scheme::Http,
                host: "127.0.0.1".into(),
                port: 8080,
            },
            Origin {
                scheme: Scheme::Http,
                host: "::1".into(),
                port: 9090,
            },
        ]
    }

    #[test]
    fn locations_resolve_against_the_request() {
        let hop = next_hop(&sent("GET", "/a/b?redirect=2"), &origins(), 302, "c?x", 1).unwrap();
        assert_eq!((hop.path_and_query.as_str(), hop.step), ("/a/c?x", 1));
        let hop = next_hop(
            &sent("GET", "/a"),
            &origins(),
            301,
            "http://127.0.0.1:8080/z",
            2,
        );
        assert_eq!(hop.unwrap().path_and_query, "/z");
        assert!(next_hop(&sent("GET", "/a"), &origins(), 302, "http://other:8080/", 1).is_none());
        assert!(next_hop(&sent("GET", "/a"), &origins(), 200, "/b", 1).is_none());
        assert!(next_hop(&sent("GET", "/a"), &origins(), 304, "/b", 1).is_none());
    }

    #[test]
    fn methods_change_as_browsers_do() {
        let post = sent("POST", "/form");
        let hop = next_hop(&post, &origins(), 303, "/done", 1).unwrap();
        assert_eq!(
            (hop.method.as_str(), hop.body.len(), hop.headers.len()),
            ("GET", 0, 0)
        );
        let hop = next_hop(&post, &origins(), 302, "/done", 1).unwrap();
        assert_eq!(hop.method, "GET");
        let hop = next_hop(&post, &origins(), 307, "/again", 1).unwrap();
        assert_eq!((hop.method.as_str(), &hop.body[..]), ("POST", &b"x=1"[..]));
        let put = sent("PUT", "/x");
        assert_eq!(
            next_hop(&put, &origins(), 302, "/y", 1).unwrap().method,
            "PUT"
        );
    }

    #[test]
    fn a_hop_to_another_known_host_goes_there_without_credentials() {
        let mut get = sent("GET", "/a");
        get.headers.extend([
            ("Authorization".into(), "Bearer secret".into()),
            ("cookie".into(), "s=1".into()),
            ("X-Trace".into(), "7".into()),
        ]);
        let hop = next_hop(&get, &origins(), 302, "http://[::1]:9090/b?c=1", 1).unwrap();
        assert_eq!((hop.origin, hop.path_and_query.as_str()), (1, "/b?c=1"));
        let names: Vec<&str> = hop.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["Content-Type", "X-Trace"]);
        // Back on the first host from the second: a relative Location stays on the second.
        let back = next_hop(&hop, &origins(), 307, "/c", 2).unwrap();
        assert_eq!((back.origin, back.path_and_query.as_str()), (1, "/c"));
        let home = next_hop(&hop, &origins(), 307, "http://127.0.0.1:8080/d", 2).unwrap();
        assert_eq!(home.origin, 0);
        // The same host keeps the credentials; another scheme or port is another host.
        let same = next_hop(&get, &origins(), 302, "/e", 1).unwrap();
        assert_eq!(same.headers.len(), 4);
        assert!(next_hop(&get, &origins(), 302, "https://127.0.0.1:8080/", 1).is_none());
        assert!(next_hop(&get, &origins(), 302, "http://[::1]:9091/", 1).is_none());
    }
}
