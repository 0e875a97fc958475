//! A belier process for tests that talk to it while it runs (its exporter, its web console):
//! its stderr read line by line, Ctrl-C, a bounded wait for its end.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

pub use crate::net::{free_port, local_ports};

/// Longest any wait in these tests may take.
pub const BOUND: Duration = Duration::from_secs(60);

/// A belier process, killed if a test fails before it ends; its stderr lines as they come.
pub struct Belier {
    child: Child,
    stderr: Receiver<String>,
    seen: Vec<String>,
}

impl Belier {
    /// Starts `command` (a [`crate::Binary::command`] with its arguments) with its stderr
    /// read line by line; the tokens a developer's shell may hold are not passed on.
    pub fn start(command: &mut Command) -> Belier {
        let mut child = command
            .env_remove("BELIER_METRICS_TOKEN")
            .env_remove("BELIER_WEB_TOKEN")
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
        // All of it: the reader thread may not have passed the last lines on yet when the
        // process ended (on a loaded machine a refusal's whole message was missing once). It
        // ends at the pipe's end; a process the child started may hold that open, so a
        // bounded silence ends the wait too.
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(1)) {
            self.seen.push(line);
        }
        (code, stdout, self.seen.join("\n"))
    }
}

impl Drop for Belier {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server that counts on its own side (the grpc-go and WebSocket test servers): started
/// with its stdin and stdout piped, it first prints `listening PORT`; once its stdin closes it
/// prints its counts on one line (`Name=N` fields) and exits. Killed when dropped.
pub(crate) struct CountingServer {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl CountingServer {
    /// Starts `command`; `what` names the server in a panic.
    pub(crate) fn start(command: &mut std::process::Command, what: &str) -> CountingServer {
        use std::io::BufRead as _;
        use std::process::Stdio;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("the {what} does not start: {e}"));
        let stdin = child.stdin.take();
        let mut stdout = std::io::BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .unwrap_or_else(|e| panic!("the {what} does not say where it listens: {e}"));
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line from the {what}: {line:?}"));
        CountingServer {
            child,
            stdin,
            stdout,
            port,
        }
    }

    /// Closes its stdin and reads the counts it prints then: `count("Name")` is field
    /// `Name=N`'s N (a panic naming the line when it has none).
    pub(crate) fn counts(&mut self) -> impl Fn(&str) -> u64 {
        use std::io::BufRead as _;
        drop(self.stdin.take());
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("the server prints its counts");
        move |name: &str| {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(&format!("{name}=")))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{name} in {line:?}"))
        }
    }
}

impl CountingServer {
    /// The next line it prints after its counts (a server that prints more than one), with
    /// its end of line trimmed.
    pub(crate) fn next_line(&mut self) -> String {
        use std::io::BufRead as _;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("the server prints its next line");
        line.trim_end().to_string()
    }
}

impl Drop for CountingServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Stops a server started by a test: `signal` (its graceful stop, e.g. `-TERM`), then up to
/// 10 s for it to end, then a kill.
pub(crate) fn stop(child: &mut Child, signal: &str) {
    let _ = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Whether this process runs as root (read from /proc, without libc).
pub(crate) fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1).map(|uid| uid == "0"))
        .unwrap_or(false)
}
