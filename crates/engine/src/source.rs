//! Where a run's connections come from: the local (source) addresses they are bound to
//! (`--local-address`), taken in turn, so that the connections spread evenly over them.
//!
//! From one source address a host opens at most one connection per local port to a given
//! destination (about 28,000 with Linux's default `ip_local_port_range`), and a load balancer
//! that hashes on the client address sees one client. Binding each connection to the next of
//! several local addresses lifts both. A socket is bound with `IP_BIND_ADDRESS_NO_PORT`, so
//! that the kernel picks its port at connect, for the whole 4-tuple: without it, `bind` would
//! pick a port free for every destination, and a source would run out after ~28,000
//! connections in all rather than per destination.
//!
//! Unsafe code here, by necessity: neither socket2 nor rustix sets `IP_BIND_ADDRESS_NO_PORT`,
//! so `bound_socket` makes that one `setsockopt` call through libc, its soundness beside it.
#![allow(unsafe_code)]

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The most addresses one `--local-address` value may name (a /16 of IPv4, or the like): more
/// would take memory for nothing, as no run opens that many connections per address.
pub const MOST_SOURCE_ADDRESSES: u128 = 65_536;

/// Why a source address range cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError(pub String);

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SourceError {}

/// The addresses `spec` names: one address (`127.0.1.7`, `::1`), a CIDR block
/// (`127.0.1.0/28`: all 16 of its addresses, network and broadcast included, as loopback and
/// alias ranges use them all) or a range `FIRST-LAST` (`10.0.0.5-10.0.0.9`), in order.
pub fn parse_range(spec: &str) -> Result<Vec<IpAddr>, SourceError> {
    let spec = spec.trim();
    let (first, last) = if let Some((addr, bits)) = spec.split_once('/') {
        cidr(addr, bits)?
    } else if let Some((first, last)) = spec.split_once('-') {
        (address(first)?, address(last)?)
    } else {
        let one = address(spec)?;
        (one, one)
    };
    let (first, last, v4) = match (first, last) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            (u128::from(u32::from(a)), u128::from(u32::from(b)), true)
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), false),
        _ => {
            return Err(SourceError(format!(
                "{spec}: a range's two ends must be of one family (IPv4 or IPv6)"
            )))
        }
    };
    if last < first {
        return Err(SourceError(format!(
            "{spec}: the range ends before it starts"
        )));
    }
    if last - first >= MOST_SOURCE_ADDRESSES {
        return Err(SourceError(format!(
            "{spec}: {} addresses, more than the {MOST_SOURCE_ADDRESSES} one value may name",
            (last - first).saturating_add(1)
        )));
    }
    Ok((first..=last)
        .map(|n| match v4 {
            // In range: both ends were IPv4 addresses.
            true => IpAddr::V4(Ipv4Addr::from(n as u32)),
            false => IpAddr::V6(Ipv6Addr::from(n)),
        })
        .collect())
}

fn address(text: &str) -> Result<IpAddr, SourceError> {
    let text = text.trim();
    let text = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    text.parse()
        .map_err(|_| SourceError(format!("{text}: not an IPv4 or IPv6 address")))
}

/// The first and last address of the block `addr/bits`.
fn cidr(addr: &str, bits: &str) -> Result<(IpAddr, IpAddr), SourceError> {
    let base = address(addr)?;
    let width = match base {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    };
    let bits: u32 = bits
        .trim()
        .parse()
        .ok()
        .filter(|&b| b <= width)
        .ok_or_else(|| {
            SourceError(format!(
                "{addr}/{bits}: the prefix length must be a number from 0 to {width}"
            ))
        })?;
    let host_bits = width - bits;
    let span = |n: u128| {
        let mask = if host_bits == 128 {
            u128::MAX
        } else {
            (1u128 << host_bits) - 1
        };
        (n & !mask, n | mask)
    };
    Ok(match base {
        IpAddr::V4(a) => {
            let (lo, hi) = span(u128::from(u32::from(a)));
            // Within u32: the mask covers at most the 32 bits of an IPv4 address.
            let lo = IpAddr::V4(Ipv4Addr::from(lo as u32));
            (lo, IpAddr::V4(Ipv4Addr::from(hi as u32)))
        }
        IpAddr::V6(a) => {
            let (lo, hi) = span(u128::from(a));
            (
                IpAddr::V6(Ipv6Addr::from(lo)),
                IpAddr::V6(Ipv6Addr::from(hi)),
            )
        }
    })
}

/// The source addresses of a run, handed out in turn to the connections it opens.
#[derive(Clone, Debug)]
pub struct Sources {
    addrs: Arc<[IpAddr]>,
    next: Arc<AtomicUsize>,
}

impl Sources {
    /// `addrs` in turn, starting at the one `start` falls on (a shard starts where its share
    /// of the addresses begins, so that workers' connections spread over all of them).
    pub fn new(addrs: Vec<IpAddr>, start: usize) -> Sources {
        let len = addrs.len().max(1);
        Sources {
            addrs: addrs.into(),
            next: Arc::new(AtomicUsize::new(start % len)),
        }
    }

