//! One step of the search, run and measured: its load on the target, what its judged window
//! recorded, belier's verdict on itself, the SLOs' verdict, and the host's CPU across it.

use belier_capacity::{Slos, Step, StepFigures, StepPlan, Verdict};

use super::cpu;
use super::step::{self, Shape, Target};
use crate::signals::Signals;

/// What every step is run with.
pub struct Runner<'a> {
    pub target: &'a Target,
    pub shape: &'a Shape,
    pub slos: &'a Slos,
    /// `--prometheus`, if given.
    pub prometheus: Option<&'a str>,
    pub signals: &'a Signals,
}

impl Runner<'_> {
    /// Runs `plan` and judges it; `None` when Ctrl-C stopped it.
    pub fn run(&self, plan: &StepPlan) -> anyhow::Result<Option<(Step, Verdict)>> {
        let dimension = self.shape.dimension;
        let settings = self.target.step(plan, self.shape)?;
        let cpu_before = cpu::now();
        let finished = crate::load::execute_judged(&settings, self.signals, Some(plan.warmup))?;
        let cpu_after = cpu::now();
        if finished.interrupted {
            return Ok(None);
        }
        let window = finished.window.clone().unwrap_or_default();
        let generator = super::judge::generator_verdict(&finished, &window, plan);
        // The window's last responses came in the grace after the step's end, if any.
        let tail = finished
            .elapsed
            .saturating_sub(plan.duration())
            .min(settings.engine.grace);
        let prometheus = super::judge::query_prometheus(self.slos, self.prometheus);
        let achieved = match dimension {
            // Held connections: the fewest the server kept at an interval's end of the window.
            belier_capacity::Dimension::HeldConnections => {
                fewest_held(&finished.series, plan.warmup) as f64
            }
            _ => step::achieved(dimension, &window, plan.window, tail),
        };
        let mut figures = StepFigures {
            target_rate: plan.rate,
            achieved_rate: achieved,
            window: plan.window,
            totals: &window,
            generator: None,
            prometheus,
        };
        if !generator.kept_up
            && super::judge::generator_to_blame(&finished, &window, plan, self.slos, &figures)
        {
            figures.generator = Some(generator.findings.join("; "));
        }
        let verdict = self.slos.judge(&figures);
        let mut step = Step::measure(plan, &verdict, &window, plan.window, tail);
        step.achieved_rate = figures.achieved_rate;
        if cpu::shares_host(&finished.info.address) {
            step.host_cpu = cpu_before
                .zip(cpu_after)
                .and_then(|(before, after)| cpu::busy_share(before, after));
        }
        Ok(Some((step, verdict)))
    }
}

/// The fewest held connections at an interval's end from `warmup` on (0 when none ended).
fn fewest_held(series: &belier_stats::Series, warmup: std::time::Duration) -> u64 {
    series
        .points()
        .iter()
        .filter(|p| p.offset >= warmup)
        .map(|p| p.held)
        .min()
        .unwrap_or(0)
}
