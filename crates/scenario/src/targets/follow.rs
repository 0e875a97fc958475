//! Following redirects (`--follow N`): where a `3xx` answer sends the next request, as
//! browsers and curl do it.

use belier_engine::user::Outgoing;

use super::Origin;

/// The request a redirect answer (`status`, its `location`) to `sent` on `origin` asks for
/// next, its statistics row `step`: the `Location` resolved against the URL `sent` went to;
/// `303`, and `301`/`302` after a `POST`, go on as a `GET` without a body (RFC 9110 §15.4),
/// `307`/`308` keep the method and body. `None` for another status, a `Location` that does
/// not parse, or one on another host (the run's connections go to its hosts only).
pub(crate) fn next_hop(
    sent: &Outgoing,
    origin: &Origin,
    status: u16,
    location: &str,
    step: usize,
) -> Option<Outgoing> {
    if !matches!(status, 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let base = url::Url::parse(&format!("{}{}", origin.url(), sent.path_and_query)).ok()?;
    let next = base.join(location.trim()).ok()?;
    let same_host = next.scheme() == base.scheme()
        && next.host_str() == base.host_str()
        && next.port_or_known_default() == base.port_or_known_default();
    if !same_host {
        return None;
    }
    let mut path_and_query = next.path().to_string();
    if let Some(q) = next.query() {
        path_and_query.push('?');
        path_and_query.push_str(q);
    }
    let to_get = status == 303 || (matches!(status, 301 | 302) && sent.method == "POST");
    let mut hop = sent.clone();
    hop.step = step;
    hop.path_and_query = path_and_query;
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
    use crate::model::Scheme;

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

    fn origin() -> Origin {
        Origin {
            scheme: Scheme::Http,
            host: "127.0.0.1".into(),
            port: 8080,
        }
    }

    #[test]
    fn locations_resolve_against_the_request() {
        let hop = next_hop(&sent("GET", "/a/b?redirect=2"), &origin(), 302, "c?x", 1).unwrap();
        assert_eq!((hop.path_and_query.as_str(), hop.step), ("/a/c?x", 1));
        let hop = next_hop(
            &sent("GET", "/a"),
            &origin(),
            301,
            "http://127.0.0.1:8080/z",
            2,
        );
        assert_eq!(hop.unwrap().path_and_query, "/z");
        assert!(next_hop(&sent("GET", "/a"), &origin(), 302, "http://other:8080/", 1).is_none());
        assert!(next_hop(&sent("GET", "/a"), &origin(), 200, "/b", 1).is_none());
        assert!(next_hop(&sent("GET", "/a"), &origin(), 304, "/b", 1).is_none());
    }

    #[test]
    fn methods_change_as_browsers_do() {
        let post = sent("POST", "/form");
        let hop = next_hop(&post, &origin(), 303, "/done", 1).unwrap();
        assert_eq!(
            (hop.method.as_str(), hop.body.len(), hop.headers.len()),
            ("GET", 0, 0)
        );
        let hop = next_hop(&post, &origin(), 302, "/done", 1).unwrap();
        assert_eq!(hop.method, "GET");
        let hop = next_hop(&post, &origin(), 307, "/again", 1).unwrap();
        assert_eq!((hop.method.as_str(), &hop.body[..]), ("POST", &b"x=1"[..]));
        let put = sent("PUT", "/x");
        assert_eq!(
            next_hop(&put, &origin(), 302, "/y", 1).unwrap().method,
            "PUT"
        );
    }
}
