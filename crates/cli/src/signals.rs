//! Ctrl-C and SIGTERM: the first one asks the run to stop and report; a second one exits at
//! once with the conventional code.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};

/// Exit code after an interruption (128 + SIGINT).
pub const INTERRUPTED: u8 = 130;

/// Set once a stop signal arrived.
#[derive(Clone, Debug)]
pub struct Signals {
    stop: Arc<AtomicBool>,
}

impl Signals {
    /// Installs the handlers.
    pub fn install() -> std::io::Result<Signals> {
        let stop = Arc::new(AtomicBool::new(false));
        for signal in [SIGINT, SIGTERM] {
            // Registered first, so it sees the flag as it was *before* this signal: the first
            // signal only sets the flag, the second one exits the process immediately.
            signal_hook::flag::register_conditional_shutdown(
                signal,
                i32::from(INTERRUPTED),
                Arc::clone(&stop),
            )?;
            signal_hook::flag::register(signal, Arc::clone(&stop))?;
        }
        Ok(Signals { stop })
    }

    /// Stop requests that come from `stop` rather than from signals (a worker's run, which its
    /// coordinator stops).
    pub fn from_flag(stop: Arc<AtomicBool>) -> Signals {
        Signals { stop }
    }

    /// Whether a stop signal arrived.
    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}
