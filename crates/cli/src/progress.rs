//! The live progress line on a terminal.

use std::io::Write;
use std::time::{Duration, Instant};

use belier_stats::Point;

/// How long a run must last before the line appears.
const SHOW_AFTER: Duration = Duration::from_secs(1);
/// Redraw period.
const REDRAW: Duration = Duration::from_millis(200);

/// Draws elapsed / planned time, requests and the latest interval's rate on one line of
/// standard error; in an open loop also the target rate, the lag p99 and the dropped count.
pub struct Progress {
    enabled: bool,
    planned_requests: Option<u64>,
    planned_duration: Option<Duration>,
    open_loop: bool,
    users: bool,
    drawn: bool,
    last_draw: Option<Instant>,
}

/// The counts the line shows.
pub struct Counts<'a> {
    /// Requests recorded so far, finished or failed.
    pub requests: u64,
    /// Of those, failed.
    pub errors: u64,
    /// Open loop: arrivals dropped so far.
    pub dropped: u64,
    /// The latest complete interval, if any.
    pub latest: Option<&'a Point>,
}

impl Progress {
    /// A progress line; draws nothing unless `enabled` (standard error is a terminal). With
    /// scripted `users` an open loop's arrivals are iterations.
    pub fn new(
        enabled: bool,
        planned_requests: Option<u64>,
        planned_duration: Option<Duration>,
        open_loop: bool,
        users: bool,
    ) -> Self {
        Progress {
            enabled,
            planned_requests,
            planned_duration,
            open_loop,
            users,
            drawn: false,
            last_draw: None,
        }
    }

    /// Redraws the line with `counts`, at most every [`REDRAW`].
    pub fn update(&mut self, elapsed: Duration, counts: &Counts) {
        if !self.enabled
            || elapsed < SHOW_AFTER
            || self.last_draw.is_some_and(|t| t.elapsed() < REDRAW)
        {
            return;
        }
        self.last_draw = Some(Instant::now());
        let mut err = std::io::stderr().lock();
        // A failed write to the terminal only costs the progress line.
        let _ = write!(err, "\r\x1b[2K{}", self.line(elapsed, counts));
        let _ = err.flush();
        self.drawn = true;
    }

    /// The line's text.
    fn line(&self, elapsed: Duration, counts: &Counts) -> String {
        let time = match self.planned_duration {
            Some(d) => format!("{:.1}s / {:.1}s", elapsed.as_secs_f64(), d.as_secs_f64()),
            None => format!("{:.1}s", elapsed.as_secs_f64()),
        };
        let requests = counts.requests;
        let count = match self.planned_requests {
            Some(n) => format!("{requests} / {n} requests"),
            None => format!("{requests} requests"),
        };
        let errors = counts.errors;
        // The latest complete interval's rate; none before the first one is complete.
        let rates = counts.latest.map(|p| {
            let lag = p.lag_p99_us as f64 / 1000.0;
            if self.open_loop && self.users {
                // The arrivals are iterations: those a user took up, against the schedule.
                format!(
                    "  {:.0}/s  {:.0} of {:.0} iterations/s started  lag p99 {lag:.2} ms",
                    p.rate(),
                    p.started_rate(),
                    p.target_rate(),
                )
            } else if self.open_loop {
                // What was achieved next to what the schedule asked for.
                format!(
                    "  {:.0}/s of {:.0}/s target  lag p99 {lag:.2} ms",
                    p.rate(),
                    p.target_rate(),
                )
            } else {
                format!("  {:.0}/s", p.rate())
            }
        });
        let rates = rates.unwrap_or_default();
        if self.open_loop {
            format!(
                "[{time}] {count}{rates}  {} dropped  {errors} errors",
                counts.dropped
            )
        } else {
            format!("[{time}] {count}{rates}  {errors} errors")
        }
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

#[cfg(test)]
mod tests {
    use belier_stats::{Gauges, Outcome, Recorder, Sample};

    use super::*;

    /// An interval of one second in which `requests` finished out of `scheduled` due, with a
    /// lag of `lag_us` each.
    fn point(requests: u64, scheduled: u64, lag_us: u64) -> Point {
        let mut r = Recorder::new();
        for _ in 0..scheduled {
            r.record_scheduled();
        }
        let intended = Instant::now();
        let sent = intended + Duration::from_micros(lag_us);
        for _ in 0..requests {
            r.record(&Sample {
                intended,
                dispatched: sent,
                ready: Some(sent),
                connected: None,
                handshaken: None,
                sent,
                first_byte: Some(sent),
                done: sent + Duration::from_millis(1),
                outcome: Outcome::Response { status: 200 },
                bytes_in: 100,
                bytes_out: 40,
                trace: None,
            });
        }
        Point::of(
            &r,
            Gauges::default(),
            Duration::from_secs(1),
            Duration::from_secs(1),
        )
    }

    #[test]
    fn a_closed_loop_shows_its_rate_and_budget() {
        let p = Progress::new(true, Some(5000), None, false, false);
        let latest = point(748, 0, 0);
        let counts = Counts {
            requests: 1200,
            errors: 3,
            dropped: 0,
            latest: Some(&latest),
        };
        assert_eq!(
            p.line(Duration::from_millis(1500), &counts),
            "[1.5s] 1200 / 5000 requests  748/s  3 errors"
        );
    }

    #[test]
    fn an_open_loop_shows_achieved_against_target_lag_and_drops() {
        let p = Progress::new(true, None, Some(Duration::from_secs(4)), true, false);
        let latest = point(1900, 2000, 1_500);
        let counts = Counts {
            requests: 3900,
            errors: 0,
            dropped: 100,
            latest: Some(&latest),
        };
        assert_eq!(
            p.line(Duration::from_millis(2100), &counts),
            "[2.1s / 4.0s] 3900 requests  1900/s of 2000/s target  lag p99 1.50 ms  \
             100 dropped  0 errors"
        );
        // Before the first interval is complete there is nothing to compare yet.
        let none = Counts {
            latest: None,
            ..counts
        };
        assert_eq!(
            p.line(Duration::from_millis(1000), &none),
            "[1.0s / 4.0s] 3900 requests  100 dropped  0 errors"
        );
    }

    #[test]
    fn scripted_users_in_an_open_loop_show_iterations_started() {
        let p = Progress::new(true, None, None, true, true);
        // 200 iterations due, 20 dropped, 360 requests finished (two per iteration).
        let mut latest = point(360, 200, 100);
        latest.dropped = 20;
        let counts = Counts {
            requests: 360,
            errors: 0,
            dropped: 20,
            latest: Some(&latest),
        };
        assert_eq!(
            p.line(Duration::from_millis(1200), &counts),
            "[1.2s] 360 requests  360/s  180 of 200 iterations/s started  lag p99 0.10 ms  \
             20 dropped  0 errors"
        );
    }
}
