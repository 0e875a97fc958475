//! Test [`Users`] for hand-written scripts: the checks are named here, and each test file's
//! script names its steps, counts the users made and makes its own kind of user.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use belier_engine::user::{User, Users};

/// A script every user follows.
pub trait Script: Send + Sync + Sized + 'static {
    /// Names of the statistics rows, one per request step.
    fn steps(&self) -> &[String];
    /// Counts the users made, for tests to read.
    fn made(&self) -> &AtomicU64;
    /// A new user at the start of `script`.
    fn user(script: &Arc<Self>) -> Box<dyn User>;
}

/// The users of a script, with the names of the checks their replies go through.
pub struct Scripted<S> {
    script: Arc<S>,
    checks: Vec<String>,
}

impl<S: Script> Scripted<S> {
    pub fn new(script: &Arc<S>, checks: &[&str]) -> Scripted<S> {
        Scripted {
            script: Arc::clone(script),
            checks: checks.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl<S: Script> Users for Scripted<S> {
    fn steps(&self) -> &[String] {
        self.script.steps()
    }

    fn checks(&self) -> &[String] {
        &self.checks
    }

    fn user(&self, _vu: u64) -> Box<dyn User> {
        self.script.made().fetch_add(1, Ordering::Relaxed);
        S::user(&self.script)
    }
}
