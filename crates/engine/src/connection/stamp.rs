//! Kernel receive stamps: with `SO_TIMESTAMPNS` on a socket, each `recvmsg` carries the time
//! the kernel received the last segment it returns. A response's first byte and completion
//! are then when they reached the host, not when user space came to read them, so latency
//! stays exact however late the worker reads (a busy worker, one that reads on its own
//! schedule).
//!
//! The stamps are `CLOCK_REALTIME`; the engine's times are [`Instant`]s (monotonic). Each
//! worker thread converts through an offset between the two clocks measured on it, measured
//! again after [`OFFSET_FOR`] so that a clock slewed by NTP cannot drift away from it; and
//! the caller clamps the result between the request's send and the read that returned it.
//!
//! Linux enables receive stamping machine-wide a moment after the first socket asks for it (a
//! deferred static key), so the first segments a machine receives after that may carry no
//! stamp: those responses are timed at the read, as without stamps, and not counted as
//! stamped.
//!
//! Unsafe code here, by necessity: neither socket2 nor rustix sets `SO_TIMESTAMPNS` or reads
//! `SCM_TIMESTAMPNS` control messages, so this module makes the two system calls through libc,
//! each with the reason it is sound beside it.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::ReadBuf;

/// How long one measured offset between the clocks is used.
const OFFSET_FOR: Duration = Duration::from_secs(1);

/// Turns on software receive stamps on `socket`; false if the kernel refuses.
pub(crate) fn enable(socket: &impl AsRawFd) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: a valid descriptor (borrowed), an option value of the size given.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

/// One non-blocking `recvmsg` appending to `buf` (into its spare capacity): the bytes read
/// and the kernel's receive stamp of the last segment among them, since the Unix epoch, when
/// it gave one.
pub(crate) fn recv(fd: RawFd, buf: &mut Vec<u8>) -> io::Result<(usize, Option<Duration>)> {
    let filled = buf.len();
    let (n, stamp) = recv_into(fd, buf.spare_capacity_mut())?;
    // SAFETY: recvmsg initialised the first `n` bytes of the spare capacity.
    unsafe { buf.set_len(filled + n) };
    Ok((n, stamp))
}

/// One non-blocking `recvmsg` filling `buf` (tokio's), as [`recv`]: the stamp of the read.
pub(crate) fn recv_read_buf(fd: RawFd, buf: &mut ReadBuf<'_>) -> io::Result<Option<Duration>> {
    // SAFETY: recv_into only writes into the unfilled part, and only the bytes it reports
    // having written are marked initialised.
    let (n, stamp) = recv_into(fd, unsafe { buf.unfilled_mut() })?;
    // SAFETY: recv_into initialised the first `n` bytes of the unfilled part.
    unsafe { buf.assume_init(n) };
    buf.advance(n);
    Ok(stamp)
}

/// One non-blocking `recvmsg` into `spare`, whose first bytes (the count returned) it
/// initialises, with the kernel's receive stamp of the last segment read, as [`recv`].
pub(crate) fn recv_into(
    fd: RawFd,
    spare: &mut [MaybeUninit<u8>],
) -> io::Result<(usize, Option<Duration>)> {
    let mut iov = libc::iovec {
        iov_base: spare.as_mut_ptr().cast(),
        iov_len: spare.len(),
    };
    // Room for one SCM_TIMESTAMPNS message (a header and a timespec), aligned for cmsghdr.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain data; all-zero is a valid empty message.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&control) as _;
    // SAFETY: msg points at a live iovec over `spare` and a live control buffer.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the CMSG macros walk the control buffer the kernel filled, within
    // msg_controllen; the timespec is read unaligned from its message's data.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                stamp = Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, stamp))
}

thread_local! {
    /// This thread's last measured pair of clock readings: an `Instant` and the wall clock
    /// at the same moment.
    static OFFSET: Cell<Option<(Instant, Duration)>> = const { Cell::new(None) };
}

/// Readings of the two clocks [`measure`] takes at most, keeping the narrowest.
const MEASURE_TRIES: usize = 8;

/// A pair of monotonic readings this close holds the wall clock reading between them to
/// within half of it: [`measure`] stops there.
const NARROW_ENOUGH: Duration = Duration::from_micros(2);

/// Measures the two clocks at one moment: the wall clock read between two monotonic
/// readings, taken at their midpoint. A thread preempted between the readings would put the
/// midpoint off by up to half the gap (a loaded 2-core CI machine showed a 100 ms response
/// timed 160 µs short), so it reads up to [`MEASURE_TRIES`] times and keeps the narrowest.
fn measure() -> (Instant, Duration) {
    narrowest((0..MEASURE_TRIES).map(|_| {
        let before = Instant::now();
        let wall = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        (before, wall, Instant::now())
    }))
}

