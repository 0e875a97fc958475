//! Following redirects (`--follow N`, a plan's `follow:`): where a `3xx` answer sends the
//! next request, as browsers and curl do it.

use std::sync::{Mutex, OnceLock, PoisonError};

use belier_engine::user::Outgoing;
use belier_engine::TlsOptions;

use belier_plan::{Origin, Scheme};

/// Most hosts redirects may lead a run to beyond those it started with: each costs every
/// worker a name lookup and every user a connection.
pub const MAX_FOUND_HOSTS: usize = 64;

/// The hosts a run's users send to, numbered as `Outgoing::origin` numbers them: those the
/// run started with, then, when redirects may lead elsewhere, those they led to.
#[derive(Debug)]
pub(crate) struct Hosts {
    pub known: Vec<Origin>,
    /// `Some` to follow redirects to hosts the run did not start with.
    pub discover: Option<Discover>,
}

/// Redirects to new hosts: the TLS settings for https ones, and the hosts found so far.
#[derive(Debug)]
pub(crate) struct Discover {
    /// Set before the run (a plan's users are made before its TLS files are read); unset,
    /// https hosts found are verified against the system's roots.
    pub tls: OnceLock<TlsOptions>,
    pub found: Mutex<Vec<Origin>>,
}

impl Discover {
    pub(crate) fn new(tls: Option<TlsOptions>) -> Discover {
        let once = OnceLock::new();
        if let Some(tls) = tls {
            let _ = once.set(tls);
        }
        Discover {
            tls: once,
            found: Mutex::new(Vec::new()),
        }
    }
}

impl Hosts {
    /// The run's own hosts only.
    pub(crate) fn known(known: Vec<Origin>) -> Hosts {
        Hosts {
            known,
            discover: None,
        }
    }

    fn found(&self) -> Option<std::sync::MutexGuard<'_, Vec<Origin>>> {
        let d = self.discover.as_ref()?;
        // A panic elsewhere leaves the list usable: it only grows.
        Some(d.found.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Host `i`.
    pub(crate) fn get(&self, i: usize) -> Option<Origin> {
        match self.known.get(i) {
            Some(o) => Some(o.clone()),
            None => self.found()?.get(i - self.known.len()).cloned(),
        }
    }

    /// The number of `origin`: a known host's, a found one's, or (discovering, below
    /// [`MAX_FOUND_HOSTS`]) a new number.
    pub(crate) fn index_of(&self, origin: &Origin) -> Option<usize> {
        if let Some(i) = self.known.iter().position(|o| o == origin) {
            return Some(i);
        }
        let mut found = self.found()?;
        let i = match found.iter().position(|o| o == origin) {
            Some(i) => i,
            None if found.len() < MAX_FOUND_HOSTS => {
                found.push(origin.clone());
                found.len() - 1
            }
            None => return None,
        };
        Some(self.known.len() + i)
    }

    /// The engine's view of found host `index` (for `Users::origin`).
    pub(crate) fn engine_origin(&self, index: usize) -> Option<belier_engine::Origin> {
        let tls = self
            .discover
            .as_ref()?
            .tls
            .get()
            .cloned()
            .unwrap_or_default();
        let o = self
            .found()?
            .get(index.checked_sub(self.known.len())?)?
            .clone();
        Some(belier_engine::Origin {
            tls: (o.scheme == Scheme::Https).then_some(tls),
            host: o.host,
            port: o.port,
        })
    }
}

/// The request a redirect answer (`status`, its `location`) to `sent` asks for next, its
/// statistics row `step`: the `Location` resolved against the URL `sent` went to (on
/// `hosts`' `sent.origin`); `303`, and `301`/`302` after a `POST`, go on as a `GET` without a
/// body (RFC 9110 §15.4), `307`/`308` keep the method and body. A hop to another host
/// goes there (on that host's connection) without the `Authorization`, `Cookie` and `Host`
/// headers `sent` carried, as curl leaves credentials with the host they were meant for.
/// `None` for another status, a `Location` that does not parse, or one on a host that is not
/// among `hosts` (unless they discover new ones).
pub(crate) fn next_hop(
    sent: &Outgoing,
    hosts: &Hosts,
    status: u16,
    location: &str,
    step: usize,
) -> Option<Outgoing> {
    if !matches!(status, 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let from = hosts.get(sent.origin)?;
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
    let origin = hosts.index_of(&Origin {
        scheme,
        host: host.to_ascii_lowercase(),
        port,
    })?;
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
            stream: None,
        }
    }

