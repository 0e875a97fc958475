//! `--resolve HOST:PORT:ADDR` (curl's): the address to connect to for a host and port, in
//! place of the resolver's answer; the Host header and the TLS name stay the URL's.

use std::net::{IpAddr, SocketAddr};

use crate::settings::InputError;

const FLAG: &str = "--resolve <HOST:PORT:ADDR>";

/// One `--resolve` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    host: String,
    port: u16,
    addr: IpAddr,
}

/// Parses `HOST:PORT:ADDR`; ADDR may be an IPv6 address, in brackets or not, and HOST an
/// IPv6 literal in brackets.
fn parse(raw: &str) -> Result<Entry, InputError> {
    let bad = |why: &str| InputError::new(FLAG, raw, why.to_string());
    let (host, rest) = match raw.strip_prefix('[') {
        Some(r) => {
            let (h, rest) = r
                .split_once("]:")
                .ok_or_else(|| bad("expected HOST:PORT:ADDR, e.g. api.test:443:127.0.0.1"))?;
            (h, rest)
        }
        None => raw
            .split_once(':')
            .ok_or_else(|| bad("expected HOST:PORT:ADDR, e.g. api.test:443:127.0.0.1"))?,
    };
    let (port, addr) = rest
        .split_once(':')
        .ok_or_else(|| bad("expected HOST:PORT:ADDR, e.g. api.test:443:127.0.0.1"))?;
    if host.is_empty() {
        return Err(bad("the host is empty"));
    }
    let port = port
        .parse::<u16>()
        .map_err(|_| bad("the port must be a number from 0 to 65535"))?;
    let addr = addr
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .map_err(|_| bad("ADDR must be an IP address (IPv6 in brackets or not)"))?;
    Ok(Entry {
        host: host.to_ascii_lowercase(),
        port,
        addr,
    })
}

/// The address `--resolve` gives for `host:port`, if an entry names them. An entry that names
/// neither is an error: it would silently change nothing.
pub fn connect_to(
    entries: &[String],
    host: &str,
    port: u16,
) -> Result<Option<SocketAddr>, InputError> {
    let mut found = None;
    for raw in entries {
        let e = parse(raw)?;
        if e.host.trim_start_matches('[').trim_end_matches(']') == host.to_ascii_lowercase()
            && e.port == port
        {
            found.get_or_insert(SocketAddr::new(e.addr, e.port));
        } else {
            return Err(InputError::new(
                FLAG,
                raw,
                format!("names neither the URL's host nor its port ({host}:{port})"),
            ));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_with_ipv4_and_ipv6() {
        let e = parse("api.test:443:127.0.0.1").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("api.test", 443));
        assert_eq!(
            parse("api.test:80:[::1]").unwrap().addr,
            "::1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            parse("api.test:80:::1").unwrap().addr,
            "::1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(parse("[::2]:80:::1").unwrap().host, "::2");
        for bad in [
            "api.test",
            "api.test:443",
            ":443:127.0.0.1",
            "a:x:127.0.0.1",
            "a:1:host",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_the_urls_host_and_port_are_resolved() {
        let e = vec!["API.test:8080:127.0.0.2".to_string()];
        assert_eq!(
            connect_to(&e, "api.test", 8080).unwrap(),
            Some("127.0.0.2:8080".parse().unwrap())
        );
        let err = connect_to(&e, "api.test", 8081).unwrap_err();
        assert!(err.to_string().contains("api.test:8081"), "{err}");
        assert_eq!(connect_to(&[], "api.test", 1).unwrap(), None);
    }
}
