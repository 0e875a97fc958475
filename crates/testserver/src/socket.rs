//! The sockets the server listens and serves on: TCP, or a Unix domain socket
//! ([`Config::unix_socket`](crate::Config::unix_socket)), each with what faults need of it.

use std::io;
use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

/// An accepted socket, under any TLS layer.
pub(crate) trait Socket: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// Makes dropping the socket abort the connection rather than close it: an RST for TCP.
    /// A Unix domain socket has no reset; its plain close is the nearest.
    fn reset_on_close(&self);
}

impl Socket for TcpStream {
    fn reset_on_close(&self) {
        // Zero linger is the one SO_LINGER setting that does not block on close, which
        // is why tokio's deprecation of `set_linger` does not apply; `set_zero_linger`
        // would say the same but needs tokio 1.50, newer than the workspace minimum.
        #[allow(deprecated)]
        let _ = self.set_linger(Some(Duration::ZERO));
    }
}

impl Socket for UnixStream {
    fn reset_on_close(&self) {}
}

/// What the server listens on.
pub(crate) enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

/// A connection [`Listener::accept`] took.
pub(crate) enum Accepted {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Listener {
    /// Binds a Unix domain socket at `path` (std's, for the caller to hand to a runtime).
    pub(crate) fn bind_unix(path: &Path) -> io::Result<std::os::unix::net::UnixListener> {
        let listener = std::os::unix::net::UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        Ok(listener)
    }

    pub(crate) async fn accept(&self) -> io::Result<Accepted> {
        match self {
            Listener::Tcp(l) => {
                let (stream, _peer) = l.accept().await?;
                // Responses are small and written whole; Nagle would only delay them.
                let _ = stream.set_nodelay(true);
                Ok(Accepted::Tcp(stream))
            }
            Listener::Unix(l) => Ok(Accepted::Unix(l.accept().await?.0)),
        }
    }
}
