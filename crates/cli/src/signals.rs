//! Ctrl-C and SIGTERM: the first one asks the run to stop and report; a second one exits at
//! once with the conventional code. A worker's run is stopped, and steered, by its
//! coordinator instead: its `Signals` carry the flag and the place for the run's handle.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use belier_engine::Control;

use signal_hook::consts::{SIGINT, SIGTERM};

/// Exit code after an interruption (128 + SIGINT).
pub const INTERRUPTED: u8 = 130;

/// Set once a stop signal arrived.
#[derive(Clone)]
pub struct Signals {
    stop: Arc<AtomicBool>,
    /// Where a run steered from outside (a worker's) leaves its handle once it started.
    helm: Option<Arc<Mutex<Option<Control>>>>,
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signals")
            .field("stop", &self.stop)
            .field("steered", &self.helm.is_some())
            .finish()
    }
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
        Ok(Signals { stop, helm: None })
    }

    /// Stop requests that come from `stop` rather than from signals (a worker's run, which its
    /// coordinator stops).
    pub fn from_flag(stop: Arc<AtomicBool>) -> Signals {
        Signals { stop, helm: None }
    }

    /// These stop requests; the run's steering handle goes to `helm` once the run starts.
    pub fn steered_through(self, helm: Arc<Mutex<Option<Control>>>) -> Signals {
        Signals {
            helm: Some(helm),
            ..self
        }
    }

    /// The run started with `control`: handed to whoever steers it from outside.
    pub fn started(&self, control: &Control) {
        if let Some(helm) = &self.helm {
            *helm.lock().unwrap_or_else(PoisonError::into_inner) = Some(control.clone());
        }
    }

    /// Whether a stop signal arrived.
    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Signals as a watcher of the run: handed its handle when it starts (a worker's, for its
/// coordinator to steer), and asking it to stop once a signal came.
impl belier_run::Watcher for &Signals {
    fn begin(&mut self, run: &belier_run::Begin<'_>) {
        self.started(run.control);
    }

    fn tick(&mut self, _: &belier_run::Now<'_>) -> Option<belier_run::Stop> {
        self.stop_requested().then_some(belier_run::Stop::Asked)
    }
}
