//! What the terminal shows while the run goes (the progress line, or the `--tui` dashboard),
//! as a watcher of the run: drawn at each tick, closed when the load is over.

use std::io::IsTerminal;
use std::time::Duration;

use belier_engine::{Control, Load};
use belier_results::RunInfo;
use belier_run::{Now, Stop, Watcher};
use belier_stats::Collector;

use crate::progress::{Counts, Progress};
use crate::settings::Settings;
use crate::tui::{Dashboard, Unit};

/// What the terminal shows while the run goes.
pub enum Live {
    /// The progress line.
    Line(Progress),
    /// `--tui`.
    Dashboard(Box<Dashboard>),
    /// Closed: the load is over.
    Closed,
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
            Live::Closed => false,
        }
    }

    /// Clears the line or closes the dashboard.
    pub fn close(&mut self) {
        match std::mem::replace(self, Live::Closed) {
            Live::Line(mut progress) => progress.clear(),
            Live::Dashboard(dashboard) => dashboard.close(),
            Live::Closed => {}
        }
    }
}

impl Watcher for Live {
    fn tick(&mut self, now: &Now<'_>) -> Option<Stop> {
        self.update(now.elapsed, now.collector)
            .then_some(Stop::Asked)
    }

    fn stopped(&mut self, _: &mut Vec<String>) {
        self.close();
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
