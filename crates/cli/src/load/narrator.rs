//! A run over workers says on standard error what befell them: a loss, a change that did not
//! reach them (a watcher of the coordinator's run only).

use belier_run::{Seen, Watcher};

/// Says on standard error what befell the workers.
pub struct Narrator;

impl Watcher for Narrator {
    fn seen(&mut self, seen: &Seen<'_>, warnings: &mut Vec<String>) {
        match seen {
            Seen::Lost {
                worker,
                address,
                why,
                at,
            } => eprintln!(
                "belier: worker {} ({address}) lost at {:.1} s: {why}",
                worker + 1,
                at.as_secs_f64()
            ),
            Seen::Unsteered { why } => {
                eprintln!("belier: {why}");
                warnings.push(format!("a change did not reach every worker: {why}"));
            }
            _ => {}
        }
    }
}
