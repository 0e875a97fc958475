//! `cargo install --path crates/cli` (README "Install", the book's install page), run as a
//! user would from a checkout, but with `--debug` into a target dir of its own
//! (`target/install-check`): the suite's `target/debug/belier` is the binary the other tests
//! run, and an install there would replace it with a build of other features. It is a second
//! build of the workspace's dependencies (about 290 CPU-seconds on a cold dir, incremental
//! after that), at the lowest CPU priority: `scripts/test` runs this binary beside the
//! capacity searches, which leave the cores mostly idle and run ahead of it (SCHED_FIFO).

#![allow(clippy::print_stderr)]

use std::path::Path;
use std::process::Command;

use belier_testsupport::{ok as command_ok, temp_dir};

#[test]
fn cargo_install_from_the_checkout_gives_a_belier_that_runs() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = temp_dir("cargo-install");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // At the lowest priority: the build takes the CPU that what runs beside it leaves.
    let install = command_ok(
        Command::new("nice")
            .args(["-n", "19"])
            .arg(cargo)
            .current_dir(&workspace)
            .args(["install", "--quiet", "--locked", "--offline", "--debug"])
            .args(["--path", "crates/cli", "--root"])
            .arg(&root)
            .arg("--target-dir")
            .arg(workspace.join("target/install-check"))
            // What the check needs is the install, not a debugger's view of it: a smaller link.
            .env("CARGO_PROFILE_DEV_DEBUG", "0"),
    );
    eprintln!("{}", String::from_utf8_lossy(&install.stderr));
    let belier = root.join("bin/belier");
    let version = command_ok(Command::new(&belier).arg("--version"));
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("belier {}", env!("CARGO_PKG_VERSION"))
    );
    let demo = command_ok(Command::new(&belier).args(["demo", "-z", "1s", "-c", "2"]));
    belier_testsupport::demo::assert_counts_agree(&demo);
}
