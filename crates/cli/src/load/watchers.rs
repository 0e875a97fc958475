//! The watchers of a run, as its settings ask for them: one set for a run in this process and
//! for a run over workers (only where the intervals come from differs, [`Origin`]), handed the
//! run in one order, and the finished run they leave filled in one place ([`Watchers::finish`]).
//!
//! On a run over workers every watcher of merged intervals applies: the results file, the
//! exporter and `--metrics-out` outputs, the web console, the live view, the threshold watch,
//! a judged window. The raw file does not (its rows are the workers' samples, which stay on
//! the workers: the coordinator refuses `--raw`), nor do this machine's host readings (the
//! load is sent from the workers' machines: their own readings, from their end lines, are
//! the run's).

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use belier_engine::Control;
use belier_results::{End, HostUsage, RunInfo, ScenarioFigures, TargetInfo};
use belier_run::watchers::host::HostWatch;
use belier_run::watchers::raw::{RawFile, RawWriter};
use belier_run::watchers::results_file::{self, ResultsFile};
use belier_run::watchers::window::Window;
use belier_run::{Changes, Ran, Source, Watcher};
use belier_stats::Recorder;

use super::feed::Feed;
use super::finished::Finished;
use super::live::{live_view, Live};
use super::narrator::Narrator;
use super::spans::Spans;
use crate::executors::Part;
use crate::plan::{Watch, Watching};
use crate::settings::{InputError, Settings};
use crate::signals::Signals;

/// What a run is asked for beyond its settings.
#[derive(Default)]
pub struct Asked<'a, 'p> {
    /// Keep apart what the intervals from this offset on recorded.
    pub judge_from: Option<Duration>,
    /// Loads of their own, started together.
    pub parts: &'a [Part],
    /// A plan's thresholds that stop the run when they fail.
    pub watch: Option<&'a mut Watch<'p>>,
}

/// Where a run's intervals come from, as far as its watchers care.
#[derive(Clone, Copy)]
pub enum Origin {
    /// The engine in this process, started at `start`: its samples and its host are here.
    Here { start: Instant },
    /// A coordinator over workers: their records merged; their samples stay with them.
    Workers,
}

/// What a run's watchers open before it starts, so that a path that cannot be written or a
/// port taken stops nothing that was sent.
pub struct Opened {
    /// `--save`.
    save: Option<Box<dyn Write>>,
    /// `--metrics-listen` and `--metrics-out` (an endpoint down now is a warning).
    feed: Option<Feed>,
    /// `--web`, or the console of `belier web`.
    web: Option<crate::web::Live>,
    /// `--traces-out`.
    spans: Option<Spans>,
    warnings: Vec<String>,
}

impl Opened {
    /// Opens what `settings` ask for.
    pub fn open(settings: &Settings) -> anyhow::Result<Opened> {
        let save = settings
            .output
            .save
            .as_deref()
            .map(open_results)
            .transpose()?;
        let (feed, mut warnings) = Feed::start(settings)?;
        warnings.extend(settings.protocol_note.clone());
        let web = crate::web::Live::open(settings)?;
        let spans = match &settings.output.traces_out {
            Some(spec) => Some(
                Spans::start(spec, &settings.engine, &settings.url)
                    .context("--traces-out: cannot start the span exporter")?,
            ),
            None => None,
        };
        Ok(Opened {
            save,
            feed,
            web,
            spans,
            warnings,
        })
    }

    /// Every watcher `settings` and `asked` call for, on a run from `origin` steered through
    /// `control`, known as `info` at its start.
    pub fn watchers<'a, 'p>(
        self,
        settings: &Settings,
        asked: Asked<'a, 'p>,
        origin: Origin,
        control: Control,
        info: &RunInfo,
        signals: &'a Signals,
    ) -> Result<Watchers<'a, 'p>, InputError> {
        let Opened {
            save,
            feed,
            web,
            spans,
            mut warnings,
        } = self;
        let (name, interval) = (&settings.output.name, settings.engine.interval);
        let (raw, host) = match origin {
            Origin::Here { start } => {
                let raw = settings.raw.as_deref().map(|p| raw_file(p, start));
                let raw = raw.transpose()?.map(RawFile::new);
                (raw, Some(HostWatch::new(settings.fd_limit)))
            }
            Origin::Workers => (None, None),
        };
        let results = save.map(|out| match origin {
            Origin::Here { .. } => {
                let header = results_file::header(name, interval, info);
                ResultsFile::new(out, &header, &mut warnings)
            }
            // The header waits for every worker's.
            Origin::Workers => ResultsFile::merged(out, name.clone(), interval),
        });
        let names = asked.parts.iter().map(|p| p.name.clone()).collect();
        Ok(Watchers {
            narrator: matches!(origin, Origin::Workers).then_some(Narrator),
            results,
            feed,
            web,
            spans,
            host,
            raw,
            window: asked.judge_from.map(|d| Window::from(d, interval)),
            live: live_view(settings, control, info),
            watching: asked.watch.map(|w| Watching::new(w, names)),
            signals,
            warnings,
        })
    }
}

