//! `--http3=auto`: before the run, one HEAD request to the URL over HTTP/2 (TLS, ALPN `h2`,
//! on a connection of its own, as `belier probe` sends one) reads the server's `Alt-Svc`;
//! when it offers `h3` on the origin's own host, the run goes over HTTP/3 to the port it
//! names, else over HTTP/2, the reason said on stderr and among the report's warnings. Never
//! a silent fallback.
//!
//! The discovery's request is not part of the run: the server sees one request more than
//! the report counts.

use std::net::SocketAddr;

use belier_engine::alt_svc;
use belier_engine::{Config, Endpoint};

use crate::settings::Settings;

/// Asks the server of `settings` for its alternative services and sets the run's protocol
/// (and, for HTTP/3 on another port, where its connections go) by what it says.
pub fn decide(settings: &mut Settings) -> anyhow::Result<()> {
    let engine = &mut settings.engine;
    let mut ask = engine.clone();
    ask.http2 = true;
    ask.http3 = false;
    ask.users = None;
    ask.request.method = "HEAD".into();
    ask.request.body.clear();
    let probe = belier_engine::probe(&ask)
        .map_err(|e| anyhow::anyhow!("--http3=auto: cannot ask the server for its Alt-Svc: {e}"))?;
    let found = match &probe.error {
        Some((kind, message)) => Err(format!(
            "asking the server for its Alt-Svc failed ({}: {message})",
            kind.name()
        )),
        None => alt_svc::h3_port(&header_values(&probe.head), &engine.request.host),
    };
    match found {
        Ok(port) => {
            engine.http3 = true;
            engine.http2 = false;
            go_to_port(engine, &probe.addr, port);
            eprintln!(
                "--http3=auto: the server's Alt-Svc offers h3 on port {port}: the run goes over \
                 HTTP/3"
            );
        }
        Err(why) => {
            eprintln!("--http3=auto: {why}: the run goes over HTTP/2");
            settings.protocol_note = Some(format!("--http3=auto: {why}: the run went over HTTP/2"));
        }
    }
    Ok(())
}

/// The values of every `Alt-Svc` line of a response `head`, in order.
fn header_values(head: &str) -> Vec<String> {
    head.lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(name, _)| name.trim().eq_ignore_ascii_case("alt-svc"))
        .map(|(_, value)| value.trim().to_string())
        .collect()
}

/// Sends the run's connections to `port` of the addresses they would have gone to (`at`, the
/// probe's, when neither `--connect-to` nor `--resolve` chose them); the URL, its `Host` and
/// the TLS name stay the origin's (RFC 7838 §2: an alternative serves the same origin).
fn go_to_port(engine: &mut Config, at: &Endpoint, port: u16) {
    let moved = |a: &SocketAddr| SocketAddr::new(a.ip(), port);
    if let Some(to) = &mut engine.connect_to {
        *to = moved(to);
    } else if !engine.addresses.is_empty() {
        engine.addresses = engine.addresses.iter().map(moved).collect();
    } else if port != engine.request.port {
        match at {
            Endpoint::Tcp(a) => engine.connect_to = Some(moved(a)),
            Endpoint::Addresses(list) => engine.addresses = list.list().iter().map(moved).collect(),
            // Refused with HTTP/3 before the run.
            Endpoint::Unix(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_alt_svc_line_of_a_head_is_read_whatever_its_case() {
        let head = "HTTP/1.1 200 OK\r\nalt-svc: h3=\":443\"; ma=60\r\nServer: x\r\n\
                    ALT-SVC:h2=\":8443\"\r\nX-Alt-Svc: no\r\n\r\n";
        assert_eq!(header_values(head), ["h3=\":443\"; ma=60", "h2=\":8443\""]);
        assert!(header_values("HTTP/1.1 200 OK\r\n\r\n").is_empty());
    }

    #[test]
    fn an_alternative_port_moves_the_connections_not_the_origin() {
        let spec = belier_engine::RequestSpec {
            method: "GET".into(),
            host: "example.com".into(),
            port: 443,
            path_and_query: "/".into(),
            headers: Vec::new(),
            body: Vec::new(),
        };
        let probed = Endpoint::Tcp("192.0.2.7:443".parse().unwrap());
        let mut same = Config::new(spec.clone());
        go_to_port(&mut same, &probed, 443);
        assert_eq!(same.connect_to, None);
        let mut other = Config::new(spec.clone());
        go_to_port(&mut other, &probed, 8443);
        assert_eq!(other.connect_to, Some("192.0.2.7:8443".parse().unwrap()));
        assert_eq!(
            (other.request.host.as_str(), other.request.port),
            ("example.com", 443)
        );
        // --resolve's addresses each move to the port.
        let mut resolved = Config::new(spec);
        resolved.addresses = vec![
            "10.0.0.1:443".parse().unwrap(),
            "10.0.0.2:443".parse().unwrap(),
        ];
        go_to_port(&mut resolved, &probed, 4433);
        let want: Vec<SocketAddr> = vec![
            "10.0.0.1:4433".parse().unwrap(),
            "10.0.0.2:4433".parse().unwrap(),
        ];
        assert_eq!(resolved.addresses, want);
    }
}
