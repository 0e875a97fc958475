//! `--spawn N`: N `belier worker` processes of this very binary on 127.0.0.1, each on a port
//! of its own choosing, killed when the run is over (their results files, in a temporary
//! directory, removed with them: `--worker-results` keeps copies).
//!
//! The workers take a token made for the run, through their environment (not their
//! arguments, which any user sees in `ps`), and die with this process: each one's standard
//! input is a pipe only this process holds open, and a worker whose pipe closes (this
//! process ended, even by `kill -9`) stops, removes its directory and exits.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};

/// Local worker processes, killed when dropped.
pub struct Spawned {
    children: Vec<Child>,
    /// The write ends of the workers' standard input, held until they are killed.
    lifelines: Vec<ChildStdin>,
    dir: std::path::PathBuf,
    /// Their addresses, `127.0.0.1:PORT`.
    pub addrs: Vec<String>,
    /// The token made for this run, which every worker takes.
    pub token: String,
}

impl Spawned {
    /// Starts `n` workers and waits for each to say where it listens.
    pub fn start(n: u32) -> anyhow::Result<Spawned> {
        let exe = std::env::current_exe()?;
        let dir = std::env::temp_dir().join(format!("belier-spawned-{}", std::process::id()));
        let mut spawned = Spawned {
            children: Vec::new(),
            lifelines: Vec::new(),
            dir,
            addrs: Vec::new(),
            token: crate::token::generate()?,
        };
        for i in 1..=n {
            // Each worker works in its own directory: what the run reads comes with its job,
            // not from this process's working directory.
            let own = spawned.dir.join(format!("worker-{i}"));
            std::fs::create_dir_all(&own)?;
            let mut child = Command::new(&exe)
                .args(["worker", "--spawned", "--listen", "127.0.0.1:0", "--dir"])
                .arg(&own)
                .current_dir(&own)
                .env(crate::args::TOKEN_ENV, &spawned.token)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()?;
            let stdout = child.stdout.take().expect("piped");
            spawned.lifelines.extend(child.stdin.take());
            spawned.children.push(child);
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line)?;
            let addr = line
                .trim()
                .strip_prefix("belier worker: listening on ")
                .ok_or_else(|| anyhow::anyhow!("a spawned worker did not start: {line:?}"))?;
            spawned.addrs.push(addr.to_string());
        }
        Ok(spawned)
    }

    /// The process id of each worker, in order.
    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
