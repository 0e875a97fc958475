//! Steering a running test through its `Control`, against the test server: the open loop's
//! new rate holds from the moment it is set and the server counts exactly the arrivals of the
//! steered schedule; a pause sends nothing until the run resumes; a closed loop grows past the
//! connections it started with, and pauses too.

mod common;

use std::time::{Duration, Instant};

use belier_engine::{start, Arrivals, Control, Knob, Next, Profile};
use belier_stats::Collector;
use belier_testsupport::noise::{beside, Noise};
use common::{closed, config, lasting, open, recording_server};

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// Runs `config` to its end while another thread steers it with `steer` (given the handle and
/// the run's start); returns the totals and the per-interval series.
fn steered(
    config: &belier_engine::Config,
    steer: impl FnOnce(Control, Instant) + Send + 'static,
) -> (belier_stats::Recorder, belier_stats::Series, Control) {
    let run = start(config).expect("run starts");
    let control = run.control();
    let (handle, at) = (control.clone(), run.start_instant());
    let steering = std::thread::spawn(move || steer(handle, at));
    let mut collector = Collector::new(run.workers(), config.interval);
    loop {
        match run.next_event(Duration::from_millis(20)) {
            Next::Event(event) => event.collect_into(&mut collector),
            Next::Idle => {}
            Next::Ended => break,
        }
    }
    assert_eq!(run.join(), 0, "no worker panicked");
    steering.join().expect("the steering thread ends");
    let (totals, series) = collector.finish();
    (totals, series, control)
}

fn sleep_until(start: Instant, at: f64) {
    let when = start + secs(at);
    if let Some(d) = when.checked_duration_since(Instant::now()) {
        std::thread::sleep(d);
    }
}

/// The profile a run followed: its own, with every change of the handle applied.
fn followed(base: Profile, control: &Control) -> Profile {
    control
        .history()
        .into_iter()
        .fold(base, |p, (at, level)| p.steered(at, level))
}

#[test]
fn a_new_rate_holds_from_when_it_is_set() {
    let s = recording_server(2_000);
    let mut c = lasting(config(s.addr(), "/"), secs(3.0));
    c.load = open(Profile::constant(100.0), 100, None);
    let ((totals, series, control), noise) = beside(|| {
        steered(&c, |control, start| {
            assert_eq!(control.knob(), Knob::Rate);
            sleep_until(start, 1.0);
            control.set_level(300.0).unwrap();
        })
    });
    let history = control.history();
    assert_eq!(history.len(), 1);
    let at = history[0].0.as_secs_f64();
    assert!((0.98..1.2).contains(&at), "changed at {at}");
    // Exactly the steered schedule's arrivals: 100/s until the change, 300/s after it.
    let want = Arrivals::even_total(
        &followed(Profile::constant(100.0), &control),
        Some(secs(3.0)),
        None,
    )
    .unwrap();
    assert!((want as f64 - (100.0 * at + 300.0 * (3.0 - at))).abs() <= 1.0);
    assert_eq!(s.counts().requests, want);
    assert_eq!(totals.requests(), want);
    assert_eq!(totals.scheduled(), want);
    assert_eq!(totals.dropped(), 0);
    // Per second: 100, then 300 (the second with the change in between); an arrival is
    // counted in the interval its worker hands over, so one may cross a boundary on a quiet
    // machine, and on a loaded one those due within a wake-up's lateness of it (the hand-over
    // and the arrival are each a wake-up), as many as the noise measured beside the run
    // accounts for at 300/s.
    let straddle = noise.either_side(300.0);
    let rates: Vec<u64> = series.points().iter().map(|p| p.scheduled).collect();
    assert!(
        rates[0].abs_diff(100) <= straddle,
        "{rates:?} change at {at}, {straddle} may straddle"
    );
    assert!(
        rates[2].abs_diff(300) <= straddle,
        "{rates:?}, {straddle} may straddle"
    );
    assert_eq!(control.state().level, 300.0);
}

#[test]
fn a_paused_open_loop_sends_nothing_until_resumed() {
    let s = recording_server(2_000);
    let mut c = lasting(config(s.addr(), "/"), secs(3.0));
    c.load = open(Profile::constant(200.0), 100, None);
    let ((totals, _, control), noise) = beside(|| {
        steered(&c, |control, start| {
            sleep_until(start, 1.0);
            control.pause();
            assert!(control.state().paused);
            sleep_until(start, 2.0);
            control.resume();
        })
    });
    let history = control.history();
    let levels: Vec<f64> = history.iter().map(|&(_, l)| l).collect();
    assert_eq!(levels, [0.0, 200.0]);
    let paused = (history[1].0 - history[0].0).as_secs_f64();
    // The server saw a gap as long as the pause, and nothing was dropped for it: within
    // 50 ms, plus the latest wake-up measured beside the run (an arrival due just before the
    // pause and sent that late shortens the gap by as much: 164 ms once on a machine at a load
    // of 10).
    let mut arrived: Vec<Instant> = s.recent_requests().iter().map(|r| r.arrived).collect();
    arrived.sort();
    let longest = arrived
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64())
        .fold(0.0, f64::max);
    let within = 0.05 + noise.quantile(1.0).as_secs_f64();
    assert!(
        (paused - within..paused + within).contains(&longest),
        "pause {paused} s, longest gap {longest} s, within {within} s"
    );
    let want = Arrivals::even_total(
        &followed(Profile::constant(200.0), &control),
        Some(secs(3.0)),
        None,
    )
    .unwrap();
    assert!(
        (want as f64 - 200.0 * (3.0 - paused)).abs() <= 2.0,
        "{want}"
    );
    assert_eq!(s.counts().requests, want);
    assert_eq!(totals.requests(), want);
    assert_eq!(totals.dropped(), 0);
}

