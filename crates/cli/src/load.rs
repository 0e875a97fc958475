//! Runs a load test in this process: starts the engine as a run session ([`belier_run`])
//! with the watchers the flags ask for (progress or dashboard, web console, exporter and
//! outputs, results file, raw file, a plan's aborting thresholds, signals), and returns what
//! was recorded, whatever happened on the way.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use belier_report::{render_json, render_text, Report};
use belier_results::End;
use belier_results::{Change, HostUsage, RunInfo, ThresholdOutcome};
use belier_run::watchers::host::HostWatch;
use belier_run::watchers::raw::{RawFile, RawWriter};
use belier_run::watchers::results_file::{self, ResultsFile};
use belier_run::watchers::window::Window;
use belier_run::{Changes, LocalRun, Source as _, Watcher};
use belier_stats::{Recorder, Series};

use crate::args::Format;
use crate::executors::Part;
use crate::metrics::Exporter;
use crate::plan::{Watch, Watching};
use crate::settings::{InputError, Settings};
use crate::signals::Signals;

mod feed;
mod info;
mod live;
pub mod report;
pub use feed::Feed;
pub use info::load_info;
pub use live::{live_view, unit, Live};

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

/// What a local run is asked for beyond its settings.
#[derive(Default)]
struct Asked<'a, 'p> {
    /// Keep apart what the intervals from this offset on recorded.
    judge_from: Option<Duration>,
    /// Loads of their own, started together.
    parts: &'a [Part],
    /// A plan's thresholds that stop the run when they fail.
    watch: Option<&'a mut Watch<'p>>,
}

/// Runs `settings` to the end (or until a stop signal) and returns everything recorded.
pub fn execute(settings: &Settings, signals: &Signals) -> anyhow::Result<Finished> {
    run_local(settings, signals, Asked::default(), &mut |_| {})
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
    let asked = Asked {
        watch,
        ..Asked::default()
    };
    run_local(settings, signals, asked, settle)
}

/// Like [`execute_then`], for a plan whose scenarios have loads of their own: `parts` start
/// together (`settings.engine` stands for them in the run information and the live views),
/// and what each recorded is kept apart ([`Finished::part_totals`]).
pub fn execute_parts(
    settings: &Settings,
    signals: &Signals,
    parts: &[Part],
    watch: Option<&mut Watch<'_>>,
    settle: &mut dyn FnMut(&mut Finished),
) -> anyhow::Result<Finished> {
    let asked = Asked {
        parts,
        watch,
        judge_from: None,
    };
    run_local(settings, signals, asked, settle)
}

/// Like [`execute`]; with `judge_from`, also keeps apart what the intervals from that offset on
/// recorded ([`Finished::window`]): a capacity step's judged window, after its warm-up. The
/// offset should fall on an interval boundary.
pub fn execute_judged(
    settings: &Settings,
    signals: &Signals,
    judge_from: Option<Duration>,
) -> anyhow::Result<Finished> {
    let asked = Asked {
        judge_from,
        ..Asked::default()
    };
    run_local(settings, signals, asked, &mut |_| {})
}

/// The watchers of a local run, as its flags ask for them.
struct Watchers<'a, 'p> {
    results: Option<ResultsFile>,
    feed: Option<Feed>,
    web: Option<crate::web::Live>,
    host: HostWatch,
    raw: Option<RawFile>,
    window: Option<Window>,
    live: Live,
    watching: Option<Watching<'a, 'p>>,
}

impl Watchers<'_, '_> {
    /// Every watcher, in the order they are handed the run: the files and feeds first, then
    /// what is drawn, then what may stop the run (the live view closes before a failed
    /// threshold says it stopped the run).
    fn all<'s>(&'s mut self, signals: &'s mut &Signals) -> Vec<&'s mut dyn Watcher> {
        let mut all: Vec<&mut dyn Watcher> = Vec::new();
        if let Some(w) = &mut self.results {
            all.push(w);
        }
        if let Some(w) = &mut self.feed {
            all.push(w);
        }
        if let Some(w) = &mut self.web {
            all.push(w);
        }
        all.push(&mut self.host);
        if let Some(w) = &mut self.raw {
            all.push(w);
        }
        if let Some(w) = &mut self.window {
            all.push(w);
        }
        all.push(&mut self.live);
        if let Some(w) = &mut self.watching {
            all.push(w);
        }
        all.push(signals);
        all
    }
}

