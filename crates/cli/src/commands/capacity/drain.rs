//! Waiting after a step until the server has served what the step left queued: a probe (one
//! request on a new connection, HTTP/1.1) goes to the back of whatever is left, so when a few
//! in a row answer at the latency probes had before the search, nothing is left. The decision
//! is `belier_capacity::drain`'s; this module sends the probes.

use std::time::{Duration, Instant};

use belier_capacity::drain::{self, Drain, DrainWatch, BASELINE_PROBES, PROBE_GAP};
use belier_engine::Config;

use crate::signals::Signals;

/// How the wait after a step went.
pub struct Waited {
    /// From the step's end until the server answered at its idle latency again, or the time
    /// waited in vain.
    pub after: Duration,
    /// Whether it did.
    pub drained: bool,
}

/// Probes of one target, against its idle latency.
pub struct Prober {
    config: Config,
    baseline: Duration,
    /// Whether the idle probes were answered with a status below 400: a probe must be
    /// answered alike (a queue full of work answers a fast 503 too).
    served: bool,
}

impl Prober {
    /// Probes the idle target for its baseline latency. `None` when it cannot be probed: its
    /// connections speak HTTP/2 (the probe speaks HTTP/1.1), or none of the probes was
    /// answered; the steps then follow each other without a wait.
    pub fn start(config: &Config) -> Option<Prober> {
        if config.http2 {
            return None;
        }
        let mut config = config.clone();
        config.timeout = config.timeout.min(Duration::from_secs(5));
        let answers: Vec<Option<(Duration, bool)>> = (0..BASELINE_PROBES)
            .map(|_| {
                let answer = answer(&config);
                std::thread::sleep(PROBE_GAP / 4);
                answer
            })
            .collect();
        let latencies: Vec<Option<Duration>> = answers
            .iter()
            .map(|a| a.map(|(latency, _)| latency))
            .collect();
        let baseline = drain::baseline(&latencies)?;
        let served = answers.iter().flatten().filter(|(_, ok)| *ok).count() * 2
            > answers.iter().flatten().count();
        Some(Prober {
            config,
            baseline,
            served,
        })
    }

    /// The idle latency.
    pub fn baseline(&self) -> Duration {
        self.baseline
    }

    /// Probes until the server answers at its idle latency again, for at most `longest`
    /// (cut short by Ctrl-C).
    pub fn wait(&self, longest: Duration, signals: &Signals) -> Waited {
        let started = Instant::now();
        let mut watch = DrainWatch::new(self.baseline, longest);
        loop {
            let at = started.elapsed();
            let mut config = self.config.clone();
            // A probe waits no longer than the wait has left.
            config.timeout = config
                .timeout
                .min(longest.saturating_sub(at))
                .max(Duration::from_millis(1));
            let latency = answer(&config)
                .filter(|&(_, served)| served == self.served)
                .map(|(latency, _)| latency);
            match watch.probe(at, latency) {
                Drain::Drained(after) => {
                    return Waited {
                        after,
                        drained: true,
                    }
                }
                Drain::NotDrained => break,
                Drain::Waiting if signals.stop_requested() => break,
                Drain::Waiting => std::thread::sleep(PROBE_GAP),
            }
        }
        Waited {
            after: started.elapsed(),
            drained: false,
        }
    }
}

/// One probe: its latency (connect to last byte) and whether its status was below 400;
/// `None` when no response came.
fn answer(config: &Config) -> Option<(Duration, bool)> {
    let probe = belier_engine::probe(config).ok()?;
    if probe.error.is_some() {
        return None;
    }
    Some((probe.phases.total, probe.status? < 400))
}
