//! The host under a run: the peaks of its open files and ephemeral ports in use, read once a
//! second while the run goes.

use std::time::{Duration, Instant};

use belier_engine::host;
use belier_results::HostUsage;

use crate::watcher::{Now, Stop, Watcher};

/// How often the host is read.
const READING: Duration = Duration::from_secs(1);

/// How much of the time the exact count of ports in use may take: after a walk of the host's
/// socket tables that took T, the next waits 50 T (at least [`READING`]), so counting never
/// takes more than 2 % of a core, however many sockets the host holds.
const WALK_SHARE: u32 = 50;

/// Reads the host as the run goes, and keeps the peaks.
pub struct HostWatch {
    ports: Option<(u16, u16)>,
    usage: HostUsage,
    next_reading: Instant,
    /// When the exact count of ports may walk the socket tables again.
    next_walk: Instant,
}

impl HostWatch {
    /// A watch starting now, with the process's limit of open files `fd_limit`.
    pub fn new(fd_limit: u64) -> HostWatch {
        let ports = host::ephemeral_port_range();
        HostWatch {
            ports,
            usage: HostUsage {
                open_fds_peak: 0,
                fd_limit,
                ephemeral_ports_peak: None,
                ephemeral_ports_total: ports.map(|(low, high)| u64::from(high - low) + 1),
            },
            next_reading: Instant::now(),
            next_walk: Instant::now(),
        }
    }

    /// The peaks read.
    pub fn usage(&self) -> HostUsage {
        self.usage
    }
}

impl Watcher for HostWatch {
    fn tick(&mut self, _now: &Now<'_>) -> Option<Stop> {
        if Instant::now() >= self.next_reading {
            self.next_reading += READING;
            let started = Instant::now();
            let walk = started >= self.next_walk;
            let reading = host::read(self.ports, walk);
            if walk {
                self.next_walk = started + (started.elapsed() * WALK_SHARE).max(READING);
            }
            let usage = &mut self.usage;
            usage.open_fds_peak = usage.open_fds_peak.max(reading.open_fds.unwrap_or(0));
            if let Some(p) = reading.ephemeral_ports_in_use {
                usage.ephemeral_ports_peak = Some(usage.ephemeral_ports_peak.unwrap_or(0).max(p));
            }
        }
        None
    }
}
