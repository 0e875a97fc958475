//! Why the recorder cannot start or write.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the recorder cannot start or write.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Listening off the loopback without a token.
    #[error("listening on {0}, off the loopback, needs a token that clients send in Proxy-Authorization")]
    NeedsToken(SocketAddr),
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {why}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        why: String,
    },
    /// The CA cannot be read or written.
    #[error("CA file {path}: {why}")]
    Ca {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// The upstream CA certificates or a minted certificate are unusable.
    #[error("TLS: {0}")]
    Tls(String),
    /// The runtime cannot start.
    #[error("cannot start the proxy: {0}")]
    Runtime(String),
}
