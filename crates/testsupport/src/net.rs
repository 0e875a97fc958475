//! Ports: a free one to listen on, waiting for a listener, the sockets a process holds.

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A loopback port free now and never handed out before in this process: the kernel may give
/// a port just released to the next `bind(0)`, and two tests starting servers at once would
/// then both configure it.
pub fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    loop {
        let port = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// Waits until something accepts TCP connections on `addr`, for at most `bound`; whether it
/// did.
pub fn wait_for_listener(addr: SocketAddr, bound: Duration) -> bool {
    let deadline = Instant::now() + bound;
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The local ports of the TCP sockets process `pid` holds open (its connections).
pub fn local_ports(pid: u32) -> HashSet<u16> {
    let inodes: HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter_map(|l| {
                    let l = l.to_string_lossy().into_owned();
                    Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let mut ports = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(table)
            .unwrap_or_default()
            .lines()
            .skip(1)
        {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() > 9 && inodes.contains(fields[9]) {
                let port = fields[1].rsplit_once(':').unwrap().1;
                ports.insert(u16::from_str_radix(port, 16).unwrap());
            }
        }
    }
    ports
}
