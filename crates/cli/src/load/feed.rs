//! The run's figures fed, as its intervals settle, to the Prometheus exporter
//! (`--metrics-listen`) and the metrics outputs (`--metrics-out`): a watcher of the run.

use belier_engine::Control;
use belier_outputs::Outputs;
use belier_run::{Begin, Now, Stop, Watcher};
use belier_stats::{Collector, Settled};

use crate::metrics::{Exporter, Figures};
use crate::settings::Settings;

/// The exporter and the outputs of a run.
pub struct Feed {
    exporter: Option<Exporter>,
    outputs: Option<Outputs>,
    /// An open-loop run's handle: the rate it holds is one of the figures.
    control: Option<Control>,
    open_loop: bool,
    steps: Vec<String>,
    /// Intervals settled since the figures were last sent.
    fresh: bool,
    /// The latency buckets' latest traced requests.
    exemplars: belier_outputs::LatestExemplars,
}

impl Feed {
    /// Starts what `settings` asks for, before the run starts, so that a taken port stops
    /// nothing that was sent (an output's endpoint down now is a warning, returned for the
    /// report); `None` when nothing is asked.
    pub fn start(settings: &Settings) -> anyhow::Result<(Option<Feed>, Vec<String>)> {
        let exporter = match &settings.output.metrics {
            Some(listen) => {
                let e = Exporter::start(listen, &settings.url, &settings.output.name)?;
                eprintln!("belier: Prometheus metrics at http://{}/metrics", e.addr());
                Some(e)
            }
            None => None,
        };
        let (outputs, warnings) = start_outputs(settings)?;
        let feed = (exporter.is_some() || outputs.is_some()).then(|| Feed {
            exporter,
            outputs,
            control: None,
            open_loop: matches!(settings.engine.load, belier_engine::Load::Open { .. }),
            steps: Vec::new(),
            fresh: false,
            exemplars: Default::default(),
        });
        Ok((feed, warnings))
    }

    /// The exporter, still serving the final figures (`--metrics-linger`).
    pub fn into_exporter(self) -> Option<Exporter> {
        self.exporter
    }

    fn export(&self, collector: &Collector, ended: bool) {
        let target_rate = self
            .control
            .as_ref()
            .filter(|_| self.open_loop)
            .map(Control::state)
            .map(|s| if s.paused { 0.0 } else { s.level });
        let figures = Figures {
            total: collector.settled_total(),
            in_flight: collector.latest().map_or(0, |p| p.in_flight),
            target_rate,
            ended,
            steps: &self.steps,
            exemplars: Some(&self.exemplars),
        };
        if let Some(e) = &self.exporter {
            e.update(&figures);
        }
        if let Some(o) = &self.outputs {
            o.send(belier_outputs::families(&figures));
        }
    }
}

impl Watcher for Feed {
    fn begin(&mut self, run: &Begin<'_>) {
        self.control = Some(run.control.clone());
        self.steps.clone_from(&run.info.steps);
    }

    fn interval(&mut self, settled: &[Settled], _: &Collector, _: &mut Vec<String>) {
        self.fresh = true;
        for s in settled {
            self.exemplars.update(s.recorder.exemplars());
        }
    }

    fn tick(&mut self, now: &Now<'_>) -> Option<Stop> {
        if std::mem::take(&mut self.fresh) {
            self.export(now.collector, false);
        }
        None
    }

    fn end(&mut self, collector: &Collector, warnings: &mut Vec<String>) {
        self.export(collector, true);
        // Before the results file's end line, so that `belier report FILE` shows them too.
        if let Some(o) = self.outputs.take() {
            warnings.extend(
                o.finish()
                    .iter()
                    .filter_map(belier_outputs::Delivery::warning),
            );
        }
    }
}

/// Starts the outputs `settings` asks for (none: `None`), and says on standard error which
/// endpoints cannot be reached now; those warnings are returned for the report too.
fn start_outputs(
    settings: &Settings,
) -> anyhow::Result<(Option<belier_outputs::Outputs>, Vec<String>)> {
    let specs = &settings.output.metrics_out;
    if specs.is_empty() {
        return Ok((None, Vec::new()));
    }
    let labels = belier_outputs::RunLabels {
        run: settings.output.name.clone(),
        method: settings
            .plan
            .is_none()
            .then(|| settings.engine.request.method.clone()),
    };
    let (outputs, warnings) = belier_outputs::Outputs::start(specs, &labels)
        .map_err(|e| anyhow::anyhow!("--metrics-out: cannot start an output: {e}"))?;
    for w in &warnings {
        eprintln!("belier: warning: {w}");
    }
    Ok((Some(outputs), warnings))
}
