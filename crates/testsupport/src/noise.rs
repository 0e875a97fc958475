//! The machine's own timing noise, measured while a timing test runs: on a loaded machine
//! (other builds, CI neighbours) a thread asked to wake at an instant wakes late, and no
//! generator can keep a schedule better than the kernel wakes it. A timing assertion adds
//! what was measured here to its margin instead of assuming a quiet machine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A thread that sleeps `period` again and again and records how late each wake-up was.
pub struct TimerNoise {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Duration>>,
}

impl TimerNoise {
    /// Starts measuring, waking every `period`.
    pub fn start(period: Duration) -> TimerNoise {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut late = Vec::new();
            while !stopped.load(Ordering::Relaxed) {
                let due = Instant::now() + period;
                std::thread::sleep(period);
                late.push(Instant::now().saturating_duration_since(due));
            }
            late
        });
        TimerNoise { stop, thread }
    }

    /// Stops measuring: the wake-up lateness at `quantile` (0.99: all but the worst 1 %).
    pub fn stop(self, quantile: f64) -> Duration {
        self.stop.store(true, Ordering::Relaxed);
        let mut late = self.thread.join().expect("the noise thread");
        late.sort();
        let at = ((late.len() as f64 * quantile).ceil() as usize).clamp(1, late.len().max(1)) - 1;
        late.get(at).copied().unwrap_or_default()
    }
}
