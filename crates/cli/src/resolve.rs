//! `--resolve HOST:PORT:ADDR[,ADDR...]` (curl's): the addresses to connect to for a host and
//! port, in place of the resolver's answer; the Host header and the TLS name stay the URL's.
//! With several, each new connection takes one by `--dns-policy`.

use std::net::{IpAddr, SocketAddr};

use belier_engine::Config;

use crate::settings::InputError;

const FLAG: &str = "--resolve <HOST:PORT:ADDR[,ADDR...]>";

/// One `--resolve` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    host: String,
    port: u16,
    addrs: Vec<IpAddr>,
}

/// Parses `HOST:PORT:ADDR[,ADDR...]`; an ADDR may be an IPv6 address, in brackets or not, and
/// HOST an IPv6 literal in brackets.
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
    let addrs = addr
        .split(',')
        .map(|a| {
            a.trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .map_err(|_| bad("each ADDR must be an IP address (IPv6 in brackets or not)"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Entry {
        host: host.to_ascii_lowercase(),
        port,
        addrs,
    })
}

/// The addresses `--resolve` gives for `host:port`, in order, each once (none if no entry is
/// given). An entry that names neither is an error: it would silently change nothing.
pub fn addresses(entries: &[String], host: &str, port: u16) -> Result<Vec<SocketAddr>, InputError> {
    let mut found: Vec<SocketAddr> = Vec::new();
    for raw in entries {
        let e = parse(raw)?;
        if e.host.trim_start_matches('[').trim_end_matches(']') != host.to_ascii_lowercase()
            || e.port != port
        {
            return Err(InputError::new(
                FLAG,
                raw,
                format!("names neither the URL's host nor its port ({host}:{port})"),
            ));
        }
        for addr in e.addrs {
            let addr = SocketAddr::new(addr, e.port);
            if !found.contains(&addr) {
                found.push(addr);
            }
        }
    }
    Ok(found)
}

/// Points `engine` at `list`, the addresses `--resolve` gave: one as [`Config::connect_to`],
/// several as [`Config::addresses`]; none leaves it as it is.
pub fn apply(engine: &mut Config, mut list: Vec<SocketAddr>) {
    match list.len() {
        0 => {}
        1 => engine.connect_to = list.pop(),
        _ => engine.addresses = list,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_with_ipv4_and_ipv6() {
        let e = parse("api.test:443:127.0.0.1").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("api.test", 443));
        let v6 = "::1".parse::<IpAddr>().unwrap();
        assert_eq!(parse("api.test:80:[::1]").unwrap().addrs, [v6]);
        assert_eq!(parse("api.test:80:::1").unwrap().addrs, [v6]);
        assert_eq!(
            parse("api.test:80:127.0.0.11,[::1],127.0.0.12")
                .unwrap()
                .addrs,
            [
                "127.0.0.11".parse::<IpAddr>().unwrap(),
                v6,
                "127.0.0.12".parse().unwrap()
            ]
        );
        assert_eq!(parse("[::2]:80:::1").unwrap().host, "::2");
        for bad in [
            "api.test",
            "api.test:443",
            ":443:127.0.0.1",
            "a:x:127.0.0.1",
            "a:1:host",
            "a:1:127.0.0.1,",
            "a:1:127.0.0.1,host",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_the_urls_host_and_port_are_resolved() {
        let e = vec!["API.test:8080:127.0.0.2".to_string()];
        assert_eq!(
            addresses(&e, "api.test", 8080).unwrap(),
            ["127.0.0.2:8080".parse().unwrap()]
        );
        let err = addresses(&e, "api.test", 8081).unwrap_err();
        assert!(err.to_string().contains("api.test:8081"), "{err}");
        assert_eq!(addresses(&[], "api.test", 1).unwrap(), []);
    }

    fn config() -> Config {
        Config::new(belier_engine::RequestSpec {
            method: "GET".into(),
            host: "a.test".into(),
            port: 80,
            path_and_query: "/".into(),
            headers: Vec::new(),
            body: Vec::new(),
        })
    }

    #[test]
    fn one_address_connects_there_and_several_are_shared_out() {
        let mut one = config();
        apply(
            &mut one,
            addresses(&["a.test:80:127.0.0.2".into()], "a.test", 80).unwrap(),
        );
        assert_eq!(one.connect_to, Some("127.0.0.2:80".parse().unwrap()));
        assert!(one.addresses.is_empty());
        let mut two = config();
        let entries = [
            "a.test:80:127.0.0.2,127.0.0.3".into(),
            "a.test:80:127.0.0.2".into(),
        ];
        apply(&mut two, addresses(&entries, "a.test", 80).unwrap());
        assert_eq!(two.connect_to, None);
        assert_eq!(
            two.addresses,
            [
                "127.0.0.2:80".parse().unwrap(),
                "127.0.0.3:80".parse().unwrap()
            ]
        );
    }
}