    /// The addresses, in order.
    pub fn addrs(&self) -> &[IpAddr] {
        &self.addrs
    }

    /// The next source address of `remote`'s family; `None` when none is of it.
    pub fn next_for(&self, remote: &SocketAddr) -> Option<IpAddr> {
        let family: Vec<&IpAddr> = self
            .addrs
            .iter()
            .filter(|a| a.is_ipv4() == remote.is_ipv4())
            .collect();
        if family.is_empty() {
            return None;
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        Some(*family[n % family.len()])
    }
}

/// A TCP socket of `ip`'s family bound to `ip`, its port left for the connect to pick
/// (`IP_BIND_ADDRESS_NO_PORT`).
pub(crate) fn bound_socket(ip: IpAddr) -> io::Result<tokio::net::TcpSocket> {
    let socket = match ip {
        IpAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        IpAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    let on: libc::c_int = 1;
    // SAFETY: a valid descriptor, and a c_int option value of its size. IPv6 sockets take
    // the option at the IP level too (Linux reads it from inet_sk for both families).
    let set = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            std::ptr::addr_of!(on).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if set != 0 {
        return Err(io::Error::last_os_error());
    }
    socket.bind(SocketAddr::new(ip, 0))?;
    Ok(socket)
}

/// Whether this host can bind a socket to each of `addrs`; the first it cannot, with why
/// (an address the host does not have: `EADDRNOTAVAIL`).
pub fn check_bindable(addrs: &[IpAddr]) -> Result<(), (IpAddr, io::Error)> {
    // A runtime is not needed to make and bind a socket, only to connect it.
    for &ip in addrs {
        let socket = match ip {
            IpAddr::V4(_) => {
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            }
            IpAddr::V6(_) => {
                socket2::Socket::new(socket2::Domain::IPV6, socket2::Type::STREAM, None)
            }
        }
        .map_err(|e| (ip, e))?;
        socket
            .bind(&SocketAddr::new(ip, 0).into())
            .map_err(|e| (ip, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_value_names_one_address_a_block_or_a_range() {
        assert_eq!(parse_range("127.0.1.7").unwrap(), [v4("127.0.1.7")]);
        let block = parse_range("127.0.1.3/28").unwrap();
        assert_eq!(block.len(), 16);
        assert_eq!((block[0], block[15]), (v4("127.0.1.0"), v4("127.0.1.15")));
        let range = parse_range("10.0.0.254-10.0.1.1").unwrap();
        assert_eq!(
            range,
            [
                v4("10.0.0.254"),
                v4("10.0.0.255"),
                v4("10.0.1.0"),
                v4("10.0.1.1")
            ]
        );
        assert_eq!(parse_range("[::1]").unwrap(), [v4("::1")]);
        assert_eq!(parse_range("fd00::/126").unwrap().len(), 4);
        assert_eq!(parse_range("127.0.0.1/32").unwrap(), [v4("127.0.0.1")]);
        assert_eq!(parse_range("10.0.0.0/16").unwrap().len(), 65_536);
    }

    #[test]
    fn bad_values_say_what_is_wrong() {
        for (spec, says) in [
            ("nope", "not an IPv4 or IPv6 address"),
            ("127.0.0.1/33", "prefix length"),
            ("127.0.0.1/x", "prefix length"),
            ("10.0.0.9-10.0.0.1", "ends before it starts"),
            ("10.0.0.1-::1", "one family"),
            ("10.0.0.0/15", "more than the 65536"),
            ("::/0", "more than the 65536"),
        ] {
            let e = parse_range(spec).unwrap_err().0;
            assert!(e.contains(says), "{spec}: {e}");
        }
    }

    #[test]
    fn connections_take_the_addresses_of_their_family_in_turn() {
        let addrs = parse_range("127.0.1.0/30").unwrap();
        let remote: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let sources = Sources::new(addrs.clone(), 2);
        let taken: Vec<IpAddr> = (0..6).map(|_| sources.next_for(&remote).unwrap()).collect();
        let want: Vec<IpAddr> = [2, 3, 0, 1, 2, 3].iter().map(|&i| addrs[i]).collect();
        assert_eq!(taken, want);
        // A connection to an IPv6 address takes only IPv6 sources, and has none without.
        let v6: SocketAddr = "[::1]:80".parse().unwrap();
        assert_eq!(sources.next_for(&v6), None);
        let both = Sources::new([addrs, vec![v4("::1")]].concat(), 0);
        assert_eq!(both.next_for(&v6), Some(v4("::1")));
        assert!(both.next_for(&remote).is_some_and(|a| a.is_ipv4()));
    }

    #[test]
    fn a_loopback_address_binds_and_one_the_host_lacks_does_not() {
        assert!(check_bindable(&[v4("127.0.1.9")]).is_ok());
        let (ip, e) = check_bindable(&[v4("127.0.0.1"), v4("192.0.2.77")]).unwrap_err();
        assert_eq!(ip, v4("192.0.2.77"));
        assert_eq!(e.kind(), io::ErrorKind::AddrNotAvailable);
    }
}