    fn hosts() -> Hosts {
        Hosts::known(vec![
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
        ])
    }

    #[test]
    fn locations_resolve_against_the_request() {
        let hop = next_hop(&sent("GET", "/a/b?redirect=2"), &hosts(), 302, "c?x", 1).unwrap();
        assert_eq!((hop.path_and_query.as_str(), hop.step), ("/a/c?x", 1));
        let hop = next_hop(
            &sent("GET", "/a"),
            &hosts(),
            301,
            "http://127.0.0.1:8080/z",
            2,
        );
        assert_eq!(hop.unwrap().path_and_query, "/z");
        assert!(next_hop(&sent("GET", "/a"), &hosts(), 302, "http://other:8080/", 1).is_none());
        assert!(next_hop(&sent("GET", "/a"), &hosts(), 200, "/b", 1).is_none());
        assert!(next_hop(&sent("GET", "/a"), &hosts(), 304, "/b", 1).is_none());
    }

    #[test]
    fn methods_change_as_browsers_do() {
        let post = sent("POST", "/form");
        let hop = next_hop(&post, &hosts(), 303, "/done", 1).unwrap();
        assert_eq!(
            (hop.method.as_str(), hop.body.len(), hop.headers.len()),
            ("GET", 0, 0)
        );
        let hop = next_hop(&post, &hosts(), 302, "/done", 1).unwrap();
        assert_eq!(hop.method, "GET");
        let hop = next_hop(&post, &hosts(), 307, "/again", 1).unwrap();
        assert_eq!((hop.method.as_str(), &hop.body[..]), ("POST", &b"x=1"[..]));
        let put = sent("PUT", "/x");
        assert_eq!(
            next_hop(&put, &hosts(), 302, "/y", 1).unwrap().method,
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
        let hop = next_hop(&get, &hosts(), 302, "http://[::1]:9090/b?c=1", 1).unwrap();
        assert_eq!((hop.origin, hop.path_and_query.as_str()), (1, "/b?c=1"));
        let names: Vec<&str> = hop.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["Content-Type", "X-Trace"]);
        // Back on the first host from the second: a relative Location stays on the second.
        let back = next_hop(&hop, &hosts(), 307, "/c", 2).unwrap();
        assert_eq!((back.origin, back.path_and_query.as_str()), (1, "/c"));
        let home = next_hop(&hop, &hosts(), 307, "http://127.0.0.1:8080/d", 2).unwrap();
        assert_eq!(home.origin, 0);
        // The same host keeps the credentials; another scheme or port is another host.
        let same = next_hop(&get, &hosts(), 302, "/e", 1).unwrap();
        assert_eq!(same.headers.len(), 4);
        assert!(next_hop(&get, &hosts(), 302, "https://127.0.0.1:8080/", 1).is_none());
        assert!(next_hop(&get, &hosts(), 302, "http://[::1]:9091/", 1).is_none());
    }

    #[test]
    fn discovering_hosts_numbers_new_ones_after_the_known_up_to_the_cap() {
        let hosts = Hosts {
            known: hosts().known,
            discover: Some(Discover::new(Some(TlsOptions::default()))),
        };
        let get = sent("GET", "/a");
        let hop = next_hop(&get, &hosts, 302, "https://Other.test/x", 1).unwrap();
        assert_eq!(hop.origin, 2);
        let again = next_hop(&get, &hosts, 302, "https://other.test:443/y", 1).unwrap();
        assert_eq!(again.origin, 2);
        let plain = next_hop(&get, &hosts, 302, "http://other.test/", 1).unwrap();
        assert_eq!(plain.origin, 3);
        let engine = hosts.engine_origin(2).unwrap();
        assert_eq!((engine.host.as_str(), engine.port), ("other.test", 443));
        assert!(engine.tls.is_some());
        assert!(hosts.engine_origin(3).unwrap().tls.is_none());
        assert!(
            hosts.engine_origin(1).is_none(),
            "a known host is the run's own"
        );
        // From a found host, a relative Location stays there.
        let next = next_hop(&hop, &hosts, 302, "/z", 2).unwrap();
        assert_eq!((next.origin, next.path_and_query.as_str()), (2, "/z"));
        for port in 0..MAX_FOUND_HOSTS {
            let _ = next_hop(&get, &hosts, 302, &format!("http://h:{}/", 1000 + port), 1);
        }
        assert!(next_hop(&get, &hosts, 302, "http://past.cap/", 1).is_none());
    }
}
