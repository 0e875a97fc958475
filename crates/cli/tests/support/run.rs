//! Running the belier binary under test.

// Each test file takes what it uses of these.
#![allow(dead_code)]

use std::process::{Command, Output};

/// Runs belier with `args`; fails the test, with belier's standard error, unless it exits 0.
pub fn belier_ok(args: &[&str]) -> Output {
    ok(Command::new(env!("CARGO_BIN_EXE_belier")).args(args))
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
