//! The live progress line on a terminal.

use std::io::Write;
use std::time::{Duration, Instant};

/// How long a run must last before the line appears.
const SHOW_AFTER: Duration = Duration::from_secs(1);
/// Redraw period.
const REDRAW: Duration = Duration::from_millis(200);

/// Draws `elapsed / planned, requests, rate, errors` on one line of standard error.
pub struct Progress {
    enabled: bool,
    planned_requests: Option<u64>,
    planned_duration: Option<Duration>,
    drawn: bool,
    last_draw: Option<Instant>,
    last_count: (u64, Duration),
    rate: f64,
}

impl Progress {
    /// A progress line; draws nothing unless `enabled` (standard error is a terminal).
    pub fn new(
        enabled: bool,
        planned_requests: Option<u64>,
        planned_duration: Option<Duration>,
    ) -> Self {
        Progress {
            enabled,
            planned_requests,
            planned_duration,
            drawn: false,
            last_draw: None,
            last_count: (0, Duration::ZERO),
            rate: 0.0,
        }
    }

    /// Updates the line with the counts so far.
    pub fn update(&mut self, elapsed: Duration, requests: u64, errors: u64) {
        if requests != self.last_count.0 {
            let dt = elapsed.saturating_sub(self.last_count.1).as_secs_f64();
            if dt > 0.0 {
                self.rate = (requests - self.last_count.0) as f64 / dt;
            }
            self.last_count = (requests, elapsed);
        }
        if !self.enabled
            || elapsed < SHOW_AFTER
            || self.last_draw.is_some_and(|t| t.elapsed() < REDRAW)
        {
            return;
        }
        self.last_draw = Some(Instant::now());
        let time = match self.planned_duration {
            Some(d) => format!("{:.1}s / {:.1}s", elapsed.as_secs_f64(), d.as_secs_f64()),
            None => format!("{:.1}s", elapsed.as_secs_f64()),
        };
        let count = match self.planned_requests {
            Some(n) => format!("{requests} / {n} requests"),
            None => format!("{requests} requests"),
        };
        let mut err = std::io::stderr().lock();
        // A failed write to the terminal only costs the progress line.
        let _ = write!(
            err,
            "\r\x1b[2K[{time}] {count}  {:.0}/s  {errors} errors",
            self.rate
        );
        let _ = err.flush();
        self.drawn = true;
    }

    /// Erases the line before the report is printed.
    pub fn clear(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}
