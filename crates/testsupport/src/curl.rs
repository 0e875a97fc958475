//! Real curl as a second client.

use std::process::{Command, Output};

use crate::missing::missing;

/// Whether curl is here; outside CI a test without it skips, under CI it fails.
pub fn have_curl(_test: &str) -> bool {
    let found = Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        missing(
            "curl is not installed",
            "apt-get install -y curl; scripts/install-test-deps installs it",
        );
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
