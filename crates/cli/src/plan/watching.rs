//! A plan's aborting thresholds as a watcher of its run: judged at each tick on what has
//! settled, a failed one stops the run ([`Stop::Judged`]), and says so once the live view
//! that would draw over it is gone.

use belier_run::{Now, Stop, Watcher};

use super::thresholds::{Abort, Watch};

/// [`Watch`] over a running plan; `names` are its executors' (a plan whose scenarios have
/// loads of their own), in the order of the run's parts.
pub struct Watching<'w, 'p> {
    watch: &'w mut Watch<'p>,
    names: Vec<String>,
}

impl<'w, 'p> Watching<'w, 'p> {
    /// Watches with `watch`; `names` are the run's parts'.
    pub fn new(watch: &'w mut Watch<'p>, names: Vec<String>) -> Self {
        Watching { watch, names }
    }

    /// The threshold that stopped the run, if one did.
    pub fn stopped(&self) -> Option<&Abort> {
        self.watch.stopped()
    }
}

impl Watcher for Watching<'_, '_> {
    fn tick(&mut self, now: &Now<'_>) -> Option<Stop> {
        // Not once the run stops anyway: its end is the user's (or a lost worker's).
        if now.stopping.is_some() {
            return None;
        }
        let scenarios: Vec<_> = self
            .names
            .iter()
            .map(String::as_str)
            .zip(now.parts)
            .collect();
        // The path of a stop key: the load stops, what was sent is answered.
        self.watch
            .settled(now.collector, &scenarios)
            .map(|_| Stop::Judged)
    }

    fn stopped(&mut self, _: &mut Vec<String>) {
        if let Some(abort) = self.watch.stopped() {
            eprintln!("belier: {}", abort.line());
        }
    }
}
