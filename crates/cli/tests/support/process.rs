//! A belier process for tests that talk to it while it runs (its exporter, its web console):
//! its stderr read line by line, Ctrl-C, a bounded wait for its end.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// Longest any wait in these tests may take.
pub const BOUND: Duration = Duration::from_secs(60);

/// A belier process, killed if a test fails before it ends; its stderr lines as they come.
pub struct Belier {
    child: Child,
    stderr: Receiver<String>,
    seen: Vec<String>,
}

impl Belier {
    pub fn spawn(args: &[&str]) -> Belier {
        Belier::spawn_in(std::path::Path::new("."), args)
    }

    /// Like [`Belier::spawn`], in the working directory `dir`.
    pub fn spawn_in(dir: &std::path::Path, args: &[&str]) -> Belier {
        Belier::spawn_with(dir, args, &[])
    }

    /// Like [`Belier::spawn_in`], with the environment variables `env` set too.
    pub fn spawn_with(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Belier {
        let mut child = Command::new(env!("CARGO_BIN_EXE_belier"))
            .args(args)
            .envs(env.iter().copied())
            .env_remove("BELIER_METRICS_TOKEN")
            .env_remove("BELIER_WEB_TOKEN")
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("belier runs");
        let (tx, stderr) = channel();
        let pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Belier {
            child,
            stderr,
            seen: Vec::new(),
        }
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Its resident memory now, in KiB (`VmRSS`).
    pub fn rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_string();
                line.split_whitespace().nth(1)?.parse().ok()
            })
            .expect("the process's VmRSS")
    }

    /// Waits for a stderr line containing `text`, and returns it.
    pub fn wait_for(&mut self, text: &str) -> String {
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(line) = self.seen.iter().find(|l| l.contains(text)) {
                return line.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!("no {text:?} on stderr: {:?}", self.seen),
            }
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Ctrl-C.
    pub fn interrupt(&self) {
        let ok = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -INT");
    }

    /// Waits for the exit (bounded): its code, stdout and all of stderr.
    pub fn finish(mut self) -> (Option<i32>, String, String) {
        let deadline = Instant::now() + BOUND;
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "belier did not end");
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut stdout = String::new();
        let _ = std::io::Read::read_to_string(self.child.stdout.as_mut().unwrap(), &mut stdout);
        let code = self.child.wait().unwrap().code();
        let rest: Vec<String> = self.stderr.try_iter().collect();
        self.seen.extend(rest);
        (code, stdout, self.seen.join("\n"))
    }
}

impl Drop for Belier {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The local ports of the TCP sockets process `pid` holds open (its connections).
pub fn local_ports(pid: u32) -> std::collections::HashSet<u16> {
    let inodes: std::collections::HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter_map(|l| {
                    let l = l.to_string_lossy().into_owned();
                    Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let mut ports = std::collections::HashSet::new();
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