/// The watchers of a run.
pub struct Watchers<'a, 'p> {
    narrator: Option<Narrator>,
    results: Option<ResultsFile>,
    feed: Option<Feed>,
    web: Option<crate::web::Live>,
    spans: Option<Spans>,
    host: Option<HostWatch>,
    raw: Option<RawFile>,
    window: Option<Window>,
    live: Live,
    watching: Option<Watching<'a, 'p>>,
    signals: &'a Signals,
    /// What the report says already (an output's endpoint down at the start).
    warnings: Vec<String>,
}

/// What the source of a run knows of it once it is over, beyond what the session recorded.
pub struct Sourced {
    /// The run's information (a run over workers: their headers merged).
    pub info: RunInfo,
    /// The workers' ends say their runs were interrupted.
    pub interrupted: bool,
    /// The source's warnings, after the session's.
    pub warnings: Vec<String>,
    /// What each of a plan's executors recorded, and their figures (empty for one load).
    pub part_totals: Vec<Recorder>,
    pub scenarios: Vec<ScenarioFigures>,
    /// The generators' use of their machines, where this process did not read it (workers').
    pub host: Option<HostUsage>,
    /// A stream's targets and their names, known at its end only.
    pub targets: Vec<TargetInfo>,
    pub steps: Vec<String>,
}

impl<'a> Watchers<'a, '_> {
    /// Every watcher, in the order they are handed the run: what befell the workers, the
    /// files and feeds, then what is drawn, then what may stop the run (the live view closes
    /// before a failed threshold says it stopped the run).
    fn all(&mut self) -> Vec<&mut dyn Watcher> {
        let mut all: Vec<&mut dyn Watcher> = Vec::new();
        if let Some(w) = &mut self.narrator {
            all.push(w);
        }
        if let Some(w) = &mut self.results {
            all.push(w);
        }
        if let Some(w) = &mut self.feed {
            all.push(w);
        }
        if let Some(w) = &mut self.web {
            all.push(w);
        }
        if let Some(w) = &mut self.spans {
            all.push(w);
        }
        if let Some(w) = &mut self.host {
            all.push(w);
        }
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
        all.push(&mut self.signals);
        all
    }

    /// Follows `source` to its end (the session decides when it stops), known as `info` at
    /// its start.
    pub fn follow(&mut self, source: &mut dyn Source, settings: &Settings, info: &RunInfo) -> Ran {
        let changes = Changes::new(&settings.engine.load, settings.engine.users.is_some());
        let warnings = std::mem::take(&mut self.warnings);
        belier_run::run(source, changes, info, warnings, &mut self.all())
    }

    /// The finished run: what the session recorded, what the source knows and what the
    /// watchers kept; `settle` adds what the caller knows (a plan's judged thresholds) before
    /// the results file's end line is written, so that the file keeps it.
    pub fn finish(
        self,
        settings: &Settings,
        ran: Ran,
        sourced: Sourced,
        settle: &mut dyn FnMut(&mut Finished),
    ) -> Finished {
        let aborted = self.watching.and_then(|w| w.stopped().cloned());
        let mut warnings = ran.warnings;
        warnings.extend(sourced.warnings);
        let mut finished = Finished {
            info: sourced.info,
            totals: ran.totals,
            series: ran.series,
            elapsed: ran.elapsed,
            // The user's stop interrupts the run; the workers' ends say interrupted also when
            // a failed threshold stopped them, which is not.
            interrupted: ran.asked || (sourced.interrupted && aborted.is_none()),
            warnings,
            host: self.host.as_ref().map(HostWatch::usage).or(sourced.host),
            name: settings.output.name.clone(),
            thresholds: Vec::new(),
            window: self.window.map(Window::into_recorded),
            changes: ran.changes,
            exporter: self.feed.and_then(Feed::into_exporter),
            web: self.web,
            part_totals: sourced.part_totals,
            scenarios: sourced.scenarios,
            aborted,
        };
        settle(&mut finished);
        if let Some(results) = self.results {
            let end = end_line(&mut finished, sourced.targets, sourced.steps);
            results.finish(&end, &mut finished.warnings);
        }
        finished
    }
}

/// The results file's end line of a finished run.
fn end_line(finished: &mut Finished, targets: Vec<TargetInfo>, steps: Vec<String>) -> End {
    End {
        elapsed_s: finished.elapsed.as_secs_f64(),
        interrupted: finished.interrupted,
        warnings: finished.warnings.clone(),
        host: finished.host,
        thresholds: finished.thresholds.clone(),
        targets,
        steps,
        scenarios: finished.scenarios.clone(),
        scenario_totals: crate::executors::stored(&finished.part_totals, &mut finished.warnings),
    }
}

/// Creates the raw file (`--raw FILE`), counting from the run's `start`.
fn raw_file(path: &Path, start: Instant) -> Result<RawWriter, InputError> {
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
