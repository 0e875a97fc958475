//! A distributed plan's per-scenario figures: each worker's end line keeps what each of its
//! executors recorded ([`End::scenario_totals`], losslessly), which add up, executor by
//! executor, to what the one-machine run's executors record. The figures and the thresholds
//! scoped to a scenario are then those of the one-machine run ([`crate::plan`] makes them).

use belier_results::End;
use belier_stats::Recorder;

/// The executors' totals summed over the workers' end lines (none if no worker sent any; a
/// warning for each that cannot be read or does not match the others).
pub fn merged_totals(ends: &[End], warnings: &mut Vec<String>) -> Vec<Recorder> {
    let mut merged: Vec<Recorder> = Vec::new();
    for (i, end) in ends.iter().enumerate() {
        if end.scenario_totals.is_empty() {
            continue;
        }
        if merged.is_empty() {
            merged = end
                .scenario_totals
                .iter()
                .map(|_| Recorder::new())
                .collect();
        }
        if end.scenario_totals.len() != merged.len() {
            warnings.push(format!(
                "per-scenario figures: a worker's end line has {} executors, another's {}; left out",
                end.scenario_totals.len(),
                merged.len()
            ));
            continue;
        }
        for (sum, stored) in merged.iter_mut().zip(&end.scenario_totals) {
            match stored.decode() {
                Ok(r) => *sum += &r,
                Err(e) => warnings.push(format!(
                    "per-scenario figures: end line {} of the workers' cannot be read: {e}",
                    i + 1
                )),
            }
        }
    }
    merged
}
