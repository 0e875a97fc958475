//! A hostile client of belier's listeners: HTTP/1.1 written by hand on a plain socket, so a
//! test sends exactly the `Host`, `Origin` and content type a web page (or a rebinding one)
//! would, and reads the status and headers as they come.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

/// An answer: status, headers (names in lower case), body.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    /// The value of header `name` (lower case), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `method path` to `addr` with `headers` (a `Host` among them, or none at all) and
/// `body`, over HTTP/1.1 on a connection closed after the answer.
pub fn send(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("the listener accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("an answer");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").expect("a whole head");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {head}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Reply {
        status,
        headers,
        body: body.to_string(),
    }
}

/// A page's `fetch(url, {method: 'POST', mode: 'no-cors', body: '…'})` from `origin` to a
/// listener it reached through `host` (its own name rebound, or the listener's address): a
/// "simple" request, which no CORS preflight announces.
pub fn page_post(addr: &str, path: &str, host: &str, origin: &str, body: &str) -> Reply {
    send(
        addr,
        "POST",
        path,
        &[
            ("Host", host),
            ("Origin", origin),
            ("Content-Type", "text/plain;charset=UTF-8"),
            ("Sec-Fetch-Site", "cross-site"),
            ("Sec-Fetch-Mode", "no-cors"),
        ],
        body,
    )
}

/// The `Host` of pages whose own names were rebound to 127.0.0.1, for a listener on `port`:
/// each looks like the loopback to a careless check (a `127.` or `localhost` prefix).
pub fn rebound_hosts(port: u16) -> Vec<String> {
    vec![
        format!("127.attacker.example:{port}"),
        "127.0.0.1.attacker.example".into(),
        "localhost.attacker.example".into(),
        format!("localhost.attacker.example:{port}"),
    ]
}
