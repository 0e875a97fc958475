//! The engine in this process as a run's [`Source`].

use std::time::Duration;

use belier_engine::{Config, Control, Event, Next, Run, StartError};
use belier_stats::Collector;

use crate::source::{Flow, Source};
use crate::watcher::Seen;

/// A run of the engine in this process: one load, or several started together.
pub struct LocalRun {
    run: Option<Run>,
    interval: Duration,
    parts: usize,
    workers: usize,
    control: Control,
    /// When the last worker ended.
    ended_at: Option<Duration>,
}

impl LocalRun {
    /// Starts the load of `config`.
    pub fn start(config: &Config) -> Result<LocalRun, StartError> {
        Ok(LocalRun::of(
            belier_engine::start(config)?,
            config.interval,
            0,
        ))
    }

    /// Starts `configs` together (a plan whose scenarios have loads of their own); their
    /// intervals are the first's.
    pub fn start_together(configs: &[Config]) -> Result<LocalRun, StartError> {
        let run = belier_engine::start_together(configs)?;
        let interval = configs
            .first()
            .map_or(Duration::from_secs(1), |c| c.interval);
        Ok(LocalRun::of(run, interval, configs.len()))
    }

    fn of(run: Run, interval: Duration, parts: usize) -> LocalRun {
        LocalRun {
            workers: run.workers(),
            control: run.control(),
            run: Some(run),
            interval,
            parts,
            ended_at: None,
        }
    }

    /// The engine's run, for what the run's information says of it (`None` once finished).
    pub fn engine(&self) -> Option<&Run> {
        self.run.as_ref()
    }
}

impl Source for LocalRun {
    fn next(
        &mut self,
        wait: Duration,
        collector: &mut Collector,
        seen: &mut dyn FnMut(Seen<'_>),
    ) -> Flow {
        let Some(run) = &self.run else {
            return Flow::Ended;
        };
        match run.next_event(wait) {
            Next::Event(Event::Samples { worker, samples }) => {
                seen(Seen::Samples {
                    worker,
                    samples: &samples,
                });
            }
            Next::Event(Event::Traced { worker, requests }) => {
                seen(Seen::Traced {
                    worker,
                    requests: &requests,
                });
            }
            Next::Event(event) => {
                if let Event::Recorded {
                    worker,
                    index,
                    recorder,
                    ..
                } = &event
                {
                    seen(Seen::Recorded {
                        worker: *worker,
                        part: run.part_of(*worker),
                        index: *index,
                        recorder,
                    });
                }
                event.collect_into(collector);
            }
            Next::Idle => {}
            Next::Ended => {
                self.ended_at = Some(run.elapsed());
                return Flow::Ended;
            }
        }
        Flow::Going
    }

    fn workers(&self) -> usize {
        self.workers
    }

    fn interval(&self) -> Duration {
        self.interval
    }

    fn parts(&self) -> usize {
        self.parts
    }

    fn control(&self) -> Control {
        self.control.clone()
    }

    fn elapsed(&self) -> Duration {
        self.run
            .as_ref()
            .map_or_else(|| self.ended_at.unwrap_or_default(), |run| run.elapsed())
    }

    fn stop(&mut self) {
        if let Some(run) = &self.run {
            run.stop();
        }
    }

    fn finish(&mut self, warnings: &mut Vec<String>) {
        // A name looked up again while the run went (`--dns-ttl`) whose addresses changed:
        // the reader must know the load did not go to one set of backends throughout.
        if let Some(belier_engine::Endpoint::Addresses(list)) = self.run.as_ref().map(Run::addr) {
            let changes = list.changes();
            if changes > 0 {
                warnings.push(format!(
                    "the target's addresses changed {changes} time(s) during the run (looked up \
                     again every --dns-ttl); connections opened after a change went to the new \
                     addresses (the Backends table has every address used)"
                ));
            }
        }
        let crashed = self.run.take().map_or(0, Run::join);
        if crashed > 0 {
            warnings.push(format!(
                "{crashed} worker thread(s) crashed; the figures cover what they recorded before"
            ));
        }
    }

    fn elapsed_at_end(&self, _collector: &Collector) -> Duration {
        self.ended_at.unwrap_or_else(|| self.elapsed())
    }
}
