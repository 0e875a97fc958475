//! Runs a load test: starts the engine, collects its intervals, watches for Ctrl-C, draws
//! progress, and returns what was recorded, whatever happened on the way.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use anyhow::Context;
use belier_engine::{host, Control, Event, Load, Next};
use belier_report::{render_json, render_text, Report};
use belier_results::{
    Change, End, Header, HostUsage, ResultsWriter, RunInfo, ThresholdOutcome, FORMAT, VERSION,
};
use belier_stats::{Collector, Recorder, Series};

use crate::args::Format;
use crate::metrics::{Exporter, Figures};
use crate::plan::Watch;
use crate::progress::{Counts, Progress};
use crate::raw::RawWriter;
use crate::settings::{InputError, Settings};
use crate::signals::Signals;
use crate::steering::Changes;
use crate::tui::{Dashboard, Unit};

mod info;
pub use info::load_info;

/// How often the loop wakes to check signals and redraw progress.
const POLL: Duration = Duration::from_millis(100);
/// How often the host (open files, ephemeral ports) is read.
const HOST_READING: Duration = Duration::from_secs(1);

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
    /// What was recorded from the judged window's start on (see [`execute_judged`]).
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

/// Runs `settings` to the end (or until a stop signal) and returns everything recorded.
pub fn execute(settings: &Settings, signals: &Signals) -> anyhow::Result<Finished> {
    execute_settled(settings, signals, None, &[], None, &mut |_| {})
}

/// Like [`execute`]; `watch` judges a plan's thresholds that stop the run when they fail as
/// intervals settle; `settle` adds to the finished run what the caller knows of it (a plan's
/// judged thresholds, its warnings) before the results file's end line is written, so that
/// the file keeps them.
pub fn execute_then(
    settings: &Settings,
    signals: &Signals,
    watch: Option<&mut Watch<'_>>,
    settle: &mut dyn FnMut(&mut Finished),
) -> anyhow::Result<Finished> {
    execute_settled(settings, signals, None, &[], watch, settle)
}

/// Like [`execute_then`], for a plan whose scenarios have loads of their own: `parts` start
/// together (`settings.engine` stands for them in the run information and the live views),
/// and what each recorded is kept apart ([`Finished::part_totals`]).
pub fn execute_parts(
    settings: &Settings,
    signals: &Signals,
    parts: &[crate::executors::Part],
    watch: Option<&mut Watch<'_>>,
    settle: &mut dyn FnMut(&mut Finished),
) -> anyhow::Result<Finished> {
    execute_settled(settings, signals, None, parts, watch, settle)
}

/// Like [`execute`]; with `judge_from`, also keeps apart what the intervals from that offset on
/// recorded ([`Finished::window`]): a capacity step's judged window, after its warm-up. The
/// offset should fall on an interval boundary.
pub fn execute_judged(
    settings: &Settings,
    signals: &Signals,
    judge_from: Option<Duration>,
) -> anyhow::Result<Finished> {
    execute_settled(settings, signals, judge_from, &[], None, &mut |_| {})
}

