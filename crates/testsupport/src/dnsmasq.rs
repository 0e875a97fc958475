//! Debian's dnsmasq as a real DNS server on a loopback port, answering one name from a hosts
//! file the test rewrites (a SIGHUP makes dnsmasq read it again).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::missing::find_program;
use crate::net::{free_port, wait_for_listener};

/// A dnsmasq answering from its hosts file; killed when dropped.
pub struct Dnsmasq {
    child: Child,
    hosts: PathBuf,
    /// Where it listens (UDP and TCP), for `--dns-server`.
    pub addr: SocketAddr,
}

impl Dnsmasq {
    /// Starts dnsmasq on 127.0.0.1 answering `name` with `addrs` and nothing else (no
    /// upstream, no /etc/hosts), its hosts file in `dir`; `None` after [`crate::missing()`] when
    /// dnsmasq is not installed.
    pub fn start(dir: &Path, name: &str, addrs: &[IpAddr]) -> Option<Dnsmasq> {
        let program = find_program(
            "dnsmasq",
            "apt-get install -y dnsmasq-base; scripts/install-test-deps installs it",
        )?;
        let hosts = dir.join("dnsmasq.hosts");
        write_hosts(&hosts, name, addrs);
        let port = free_port();
        let child = Command::new(program)
            .args([
                "--no-daemon",
                "--keep-in-foreground",
                "--bind-interfaces",
                "--listen-address=127.0.0.1",
                "--no-resolv",
                "--no-hosts",
                "--pid-file=",
                "--local-ttl=0",
            ])
            .arg(format!("--port={port}"))
            .arg(format!("--addn-hosts={}", hosts.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("dnsmasq starts");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let server = Dnsmasq { child, hosts, addr };
        assert!(
            wait_for_listener(addr, Duration::from_secs(10)),
            "dnsmasq listens on {addr}"
        );
        Some(server)
    }

    /// Answers `name` with `addrs` from now on: the hosts file rewritten, then read again.
    pub fn answer(&self, name: &str, addrs: &[IpAddr]) {
        write_hosts(&self.hosts, name, addrs);
        let hup = Command::new("kill")
            .args(["-HUP", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(hup.success(), "dnsmasq takes SIGHUP");
    }
}

fn write_hosts(path: &Path, name: &str, addrs: &[IpAddr]) {
    let lines: String = addrs.iter().map(|a| format!("{a} {name}\n")).collect();
    std::fs::write(path, lines).expect("the hosts file is written");
}

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
