//! Runs a load test: starts the engine, collects its intervals, watches for Ctrl-C, draws
//! progress, and returns what was recorded, whatever happened on the way.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Context;
use belier_engine::Next;
use belier_report::{render_json, render_text, Report, RunInfo};
use belier_stats::{Collector, Recorder, Series};

use crate::args::Format;
use crate::progress::Progress;
use crate::settings::Settings;
use crate::signals::Signals;

/// How often the loop wakes to check signals and redraw progress.
const POLL: Duration = Duration::from_millis(100);

/// What a finished run recorded, ready to report.
pub struct Finished {
    pub info: RunInfo,
    pub totals: Recorder,
    pub series: Series,
    pub elapsed: Duration,
    pub interrupted: bool,
    pub warnings: Vec<String>,
}

impl Finished {
    /// Renders the report in `format`.
    pub fn render(&self, format: Format) -> String {
        let report = Report {
            info: &self.info,
            totals: &self.totals,
            series: &self.series,
            elapsed: self.elapsed,
            interrupted: self.interrupted,
            warnings: self.warnings.clone(),
        };
        match format {
            Format::Text => render_text(&report),
            Format::Json => render_json(&report),
        }
    }
}

/// Runs `settings` to the end (or until a stop signal) and returns everything recorded.
pub fn execute(settings: &Settings, signals: &Signals) -> anyhow::Result<Finished> {
    let config = &settings.engine;
    let run = belier_engine::start(config).context("cannot start the run")?;
    let info = RunInfo {
        belier_version: env!("CARGO_PKG_VERSION").to_string(),
        url: settings.url.clone(),
        address: run.addr().to_string(),
        method: config.request.method.clone(),
        connections: config.connections,
        threads: run.workers(),
        keepalive: config.keepalive,
        requests: config.stop.requests,
        duration_s: config.stop.duration.map(|d| d.as_secs_f64()),
        timeout_s: config.timeout.as_secs_f64(),
        host_cores: crate::cores(),
        started_at: humantime::format_rfc3339_seconds(run.started_at()).to_string(),
    };

    let mut collector = Collector::new(run.workers(), config.interval);
    let mut progress = Progress::new(
        std::io::stderr().is_terminal(),
        config.stop.requests,
        config.stop.duration,
    );
    let mut interrupted = false;
    let elapsed = loop {
        match run.next_event(POLL) {
            Next::Event(event) => event.collect_into(&mut collector),
            Next::Idle => {}
            Next::Ended => break run.elapsed(),
        }
        if !interrupted && signals.stop_requested() {
            interrupted = true;
            run.stop();
        }
        progress.update(
            run.elapsed(),
            collector.requests_so_far(),
            collector.errors_so_far(),
            collector.latest().map_or(0.0, |p| p.rate()),
        );
    };
    progress.clear();

    let mut warnings = Vec::new();
    let crashed = run.join();
    if crashed > 0 {
        warnings.push(format!(
            "{crashed} worker thread(s) crashed; the figures cover what they recorded before"
        ));
    }
    let (totals, series) = collector.finish();
    Ok(Finished {
        info,
        totals,
        series,
        elapsed,
        interrupted,
        warnings,
    })
}