fn execute_settled(
    settings: &Settings,
    signals: &Signals,
    judge_from: Option<Duration>,
    parts: &[crate::executors::Part],
    mut watch: Option<&mut Watch<'_>>,
    settle: &mut dyn FnMut(&mut Finished),
) -> anyhow::Result<Finished> {
    let config = &settings.engine;
    // Opened before the run starts, so an unwritable path stops nothing that was sent.
    let save_to = settings
        .output
        .save
        .as_deref()
        .map(open_results)
        .transpose()?;
    // Listening before the run starts, so a taken port stops nothing that was sent.
    let exporter = match &settings.output.metrics {
        Some(listen) => {
            let e = Exporter::start(listen, &settings.url, &settings.output.name)?;
            eprintln!("belier: Prometheus metrics at http://{}/metrics", e.addr());
            Some(e)
        }
        None => None,
    };
    // Started before the run too; an endpoint down now is a warning, not a refusal.
    let (outputs, outputs_warnings) = crate::outputs::start(settings)?;
    // Listening before the run starts too.
    let mut web = crate::web::Live::open(settings)?;
    let run = if parts.is_empty() {
        belier_engine::start(config)
    } else {
        let configs: Vec<_> = parts.iter().map(|p| p.config.clone()).collect();
        belier_engine::start_together(&configs)
    }
    .context("cannot start the run")?;
    let mut part_totals: Vec<Recorder> = parts.iter().map(|_| Recorder::new()).collect();
    let mut raw = match &settings.raw {
        Some(path) => Some(RawWriter::create(path, run.start_instant())?),
        None => None,
    };
    let planned_end = config.schedule_end();
    let open_loop = matches!(config.load, Load::Open { .. });
    let info = RunInfo {
        belier_version: env!("CARGO_PKG_VERSION").to_string(),
        url: settings.url.clone(),
        address: run.addr().to_string(),
        method: config.request.method.clone(),
        connections: config.load.max_connections(),
        threads: run.workers(),
        keepalive: config.keepalive,
        protocol: if config.http2 { "HTTP/2" } else { "HTTP/1.1" }.into(),
        requests: config.stop.requests,
        duration_s: config.stop.duration.map(|d| d.as_secs_f64()),
        schedule_s: open_loop
            .then_some(planned_end)
            .flatten()
            .map(|d| d.as_secs_f64()),
        timeout_s: config.timeout.as_secs_f64(),
        host_cores: crate::cores(),
        host_name: host::name(),
        started_at: humantime::format_rfc3339_seconds(run.started_at()).to_string(),
        ..load_info(settings)
    };
    let info = crate::shard::info(info, config.shard);
    let ports = host::ephemeral_port_range();
    let mut usage = HostUsage {
        open_fds_peak: 0,
        fd_limit: settings.fd_limit,
        ephemeral_ports_peak: None,
        ephemeral_ports_total: ports.map(|(low, high)| u64::from(high - low) + 1),
    };
    let mut next_reading = Instant::now();

    let mut collector = Collector::new(run.workers(), config.interval);
    let mut warnings = outputs_warnings;
    let mut saver = match save_to {
        Some(out) => {
            collector.keep_settled();
            let header = Header {
                format: FORMAT.into(),
                version: VERSION,
                name: settings.output.name.clone(),
                interval_s: config.interval.as_secs_f64(),
                run: info.clone(),
            };
            match ResultsWriter::new(out, &header) {
                Ok(w) => Some(w),
                Err(e) => {
                    warnings.push(format!("results file not written: {e}"));
                    None
                }
            }
        }
        None => None,
    };
    if exporter.is_some() || outputs.is_some() {
        collector.keep_settled();
    }
    let control = run.control();
    signals.started(&control);
    if let Some(w) = &mut web {
        w.begin(run.control(), settings, &info);
    }
    let mut changes = Changes::new(&config.load, config.users.is_some());
    let target_rate = || {
        open_loop
            .then(|| control.state())
            .map(|s| if s.paused { 0.0 } else { s.level })
    };
    let export = |collector: &Collector, ended: bool| {
        let figures = Figures {
            total: collector.settled_total(),
            in_flight: collector.latest().map_or(0, |p| p.in_flight),
            target_rate: target_rate(),
            ended,
            steps: &info.steps,
        };
        if let Some(e) = &exporter {
            e.update(&figures);
        }
        if let Some(o) = &outputs {
            o.send(belier_outputs::families(&figures));
        }
    };
    let mut live = live_view(settings, run.control(), &info);
    let mut interrupted = false;
    let first_judged = judge_from.map(|d| (d.as_nanos() / config.interval.as_nanos()) as u64);
    let mut window = judge_from.map(|_| Recorder::new());
    let elapsed = loop {
        match run.next_event(POLL) {
            Next::Event(Event::Samples { samples, .. }) => {
                if let Some(w) = &mut raw {
                    if let Err(e) = w.write(&samples) {
                        warnings.push(format!("raw file: writing stopped: {e}"));
                        raw = None;
                    }
                }
            }
            Next::Event(event) => {
                if let (
                    Some(w),
                    Some(first),
                    Event::Recorded {
                        index, recorder, ..
                    },
                ) = (&mut window, first_judged, &event)
                {
                    if *index >= first {
                        *w += recorder;
                    }
                }
                if let Event::Recorded {
                    worker, recorder, ..
                } = &event
                {
                    if let Some(t) = part_totals.get_mut(run.part_of(*worker)) {
                        *t += recorder;
                    }
                }
                event.collect_into(&mut collector);
            }
            Next::Idle => {}
            Next::Ended => break run.elapsed(),
        }
        if save(&mut saver, &mut collector, &mut warnings) {
            export(&collector, false);
        }
        if let Some(w) = &mut web {
            w.update(&collector);
        }
        save_changes(&mut saver, changes.since(&control.history()), &mut warnings);
        if Instant::now() >= next_reading {
            next_reading += HOST_READING;
            let reading = host::read(ports);
            usage.open_fds_peak = usage.open_fds_peak.max(reading.open_fds.unwrap_or(0));
            if let Some(p) = reading.ephemeral_ports_in_use {
                usage.ephemeral_ports_peak = Some(usage.ephemeral_ports_peak.unwrap_or(0).max(p));
            }
        }
        // Not once the user stopped the run: its end is theirs.
        if let Some(w) = watch.as_deref_mut().filter(|_| !interrupted) {
            let scenarios: Vec<_> = parts
                .iter()
                .map(|p| p.name.as_str())
                .zip(&part_totals)
                .collect();
            if w.settled(&collector, &scenarios).is_some() {
                // The path of a stop key: the load stops, what was sent is answered.
                run.stop();
            }
        }
        let stop_key = live.update(run.elapsed(), &collector);
        let web_stop = web.as_ref().is_some_and(crate::web::Live::stop_requested);
        if !interrupted && (stop_key || web_stop || signals.stop_requested()) {
            interrupted = true;
            run.stop();
        }
    };
    live.close();
    // Said once the live view is gone, which would draw over it.
    if let Some(abort) = watch.as_deref().and_then(Watch::stopped) {
        eprintln!("belier: {}", abort.line());
    }

    let crashed = run.join();
    if crashed > 0 {
        warnings.push(format!(
            "{crashed} worker thread(s) crashed; the figures cover what they recorded before"
        ));
    }
    if let Some(Err(e)) = raw.map(RawWriter::finish) {
        warnings.push(format!("raw file: the last rows could not be written: {e}"));
    }
    collector.settle_all();
    save(&mut saver, &mut collector, &mut warnings);
    save_changes(&mut saver, changes.since(&control.history()), &mut warnings);
    export(&collector, true);
    // Before the results file's end line, so that `belier report FILE` shows them too.
    if let Some(o) = outputs {
        warnings.extend(
            o.finish()
                .iter()
                .filter_map(belier_outputs::Delivery::warning),
        );
    }
    if let Some(w) = &mut web {
        w.update(&collector);
    }
    let (totals, series) = collector.finish();
    let mut finished = Finished {
        info,
        totals,
        series,
        elapsed,
        interrupted,
        warnings,
        host: Some(usage),
        name: settings.output.name.clone(),
        thresholds: Vec::new(),
        changes: changes.into_vec(),
        window,
        exporter,
        web,
        scenarios: crate::executors::figures(parts, &part_totals, elapsed),
        part_totals,
        aborted: watch.and_then(|w| w.stopped().cloned()),
    };
    settle(&mut finished);
    if let Some(w) = saver {
        // A stream's targets are known now only: the header could not name them.
        let (targets, steps) = match &settings.targets {
            Some(run) if finished.info.targets.is_empty() => run.rows_and_names(),
            _ => Default::default(),
        };
        let scenario_totals =
            crate::executors::stored(&finished.part_totals, &mut finished.warnings);
        let end = End {
            elapsed_s: elapsed.as_secs_f64(),
            interrupted,
            warnings: finished.warnings.clone(),
            host: Some(usage),
            thresholds: finished.thresholds.clone(),
            targets,
            steps,
            scenarios: finished.scenarios.clone(),
            scenario_totals,
        };
        if let Err(e) = w.end(&end) {
            finished.warnings.push(format!(
                "results file: the end line could not be written: {e}"
            ));
        }
    }
    Ok(finished)
}

