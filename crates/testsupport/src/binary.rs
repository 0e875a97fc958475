//! The belier binary under test: commands for it, runs that must succeed, and processes a
//! test talks to while they run.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use crate::process::Belier;

/// The path of the belier binary a test binary was built with (see [`crate::binary!`]).
#[derive(Clone, Copy, Debug)]
pub struct Binary(&'static str);

impl Binary {
    /// The binary at `path` (`env!("CARGO_BIN_EXE_belier")`).
    pub const fn new(path: &'static str) -> Binary {
        Binary(path)
    }

    /// Its path.
    pub fn path(&self) -> &'static Path {
        Path::new(self.0)
    }

    /// A command for it, with no arguments yet.
    pub fn command(&self) -> Command {
        Command::new(self.0)
    }

    /// Runs it with `args` to its end; whatever the exit code.
    pub fn output<S: AsRef<OsStr>>(&self, args: &[S]) -> Output {
        self.command().args(args).output().expect("belier runs")
    }

    /// Runs it with `args`; fails the test, with belier's standard error, unless it exits 0.
    pub fn ok<S: AsRef<OsStr>>(&self, args: &[S]) -> Output {
        ok(self.command().args(args))
    }

    /// Runs it with `--output json` and `args`; fails the test unless it exits 0 with a JSON
    /// report, which it returns.
    pub fn json<S: AsRef<OsStr>>(&self, args: &[S]) -> serde_json::Value {
        let out = ok(self.command().args(["--output", "json"]).args(args));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    /// Starts it with `args`, to talk to while it runs.
    pub fn spawn(&self, args: &[&str]) -> Belier {
        self.spawn_in(Path::new("."), args)
    }

    /// Like [`Binary::spawn`], in the working directory `dir`.
    pub fn spawn_in(&self, dir: &Path, args: &[&str]) -> Belier {
        self.spawn_with(dir, args, &[])
    }

    /// Like [`Binary::spawn_in`], with the environment variables `env` set too.
    pub fn spawn_with(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Belier {
        Belier::start(
            self.command()
                .args(args)
                .envs(env.iter().copied())
                .current_dir(dir),
        )
    }
}

/// Fails the test unless `out` (a run of belier) exited with `code`, showing what it wrote.
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `belier`, a command made with its arguments and environment; fails the test, with
/// the command and belier's standard error, unless it exits 0.
pub fn ok(belier: &mut Command) -> Output {
    let out = belier.output().expect("belier runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{belier:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
