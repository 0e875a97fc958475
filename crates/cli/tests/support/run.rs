//! Running the belier binary under test.

use std::process::{Command, Output};

/// Runs belier with `args`; fails the test, with belier's standard error, unless it exits 0.
pub fn belier_ok(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(args)
        .output()
        .expect("belier runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "belier {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
