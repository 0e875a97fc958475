//! Readings of the machine belier runs on, so a report can tell when the generator itself,
//! not the server, was the limit: open file descriptors and ephemeral ports in use.
//! Linux `/proc` only; elsewhere the readings are absent.

use std::fs;

/// One reading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostReading {
    /// File descriptors this process has open.
    pub open_fds: Option<u64>,
    /// TCP sockets on this host whose local port is in the ephemeral range (any state but
    /// LISTEN, TIME_WAIT included: those ports are not free either). While the host holds
    /// fewer TCP sockets than half the range, this is the host's count of TCP sockets, an upper
    /// bound (see [`read`]).
    pub ephemeral_ports_in_use: Option<u64>,
}

/// The machine's name (`/proc/sys/kernel/hostname`), so that the shards of a run say where
/// each ran.
pub fn name() -> Option<String> {
    let text = fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    Some(text.trim().to_string()).filter(|n| !n.is_empty())
}

/// The kernel's ephemeral port range, inclusive.
pub fn ephemeral_port_range() -> Option<(u16, u16)> {
    let text = fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_whitespace().map(|s| s.parse::<u16>().ok());
    Some((it.next()??, it.next()??))
}

/// Reads the host now; `ports` is the ephemeral range to count in, `walk` whether the exact
/// count may walk the host's socket tables this time (see below).
///
/// The exact count walks `/proc/net/tcp`, which the kernel formats line by line: about 3 ms of
/// CPU per 1,000 sockets, taken every second on a core a worker may share, where it shows up
/// as a stall of every request due meanwhile. `/proc/net/sockstat` gives the host's TCP socket
/// count (established and the like, plus TIME_WAIT) in constant time, and that count bounds
/// the ports in use from above; the exact walk is only worth its price once the bound reaches
/// half the range, which is where running out becomes a question. A host holding 200,000
/// sockets makes each walk cost half a second of CPU: the caller then walks seldom (`walk`
/// false), and the reading has no port count rather than the bound, which would claim
/// exhaustion that is not there.
pub fn read(ports: Option<(u16, u16)>, walk: bool) -> HostReading {
    HostReading {
        open_fds: open_fds(),
        ephemeral_ports_in_use: ports.and_then(|range| {
            let size = u64::from(range.1.saturating_sub(range.0)) + 1;
            if let Some(bound) = tcp_sockets() {
                if bound < size / 2 {
                    return Some(bound);
                }
            }
            if !walk {
                return None;
            }
            let v4 = count_ports_in("/proc/net/tcp", range)?;
            Some(v4 + count_ports_in("/proc/net/tcp6", range).unwrap_or(0))
        }),
    }
}

/// [`count_ports`] of the table at `path`, read a line at a time: the table of a host with
/// 200,000 sockets is 30 MB of text, which a reading every second must not hold at once.
fn count_ports_in(path: &str, range: (u16, u16)) -> Option<u64> {
    let file = fs::File::open(path).ok()?;
    Some(count_ports(std::io::BufReader::new(file), range))
}

/// File descriptors this process has open. Linux 6.2 and later give the count as the size
/// of `/proc/self/fd`; listing the directory instead costs about 1.5 ms per 1,000 open
/// connections, on the main thread, which shares a core with a worker when belier is pinned
/// to one: at 70,000 requests/s that stalled every second's arrivals by 1.5–5 ms.
fn open_fds() -> Option<u64> {
    match fs::metadata("/proc/self/fd") {
        Ok(m) if m.len() > 0 => Some(m.len()),
        _ => fs::read_dir("/proc/self/fd").ok().map(|d| d.count() as u64),
    }
}

/// TCP sockets on the host, IPv4 and IPv6, TIME_WAIT included (`/proc/net/sockstat{,6}`).
fn tcp_sockets() -> Option<u64> {
    let v4 = fs::read_to_string("/proc/net/sockstat").ok()?;
    let v6 = fs::read_to_string("/proc/net/sockstat6").unwrap_or_default();
    Some(sockstat_tcp(&v4)? + sockstat_tcp(&v6).unwrap_or(0))
}