/// Of `(before, wall, after)` readings, the midpoint and wall clock of the one whose two
/// monotonic readings lie closest together; it stops at the first within [`NARROW_ENOUGH`].
fn narrowest(readings: impl Iterator<Item = (Instant, Duration, Instant)>) -> (Instant, Duration) {
    let mut best: Option<(Duration, Instant, Duration)> = None;
    for (before, wall, after) in readings {
        let gap = after.saturating_duration_since(before);
        if best.is_none_or(|(g, _, _)| gap < g) {
            best = Some((gap, before + gap / 2, wall));
        }
        if gap <= NARROW_ENOUGH {
            break;
        }
    }
    best.map_or_else(
        || (Instant::now(), Duration::ZERO),
        |(_, at, wall)| (at, wall),
    )
}

/// The `Instant` of a kernel stamp (wall clock since the epoch), clamped to `[earliest,
/// latest]`: a stamp is never before the request went out nor after the read returned it.
pub(crate) fn to_instant(stamp: Duration, earliest: Instant, latest: Instant) -> Instant {
    let (at, wall) = OFFSET.with(|o| match o.get() {
        Some(pair) if latest.saturating_duration_since(pair.0) < OFFSET_FOR => pair,
        _ => {
            let pair = measure();
            o.set(Some(pair));
            pair
        }
    });
    let instant = if stamp >= wall {
        at + (stamp - wall)
    } else {
        at.checked_sub(wall - stamp).unwrap_or(earliest)
    };
    instant.clamp(earliest.min(latest), latest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn conversion_round_trips_and_clamps() {
        let (at, wall) = measure();
        let early = at - Duration::from_millis(10);
        let late = at + Duration::from_millis(10);
        let back = to_instant(wall, early, late);
        let off = if back > at { back - at } else { at - back };
        assert!(off < Duration::from_millis(1), "{off:?}");
        assert_eq!(to_instant(wall + Duration::from_secs(5), early, late), late);
        assert_eq!(
            to_instant(wall - Duration::from_secs(5), early, late),
            early
        );
    }

    #[test]
    fn the_narrowest_reading_of_the_clocks_is_kept() {
        let t = Instant::now();
        let us = Duration::from_micros;
        // A preempted reading (300 µs between its monotonic readings), then a close one.
        let readings = [
            (t, us(1_000_000), t + us(300)),
            (t + us(400), us(1_000_380), t + us(410)),
            (t + us(500), us(1_000_480), t + us(520)),
        ];
        assert_eq!(
            narrowest(readings.into_iter()),
            (t + us(405), us(1_000_380))
        );
        // One within NARROW_ENOUGH ends the search.
        let mut taken = 0;
        let close = (0..MEASURE_TRIES).map(|i| {
            taken += 1;
            let b = t + us(10 * i as u64);
            (b, us(5), b + us(2))
        });
        assert_eq!(narrowest(close), (t + us(1), us(5)));
        assert_eq!(taken, 1);
        assert!(measure().0 <= Instant::now());
    }

    #[test]
    fn a_read_carries_the_kernels_stamp() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let b = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut a, _) = listener.accept().unwrap();
        b.set_nonblocking(true).unwrap();
        assert!(enable(&b));
        // Linux turns receive stamping on machine-wide a moment after the first socket asks
        // (a deferred static key): segments that arrive before that carry no stamp, and are
        // timed at the read. Wait, bounded, until a segment comes stamped.
        let mut buf = Vec::with_capacity(16);
        let warm = Instant::now();
        loop {
            a.write_all(b"x").unwrap();
            std::thread::sleep(Duration::from_millis(1));
            buf.clear();
            if let Ok((_, Some(_))) = recv(b.as_raw_fd(), &mut buf) {
                break;
            }
            assert!(
                warm.elapsed() < Duration::from_secs(2),
                "no receive stamp within 2 s"
            );
        }
        buf.clear();
        let sent = Instant::now();
        a.write_all(b"hello").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let (n, stamp) = recv(b.as_raw_fd(), &mut buf).unwrap();
        let read = Instant::now();
        assert_eq!((n, &buf[..]), (5, &b"hello"[..]));
        let at = to_instant(stamp.expect("a stamp"), sent, read);
        // Stamped when the bytes arrived, not 20 ms later when they were read.
        assert!(read - at >= Duration::from_millis(15), "{:?}", read - at);
        // Nothing waiting: WouldBlock, not a stamp.
        let e = recv(b.as_raw_fd(), &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }
}
