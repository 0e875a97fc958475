//! A worker started by a coordinator's `--spawn` dies with it: its standard input is a pipe
//! whose other end only the coordinator holds, so the kernel closes it when the coordinator
//! ends, however it ends (`kill -9` included). The worker then stops its run, removes its
//! directory (and the coordinator's folder of workers, once the last is gone) and exits.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long the worker has to stop on its own once its coordinator is gone, before it
/// removes its directory and exits regardless.
const LAST_CALL: Duration = Duration::from_secs(2);

/// Sets `gone` when standard input closes; exits the process [`LAST_CALL`] later if it is
/// still there, `dir` removed.
pub fn watch_coordinator(gone: Arc<AtomicBool>, dir: PathBuf) {
    std::thread::spawn(move || {
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin().lock();
        // The coordinator writes nothing: any read that returns is the end (or an error).
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        gone.store(true, Ordering::Relaxed);
        std::thread::sleep(LAST_CALL);
        remove(&dir);
        // The worker did not stop on its own (a run that does not hear its stop): nobody
        // is left to wait for it, and `main` is busy serving.
        #[allow(clippy::exit)]
        std::process::exit(crate::exit::EXIT_FAILURE.into());
    });
}

/// Removes `dir`, and its parent if that is left empty (the coordinator's folder of workers).
pub fn remove(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    if let Some(parent) = dir.parent() {
        // Fails, as it should, while another worker's directory is still in it.
        let _ = std::fs::remove_dir(parent);
    }
}
