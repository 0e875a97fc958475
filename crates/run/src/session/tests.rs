//! The session's stop decision and the order it hands things to watchers, on a scripted
//! source (no engine, no clock).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};

use belier_engine::{Control, Load, Profile};
use belier_results::{Change, RunInfo};
use belier_stats::{Collector, Gauges, Recorder, Settled};

use super::*;
use crate::watcher::{Begin, Now, Seen, Stop, Watcher};

const INTERVAL: Duration = Duration::from_secs(1);

/// One poll of the script: intervals recorded (by the only worker), then what to say.
struct Step {
    recorded: Vec<u64>,
    flow: Flow,
}

struct Script {
    steps: VecDeque<Step>,
    control: Control,
    stops: Rc<RefCell<usize>>,
    polls: u32,
}

impl Script {
    fn new(steps: Vec<Step>) -> Script {
        let load = Load::Closed {
            connections: Profile::constant(1.0),
        };
        Script {
            steps: steps.into(),
            control: Control::detached(&load, Instant::now()),
            stops: Rc::default(),
            polls: 0,
        }
    }
}

impl Source for Script {
    fn next(&mut self, _: Duration, c: &mut Collector, seen: &mut dyn FnMut(Seen<'_>)) -> Flow {
        self.polls += 1;
        let Some(step) = self.steps.pop_front() else {
            return Flow::Ended;
        };
        for index in step.recorded {
            let recorder = Recorder::new();
            seen(Seen::Recorded {
                worker: 0,
                part: 0,
                index,
                recorder: &recorder,
            });
            c.add(0, index, &recorder, Gauges::default());
        }
        step.flow
    }
    fn workers(&self) -> usize {
        1
    }
    fn interval(&self) -> Duration {
        INTERVAL
    }
    fn control(&self) -> Control {
        self.control.clone()
    }
    fn elapsed(&self) -> Duration {
        INTERVAL * self.polls
    }
    fn stop(&mut self) {
        *self.stops.borrow_mut() += 1;
    }
    fn elapsed_at_end(&self, _: &Collector) -> Duration {
        self.elapsed()
    }
}

/// Writes down each call it gets, with its name, and asks to stop at the ticks it is told.
struct Log {
    name: &'static str,
    log: Rc<RefCell<Vec<String>>>,
    ticks: u32,
    stop_at: Option<(u32, Stop)>,
}

impl Log {
    fn new(name: &'static str, log: &Rc<RefCell<Vec<String>>>) -> Log {
        Log {
            name,
            log: Rc::clone(log),
            ticks: 0,
            stop_at: None,
        }
    }
    fn note(&self, what: String) {
        self.log.borrow_mut().push(format!("{} {what}", self.name));
    }
}

impl Watcher for Log {
    fn begin(&mut self, _: &Begin<'_>) {
        self.note("begin".into());
    }
    fn seen(&mut self, seen: &Seen<'_>, _: &mut Vec<String>) {
        if let Seen::Recorded { index, .. } = seen {
            self.note(format!("recorded {index}"));
        }
    }
    fn interval(&mut self, settled: &[Settled], _: &Collector, _: &mut Vec<String>) {
        let indexes: Vec<_> = settled.iter().map(|s| s.index.to_string()).collect();
        self.note(format!("interval {}", indexes.join(",")));
    }
    fn change(&mut self, change: &Change, _: &mut Vec<String>) {
        self.note(format!("change {}", change.level));
    }
    fn tick(&mut self, now: &Now<'_>) -> Option<Stop> {
        self.ticks += 1;
        self.note(format!("tick {:?}", now.stopping));
        self.stop_at
            .filter(|(at, _)| *at == self.ticks)
            .map(|(_, why)| why)
    }
    fn stopped(&mut self, _: &mut Vec<String>) {
        self.note("stopped".into());
    }
    fn end(&mut self, _: &Collector, _: &mut Vec<String>) {
        self.note("end".into());
    }
}

fn going(recorded: &[u64]) -> Step {
    Step {
        recorded: recorded.to_vec(),
        flow: Flow::Going,
    }
}

fn info() -> RunInfo {
    serde_json::from_str(
        r#"{"belier_version": "0", "url": "http://127.0.0.1:1/", "address": "127.0.0.1:1",
            "method": "GET", "connections": 1, "threads": 1, "keepalive": true,
            "requests": null, "duration_s": 1.0, "timeout_s": 1.0, "host_cores": 1,
            "started_at": "2026-01-01T00:00:00Z", "model": "closed", "rate": null,
            "stages": [], "ramp_up_s": null, "arrivals": null, "seed": null,
            "max_connections": null, "max_in_flight": null}"#,
    )
    .unwrap()
}

