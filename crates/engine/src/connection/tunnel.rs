//! A TLS connection through an HTTP proxy: `CONNECT host:port` on the TCP connection to the
//! proxy, its `2xx` answer, then the TLS handshake with the origin through the tunnel
//! (RFC 9110 §9.3.6).

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use belier_stats::ErrorKind;

use super::{Cause, Failure};

/// How to open a tunnel through an HTTP proxy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tunnel {
    /// The `Proxy-Authorization` value the proxy asks for, if any.
    pub proxy_authorization: Option<String>,
}

/// Longest proxy answer head read.
const MAX_HEAD: usize = 8 * 1024;

/// The `CONNECT` request for `authority` (`host:port`), with the proxy's credentials.
pub(crate) fn connect_request(authority: &str, proxy_authorization: Option<&str>) -> Vec<u8> {
    let mut head = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(auth) = proxy_authorization {
        head.push_str("Proxy-Authorization: ");
        head.push_str(auth);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}

/// Sends `request` (see [`connect_request`]) and reads the proxy's answer: a `2xx` opens the
/// tunnel; any other status (`407` without credentials, `403`) fails the connect, counted as
/// refused, with the proxy's status line as the example.
pub(crate) async fn open(
    tcp: &mut (impl AsyncRead + AsyncWrite + Unpin),
    request: &[u8],
) -> Result<(), Failure> {
    tcp.write_all(request)
        .await
        .map_err(|e| Failure::io(e, true))?;
    // Read byte by byte up to the blank line: nothing past the head may be taken, it is
    // the origin's TLS. A few dozen reads, once per connection.
    let mut head = Vec::with_capacity(256);
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_HEAD {
            return Err(Failure::protocol(
                ErrorKind::MalformedResponse,
                "the proxy's answer to CONNECT has no end",
            ));
        }
        match tcp.read(&mut byte).await {
            Ok(0) => {
                return Err(Failure::protocol(
                    ErrorKind::ClosedBeforeResponse,
                    "the proxy closed the connection before answering CONNECT",
                ))
            }
            Ok(_) => head.push(byte[0]),
            Err(e) => return Err(Failure::io(e, true)),
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(&head) {
        Ok(httparse::Status::Complete(_))
            if response.code.is_some_and(|c| (200..300).contains(&c)) =>
        {
            Ok(())
        }
        Ok(httparse::Status::Complete(_)) => {
            let line = String::from_utf8_lossy(head.split(|&b| b == b'\r').next().unwrap_or(&[]));
            Err(Failure {
                kind: ErrorKind::ConnectRefused,
                cause: Cause::Message(format!("the proxy refused CONNECT: {line}")),
            })
        }
        _ => Err(Failure::protocol(
            ErrorKind::MalformedResponse,
            "the proxy's answer to CONNECT is not HTTP",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpStream;

    #[test]
    fn the_connect_request_names_the_origin_and_the_credentials() {
        assert_eq!(
            connect_request("api.test:443", Some("Basic eDp5")),
            b"CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\nProxy-Authorization: Basic eDp5\r\n\r\n"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_2xx_opens_the_tunnel_and_anything_else_refuses() {
        for (answer, ok) in [
            (&b"HTTP/1.1 200 Connection established\r\n\r\n"[..], true),
            (
                b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n",
                false,
            ),
        ] {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(async move {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 256];
                let n = s.read(&mut buf).await.unwrap();
                assert!(buf[..n].starts_with(b"CONNECT origin:443 "));
                s.write_all(answer).await.unwrap();
                s.write_all(b"TLS").await.unwrap();
            });
            let mut tcp = TcpStream::connect(addr).await.unwrap();
            let got = open(&mut tcp, &connect_request("origin:443", None)).await;
            assert_eq!(got.is_ok(), ok);
            if ok {
                // Nothing past the head was taken.
                let mut rest = [0u8; 3];
                tcp.read_exact(&mut rest).await.unwrap();
                assert_eq!(&rest, b"TLS");
            } else {
                let f = got.unwrap_err();
                assert_eq!(f.kind, ErrorKind::ConnectRefused);
                assert!(f.cause.to_string().contains("407"));
            }
            server.await.unwrap();
        }
    }
}
