//! A finished run, whatever ran it (this process or a coordinator's workers): what it
//! recorded, ready to report.

use std::time::Duration;

use belier_report::{render_json, render_text, Report};
use belier_results::{Change, HostUsage, RunInfo, ThresholdOutcome};
use belier_stats::{Recorder, Series};

use crate::args::Format;
use crate::metrics::Exporter;

/// What a finished run recorded, ready to report.
pub struct Finished {
    pub info: RunInfo,
    pub totals: Recorder,
    pub series: Series,
    pub elapsed: Duration,
    pub interrupted: bool,
    pub warnings: Vec<String>,
    pub host: Option<HostUsage>,
    pub name: String,
    /// A plan's thresholds, judged on what was recorded (empty otherwise).
    pub thresholds: Vec<ThresholdOutcome>,
    /// What was recorded from the judged window's start on (see [`super::execute_judged`]).
    pub window: Option<Recorder>,
    /// Changes made to the run while it ran (the dashboard's keys), in order.
    pub changes: Vec<Change>,
    /// The Prometheus exporter, still serving the final figures (`--metrics-linger`).
    pub exporter: Option<Exporter>,
    /// The web console's link to the run, to hand it the report.
    pub web: Option<crate::web::Live>,
    /// A plan whose scenarios have loads of their own: what each executor recorded, in the
    /// plan's order, and its figures for the report (empty for a run of one load).
    pub part_totals: Vec<Recorder>,
    pub scenarios: Vec<belier_results::ScenarioFigures>,
    /// The plan's threshold that failed while the run went and stopped it, if one did.
    pub aborted: Option<crate::plan::Abort>,
}

impl Finished {
    /// The report on this run.
    pub fn report(&self) -> Report<'_> {
        Report {
            scenarios: self.scenarios.clone(),
            info: &self.info,
            totals: &self.totals,
            series: &self.series,
            elapsed: self.elapsed,
            interrupted: self.interrupted,
            warnings: self.warnings.clone(),
            thresholds: self.thresholds.clone(),
            changes: self.changes.clone(),
            host: self.host,
        }
    }

    /// Renders the report in `format`.
    pub fn render(&self, format: Format) -> String {
        let report = self.report();
        match format {
            Format::Text => render_text(&report),
            Format::Json => render_json(&report),
        }
    }

    /// Renders the JUnit XML report.
    pub fn render_junit(&self) -> String {
        let report = self.report();
        belier_report::render_junit(&[belier_report::NamedReport {
            name: &self.name,
            report: &report,
        }])
    }

    /// Renders the HTML report.
    pub fn render_html(&self) -> String {
        let report = self.report();
        belier_report::render_html(&[belier_report::HtmlRun {
            name: self.name.clone(),
            report: &report,
        }])
    }
}
