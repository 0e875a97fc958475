//! Several loads at once: a plan whose scenarios each have a load of their own runs one load
//! per executor (a closed loop of users beside an open loop of arrivals, say), all started at
//! one instant and seen by the caller as one [`Run`].
//!
//! Each load keeps its own workers, schedule and steering, exactly as if it ran alone; they
//! share the start instant, so their intervals line up, and the stop signal, so that a stop
//! (Ctrl-C, a deadline of the caller's, a stop key) reaches every one. Their events arrive on
//! one channel, the workers numbered one load after the other ([`Run::part_of`] says whose a
//! worker is): a small thread per load renumbers them on the way, which leaves the single-load
//! path untouched.

use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime};

use tokio::sync::watch;

use crate::{launch, prepare, Config, Event, Run, StartError};

/// Starts every load of `configs` at one instant (the latest any of them needs to open its
/// connections ahead of its schedule). [`Run::control`] pauses, resumes and stops them all;
/// it refuses to set a level, which is each load's own. `configs` must not be empty.
pub fn start_together(configs: &[Config]) -> Result<Run, StartError> {
    if configs.is_empty() {
        return Err(StartError::Invalid("no load to start"));
    }
    // Every load is ready (resolved, runtimes built) before any starts sending.
    let readies = configs.iter().map(prepare).collect::<Result<Vec<_>, _>>()?;
    let lead = readies.iter().map(|r| r.lead).max().unwrap_or_default();
    let (addr, dns) = (readies[0].addr.clone(), readies[0].dns);
    let started_at = SystemTime::now() + lead;
    let start = Instant::now() + lead;
    let (stop, _) = watch::channel(false);
    let stop = Arc::new(stop);
    let (events_tx, events) = mpsc::channel();
    let mut threads = Vec::new();
    let mut controls = Vec::new();
    let mut part_starts = Vec::new();
    let mut workers = 0;
    for (config, ready) in configs.iter().zip(readies) {
        let part = match launch(config, ready, start, &stop) {
            Ok(part) => part,
            Err(e) => {
                let _ = stop.send(true);
                return Err(e);
            }
        };
        let first = workers;
        workers += part.threads.len();
        part_starts.push(first);
        threads.extend(part.threads);
        threads.push(forward(part.events, first, events_tx.clone())?);
        controls.push(part.control);
    }
    let mut controls = controls.into_iter();
    let control = controls
        .next()
        .map(|first| first.with_others(controls.collect()))
        .ok_or(StartError::Invalid("no load to start"))?;
    Ok(Run {
        events,
        stop,
        control,
        threads,
        addr,
        dns,
        started_at,
        started: start,
        part_starts,
    })
}

/// A thread that passes one load's events on, its workers numbered from `first`; it ends
/// when the load's last worker has gone.
fn forward(
    events: mpsc::Receiver<Event>,
    first: usize,
    to: Sender<Event>,
) -> Result<JoinHandle<()>, StartError> {
    std::thread::Builder::new()
        .name(format!("belier-events-{first}"))
        .spawn(move || {
            for event in events {
                let event = match event {
                    Event::Recorded {
                        worker,
                        index,
                        recorder,
                        gauges,
                    } => Event::Recorded {
                        worker: first + worker,
                        index,
                        recorder,
                        gauges,
                    },
                    Event::Samples { worker, samples } => Event::Samples {
                        worker: first + worker,
                        samples,
                    },
                    Event::Traced { worker, requests } => Event::Traced {
                        worker: first + worker,
                        requests,
                    },
                    Event::Finished { worker, elapsed } => Event::Finished {
                        worker: first + worker,
                        elapsed,
                    },
                };
                if to.send(event).is_err() {
                    return;
                }
            }
        })
        .map_err(StartError::Worker)
}
