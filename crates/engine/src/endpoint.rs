//! Where a run's connections go: a TCP address, or a Unix domain socket.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use crate::addresses::Addresses;

/// The far end of a run's connections.
///
/// A Unix domain socket ([`crate::Config::unix_socket`]) replaces only the connect: the URL
/// still gives the `Host` header, the path, the scheme and the TLS server name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A TCP address (the host resolved, or `connect_to`).
    Tcp(SocketAddr),
    /// A Unix domain socket, by its path.
    Unix(PathBuf),
    /// Several TCP addresses (every address of a name, or `--resolve`'s), each new connection
    /// taking one by the run's policy.
    Addresses(Arc<Addresses>),
}

impl Endpoint {
    /// `list` as an endpoint: one address alone, several shared out by `policy`, `shard`
    /// taking its part of the turn.
    pub(crate) fn of_addresses(
        mut list: Vec<SocketAddr>,
        policy: crate::DnsPolicy,
        shard: crate::Shard,
    ) -> Endpoint {
        if list.len() == 1 {
            Endpoint::Tcp(list.remove(0))
        } else {
            Endpoint::Addresses(Arc::new(Addresses::new(list, policy).striped(shard)))
        }
    }

    /// Whether connections go over TCP.
    pub(crate) fn is_tcp(&self) -> bool {
        matches!(self, Endpoint::Tcp(_) | Endpoint::Addresses(_))
    }
}

impl fmt::Display for Endpoint {
    /// The address (`127.0.0.1:8080`, `[::1]:443`), the addresses comma-separated, or the
    /// socket's path as given.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(addr) => addr.fmt(f),
            Endpoint::Unix(path) => path.display().fmt(f),
            Endpoint::Addresses(list) => list.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_the_address_or_the_path() {
        let tcp = Endpoint::Tcp("[::1]:8443".parse().unwrap());
        assert_eq!(tcp.to_string(), "[::1]:8443");
        let unix = Endpoint::Unix(PathBuf::from("/run/app.sock"));
        assert_eq!(unix.to_string(), "/run/app.sock");
    }
}
