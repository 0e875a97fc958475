//! `--save FILE`: the results file written as the run goes, each settled interval and each
//! change as soon as the session hands it out, the end line once the caller knows the end. A
//! write failure (disk full, closed pipe) stops the file with a warning; the run and its
//! report go on.

use std::io::Write;
use std::time::Duration;

use belier_results::{Change, RunInfo};
use belier_results::{End, Header, ResultsWriter, FORMAT, VERSION};
use belier_stats::{Collector, Settled};

use crate::watcher::{Seen, Watcher};

type Writer = ResultsWriter<Box<dyn Write>>;

/// The results file of a run.
pub struct ResultsFile {
    state: State,
    /// A merged run's file: its header waits for every worker's, and a failure says less.
    merged: bool,
}

enum State {
    /// Waiting for the run's information (a coordinated run's, once every header is in):
    /// what settled meanwhile is kept to be written then.
    Pending {
        out: Box<dyn Write>,
        name: String,
        interval: Duration,
        settled: Vec<Settled>,
        changes: Vec<Change>,
    },
    Open(Box<Writer>),
    Off,
}

/// The header of a run's results file.
pub fn header(name: &str, interval: Duration, run: &RunInfo) -> Header {
    Header {
        format: FORMAT.into(),
        version: VERSION,
        name: name.to_string(),
        interval_s: interval.as_secs_f64(),
        run: run.clone(),
    }
}

impl ResultsFile {
    /// The file of a run whose information is known: the header is written to `out` now (a
    /// failure is a warning, and no file).
    pub fn new(out: Box<dyn Write>, header: &Header, warnings: &mut Vec<String>) -> ResultsFile {
        let state = match ResultsWriter::new(out, header) {
            Ok(w) => State::Open(Box::new(w)),
            Err(e) => {
                warnings.push(format!("results file not written: {e}"));
                State::Off
            }
        };
        ResultsFile {
            state,
            merged: false,
        }
    }

    /// The file of a coordinated run, opened before the start (so that a path that cannot be
    /// written stops nothing that was sent), its header written to `out` once every worker's
    /// is in ([`Seen::Info`]).
    pub fn merged(out: Box<dyn Write>, name: String, interval: Duration) -> ResultsFile {
        ResultsFile {
            state: State::Pending {
                out,
                name,
                interval,
                settled: Vec::new(),
                changes: Vec::new(),
            },
            merged: true,
        }
    }

    /// Writes the end line, which says what the caller made of the run.
    pub fn finish(self, end: &End, warnings: &mut Vec<String>) {
        if let State::Open(w) = self.state {
            if let Err(e) = w.end(end) {
                warnings.push(format!(
                    "results file: the end line could not be written: {e}"
                ));
            }
        }
    }

    /// Opens a pending file with the run's information, and writes what waited.
    fn open(&mut self, info: &RunInfo, warnings: &mut Vec<String>) {
        let State::Pending {
            out,
            name,
            interval,
            settled,
            changes,
        } = std::mem::replace(&mut self.state, State::Off)
        else {
            return;
        };
        let header = header(&name, interval, info);
        match ResultsWriter::new(out, &header) {
            Ok(w) => self.state = State::Open(Box::new(w)),
            Err(e) => {
                warnings.push(format!("results file not written: {e}"));
                return;
            }
        }
        self.intervals(&settled, warnings);
        for c in &changes {
            self.change(c, warnings);
        }
    }

    fn intervals(&mut self, settled: &[Settled], warnings: &mut Vec<String>) {
        let State::Open(w) = &mut self.state else {
            return;
        };
        for s in settled {
            if let Err(e) = w.interval(s) {
                warnings.push(if self.merged {
                    format!("results file: writing stopped: {e}")
                } else {
                    format!(
                        "results file: writing stopped at interval {}: {e}; this report is complete",
                        s.index
                    )
                });
                self.state = State::Off;
                return;
            }
        }
    }
}

impl Watcher for ResultsFile {
    fn seen(&mut self, seen: &Seen<'_>, warnings: &mut Vec<String>) {
        if let Seen::Info(info) = seen {
            self.open(info, warnings);
        }
    }

    fn interval(&mut self, settled: &[Settled], _: &Collector, warnings: &mut Vec<String>) {
        if let State::Pending { settled: kept, .. } = &mut self.state {
            kept.extend_from_slice(settled);
            return;
        }
        self.intervals(settled, warnings);
    }

    fn change(&mut self, change: &Change, warnings: &mut Vec<String>) {
        match &mut self.state {
            State::Pending { changes, .. } => changes.push(*change),
            State::Open(w) => {
                if let Err(e) = w.change(change) {
                    warnings.push(if self.merged {
                        format!("results file: writing stopped: {e}")
                    } else {
                        format!(
                            "results file: writing stopped at the change at {} s: {e}; this report is complete",
                            change.at_s
                        )
                    });
                    self.state = State::Off;
                }
            }
            State::Off => {}
        }
    }
}
