//! What the capacity tests share: targets of known capacity (belier's test server with a
//! fixed number of handlers, each holding a request for a service time), running
//! `belier capacity` one search at a time, ahead of the machine's other work when the tests
//! may ask for it, and checking its JSON against the schema.

use std::ffi::OsStr;
use std::io::Write as _;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use belier_testserver::{Config, Handlers, Server};
use serde_json::Value;

use crate::Binary;

/// belier's test server, `workers` handlers holding each request `service_ms`, its threads
/// ahead of the machine's other work, just below belier (see [`ahead`]).
pub fn target(workers: usize, service_ms: u64, queue: Option<usize>, shed: bool) -> Server {
    ahead(|| {
        Server::start(Config {
            threads: 2,
            // h2c for gRPC calls (the HTTP/1.1 tests never send the preface).
            http2: true,
            handlers: Some(Handlers {
                workers,
                service_time: Duration::from_millis(service_ms),
                queue,
                shed,
            }),
            ..Config::default()
        })
    })
    .expect("target starts")
}

/// Runs `f` with the calling thread under SCHED_FIFO at [`TARGET_PRIORITY`] when the tests may
/// give it, so that the threads it starts (a server's) inherit the policy; the thread's own
/// policy is put back after (a process it starts, such as the grpc-go server, inherits it as
/// well). A server at the normal policy on a host busy with builds and a `stress-ng` (load
/// 15-20 on two cores) answered its idle probe in 34-50 ms for a service time of 20 ms, and
/// failed a first step at half its capacity (p99 111 ms; 22 % refused by the shedding one):
/// its best second served was then no capacity any SLO allowed.
pub fn ahead<T>(f: impl FnOnce() -> T) -> T {
    let tid = std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse::<u32>().ok());
    let chrt = |args: &[&str], tid: u32| {
        Command::new("chrt")
            .args(args)
            .arg(tid.to_string())
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let raised = tid.filter(|&t| fifo() && chrt(&["-f", "-p", TARGET_PRIORITY], t));
    let out = f();
    if let Some(t) = raised {
        chrt(&["-o", "-p", "0"], t);
    }
    out
}

/// One search at a time: each loads the machine's two cores with a server and belier, and
/// belier's verdict on itself (its own lateness) is part of every step. (Two at a time, belier
/// ahead of other work, on a host busy with builds: the servers, at the normal policy, were
/// starved by each other's search; the shedding target was found at 0.760 of its best second
/// served, gunicorn at 0.846, the 4 × 20 ms target's confirmation failed at 155/s, p99 240 ms.)
pub static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The real-time priority belier's searches run at, when the tests may give it.
const FIFO_PRIORITY: &str = "10";

/// The real-time priority of the targets, below belier's: a target's thread running when
/// belier's wakes must not hold it (at the same priority, gunicorn's workers beside belier
/// once left it 86.5 ms late at p99 in a step at 0.95 of gunicorn's capacity).
pub const TARGET_PRIORITY: &str = "5";

/// Whether belier's searches run under `chrt -f` (decided once, said once on standard error).
fn fifo() -> bool {
    static FIFO: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FIFO.get_or_init(|| {
        // Only root may ask for a real-time policy; `chrt` runs `true` under it if it can.
        let can = Command::new("chrt")
            .args(["-f", FIFO_PRIORITY, "true"])
            .output()
            .is_ok_and(|o| o.status.success());
        let _ = writeln!(
            std::io::stderr(),
            "capacity tests: belier runs {}",
            if can {
                "under SCHED_FIFO (chrt -f 10), the targets just below it (5), ahead of the machine's other work"
            } else {
                "at normal priority (chrt -f is for root): on a loaded machine its own lateness may void steps"
            }
        );
        can
    })
}

/// A command for `belier`, under the real-time policy SCHED_FIFO when the tests may give it
/// (root): on a loaded host (five builds and a `stress-ng --cpu 1` on two cores, load 13) a
/// loop of 10 ms sleeps at the normal policy woke 36.8 ms late at p99 (22.7 ms at nice -20),
/// at SCHED_FIFO 0.5 ms. belier's verdict on itself allows 1 ms of lateness at p99 before it
/// refuses to judge a step, so without it a search on such a host ends on belier's own limit,
/// honestly, and says nothing of the server.
pub fn prioritized(belier: Binary) -> Command {
    prioritized_program(belier.path().as_os_str(), FIFO_PRIORITY)
}