/// What the terminal shows while the run goes.
pub enum Live {
    /// The progress line.
    Line(Progress),
    /// `--tui`.
    Dashboard(Box<Dashboard>),
}

impl Live {
    /// Shows the run `elapsed` in, as `collector` has it; true when the dashboard's user
    /// asked to stop.
    pub fn update(&mut self, elapsed: Duration, collector: &Collector) -> bool {
        match self {
            Live::Line(progress) => {
                progress.update(
                    elapsed,
                    &Counts {
                        requests: collector.requests_so_far(),
                        errors: collector.errors_so_far(),
                        dropped: collector.dropped_so_far(),
                        latest: collector.latest(),
                    },
                );
                false
            }
            Live::Dashboard(dashboard) => dashboard.update(elapsed, collector),
        }
    }

    /// Clears the line or closes the dashboard.
    pub fn close(self) {
        match self {
            Live::Line(mut progress) => progress.clear(),
            Live::Dashboard(dashboard) => dashboard.close(),
        }
    }
}

/// What the run's level counts, for the live views that steer it.
pub fn unit(settings: &Settings) -> Unit {
    let open_loop = matches!(settings.engine.load, Load::Open { .. });
    match (open_loop, settings.engine.users.is_some()) {
        (true, false) => Unit::Rate,
        (true, true) => Unit::Iterations,
        (false, false) => Unit::Connections,
        (false, true) => Unit::Users,
    }
}

