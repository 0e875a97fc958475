//! Distributed runs through the real binary: a coordinator (`--spawn`, `--workers`) and
//! `belier worker` processes on the loopback (and in network namespaces of their own), their
//! load counted by the built-in target, their merged report checked against the workers' own
//! results files.

#![allow(clippy::print_stderr)]

#[path = "support/process.rs"]
mod process;

use std::process::Command;

use belier_testserver::{Config, Server};
use process::{free_port, Belier};

fn belier() -> Command {
    Command::new(env!("CARGO_BIN_EXE_belier"))
}

#[test]
fn a_wrong_token_is_refused_and_nothing_is_sent() {
    let server = Server::start(Config::default()).unwrap();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut worker = Belier::spawn(&["worker", "--listen", &listen, "--token", "right"]);
    worker.wait_for("runs' results in");
    let out = belier()
        .args([&server.url("/"), "-n", "10", "--workers", &listen])
        .args(["--worker-token", "wrong"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("worker {listen} refused the token (401)")),
        "{stderr}"
    );
    assert_eq!(server.counts().requests, 0);
}

#[test]
fn a_worker_that_cannot_start_fails_the_start_for_all() {
    let server = Server::start(Config::default()).unwrap();
    let (a, b) = (free_port(), free_port());
    let (a, b) = (format!("127.0.0.1:{a}"), format!("127.0.0.1:{b}"));
    let mut open = Belier::spawn(&["worker", "--listen", &a]);
    open.wait_for("runs' results in");
    let mut guarded = Belier::spawn(&["worker", "--listen", &b, "--token", "t"]);
    guarded.wait_for("runs' results in");
    let out = belier()
        .args([&server.url("/"), "--rate", "100", "-z", "2s"])
        .args(["--workers", &format!("{a},{b}")])
        .env_remove("BELIER_WORKER_TOKEN")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("worker {b} refused")), "{stderr}");
    assert_eq!(server.counts().requests, 0, "no worker sent anything");
}

#[test]
fn a_worker_beyond_the_loopback_needs_a_token() {
    let out = belier()
        .args(["worker", "--listen", "0.0.0.0:0"])
        .env_remove("BELIER_WORKER_TOKEN")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs a token"), "{stderr}");
}

#[test]
fn spawning_no_worker_is_refused() {
    let out = belier()
        .args(["http://127.0.0.1:9/", "-n", "1", "--spawn", "0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("'--spawn <N>': must be 1 to 256"),
        "{stderr}"
    );
}
