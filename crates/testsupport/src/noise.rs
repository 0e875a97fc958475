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
        self.finish().quantile(quantile)
    }

    /// Stops measuring: every wake-up's lateness.
    pub fn finish(self) -> Noise {
        self.stop.store(true, Ordering::Relaxed);
        let mut late = self.thread.join().expect("the noise thread");
        late.sort();
        Noise { late }
    }
}

/// The wake-ups' lateness a [`TimerNoise`] measured.
pub struct Noise {
    /// Sorted.
    late: Vec<Duration>,
}

impl Noise {
    /// The lateness at `quantile` (0.99: all but the worst 1 %).
    pub fn quantile(&self, quantile: f64) -> Duration {
        let late = &self.late;
        let at = ((late.len() as f64 * quantile).ceil() as usize).clamp(1, late.len().max(1)) - 1;
        late.get(at).copied().unwrap_or_default()
    }

    /// The mean lateness.
    pub fn mean(&self) -> Duration {
        let n = self.late.len().max(1) as u32;
        self.late.iter().sum::<Duration>() / n
    }

    /// How many events at `rate` a second may be counted on the wrong side of a boundary
    /// when the boundary is one wake-up (an interval's hand-over) and each event another: those
    /// due within twice the 99th percentile's lateness of it, those due in a stall past that,
    /// and the one a boundary may split on a quiet machine.
    pub fn either_side(&self, rate: f64) -> u64 {
        let twice = 2 * self.quantile(0.99);
        let gap = Duration::from_secs_f64(1.0 / rate);
        1 + (rate * twice.as_secs_f64()).ceil() as u64 + self.missed(twice, gap) as u64
    }

    /// How many events due `every` apart fell in the time the machine held a thread more
    /// than `bound` past its wake-up: each wake-up later than that stands for a stretch of
    /// `late - bound` in which nothing due could happen within `bound` of its time.
    pub fn missed(&self, bound: Duration, every: Duration) -> usize {
        self.late
            .iter()
            .filter(|&&l| l > bound)
            .map(|&l| (l - bound).as_secs_f64() / every.as_secs_f64())
            .map(|n| n.ceil() as usize)
            .sum()
    }
}

/// Runs `f` with the machine's noise measured beside it (a wake-up every 10 ms): what `f`
/// returned, and that noise.
pub fn beside<T>(f: impl FnOnce() -> T) -> (T, Noise) {
    let noise = TimerNoise::start(Duration::from_millis(10));
    let out = f();
    (out, noise.finish())
}
