//! A QUIC connection's UDP socket with the kernel's receive stamps: quinn's own socket (GSO,
//! GRO and ECN as quinn-udp sets them up) wrapped so that after every receive that brought
//! datagrams, the kernel's stamp of the last one read is asked for and kept.
//!
//! quinn-udp reads datagrams with `recvmmsg` and control messages of its own, and has no room
//! for `SO_TIMESTAMPNS`'s; the socket's own record of its last stamp (`SIOCGSTAMPNS`, which
//! also turns stamping on for the socket when first asked) costs one `ioctl` a receive
//! instead. Each connection has a socket of its own, so the stamp kept is of a datagram of
//! that connection: when a response ends, the datagram that brought its end or a later one,
//! never after belier read it.
//!
//! Unsafe code here, by necessity: no maintained crate makes this `ioctl`, so it goes through
//! libc, with the reason it is sound beside it.
#![allow(unsafe_code)]

use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, Runtime, UdpPoller};

/// The last receive stamp of a connection's socket, in nanoseconds since the Unix epoch; 0
/// while it has none.
#[derive(Clone, Debug, Default)]
pub(crate) struct LastStamp(Arc<AtomicU64>);

impl LastStamp {
    /// The stamp, since the Unix epoch.
    pub(crate) fn get(&self) -> Option<Duration> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }
}

/// quinn's socket, and the stamp of the last datagram read from it.
#[derive(Debug)]
struct Stamped {
    inner: Arc<dyn AsyncUdpSocket>,
    /// The socket's descriptor, open as long as `inner` is.
    fd: RawFd,
    last: LastStamp,
}

/// A client endpoint on a socket bound to `local` (dual-stack when it is IPv6, as quinn's
/// own `Endpoint::client`), its receives stamped into the returned [`LastStamp`].
pub(crate) fn endpoint(local: SocketAddr) -> io::Result<(quinn::Endpoint, LastStamp)> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))?;
    if local.is_ipv6() {
        // Where the kernel refuses, the socket stays IPv6-only, as quinn's own would.
        let _ = socket.set_only_v6(false);
    }
    socket.bind(&local.into())?;
    let fd = socket.as_raw_fd();
    // The first ask turns stamping on for the socket; it has no stamp to give yet.
    let _ = last_stamp(fd);
    let runtime: Arc<dyn Runtime> = Arc::new(quinn::TokioRuntime);
    let inner = runtime.wrap_udp_socket(socket.into())?;
    let last = LastStamp::default();
    let stamped = Stamped {
        inner,
        fd,
        last: last.clone(),
    };
    let endpoint = quinn::Endpoint::new_with_abstract_socket(
        quinn::EndpointConfig::default(),
        None,
        Arc::new(stamped),
        runtime,
    )?;
    Ok((endpoint, last))
}

impl AsyncUdpSocket for Stamped {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        Arc::clone(&self.inner).create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        self.inner.try_send(transmit)
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let polled = self.inner.poll_recv(cx, bufs, meta);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            if let Some(ns) = last_stamp(self.fd) {
                self.last.0.store(ns, Ordering::Relaxed);
            }
        }
        polled
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.inner.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

/// `SIOCGSTAMPNS` (linux/sockios.h): the receive stamp of the last datagram read from a
/// socket, as a `struct timespec` — the same layout as the 64-bit `__kernel_timespec` on a
/// 64-bit target, the only ones this asks on.
const SIOCGSTAMPNS: libc::c_ulong = 0x8907;

/// The kernel's receive stamp of the last datagram read from `fd`, in nanoseconds since the
/// Unix epoch; `None` when it has none (no datagram yet, or stamping just turned on).
fn last_stamp(fd: RawFd) -> Option<u64> {
    if cfg!(not(target_pointer_width = "64")) {
        return None;
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a descriptor open for the call (owned by the socket this wraps), and a timespec
    // the kernel writes, of the layout SIOCGSTAMPNS writes on a 64-bit target.
    let done = unsafe { libc::ioctl(fd, SIOCGSTAMPNS as _, &mut ts as *mut libc::timespec) };
    let ns = (ts.tv_sec as u64)
        .checked_mul(1_000_000_000)?
        .checked_add(ts.tv_nsec as u64)?;
    (done == 0 && ns > 0).then_some(ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::time::SystemTime;

    #[test]
    fn the_last_datagram_read_is_stamped_when_it_arrived() {
        let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
        let fd = receiver.as_raw_fd();
        assert_eq!(last_stamp(fd), None, "nothing read yet");
        // Linux turns stamping on machine-wide a moment after a socket first asks.
        std::thread::sleep(Duration::from_millis(20));
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        let before = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap();
        sender
            .send_to(b"one", receiver.local_addr().unwrap())
            .unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let mut buf = [0u8; 16];
        receiver.recv(&mut buf).unwrap();
        let read = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap();
        let stamp = Duration::from_nanos(last_stamp(fd).expect("a stamp after a read"));
        // Stamped when it arrived (loopback: as it was sent), not when it was read 30 ms on.
        assert!(
            stamp + Duration::from_millis(1) >= before,
            "{stamp:?} vs sent {before:?}"
        );
        assert!(
            stamp + Duration::from_millis(20) < read,
            "{stamp:?} vs read {read:?}"
        );
    }
}
