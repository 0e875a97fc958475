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

    /// Reads in pieces of `size` bytes rather than [`super::READ_BUFFER`]'s: a held
    /// connection's few responses are small, and a hundred thousand of them each with a page
    /// of buffer would cost 400 MB.
    pub(crate) fn read_in(&mut self, size: usize) {
        self.read_size = size;
        self.buf = Vec::with_capacity(size);
    }

    /// Lets go of the read buffer of a connection that carries no more exchanges, only waits
    /// for its end ([`Connection::ended`]): a held idle connection then costs a few hundred
    /// bytes rather than the page its last response was read into (100,000 of them: 400 MB).
    pub(crate) fn idle_from_now_on(&mut self) {
        self.buf = Vec::new();
    }

    /// Writes `bytes` on the connection, as part of a request the next exchange completes.
    pub(crate) async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await?;
        self.stream.flush().await
    }
}
