//! A script as the plan's users run it: where it runs ([`Hook`]), its compiled text, and the
//! variables it reads and sets.

use std::sync::Arc;

/// Where a script runs, and so what it sees besides `vars`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// A `script:` step: variables only.
    Step,
    /// Before its request is sent: `request` (method, path, headers, body), which it may change.
    BeforeRequest,
    /// After its response arrived: `response` (status, headers, body, latency_ms).
    AfterResponse,
}

impl Hook {
    /// The key that gives it in a plan, and the last part of its check's name.
    pub fn key(self) -> &'static str {
        match self {
            Hook::Step => "script",
            Hook::BeforeRequest => "before_request",
            Hook::AfterResponse => "after_response",
        }
    }
}

/// A compiled script.
#[derive(Clone, Debug)]
pub struct Script {
    /// The compiled text.
    pub ast: Arc<rhai::AST>,
    /// Where it runs.
    pub hook: Hook,
    /// The check counting its calls: passed, or failed with an error.
    pub check: usize,
    /// Variables it names (`vars.NAME`), with their slots: the ones it may read or set.
    pub vars: Vec<(String, usize)>,
    /// Those it assigns (`vars.NAME = ...`), copied back after each call.
    pub sets: Vec<usize>,
    /// Where it comes from, for `belier check`: `inline, N lines` or the file as written.
    pub source: String,
}

impl Script {
    /// One line for `belier check`: where it runs, where it comes from, the variables it
    /// names and sets.
    pub(crate) fn describe(&self) -> String {
        let mut line = format!("{} ({})", self.hook.key(), self.source);
        let names = |slots: &mut dyn Iterator<Item = &usize>| -> Vec<&str> {
            slots
                .filter_map(|s| self.vars.iter().find(|(_, v)| v == s))
                .map(|(n, _)| n.as_str())
                .collect()
        };
        let reads = names(
            &mut self
                .vars
                .iter()
                .map(|(_, s)| s)
                .filter(|s| !self.sets.contains(s)),
        );
        if !reads.is_empty() {
            line.push_str(&format!(" reads {}", reads.join(", ")));
        }
        let sets = names(&mut self.sets.iter());
        if !sets.is_empty() {
            line.push_str(&format!(" sets {}", sets.join(", ")));
        }
        line
    }
}
