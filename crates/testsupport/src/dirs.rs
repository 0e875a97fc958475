//! Temp dirs: one per test binary, process and name, emptied when made.

use std::path::{Path, PathBuf};

/// A fresh, empty directory `NAME` of this test binary and process under the system's temp
/// dir (`belier-tests/BINARY-PID-NAME`): tests of one binary running at once pass different
/// names; the process id keeps two runs of the same binary apart. It is not removed at the
/// end, so a failed test leaves its files to look at.
pub fn temp_dir(name: &str) -> PathBuf {
    fresh_dir(&std::env::temp_dir().join("belier-tests").join(format!(
        "{}-{}-{name}",
        test_binary(),
        std::process::id()
    )))
}

/// `dir`, emptied: removed (with what an earlier process with the same id left) and made again.
pub fn fresh_dir(dir: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir.to_path_buf()
}

/// This test binary's name without cargo's hash (`cluster` for `cluster-0123abcd`).
fn test_binary() -> String {
    let exe = std::env::current_exe().unwrap_or_default();
    let stem = exe
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
        _ => stem,
    }
}