/// `inuse + tw` of the `TCP:` (or `TCP6:`) line of a sockstat file. The kernel keeps one
/// TIME_WAIT count for both families and prints it on the IPv4 line only.
fn sockstat_tcp(text: &str) -> Option<u64> {
    let line = text
        .lines()
        .find(|l| l.starts_with("TCP:") || l.starts_with("TCP6:"))?;
    let mut fields = line.split_whitespace().skip(1);
    let mut total = 0;
    while let (Some(name), Some(value)) = (fields.next(), fields.next()) {
        if name == "inuse" || name == "tw" {
            total += value.parse::<u64>().ok()?;
        }
    }
    Some(total)
}

/// Counts `/proc/net/tcp` lines with a local port in `range` that are not listening.
fn count_ports(mut table: impl std::io::BufRead, (low, high): (u16, u16)) -> u64 {
    const LISTEN: &str = "0A";
    let (mut line, mut count, mut first) = (String::new(), 0, true);
    while matches!(table.read_line(&mut line), Ok(n) if n > 0) {
        // The first line names the columns.
        if !std::mem::take(&mut first) {
            let mut fields = line.split_whitespace();
            let local = fields.nth(1);
            let state = fields.nth(1);
            let port = local
                .and_then(|l| l.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if matches!(port, Some(p) if (low..=high).contains(&p)) && state != Some(LISTEN) {
                count += 1;
            }
        }
        line.clear();
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_ephemeral_ports_but_not_listeners() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n\
   1: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 2 1\n\
   2: 0100007F:C351 0100007F:1F90 06 00000000:00000000 00:00000000 00000000     0        0 3 1\n\
   3: 0100007F:0050 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 4 1\n\
   4: 0100007F:EA60 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5 1\n";
        // 0xC350 = 50000 and 0xC351 (TIME_WAIT) count; 0x1F90 and 0x0050 are below the range;
        // 0xEA60 = 60000 is in range but listening.
        assert_eq!(count_ports(table.as_bytes(), (32768, 60999)), 2);
    }

    #[test]
    fn sockstat_counts_sockets_in_use_and_time_wait() {
        let v4 =
            "sockets: used 12\nTCP: inuse 7 orphan 0 tw 2000 alloc 9 mem 233\nUDP: inuse 1 mem 0\n";
        let v6 = "TCP6: inuse 3\nUDP6: inuse 0\n";
        assert_eq!(sockstat_tcp(v4), Some(2007));
        assert_eq!(sockstat_tcp(v6), Some(3));
        assert_eq!(sockstat_tcp("UDP: inuse 1\n"), None);
        assert_eq!(sockstat_tcp("TCP: inuse x tw 1\n"), None);
    }

    #[test]
    fn the_bound_covers_the_exact_count() {
        let (Some(range), Some(bound)) = (ephemeral_port_range(), tcp_sockets()) else {
            return;
        };
        let v4 = fs::read_to_string("/proc/net/tcp").unwrap();
        let v6 = fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
        // Sockets may come and go between the reads; a few of slack.
        assert!(
            count_ports(v4.as_bytes(), range) + count_ports(v6.as_bytes(), range) <= bound + 256
        );
    }

    #[test]
    fn counts_open_files_as_a_listing_would() {
        let Ok(listing) = fs::read_dir("/proc/self/fd") else {
            return;
        };
        let before = listing.count() as u64;
        let files: Vec<_> = (0..40)
            .map(|_| fs::File::open("/dev/null").unwrap())
            .collect();
        let during = open_fds().unwrap();
        drop(files);
        // The listing held one descriptor of its own; other tests' threads may open a few.
        assert!(
            during >= before + 39 && during <= before + 60,
            "{before} then {during}"
        );
    }

    #[test]
    fn reads_this_process() {
        let r = read(ephemeral_port_range(), true);
        if cfg!(target_os = "linux") {
            assert!(r.open_fds.unwrap() >= 3);
            assert!(r.ephemeral_ports_in_use.is_some());
        }
    }
}
