//! Re-resolving a host while the run goes (`Config::dns_ttl`).
//!
//! A thread of its own looks the name up every period and hands a changed answer to the
//! host's [`Addresses`]; workers never wait on a lookup, only take the read lock of the list
//! as a connection opens. The thread holds the addresses weakly and ends at its first wake
//! after the run dropped them (so at most one period after the run). A failed lookup keeps
//! the addresses held: a resolver that stops answering does not stop the run.

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::addresses::Addresses;
use crate::lookup::Lookup;

/// Looks `host` up through `lookup` every `every`, for as long as `addresses` lives.
pub(crate) fn follow(
    addresses: &Arc<Addresses>,
    lookup: Lookup,
    host: &str,
    port: u16,
    every: Duration,
) {
    let weak: Weak<Addresses> = Arc::downgrade(addresses);
    let host = host.to_string();
    let spawned = std::thread::Builder::new()
        .name("belier-dns".into())
        .spawn(move || loop {
            std::thread::sleep(every);
            let fresh = lookup.addresses(&host, port);
            let Some(addresses) = weak.upgrade() else {
                return;
            };
            if let Ok(fresh) = fresh {
                addresses.replace(fresh);
            }
        });
    // A run whose thread cannot start keeps the addresses it resolved at the start.
    drop(spawned);
}