/// The dashboard if `--tui` asked for it and the terminal can take it (else one line saying
/// why, then the progress line).
pub fn live_view(settings: &Settings, control: Control, info: &RunInfo) -> Live {
    let config = &settings.engine;
    let open_loop = matches!(config.load, Load::Open { .. });
    let users = config.users.is_some();
    if settings.output.tui {
        match Dashboard::open(
            control,
            unit(settings),
            config.schedule_end(),
            info.steps.clone(),
            info.workers.len(),
        ) {
            Ok(d) => return Live::Dashboard(Box::new(d)),
            Err(why) => eprintln!("belier: no dashboard: {why}; showing the progress line"),
        }
    }
    Live::Line(Progress::new(
        std::io::stderr().is_terminal(),
        config.stop.requests,
        config.schedule_end(),
        open_loop,
        users,
    ))
}

type Saver = Option<ResultsWriter<Box<dyn Write>>>;

/// Writes the intervals settled since the last call, and says whether there were any. A write
/// failure (disk full, closed pipe) stops the saving with a warning; the run and its report go
/// on.
fn save(saver: &mut Saver, collector: &mut Collector, warnings: &mut Vec<String>) -> bool {
    let settled = collector.drain_settled();
    let fresh = !settled.is_empty();
    let Some(w) = saver else { return fresh };
    for s in &settled {
        if let Err(e) = w.interval(s) {
            warnings.push(format!(
                "results file: writing stopped at interval {}: {e}; this report is complete",
                s.index
            ));
            *saver = None;
            return fresh;
        }
    }
    fresh
}

/// Writes the changes made since the last call, each as soon as the loop sees it (within one
/// poll of the key press). A write failure stops the saving, as in [`save`].
fn save_changes(saver: &mut Saver, made: &[Change], warnings: &mut Vec<String>) {
    let Some(w) = saver else { return };
    for c in made {
        if let Err(e) = w.change(c) {
            warnings.push(format!(
                "results file: writing stopped at the change at {} s: {e}; this report is complete",
                c.at_s
            ));
            *saver = None;
            return;
        }
    }
}

/// Opens the results file (`-`: standard output).
fn open_results(path: &std::path::Path) -> anyhow::Result<Box<dyn Write>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdout()));
    }
    let file = std::fs::File::create(path).map_err(|e| {
        InputError::new(
            "--save <FILE>",
            path.display(),
            format!("cannot create it: {e}"),
        )
    })?;
    // Each interval is flushed by the writer; the buffer only batches one line's pieces.
    Ok(Box::new(std::io::BufWriter::new(file)))
}
