//! What a held connection (see `crate::hold`) does with its stream besides exchanges: wait
//! for the server to end it, and write a request a piece at a time.

use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::Connection;

impl Connection {
    /// Resolves when the server ends the connection: it closed or reset it, or sent something
    /// no request asked for (a `408`, an alert), which is its way of ending it. Over TLS, the
    /// records the session takes in itself (TLS 1.3 session tickets) are not that.
    pub(crate) async fn ended(&mut self) {
        let mut byte = [0u8; 1];
        let _ = self.stream.read(&mut byte).await;
    }

    /// Writes `bytes` on the connection, as part of a request the next exchange completes.
    pub(crate) async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await?;
        self.stream.flush().await
    }
}
