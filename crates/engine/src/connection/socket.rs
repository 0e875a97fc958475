//! The socket under a TLS session: TCP, or a Unix domain socket (`Config::unix_socket`).
//!
//! Plain connections keep their own [`Stream`](super::Stream) variants, so the plain TCP path
//! matches on one enum, not two; under TLS the extra match is lost in the record layer's cost.
//!
//! A TCP socket with the kernel's receive stamps on ([`Socket::stamp`]) reads with `recvmsg`
//! and keeps the stamp of its last read, for the TLS session above it: when the session hands
//! over plaintext, that is the read that completed the record it came in (the session reads
//! the socket only while it has no plaintext to give), or a later one.

use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use belier_stats::ErrorKind;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

use super::{stamp, Cause, Failure};
use crate::endpoint::Endpoint;
use crate::source::Sources;
use belier_stats::Route;
use std::cell::Cell;

/// A connected socket of either family.
pub(crate) enum Socket {
    Tcp(TcpStream),
    /// TCP with `SO_TIMESTAMPNS` on, and the kernel's stamp of its last read (since the Unix
    /// epoch; `None` when that read carried none).
    Stamped(TcpStream, Option<Duration>),
    Unix(UnixStream),
}

impl Socket {
    /// Connects to `endpoint`. TCP sockets get `TCP_NODELAY`: requests are written in one
    /// piece, Nagle would only delay them.
    ///
    /// A Unix socket path that does not exist is nothing listening, like a refused TCP
    /// connect, and counted so; the message names the path, which the OS error does not.
    /// A TCP connection is bound to the next of `sources` of its family when there are any
    /// (`--local-address`), its port picked at connect.
    ///
    /// `tried`, when given, is left holding the route of the last TCP connect tried (its
    /// source unspecified without `sources`), so that a connect that fails can be counted
    /// under the address it failed at.
    pub(crate) async fn connect(
        endpoint: &Endpoint,
        sources: Option<&Sources>,
        tried: Option<&Cell<Option<Route>>>,
    ) -> Result<Socket, Failure> {
        match endpoint {
            Endpoint::Tcp(addr) => Socket::connect_tcp(*addr, sources, tried).await,
            Endpoint::Addresses(list) => {
                let (_, addr) = list.pick();
                let attempt = |a| Socket::connect_tcp(a, sources, tried);
                match list.other_family(addr) {
                    Some(other) => super::eyeballs::connect(addr, other, attempt).await,
                    None => attempt(addr).await,
                }
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

    /// Connects over TCP to `addr`, with `TCP_NODELAY`, from the next of `sources` of its
    /// family when there are any.
    async fn connect_tcp(
        addr: std::net::SocketAddr,
        sources: Option<&Sources>,
        tried: Option<&Cell<Option<Route>>>,
    ) -> Result<Socket, Failure> {
        let source = sources.and_then(|s| s.next_for(&addr));
        if let Some(tried) = tried {
            let unspecified = match addr {
                std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
                std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
            };
            tried.set(Some(Route {
                remote: addr,
                local: source.unwrap_or(unspecified),
            }));
        }
        let connected = match source {
            Some(ip) => match crate::source::bound_socket(ip) {
                Ok(socket) => socket.connect(addr).await,
                Err(e) => Err(e),
            },
            None => TcpStream::connect(addr).await,
        };
        let tcp = connected.map_err(|e| Failure::io(e, true))?;
        tcp.set_nodelay(true).map_err(|e| Failure::io(e, true))?;
        Ok(Socket::Tcp(tcp))
    }

    /// A TCP socket's two ends; `None` for a Unix socket (or one the kernel cannot say).
    pub(crate) fn route(&self) -> Option<belier_stats::Route> {
        match self {
            Socket::Tcp(s) | Socket::Stamped(s, _) => Some(belier_stats::Route {
                remote: s.peer_addr().ok()?,
                local: s.local_addr().ok()?.ip(),
            }),
            Socket::Unix(_) => None,
        }
    }

    /// The socket, for `peek` and socket options.
    pub(crate) fn sock_ref(&self) -> socket2::SockRef<'_> {
        match self {
            Socket::Tcp(s) | Socket::Stamped(s, _) => socket2::SockRef::from(s),
            Socket::Unix(s) => socket2::SockRef::from(s),
        }
    }

    /// Turns on the kernel's receive stamps, for a TCP socket whose kernel allows them (Linux
    /// stamps no Unix stream socket's reads).
    pub(crate) fn stamp(self) -> Socket {
        match self {
            Socket::Tcp(tcp) if stamp::enable(&tcp) => Socket::Stamped(tcp, None),
            other => other,
        }
    }

    /// Whether its reads carry the kernel's receive stamps.
    pub(crate) fn stamped(&self) -> bool {
        matches!(self, Socket::Stamped(..))
    }

    /// The kernel's receive stamp of the last read, on a stamped socket.
    pub(crate) fn last_stamp(&self) -> Option<Duration> {
        match self {
            Socket::Stamped(_, last) => *last,
            Socket::Tcp(_) | Socket::Unix(_) => None,
        }
    }
}

/// Reads what has arrived on a stamped socket into `buf`, keeping the read's stamp in `last`.
fn poll_read_stamped(
    tcp: &TcpStream,
    last: &mut Option<Duration>,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<()>> {
    let fd = tcp.as_raw_fd();
    loop {
        ready!(tcp.poll_read_ready(cx))?;
        let read = try_read(tcp, || {
            let (room, before) = (buf.remaining(), buf.filled().len());
            let stamp = stamp::recv_read_buf(fd, buf)?;
            Ok((stamp, drained(buf.filled().len() - before, room)))
        });
        match read {
            Ok(stamp) => {
                *last = stamp;
                return Poll::Ready(Ok(()));
            }
            // Readiness was stale; try_io cleared it, so the next poll waits for more.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Poll::Ready(Err(e)),
        }
    }
}

/// Whether a read of `n` bytes into `room` emptied the socket's receive queue: it read
/// something and less than it could take. A TCP receive copies all the queue holds up to its
/// room, so a short read leaves nothing behind (tokio's own reads rely on this too).
pub(crate) fn drained(n: usize, room: usize) -> bool {
    n > 0 && n < room
}

/// Runs `read` on `tcp` if tokio holds it readable, as `try_io` does; a read that says it
/// [`drained`] the socket also clears tokio's readiness, as a `WouldBlock` would, so that the
/// next read waits for the kernel's next event rather than making a system call that finds
/// nothing (`EAGAIN`: one per response otherwise, the read after the request is sent). The
/// clearing is tokio's, which leaves the readiness alone when an event came in between, so
/// no arrival is missed.
pub(crate) fn try_read<T>(
    tcp: &TcpStream,
    read: impl FnOnce() -> io::Result<(T, bool)>,
) -> io::Result<T> {
    let mut kept = None;
    let result = tcp.try_io(Interest::READABLE, || {
        let (value, drained) = read()?;
        if !drained {
            return Ok(value);
        }
        kept = Some(value);
        Err(io::ErrorKind::WouldBlock.into())
    });
    match result {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => kept.ok_or(e),
        other => other,
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
            Socket::Stamped(s, last) => poll_read_stamped(s, last, cx, buf),
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
            Socket::Tcp(s) | Socket::Stamped(s, _) => Pin::new(s).poll_write(cx, buf),
            Socket::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) | Socket::Stamped(s, _) => Pin::new(s).poll_flush(cx),
            Socket::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) | Socket::Stamped(s, _) => Pin::new(s).poll_shutdown(cx),
            Socket::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
