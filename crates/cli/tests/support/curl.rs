//! Real curl as a second client.

// Each test file takes what it uses of these.
#![allow(dead_code)]

use std::process::{Command, Output};

/// Whether curl is here; outside CI a test without it skips, under CI it fails.
#[allow(
    clippy::print_stderr,
    reason = "a skipped test must say so where cargo test shows it"
)]
pub fn have_curl(test: &str) -> bool {
    let found = Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test}: curl is required under CI (scripts/install-test-deps installs it)"
        );
        eprintln!("{test}: skipped: curl is not installed (scripts/install-test-deps installs it)");
    }
    found
}

/// Runs curl (silent but for errors, at most 10 s) with `args`; fails the test unless it
/// succeeds.
pub fn curl(args: &[&str]) -> Output {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