/// Runs `settings` in this process as `asked`, with the watchers its flags ask for; `settle`
/// adds what the caller knows before the results file ends.
fn run_local(
    settings: &Settings,
    mut signals: &Signals,
    asked: Asked<'_, '_>,
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
    // Listening (and the outputs started, an endpoint down a warning) before the run too.
    let (feed, mut warnings) = Feed::start(settings)?;
    let web = crate::web::Live::open(settings)?;
    let mut source = start(settings, asked.parts).context("cannot start the run")?;
    let Some(engine) = source.engine() else {
        anyhow::bail!("the run ended before it began");
    };
    let raw = match &settings.raw {
        Some(path) => Some(RawFile::new(raw_file(path, engine.start_instant())?)),
        None => None,
    };
    let info = info::run_info(settings, engine);
    let results = save_to.map(|out| {
        let header = results_file::header(&settings.output.name, config.interval, &info);
        ResultsFile::new(out, &header, &mut warnings)
    });
    let names = asked.parts.iter().map(|p| p.name.clone()).collect();
    let mut watchers = Watchers {
        results,
        feed,
        web,
        host: HostWatch::new(settings.fd_limit),
        raw,
        window: asked.judge_from.map(|d| Window::from(d, config.interval)),
        live: live_view(settings, source.control(), &info),
        watching: asked.watch.map(|w| Watching::new(w, names)),
    };
    let changes = Changes::new(&config.load, config.users.is_some());
    let ran = belier_run::run(
        &mut source,
        changes,
        &info,
        warnings,
        &mut watchers.all(&mut signals),
    );
    let mut finished = Finished {
        info,
        totals: ran.totals,
        series: ran.series,
        elapsed: ran.elapsed,
        interrupted: ran.asked,
        warnings: ran.warnings,
        host: Some(watchers.host.usage()),
        name: settings.output.name.clone(),
        thresholds: Vec::new(),
        changes: ran.changes,
        window: watchers.window.map(Window::into_recorded),
        exporter: watchers.feed.and_then(Feed::into_exporter),
        web: watchers.web,
        scenarios: crate::executors::figures(asked.parts, &ran.parts, ran.elapsed),
        part_totals: ran.parts,
        aborted: watchers.watching.and_then(|w| w.stopped().cloned()),
    };
    settle(&mut finished);
    if let Some(results) = watchers.results {
        let end = end_line(settings, &mut finished);
        results.finish(&end, &mut finished.warnings);
    }
    Ok(finished)
}

/// Starts the engine: one load, or a plan's `parts` together.
fn start(settings: &Settings, parts: &[Part]) -> Result<LocalRun, belier_engine::StartError> {
    if parts.is_empty() {
        LocalRun::start(&settings.engine)
    } else {
        let configs: Vec<_> = parts.iter().map(|p| p.config.clone()).collect();
        LocalRun::start_together(&configs)
    }
}

/// The results file's end line of a finished local run.
fn end_line(settings: &Settings, finished: &mut Finished) -> End {
    // A stream's targets are known now only: the header could not name them.
    let (targets, steps) = match &settings.targets {
        Some(run) if run.users.is_stream() => run.rows_and_names(),
        _ => Default::default(),
    };
    let scenario_totals = crate::executors::stored(&finished.part_totals, &mut finished.warnings);
    End {
        elapsed_s: finished.elapsed.as_secs_f64(),
        interrupted: finished.interrupted,
        warnings: finished.warnings.clone(),
        host: finished.host,
        thresholds: finished.thresholds.clone(),
        targets,
        steps,
        scenarios: finished.scenarios.clone(),
        scenario_totals,
    }
}

/// Creates the raw file (`--raw FILE`), counting from the run's `start`.
fn raw_file(path: &Path, start: std::time::Instant) -> Result<RawWriter, InputError> {
    RawWriter::create(path, start).map_err(|e| {
        InputError::new(
            "--raw <FILE>",
            path.display(),
            format!("cannot write it: {e}"),
        )
    })
}

/// Opens the results file (`-`: standard output).
fn open_results(path: &Path) -> anyhow::Result<Box<dyn Write>> {
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