#[test]
fn a_closed_loop_grows_past_its_start_and_pauses() {
    // Every answer takes 20 ms: each connection carries about 50 requests a second.
    let s = recording_server(0);
    let mut c = lasting(config(s.addr(), "/?delay=20ms"), secs(4.0));
    c.load = closed(2.0);
    c.threads = 2;
    let ((totals, series, control), noise) = beside(|| {
        steered(&c, |control, start| {
            assert_eq!(control.knob(), Knob::Concurrency);
            assert!(control.set_level(1.5).is_err());
            sleep_until(start, 1.0);
            control.set_level(6.0).unwrap();
            sleep_until(start, 2.0);
            control.pause();
            sleep_until(start, 3.0);
            control.resume();
        })
    });
    assert_eq!(totals.errors(), 0);
    assert_eq!(s.counts().requests, totals.requests());
    // Whole seconds (the last interval holds what finished in the grace period after 4 s).
    let per_second: Vec<u64> = series
        .points()
        .iter()
        .filter(|p| p.offset < secs(4.0))
        .map(|p| p.requests)
        .collect();
    assert_eq!(per_second.len(), 4, "{per_second:?}");
    // ~100/s on 2 connections, ~300/s on 6, nothing while paused, ~300/s again.
    let (two, six) = (at_least(80, 2.0, &noise), at_least(230, 6.0, &noise));
    assert!((two..=105).contains(&per_second[0]), "{per_second:?}");
    assert!((six..=310).contains(&per_second[1]), "{per_second:?}");
    assert!(per_second[2] <= 12, "{per_second:?}");
    assert!((six..=310).contains(&per_second[3]), "{per_second:?}");
    // Six connections at once at most, each opened again after the pause closed it.
    let connections = s.counts().connections;
    assert!((6..=12).contains(&connections), "{connections}");
    assert_eq!(control.state().level, 6.0);
}

/// A user that requests `/?delay=20ms` once an iteration, and counts the users made.
struct OneRequest {
    sent: bool,
}

impl belier_engine::user::User for OneRequest {
    fn next(&mut self) -> belier_engine::user::Action {
        use belier_engine::user::{Action, Outgoing};
        self.sent = !self.sent;
        if !self.sent {
            return Action::EndIteration;
        }
        Action::Send(Outgoing {
            step: 0,
            origin: 0,
            method: "GET".into(),
            path_and_query: "/?delay=20ms".into(),
            headers: Vec::new(),
            body: Vec::new(),
            keep_body: false,
            timeout: None,
            stream: None,
        })
    }

    fn reply(
        &mut self,
        _: &belier_engine::user::Reply<'_>,
        _: &mut dyn FnMut(usize, bool),
    ) -> belier_engine::user::Verdict {
        belier_engine::user::Verdict { failed: false }
    }

    fn failed(&mut self, _: belier_engine::user::ErrorKind) -> belier_engine::user::Verdict {
        belier_engine::user::Verdict { failed: true }
    }
}

struct Made {
    steps: Vec<String>,
    made: std::sync::atomic::AtomicU64,
}

impl belier_engine::user::Users for Made {
    fn steps(&self) -> &[String] {
        &self.steps
    }

    fn checks(&self) -> &[String] {
        &[]
    }

    fn user(&self, _vu: u64) -> Box<dyn belier_engine::user::User> {
        self.made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Box::new(OneRequest { sent: false })
    }
}

#[test]
fn scripted_users_grow_too() {
    let s = recording_server(0);
    let mut c = lasting(config(s.addr(), "/"), secs(2.0));
    c.load = closed(2.0);
    let users = std::sync::Arc::new(Made {
        steps: vec!["one".into()],
        made: Default::default(),
    });
    c.users = Some(users.clone());
    let ((totals, series, _), noise) = beside(|| {
        steered(&c, |control, start| {
            sleep_until(start, 1.0);
            control.set_level(5.0).unwrap();
        })
    });
    assert_eq!(users.made.load(std::sync::atomic::Ordering::Relaxed), 5);
    assert_eq!(totals.errors(), 0);
    assert_eq!(s.counts().requests, totals.requests());
    let per_second: Vec<u64> = series
        .points()
        .iter()
        .filter(|p| p.offset < secs(2.0))
        .map(|p| p.requests)
        .collect();
    assert!(
        (at_least(80, 2.0, &noise)..=105).contains(&per_second[0]),
        "{per_second:?}"
    );
    assert!(
        (at_least(190, 5.0, &noise)..=255).contains(&per_second[1]),
        "{per_second:?}"
    );
}

/// The least of a second's requests over `connections` closed-loop connections against the
/// test server's 20 ms answers, `lowest` on a quiet machine (a cycle of 26 ms: the delay and
/// 6 ms of belier's and the server's own work), on this one as loaded as measured beside the
/// run: each cycle holds two wake-ups (the server's after its delay, belier's for the answer)
/// late by up to the noise's 99th percentile, and a stall past that costs each connection
/// the cycles it accounts for.
fn at_least(lowest: u64, connections: f64, noise: &Noise) -> u64 {
    let quiet = Duration::from_millis(26);
    let twice = 2 * noise.quantile(0.99);
    let stretched = lowest as f64 * quiet.as_secs_f64() / (quiet + twice).as_secs_f64();
    let stalled = connections * noise.missed(twice, quiet + twice) as f64;
    (stretched - stalled).max(0.0) as u64
}
