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
        }
    }

    /// Updates the line with the counts so far and the rate of the latest complete interval.
    pub fn update(&mut self, elapsed: Duration, requests: u64, errors: u64, rate: f64) {
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
            "\r\x1b[2K[{time}] {count}  {rate:.0}/s  {errors} errors"
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