/// A command for `program`, under SCHED_FIFO at `priority` when the tests may give it (see
/// [`prioritized`]).
pub fn prioritized_program(program: &OsStr, priority: &str) -> Command {
    if fifo() {
        let mut command = Command::new("chrt");
        command.args(["-f", priority]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// `belier capacity --output json` with `args`, one search at a time: its output and JSON
/// document (null when stdout is not JSON).
pub fn capacity(belier: Binary, args: &[&str]) -> (Output, Value) {
    let search = capacity_timed(belier, args);
    (search.out, search.doc)
}

/// One search's output, document (null when stdout is not JSON), how long belier ran (not
/// counting the wait for the searches before it), and how late this machine woke a thread
/// asked to sleep 10 ms while it ran (p99): the noise every timing in the search carries.
pub struct Search {
    pub out: Output,
    pub doc: Value,
    pub took: Duration,
    pub wake_late: Duration,
}

/// [`capacity`], timed, with the machine's wake-up lateness measured beside it (said on
/// standard error, so a failing test's output shows how loaded the machine was).
pub fn capacity_timed(belier: Binary, args: &[&str]) -> Search {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let noise = crate::noise::TimerNoise::start(Duration::from_millis(10));
    let began = Instant::now();
    let out = prioritized(belier)
        .arg("capacity")
        .args(["--output", "json", "--drain", "10s", "-t", "1"])
        .args(args)
        .output()
        .expect("belier runs");
    let took = began.elapsed();
    let wake_late = noise.stop(0.99);
    let _ = writeln!(
        std::io::stderr(),
        "capacity search: {:.1} s; this machine woke a 10 ms sleep {:.1} ms late (p99)",
        took.as_secs_f64(),
        wake_late.as_secs_f64() * 1e3
    );
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    Search {
        out,
        doc,
        took,
        wake_late,
    }
}

pub fn validate(doc: &Value) {
    let schema: Value = serde_json::from_str(belier_capacity::SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{doc:#}");
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `f` while sampling what the target's handlers served, every 50 ms; returns `f`'s
/// result and the most the target served in any second of it, per second (its own count).
pub fn best_served<T>(s: &Server, f: impl FnOnce() -> T) -> (T, f64) {
    let (result, samples) = sampling_served(s, f);
    let mut best: f64 = 0.0;
    for (i, &(t0, n0)) in samples.iter().enumerate() {
        let later = samples[i..]
            .iter()
            .find(|(t, _)| t.duration_since(t0) >= Duration::from_secs(1));
        if let Some(&(t1, n1)) = later {
            best = best.max((n1 - n0) as f64 / t1.duration_since(t0).as_secs_f64());
        }
    }
    (result, best)
}

/// Runs `f` while sampling what the target's handlers served, every 50 ms; returns `f`'s
/// result and what the target served per second, by its own count, over `last` ending at the
/// last sample taken while it was still serving (a search's last step, when that step ran
/// longer than `last`; a sample after the end would put idle time in the figure).
pub fn last_served<T>(s: &Server, last: Duration, f: impl FnOnce() -> T) -> (T, f64) {
    let (result, samples) = sampling_served(s, f);
    let total = samples.last().map_or(0, |l| l.1);
    // The last sample before the count reached its final value.
    let serving = samples.iter().rposition(|&(_, n)| n < total);
    let rate = serving.and_then(|end| {
        let (t1, n1) = samples[end];
        let begin = samples[..=end]
            .iter()
            .rposition(|&(t, _)| t1.duration_since(t) >= last)?;
        let (t0, n0) = samples[begin];
        Some((n1 - n0) as f64 / t1.duration_since(t0).as_secs_f64())
    });
    (result, rate.unwrap_or(0.0))
}

/// Runs `f` while sampling (instant, requests served) from the target every 50 ms.
fn sampling_served<T>(s: &Server, f: impl FnOnce() -> T) -> (T, Vec<(Instant, u64)>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut samples = Vec::new();
            while !done.load(Ordering::Relaxed) {
                let served = s.pool_stats().map_or(0, |p| p.served);
                samples.push((Instant::now(), served));
                std::thread::sleep(Duration::from_millis(50));
            }
            samples
        });
        // Set however `f` ends: a panic in it must not leave the sampler running forever.
        struct Done<'a>(&'a AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let result = {
            let _done = Done(&done);
            f()
        };
        (result, sampler.join().unwrap())
    })
}

/// The steps of a search's JSON document.
pub fn steps(doc: &Value) -> &Vec<Value> {
    doc["capacity"]["steps"].as_array().expect("steps")
}

/// No step served more than it sent (what a step serves of the last one's backlog would).
pub fn assert_goodput_within_sent(doc: &Value) {
    for s in steps(doc) {
        let (goodput, sent) = (
            s["goodput"].as_f64().unwrap(),
            s["achieved_rate"].as_f64().unwrap(),
        );
        assert!(
            goodput <= 1.02 * sent,
            "goodput {goodput} above 1.02 × sent {sent}: {s:#}"
        );
    }
}

/// The recovery verdict is the recovery step's own.
pub fn assert_recovery_is_its_step_s(doc: &Value) {
    let c = &doc["capacity"];
    let recovery = steps(doc).iter().rev().find(|s| s["kind"] == "recovery");
    if let Some(step) = recovery {
        assert_eq!(c["overload"]["recovered"], step["pass"], "{c:#}");
    }
}
