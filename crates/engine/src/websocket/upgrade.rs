//! A socket's HTTP/1.1 Upgrade, sent and its answer read by belier rather than by
//! tungstenite's handshake machine, which holds 8 KiB of buffers per socket while it runs (a
//! 4 KiB `Vec` and a zeroed 4 KiB chunk): with every socket of a run upgrading at once, they
//! were half the memory the run then kept (bench/README.md, "Idle sockets"). Here the answer's
//! head is read into a buffer that starts at 512 bytes and grows only for a longer head. The
//! request is tungstenite's (`generate_request`), and the answer is checked by RFC 6455 §4.1's
//! rules as tungstenite checks it, with its errors.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::tungstenite::error::{ProtocolError, SubProtocolError};
use tokio_tungstenite::tungstenite::handshake::{client::generate_request, derive_accept_key};
use tokio_tungstenite::tungstenite::Error;

/// What the server answered to the Upgrade.
pub(super) enum Answer {
    /// 101: the socket is open; `leftover`, what came after the answer's head.
    Upgraded {
        headers: http::HeaderMap,
        leftover: Vec<u8>,
    },
    /// Any other status: the upgrade was refused.
    Refused(u16),
}

/// The answer's head starts in this many bytes, and may grow to [`MOST_HEAD`].
const FIRST_HEAD: usize = 512;

/// The longest answer head a socket reads.
const MOST_HEAD: usize = 16 * 1024;

/// The most header lines the answer may have.
const MOST_HEADERS: usize = 64;

/// Sends `request` (which carries its `Sec-WebSocket-Key`) on `stream` and reads the server's
/// answer; a 101 that breaks RFC 6455's rules is an error, as tungstenite words it.
pub(super) async fn upgrade<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    request: http::Request<()>,
    subprotocols: &[String],
) -> Result<Answer, Error> {
    let (bytes, key) = generate_request(request)?;
    stream.write_all(&bytes).await?;
    stream.flush().await?;
    let mut head = Vec::with_capacity(FIRST_HEAD);
    loop {
        if head.len() == head.capacity() {
            if head.len() >= MOST_HEAD {
                return Err(Error::Protocol(ProtocolError::HandshakeIncomplete));
            }
            head.reserve(head.len());
        }
        if stream.read_buf(&mut head).await? == 0 {
            return Err(Error::Protocol(ProtocolError::HandshakeIncomplete));
        }
        if let Some((end, status, headers)) = parse(&head)? {
            if status != 101 {
                return Ok(Answer::Refused(status));
            }
            check(&headers, &key, subprotocols)?;
            let leftover = head.split_off(end);
            return Ok(Answer::Upgraded { headers, leftover });
        }
    }
}

/// The answer's head if all of it came: where it ends, its status and its headers.
fn parse(head: &[u8]) -> Result<Option<(usize, u16, http::HeaderMap)>, Error> {
    let mut lines = [httparse::EMPTY_HEADER; MOST_HEADERS];
    let mut answer = httparse::Response::new(&mut lines);
    let end = match answer.parse(head)? {
        httparse::Status::Partial => return Ok(None),
        httparse::Status::Complete(end) => end,
    };
    let mut headers = http::HeaderMap::with_capacity(answer.headers.len());
    for line in answer.headers.iter() {
        let name = http::HeaderName::from_bytes(line.name.as_bytes())?;
        headers.append(name, http::HeaderValue::from_bytes(line.value)?);
    }
    Ok(Some((end, answer.code.unwrap_or(0), headers)))
}

/// RFC 6455 §4.1's checks of a 101 (steps 2 to 4 and 6), for the `key` sent.
fn check(headers: &http::HeaderMap, key: &str, subprotocols: &[String]) -> Result<(), Error> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if !text("Upgrade").is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket")) {
        return Err(Error::Protocol(
            ProtocolError::MissingUpgradeWebSocketHeader,
        ));
    }
    let upgrade_token = |v: &str| {
        v.split(',')
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
    };
    if !text("Connection").is_some_and(upgrade_token) {
        return Err(Error::Protocol(
            ProtocolError::MissingConnectionUpgradeHeader,
        ));
    }
    if text("Sec-WebSocket-Accept") != Some(derive_accept_key(key.as_bytes()).as_str()) {
        return Err(Error::Protocol(
            ProtocolError::SecWebSocketAcceptKeyMismatch,
        ));
    }
    let chosen = headers.get("Sec-WebSocket-Protocol");
    let wrong = match (chosen, subprotocols.is_empty()) {
        (None, true) => return Ok(()),
        (None, false) => SubProtocolError::NoSubProtocol,
        (Some(_), true) => SubProtocolError::ServerSentSubProtocolNoneRequested,
        (Some(chosen), false) if subprotocols.iter().any(|s| chosen == s.as_str()) => return Ok(()),
        (Some(_), false) => SubProtocolError::InvalidSubProtocol,
    };
    Err(Error::Protocol(
        ProtocolError::SecWebSocketSubProtocolError(wrong),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

    fn answer(extra: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n{extra}\r\n"
        )
        .into_bytes()
    }

    fn checked(head: &[u8], subprotocols: &[&str]) -> Result<(), String> {
        let (end, status, headers) = parse(head).unwrap().expect("a whole head");
        assert_eq!((end, status), (head.len(), 101));
        let offered: Vec<String> = subprotocols.iter().map(|s| s.to_string()).collect();
        check(&headers, KEY, &offered).map_err(|e| e.to_string())
    }

    #[test]
    fn the_rfcs_answer_passes_and_each_broken_rule_fails() {
        // RFC 6455 §1.3's key and accept.
        assert_eq!(checked(&answer(""), &[]), Ok(()));
        assert_eq!(
            checked(&answer("Sec-WebSocket-Protocol: chat\r\n"), &["x", "chat"]),
            Ok(())
        );
        let broken = [
            (answer("").as_slice().to_vec(), &["chat"][..]),
            (answer("Sec-WebSocket-Protocol: chat\r\n"), &[][..]),
            (answer("Sec-WebSocket-Protocol: other\r\n"), &["chat"][..]),
        ];
        for (head, offered) in broken {
            assert!(checked(&head, offered).is_err());
        }
        let wrong_key = String::from_utf8(answer(""))
            .unwrap()
            .replace("s3pP", "AAAA");
        assert!(checked(wrong_key.as_bytes(), &[]).is_err());
        let no_upgrade = String::from_utf8(answer(""))
            .unwrap()
            .replace("Upgrade: websocket\r\n", "");
        assert!(checked(no_upgrade.as_bytes(), &[]).is_err());
    }

    #[test]
    fn a_head_cut_short_waits_and_what_follows_it_is_left_over() {
        let head = answer("");
        assert!(parse(&head[..head.len() - 1]).unwrap().is_none());
        let with_a_frame = [head.as_slice(), b"\x81\x02hi"].concat();
        let (end, ..) = parse(&with_a_frame).unwrap().unwrap();
        assert_eq!(&with_a_frame[end..], b"\x81\x02hi");
        let refused = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(parse(refused).unwrap().map(|(_, s, _)| s), Some(403));
    }
}