fn follow(source: &mut Script, watchers: &mut [&mut dyn Watcher]) -> Ran {
    let load = Load::Closed {
        connections: Profile::constant(1.0),
    };
    run(
        source,
        Changes::new(&load, false),
        &info(),
        Vec::new(),
        watchers,
    )
}

#[test]
fn watchers_are_handed_everything_in_their_order() {
    let log = Rc::default();
    let (mut a, mut b) = (Log::new("a", &log), Log::new("b", &log));
    let mut source = Script::new(vec![going(&[0]), going(&[1])]);
    let ran = follow(&mut source, &mut [&mut a, &mut b]);
    let log = log.borrow();
    let expected = [
        "a begin",
        "b begin",
        "a recorded 0",
        "b recorded 0",
        "a interval 0",
        "b interval 0",
        "a tick None",
        "b tick None",
        "a recorded 1",
        "b recorded 1",
        "a interval 1",
        "b interval 1",
        "a tick None",
        "b tick None",
        "a stopped",
        "b stopped",
        "a end",
        "b end",
    ];
    assert_eq!(*log, expected);
    assert_eq!(ran.series.points().len(), 2);
    assert!(!ran.asked && ran.stopped.is_none());
    assert_eq!(*source.stops.borrow(), 0);
}

#[test]
fn a_change_made_through_the_handle_goes_out_after_the_intervals() {
    let log = Rc::default();
    let mut a = Log::new("a", &log);
    let mut source = Script::new(vec![going(&[0]), going(&[1])]);
    source.control.set_level(3.0).unwrap();
    let ran = follow(&mut source, &mut [&mut a]);
    let log = log.borrow();
    assert_eq!(log[2..5], ["a interval 0", "a change 3", "a tick None"]);
    assert_eq!(ran.changes.len(), 1);
}

#[test]
fn the_first_reason_stops_the_load_once() {
    let log = Rc::default();
    let mut judge = Log::new("judge", &log);
    judge.stop_at = Some((1, Stop::Judged));
    let mut user = Log::new("user", &log);
    user.stop_at = Some((2, Stop::Asked));
    let mut source = Script::new(vec![going(&[0]), going(&[1]), going(&[2])]);
    let ran = follow(&mut source, &mut [&mut judge, &mut user]);
    assert_eq!(*source.stops.borrow(), 1, "one stop, at the first reason");
    assert_eq!(ran.stopped, Some(Stop::Judged));
    assert!(ran.asked, "the user's stop after a judged one still counts");
    // The watchers see the run stopping from the tick after the decision on.
    assert!(log
        .borrow()
        .contains(&"judge tick Some(Judged)".to_string()));
}

#[test]
fn the_source_may_ask_to_stop_before_the_watchers() {
    let log = Rc::default();
    let mut user = Log::new("user", &log);
    user.stop_at = Some((1, Stop::Asked));
    let broken = Step {
        recorded: vec![0],
        flow: Flow::Stop(Stop::Broken),
    };
    let mut source = Script::new(vec![broken, going(&[1])]);
    let ran = follow(&mut source, &mut [&mut user]);
    assert_eq!(*source.stops.borrow(), 1);
    assert_eq!(ran.stopped, Some(Stop::Broken));
    assert!(ran.asked);
}

#[test]
fn stopping_decides_on_the_first_reason_and_remembers_being_asked() {
    let mut s = Stopping::default();
    assert!(!s.decide([]));
    assert!(s.decide([Stop::Judged, Stop::Asked]));
    assert_eq!(s.reason(), Some(Stop::Judged));
    assert!(s.asked());
    assert!(!s.decide([Stop::Asked]), "the load stops once");
    let mut t = Stopping::default();
    assert!(t.decide([Stop::Asked]));
    assert!(!t.decide([Stop::Judged]));
    assert_eq!(t.reason(), Some(Stop::Asked));
}
