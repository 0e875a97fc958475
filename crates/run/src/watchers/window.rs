//! A run's judged window: what the intervals from an offset on recorded, kept apart (a
//! capacity step's window, after its warm-up).

use std::time::Duration;

use belier_stats::Recorder;

use crate::watcher::{Seen, Watcher};

/// Adds up what every worker recorded from interval `first` on.
pub struct Window {
    first: u64,
    recorded: Recorder,
}

impl Window {
    /// The window from `from` on, in a run of `interval`s; `from` should fall on an interval
    /// boundary.
    pub fn from(from: Duration, interval: Duration) -> Window {
        Window {
            first: (from.as_nanos() / interval.as_nanos()) as u64,
            recorded: Recorder::new(),
        }
    }

    /// What the window recorded.
    pub fn into_recorded(self) -> Recorder {
        self.recorded
    }
}

impl Watcher for Window {
    fn seen(&mut self, seen: &Seen<'_>, _warnings: &mut Vec<String>) {
        if let Seen::Recorded {
            index, recorder, ..
        } = seen
        {
            if *index >= self.first {
                self.recorded += *recorder;
            }
        }
    }
}
