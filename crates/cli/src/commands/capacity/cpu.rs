//! The host's CPU across a capacity step, when belier and the server share the host: both
//! then compete for its cores, and a step that saturated them measured belier as much as the
//! server. Read from `/proc/stat` before and after the step.

/// CPU time the host spent so far, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    busy: u64,
    total: u64,
}

/// The host's CPU time now; `None` where `/proc/stat` cannot be read (not Linux).
pub fn now() -> Option<CpuTimes> {
    parse(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// The `cpu` line of `/proc/stat`: user, nice, system, idle, iowait, irq, softirq, steal (the
/// guest times that follow are counted in user already). Idle and iowait are not busy.
fn parse(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|t| t.parse().ok())
        .collect::<Option<_>>()?;
    let total: u64 = ticks.iter().sum();
    let idle = ticks.get(3)? + ticks.get(4).copied().unwrap_or(0);
    Some(CpuTimes {
        busy: total.saturating_sub(idle),
        total,
    })
}

/// Busy share of the host's CPU between two readings.
pub fn busy_share(before: CpuTimes, after: CpuTimes) -> Option<f64> {
    let total = after.total.checked_sub(before.total).filter(|&t| t > 0)?;
    let busy = after.busy.saturating_sub(before.busy);
    Some((busy as f64 / total as f64).min(1.0))
}

/// Whether the address belier connected to is on this host: a loopback address, or a Unix
/// socket's path.
pub fn shares_host(address: &str) -> bool {
    match address.parse::<std::net::SocketAddr>() {
        Ok(addr) => addr.ip().is_loopback(),
        Err(_) => address.starts_with('/'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busy_share_is_read_from_the_cpu_line() {
        let before = parse("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n").unwrap();
        let after = parse("cpu  280 0 110 820 50 10 0 0 0 0\n").unwrap();
        // 250 ticks busy of 270.
        let share = busy_share(before, after).unwrap();
        assert!((share - 250.0 / 270.0).abs() < 1e-9, "{share}");
        assert_eq!(busy_share(after, after), None);
        assert_eq!(parse("intr 1 2 3\n"), None);
        assert_eq!(parse("cpu  a b c\n"), None);
    }

    #[test]
    fn loopback_and_unix_sockets_share_the_host() {
        assert!(shares_host("127.0.0.1:8080"));
        assert!(shares_host("[::1]:443"));
        assert!(shares_host("/run/app.sock"));
        assert!(!shares_host("192.0.2.7:80"));
    }
}
