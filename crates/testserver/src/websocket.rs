//! A WebSocket echo: a request on any path that asks to upgrade (`Sec-WebSocket-Key`) is
//! answered `101 Switching Protocols` and each message it then sends comes back as it came
//! (text or binary), after the request's `delay` knob (`/ws?delay=5ms`), held to the
//! microsecond as a response's delay is ([`crate::delay`]). For the demo, the tests and
//! users' own trials of `belier ws`.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// What the upgrade request gave.
pub(crate) struct Upgrade<'a> {
    /// Its `Sec-WebSocket-Key`.
    pub key: &'a str,
    /// The first subprotocol it offered, accepted.
    pub protocol: Option<&'a str>,
    /// Bytes read past the request's head (frames sent before the 101 was read).
    pub read: &'a [u8],
    /// How long each message is held before it goes back.
    pub delay: Duration,
}

/// Answers the upgrade on `stream`, then echoes until the client closes or goes.
pub(crate) async fn echo<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S, upgrade: Upgrade<'_>) {
    let mut head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n",
        derive_accept_key(upgrade.key.as_bytes())
    );
    if let Some(protocol) = upgrade.protocol {
        head.push_str(&format!("Sec-WebSocket-Protocol: {protocol}\r\n"));
    }
    head.push_str("\r\n");
    if stream.write_all(head.as_bytes()).await.is_err() || stream.flush().await.is_err() {
        return;
    }
    let config = WebSocketConfig::default()
        .read_buffer_size(4 * 1024)
        .write_buffer_size(0)
        // What a client can make the target hold per socket.
        .max_message_size(Some(1 << 20))
        .max_frame_size(Some(1 << 20));
    let mut socket = WebSocketStream::from_partially_read(
        stream,
        upgrade.read.to_vec(),
        Role::Server,
        Some(config),
    )
    .await;
    while let Some(Ok(message)) = socket.next().await {
        if !matches!(message, Message::Text(_) | Message::Binary(_)) {
            // Pings are answered and a close frame is echoed by tungstenite itself.
            continue;
        }
        if !upgrade.delay.is_zero() {
            crate::delay::sleep(upgrade.delay).await;
        }
        if socket.send(message).await.is_err() {
            return;
        }
    }
}
