//! The web console wired to a run: `--web[=ADDR]` on a flag or plan run, where the console
//! watches that run and offers its report at the end, or the console of `belier web` a run
//! reports to ([`crate::commands`] has that subcommand). The console itself (page, API,
//! safety checks) is the `belier-console` crate; here the run loop feeds it ([`Live`]).

mod serve;
pub use serve::{listen, listen_as, start, Web};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use belier_console::{Console, Hub, Report, RunEnd, RunId, RunStart};
use belier_engine::Control;
use belier_results::RunInfo;
use belier_stats::Collector;

use crate::settings::{InputError, Settings};
use crate::signals::Signals;

/// How often a lingering console or an idle `belier web` checks for Ctrl-C.
pub const POLL: Duration = Duration::from_millis(100);

/// A run's link to its console: the run loop hands it the run's handle, each settled
/// interval, and at the end the report.
pub struct Live {
    hub: Arc<Hub>,
    /// The console of a `--web` run, kept until the run's report is fetched or it lingered.
    own: Option<(Console, Duration)>,
    id: Option<RunId>,
    /// Intervals already sent.
    sent: usize,
    results: Option<PathBuf>,
    /// The HTML report file the run writes, if any.
    html: Option<PathBuf>,
    /// What the run's level counts, for the page's controls.
    unit: crate::tui::Unit,
}

impl Live {
    /// Starts the console of a `--web` run (before any load, so a taken port stops nothing),
    /// or joins that of `belier web`.
    pub fn open(settings: &Settings) -> Result<Option<Live>, InputError> {
        let results = settings
            .output
            .save
            .clone()
            .filter(|p| p.as_os_str() != "-");
        let (hub, own) = match &settings.output.web {
            None => return Ok(None),
            Some(Web::Attach(hub)) => (Arc::clone(hub), None),
            Some(Web::Serve(listen)) => {
                let console = start(listen, None)?;
                (Arc::clone(console.hub()), Some((console, listen.linger)))
            }
        };
        Ok(Some(Live {
            hub,
            own,
            id: None,
            sent: 0,
            results,
            html: settings.output.html.clone(),
            unit: crate::load::unit(settings),
        }))
    }

    /// The run has started.
    pub fn begin(&mut self, control: Control, info: &RunInfo) {
        self.id = Some(self.hub.begin(RunStart {
            settings: serde_json::to_value(info).unwrap_or_default(),
            unit: self.unit,
            control,
            steps: info.steps.clone(),
        }));
    }

    /// Sends the intervals settled since the last call.
    pub fn update(&mut self, collector: &Collector) {
        let Some(id) = self.id else { return };
        let points = collector.series().points();
        // A long run's series merges old points (coarsening): the latest is then all to send.
        let from = if self.sent > points.len() {
            points.len().saturating_sub(1)
        } else {
            self.sent
        };
        for p in &points[from..] {
            self.hub.interval(id, p, collector.settled_total());
        }
        self.sent = points.len();
    }

    /// Whether the page asked the run to stop.
    pub fn stop_requested(&self) -> bool {
        self.id.is_some_and(|id| self.hub.stop_requested(id))
    }

    /// The run is over and its report written: the page offers it, and the results file. A
    /// `--web` console then stays up for its linger (or until Ctrl-C).
    /// `html` renders the run's report, asked for only when the page is not served the file.
    pub fn end(self, html: impl FnOnce() -> String, interrupted: bool, signals: &Signals) {
        if let Some(id) = self.id {
            self.hub.end(
                id,
                RunEnd {
                    report: match &self.html {
                        // belier web's runs write it into their directory: served from there,
                        // so that a console of many runs keeps none in memory.
                        Some(path) if self.own.is_none() && path.is_file() => {
                            Report::File(path.clone())
                        }
                        _ => Report::Html(html()),
                    },
                    results: self.results.clone(),
                    interrupted,
                },
            );
        }
        let Some((console, linger)) = self.own else {
            return;
        };
        if linger.is_zero() || signals.stop_requested() {
            return;
        }
        eprintln!(
            "belier: the web console at http://{}/ offers the report for {} (Ctrl-C to stop)",
            console.addr(),
            humantime::format_duration(linger)
        );
        let deadline = Instant::now() + linger;
        while Instant::now() < deadline && !signals.stop_requested() {
            std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
        }
    }
}

/// The console as a watcher of its run: told of its start, sent each interval at the next
/// tick (and the last ones at the end); its page's stop button asks the run to stop.
impl belier_run::Watcher for Live {
    fn begin(&mut self, run: &belier_run::Begin<'_>) {
        Live::begin(self, run.control.clone(), run.info);
    }

    fn tick(&mut self, now: &belier_run::Now<'_>) -> Option<belier_run::Stop> {
        self.update(now.collector);
        self.stop_requested().then_some(belier_run::Stop::Asked)
    }

    fn end(&mut self, collector: &Collector, _: &mut Vec<String>) {
        self.update(collector);
    }
}
