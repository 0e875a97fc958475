//! The socket under a TLS session: TCP, or a Unix domain socket (`Config::unix_socket`).
//!
//! Plain connections keep their own [`Stream`](super::Stream) variants, so the plain TCP path
//! matches on one enum, not two; under TLS the extra match is lost in the record layer's cost.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use belier_stats::ErrorKind;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

use super::{Cause, Failure};
use crate::endpoint::Endpoint;

/// A connected socket of either family.
pub(crate) enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Socket {
    /// Connects to `endpoint`. TCP sockets get `TCP_NODELAY`: requests are written in one
    /// piece, Nagle would only delay them.
    ///
    /// A Unix socket path that does not exist is nothing listening, like a refused TCP
    /// connect, and counted so; the message names the path, which the OS error does not.
    pub(crate) async fn connect(endpoint: &Endpoint) -> Result<Socket, Failure> {
        match endpoint {
            Endpoint::Tcp(addr) => {
                let tcp = TcpStream::connect(addr)
                    .await
                    .map_err(|e| Failure::io(e, true))?;
                tcp.set_nodelay(true).map_err(|e| Failure::io(e, true))?;
                Ok(Socket::Tcp(tcp))
            }
            Endpoint::Unix(path) => {
                UnixStream::connect(path)
                    .await
                    .map(Socket::Unix)
                    .map_err(|e| Failure {
                        kind: match e.kind() {
                            io::ErrorKind::NotFound => ErrorKind::ConnectRefused,
                            other => super::io_kind(other, true),
                        },
                        cause: Cause::Message(format!("{}: {e}", path.display())),
                    })
            }
        }
    }

    /// The socket, for `peek` and socket options.
    pub(crate) fn sock_ref(&self) -> socket2::SockRef<'_> {
        match self {
            Socket::Tcp(s) => socket2::SockRef::from(s),
            Socket::Unix(s) => socket2::SockRef::from(s),
        }
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Socket::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Socket::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_flush(cx),
            Socket::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Socket::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
