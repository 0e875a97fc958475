//! Loads started together (`start_together`): each runs its own schedule against the test
//! server, the server's counts per path equal what each load recorded, workers are told apart
//! by `Run::part_of`, and one stop or pause reaches every load.

mod common;

use std::time::{Duration, Instant};

use belier_engine::{start_together, Config, ControlError, Next, Profile, Run, StopWhen};
use belier_stats::{Collector, Recorder};
use common::{closed, config, lasting, open, recording_server};

/// Something to do to the run once, after a delay.
type Act<'a> = Option<(Duration, &'a dyn Fn(&Run))>;

/// Runs to the end, doing `act` on the way; returns each load's totals and the run's.
fn run_parts(configs: &[Config], act: Act<'_>) -> (Vec<Recorder>, Recorder, Duration) {
    let t0 = Instant::now();
    let run = start_together(configs).expect("runs start");
    assert_eq!(run.parts(), configs.len());
    let workers: usize = configs.iter().map(|c| c.threads).sum();
    assert_eq!(run.workers(), workers);
    let mut parts: Vec<Collector> = configs
        .iter()
        .map(|c| Collector::new(run.workers(), c.interval))
        .collect();
    let mut all = Collector::new(run.workers(), configs[0].interval);
    let mut pending = act;
    loop {
        if let Some((at, f)) = pending {
            if t0.elapsed() >= at {
                f(&run);
                pending = None;
            }
        }
        match run.next_event(Duration::from_millis(20)) {
            Next::Event(belier_engine::Event::Recorded {
                worker,
                index,
                recorder,
                gauges,
            }) => {
                parts[run.part_of(worker)].add(worker, index, &recorder, gauges);
                all.add(worker, index, &recorder, gauges);
            }
            Next::Event(event) => {
                if let belier_engine::Event::Finished { worker, elapsed } = &event {
                    for p in &mut parts {
                        p.finish_worker(*worker, *elapsed);
                    }
                }
                event.collect_into(&mut all);
            }
            Next::Idle => {}
            Next::Ended => break,
        }
    }
    assert_eq!(run.join(), 0, "no worker panicked");
    let totals = parts.into_iter().map(|c| c.finish().0).collect();
    (totals, all.finish().0, t0.elapsed())
}

fn paths(server: &belier_testserver::Server, path: &str) -> usize {
    server
        .recent_requests()
        .iter()
        .filter(|r| r.target == path)
        .count()
}

#[test]
fn each_load_keeps_its_schedule_and_its_own_figures() {
    let s = recording_server(10_000);
    let mut users = config(s.addr(), "/closed");
    users.load = closed(3.0);
    users.stop = StopWhen {
        requests: Some(300),
        duration: Some(Duration::from_secs(20)),
        iterations: None,
    };
    let mut arrivals = lasting(config(s.addr(), "/open"), Duration::from_secs(1));
    arrivals.load = open(Profile::constant(40.0), 10, None);
    arrivals.threads = 1;
    let (parts, all, _) = run_parts(&[users, arrivals], None);
    assert_eq!(paths(&s, "/closed"), 300);
    assert_eq!(paths(&s, "/open"), 40);
    assert_eq!(parts[0].requests(), 300);
    assert_eq!(parts[1].requests(), 40);
    assert_eq!(all.requests(), 340);
    assert_eq!(s.counts().requests, 340);
}

#[test]
fn one_stop_and_one_pause_reach_every_load() {
    let s = recording_server(10_000);
    let mut a = lasting(config(s.addr(), "/a"), Duration::from_secs(30));
    a.load = closed(2.0);
    let mut b = lasting(config(s.addr(), "/b"), Duration::from_secs(30));
    b.load = open(Profile::constant(50.0), 10, None);
    let stop: &dyn Fn(&Run) = &|run: &Run| {
        let control = run.control();
        assert_eq!(control.set_level(5.0), Err(ControlError::Several));
        control.pause();
        control.stop();
    };
    let (parts, _, elapsed) = run_parts(&[a, b], Some((Duration::from_millis(300), stop)));
    assert!(elapsed < Duration::from_secs(10), "stopped: {elapsed:?}");
    assert!(parts[0].requests() > 0 && parts[1].requests() > 0);
    assert_eq!(
        s.counts().requests,
        parts[0].requests() + parts[1].requests()
    );
}
