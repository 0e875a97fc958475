//! How a run finds a host's addresses: the system's resolver (getaddrinfo: `/etc/hosts`,
//! `/etc/resolv.conf`), or the DNS server `Config::dns_server` names, asked directly with
//! hickory-resolver (like vegeta's `-resolvers`), for tests and for runs that must see what a
//! given server answers.
//!
//! Both answer every A and AAAA record, each address once, in the order given. Lookups block:
//! they run before the run starts, or on the re-resolving thread of `Config::dns_ttl`, never
//! on a worker.

use std::net::{SocketAddr, ToSocketAddrs};

/// Why a lookup gave no address.
#[derive(Debug)]
pub(crate) enum Failed {
    /// The resolver's error.
    Resolve(std::io::Error),
    /// The name has no address.
    NoAddress,
}

impl Failed {
    /// The kind of I/O error it is to a connection that needs the address.
    pub(crate) fn kind(&self) -> std::io::ErrorKind {
        match self {
            Failed::Resolve(e) => e.kind(),
            Failed::NoAddress => std::io::ErrorKind::NotFound,
        }
    }
}

/// Where names are looked up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Lookup {
    /// The DNS server asked over UDP (then TCP for a truncated answer); `None`: the system's
    /// resolver.
    pub server: Option<SocketAddr>,
}

impl Lookup {
    /// Every address of `host`, with `port`; at least one.
    pub(crate) fn addresses(self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Failed> {
        let found = match self.server {
            None => (host, port)
                .to_socket_addrs()
                .map(|addrs| addrs.collect::<Vec<_>>()),
            Some(server) => ask(server, host, port),
        }
        .map_err(Failed::Resolve)?;
        let mut list: Vec<SocketAddr> = Vec::with_capacity(found.len());
        // getaddrinfo answers once per socket type unless told one; keep each address once.
        for addr in found {
            if !list.contains(&addr) {
                list.push(addr);
            }
        }
        if list.is_empty() {
            return Err(Failed::NoAddress);
        }
        Ok(list)
    }
}

/// Asks `server` for `host`'s A and AAAA records, on a thread and runtime of its own: the
/// caller may be inside a runtime, where blocking on another would panic.
fn ask(server: SocketAddr, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
    use hickory_resolver::config::{NameServerConfigGroup, ResolverConfig, ResolverOpts};
    use hickory_resolver::name_server::TokioConnectionProvider;

    let host = host.to_string();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let servers = NameServerConfigGroup::from_ips_clear(&[server.ip()], server.port(), true);
        let mut opts = ResolverOpts::default();
        // Each lookup asks anew: --dns-ttl decides how often, not the resolver's cache.
        opts.cache_size = 0;
        opts.ip_strategy = hickory_resolver::config::LookupIpStrategy::Ipv4AndIpv6;
        let resolver = hickory_resolver::Resolver::builder_with_config(
            ResolverConfig::from_parts(None, vec![], servers),
            TokioConnectionProvider::default(),
        )
        .with_options(opts)
        .build();
        let answer = runtime
            .block_on(resolver.lookup_ip(host.as_str()))
            .map_err(std::io::Error::other)?;
        Ok(answer.iter().map(|ip| SocketAddr::new(ip, port)).collect())
    })
    .join()
    .unwrap_or_else(|_| Err(std::io::Error::other("the DNS lookup's thread failed")))
}
