//! Distributed runs through the real binary: a coordinator (`--spawn`, `--workers`) and
//! `belier worker` processes on the loopback (and in network namespaces of their own), their
//! load counted by the built-in target, their merged report checked against the workers' own
//! results files.

#![allow(clippy::print_stderr)]

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{ChildStderr, Command};
use std::time::{Duration, Instant};

use belier_testserver::{Config, Server};
use belier_testsupport::net::{free_port, local_ports};
use belier_testsupport::netns::Namespace;
use belier_testsupport::nginx as nginx_support;
use belier_testsupport::noise::TimerNoise;
use belier_testsupport::temp_dir;
use belier_testsupport::Belier;
use nginx_support::{Nginx, Options};
use serde_json::Value;

belier_testsupport::binary!();

/// The tests that load the machine run one at a time: the spawn test measures how close
/// together the workers start, which other tests' load on two cores would blur.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// `belier report FILES --type json`.
fn report(files: &[PathBuf]) -> Value {
    let out = belier()
        .args(["report", "--type", "json"])
        .args(files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&String::from_utf8_lossy(&out.stdout))
}

/// The spawned workers' process ids, in order, from the coordinator's stderr.
fn worker_pids(coordinator: &mut Belier, n: usize) -> Vec<u32> {
    (1..=n)
        .map(|i| {
            let line = coordinator.wait_for(&format!("belier: worker {i} at "));
            let pid = line.rsplit_once("(pid ").unwrap().1.trim_end_matches(')');
            pid.parse().unwrap()
        })
        .collect()
}

/// A coordinator of `n` spawned workers running `args` against `server`, its merged results
/// file saved to `merged` and the workers' own in `own`; returned once the workers started,
/// with their process ids.
fn spawned(
    server: &Server,
    args: &[&str],
    n: usize,
    merged: &Path,
    own: &Path,
) -> (Belier, Vec<u32>) {
    let n_text = n.to_string();
    let mut all = vec![server.url("/")];
    all.extend(args.iter().map(ToString::to_string));
    all.extend(["--spawn", &n_text, "--output", "json", "--save"].map(String::from));
    all.push(merged.display().to_string());
    all.push("--worker-results".into());
    all.push(own.display().to_string());
    let mut coordinator = BELIER.spawn(&all.iter().map(String::as_str).collect::<Vec<_>>());
    let pids = worker_pids(&mut coordinator, n);
    coordinator.wait_for("workers started together");
    (coordinator, pids)
}

#[test]
fn a_worker_gone_silent_is_lost_after_two_intervals_and_a_second() {
    let _serial = one_at_a_time();
    let server = Server::start(Config {
        threads: 2,
        ..Config::default()
    })
    .unwrap();
    let mut coordinator = BELIER.spawn(&[
        &server.url("/"),
        "--rate",
        "100",
        "-z",
        "10s",
        "--spawn",
        "2",
        "--on-worker-loss",
        "continue",
        "--output",
        "json",
    ]);
    let pids = worker_pids(&mut coordinator, 2);
    coordinator.wait_for("workers started together");
    std::thread::sleep(Duration::from_secs(2));
    // Frozen, not dead: its connection stays open, it just sends nothing.
    let stop = |signal: &str| {
        let ok = Command::new("kill")
            .args([signal, &pids[0].to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {signal}");
    };
    stop("-STOP");
    let lost = coordinator.wait_for("lost at");
    stop("-CONT");
    assert!(lost.contains("worker 1 (127.0.0.1:"), "{lost}");
    assert!(lost.contains("silent for more than 3.0 s"), "{lost}");
    // --on-worker-loss continue: the other worker runs to the end, and the run exits 0.
    let (code, stdout, stderr) = coordinator.finish();
    assert_eq!(code, Some(0), "{stderr}");
    let report = json(&stdout);
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("incomplete: worker 1"), "{warnings}");
    let requests = report["summary"]["requests"].as_u64().unwrap();
    // Worker 2's 10 s at 50/s, and worker 1's intervals before it froze (at least its first).
    // 10 s, not the 20 it was: frozen 2 s in and lost 3 s later, the loss is seen with 5 s
    // of the run left for the other worker to carry on through.
    assert!(requests >= 500 + 50, "{requests}");
}

#[test]
fn a_wrong_token_is_refused_and_nothing_is_sent() {
    let server = Server::start(Config::default()).unwrap();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut worker = BELIER.spawn(&["worker", "--listen", &listen, "--token", "right"]);
    worker.wait_for("runs' results in");
    let out = belier()
        .args([&server.url("/"), "-n", "10", "--workers", &listen])
        .args(["--worker-token", "wrong"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("worker {listen} refused the token (401)")),
        "{stderr}"
    );
    assert_eq!(server.counts().requests, 0);
}

#[test]
fn a_worker_that_cannot_start_fails_the_start_for_all() {
    let server = Server::start(Config::default()).unwrap();
    let (a, b) = (free_port(), free_port());
    let (a, b) = (format!("127.0.0.1:{a}"), format!("127.0.0.1:{b}"));
    let mut open = BELIER.spawn(&["worker", "--listen", &a, "--token", "ours"]);
    open.wait_for("runs' results in");
    let mut guarded = BELIER.spawn(&["worker", "--listen", &b, "--token", "theirs"]);
    guarded.wait_for("runs' results in");
    let out = belier()
        .args([&server.url("/"), "--rate", "100", "-z", "2s"])
        .args(["--workers", &format!("{a},{b}"), "--worker-token", "ours"])
        .env_remove("BELIER_WORKER_TOKEN")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("worker {b} refused")), "{stderr}");
    assert_eq!(server.counts().requests, 0, "no worker sent anything");
}

#[test]
fn a_worker_beyond_the_loopback_needs_a_token() {
    let out = belier()
        .args(["worker", "--listen", "0.0.0.0:0"])
        .env_remove("BELIER_WORKER_TOKEN")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs a token"), "{stderr}");
    // A short token is one that can be guessed, whether given by flag or environment.
    let out = belier()
        .args([
            "worker",
            "--listen",
            "0.0.0.0:0",
            "--token",
            "fifteen-chars-x",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--token <TOKEN> off the loopback a token is at least 16 characters"),
        "{stderr}"
    );
    let out = belier()
        .args(["worker", "--listen", "0.0.0.0:0"])
        .env("BELIER_WORKER_TOKEN", "x")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("BELIER_WORKER_TOKEN off the loopback"),
        "{stderr}"
    );
    // 'generate' makes one and says it once.
    let mut worker = BELIER.spawn(&["worker", "--listen", "0.0.0.0:0", "--token", "generate"]);
    let line = worker.wait_for("belier worker: token ");
    let token = line.split_whitespace().nth(3).unwrap();
    assert!(
        token.len() >= 32 && token.bytes().all(|b| b.is_ascii_hexdigit()),
        "{line}"
    );
}

#[test]
fn a_worker_with_no_token_makes_one_and_a_coordinator_without_it_is_refused() {
    let server = Server::start(Config::default()).unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let mut worker = BELIER.spawn(&["worker", "--listen", &listen]);
    let line = worker.wait_for("belier worker: token ");
    let token = line.split_whitespace().nth(3).unwrap().to_string();
    let without = belier()
        .args([&server.url("/"), "-n", "5", "--workers", &listen])
        .env_remove("BELIER_WORKER_TOKEN")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&without.stderr);
    assert_eq!(without.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs the workers' token"), "{stderr}");
    let with = belier()
        .args([&server.url("/"), "-n", "5", "--workers", &listen])
        .env("BELIER_WORKER_TOKEN", &token)
        .output()
        .unwrap();
    assert_eq!(
        with.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    assert_eq!(
        server.counts().requests,
        5,
        "only the coordinator with the token ran"
    );
}

#[test]
fn spawning_no_worker_is_refused() {
    let out = belier()
        .args(["http://127.0.0.1:9/", "-n", "1", "--spawn", "0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("'--spawn <N>': must be 1 to 256"),
        "{stderr}"
    );
}

#[test]
fn four_spawned_workers_send_the_one_machine_run_and_merge_exactly() {
    let _serial = one_at_a_time();
    let server = Server::start(Config {
        threads: 2,
        record_requests: 25_000,
        ..Config::default()
    })
    .unwrap();
    let dir = temp_dir("spawn4");
    let (merged, own) = (dir.join("merged.jsonl"), dir.join("workers"));
    let noise = TimerNoise::start(Duration::from_millis(10));
    // 3 s (it was 5): the shards, the merge and the start together show in the first.
    let (coordinator, pids) = spawned(&server, &["--rate", "4000", "-z", "3s"], 4, &merged, &own);
    // Mid-run, each worker's connections: their ports tell the target's connections apart.
    std::thread::sleep(Duration::from_millis(1_500));
    let ports: Vec<HashSet<u16>> = pids.iter().map(|&p| local_ports(p)).collect();
    let (code, stdout, stderr) = coordinator.finish();
    let noise = noise.finish();
    assert_eq!(code, Some(0), "{stderr}");

    // The four shards' schedules make the one-machine run's exactly, and every arrival was
    // sent or counted dropped. Dropped are those still waiting for a connection at the end:
    // at most 0.5 %, and the arrivals of the longest wake-up the machine made late beside the
    // run (445 of 20,000 at a load of 14, two compilers, a browser and a CPU-bound process).
    let sent = server.counts().requests;
    let live = json(&stdout);
    assert_eq!(live["summary"]["requests"], sent, "{stderr}");
    assert_eq!(live["summary"]["errors"], 0);
    assert_eq!(live["open_loop"]["scheduled"], 12_000);
    let dropped = live["open_loop"]["dropped"].as_u64().unwrap();
    assert_eq!(sent + dropped, 12_000);
    let worst = noise.quantile(1.0);
    let excused = (4_000.0 * worst.as_secs_f64()).ceil() as u64;
    assert!(
        dropped <= 60 + excused,
        "the target counted {sent} requests, not 12,000 less 0.5 % and the {excused} due in \
         the machine's longest stall ({worst:?})"
    );

    // The merged report is the workers' own files merged, to the microsecond.
    let files: Vec<PathBuf> = (1..=4)
        .map(|i| own.join(format!("worker-{i}.jsonl")))
        .collect();
    let theirs = report(&files);
    let saved = report(std::slice::from_ref(&merged));
    for r in [&theirs, &saved] {
        assert_eq!(r["summary"]["requests"], sent);
        assert_eq!(
            r["latency_us"]["percentiles"],
            live["latency_us"]["percentiles"]
        );
        assert_eq!(
            r["latency_uncorrected_us"]["percentiles"],
            live["latency_uncorrected_us"]["percentiles"]
        );
    }

    // Each worker's first request, as the target saw it: within 5 ms of the others'.
    let requests = server.recent_requests();
    assert_eq!(requests.len() as u64, sent, "every request recorded");
    let mut first: BTreeMap<usize, Instant> = BTreeMap::new();
    for r in &requests {
        let port = server.peer(r.connection).map(|p: SocketAddr| p.port());
        if let Some(w) = ports
            .iter()
            .position(|set| port.is_some_and(|p| set.contains(&p)))
        {
            let at = first.entry(w).or_insert(r.arrived);
            *at = (*at).min(r.arrived);
        }
    }
    assert_eq!(first.len(), 4, "each worker's connections found: {ports:?}");
    let (earliest, latest) = (first.values().min().unwrap(), first.values().max().unwrap());
    let spread = latest.duration_since(*earliest);
    eprintln!("first requests of the 4 workers within {spread:?}");
    // Within 5 ms, and the latest wake-up measured beside the run: each worker's first is a
    // wake-up at the instant agreed, and the spread is the latest of four of them.
    assert!(
        spread <= Duration::from_millis(5) + worst,
        "the workers' first requests are {spread:?} apart, the machine's wake-ups up to \
         {worst:?} late"
    );
}

#[test]
fn a_worker_killed_mid_run_is_named_and_what_it_sent_is_kept() {
    let _serial = one_at_a_time();
    let server = Server::start(Config {
        threads: 2,
        ..Config::default()
    })
    .unwrap();
    let dir = temp_dir("kill");
    let (merged, own) = (dir.join("merged.jsonl"), dir.join("workers"));
    let noise = TimerNoise::start(Duration::from_millis(10));
    let (mut coordinator, pids) =
        spawned(&server, &["--rate", "300", "-z", "20s"], 3, &merged, &own);
    std::thread::sleep(Duration::from_secs(2));
    let noise = noise.finish();
    let killed = Instant::now();
    let ok = Command::new("kill")
        .args(["-9", &pids[1].to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -9");
    let lost = coordinator.wait_for("lost at");
    let (code, stdout, stderr) = coordinator.finish();
    let took = killed.elapsed();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        took <= Duration::from_secs(2),
        "the coordinator exited {took:?} after the loss"
    );
    assert!(lost.contains("worker 2 (127.0.0.1:"), "{lost}");

    let live = json(&stdout);
    let warnings = live["warnings"].to_string();
    assert!(
        warnings.contains("incomplete: worker 2 (127.0.0.1:"),
        "{warnings}"
    );
    // The others' data and the lost worker's intervals received so far are all in the report.
    let files: Vec<PathBuf> = (1..=3)
        .map(|i| own.join(format!("worker-{i}.jsonl")))
        .collect();
    let theirs = report(&files);
    let requests = live["summary"]["requests"].as_u64().unwrap();
    assert_eq!(theirs["summary"]["requests"], requests);
    let from_lost = report(&files[1..2])["summary"]["requests"]
        .as_u64()
        .unwrap();
    // At least its first interval: 100 requests, less those that an interval's end may count
    // on its other side (one on a quiet machine, more as measured beside the run).
    let straddle = noise.either_side(100.0);
    assert!(
        from_lost + straddle >= 100,
        "the lost worker's first seconds: {from_lost}, {straddle} may straddle"
    );
    assert!(requests > from_lost, "and the others'");
    assert_eq!(report(&[merged])["summary"]["requests"], requests);
}

/// Waits for `child`'s stderr line containing `text`, and returns it with the reader.
fn stderr_line(child: &mut std::process::Child, text: &str) -> (String, BufReader<ChildStderr>) {
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "no {text:?} on stderr"
        );
        if line.contains(text) {
            return (line, reader);
        }
    }
}

/// The namespaced workers' token: off the loopback, at least 16 characters.
const NS_TOKEN: &str = "s3cret-namespaced-workers";

#[test]
fn workers_in_their_own_network_namespaces_take_work_with_the_token() {
    let _serial = one_at_a_time();
    if !Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n")
    {
        let why = "network namespaces need root";
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "{why}, and CI must run this test"
        );
        eprintln!("skipped: {why}");
        return;
    }
    let Some(a) = Namespace::linked(1) else {
        return;
    };
    let Some(b) = Namespace::linked(2) else {
        return;
    };
    let mut children = Vec::new();
    let mut addrs = Vec::new();
    // In each namespace its own target on its loopback (the load stays on a loopback), and a
    // worker on the namespace's end of the link, with a token.
    for (n, ns) in [(1, &a), (2, &b)] {
        let mut target = ns.belier(&BELIER, &["target", "--listen", "127.0.0.1:18080"]);
        let (_, target_err) = stderr_line(&mut target, "listening on");
        let addr = format!("10.213.{n}.2:7979");
        let mut worker = ns.belier(&BELIER, &["worker", "--listen", &addr, "--token", NS_TOKEN]);
        let (_, worker_err) = stderr_line(&mut worker, "runs' results in");
        children.push((target, target_err, worker, worker_err));
        addrs.push(addr);
    }
    let workers = addrs.join(",");
    let refused = belier()
        .args(["http://127.0.0.1:18080/", "-n", "10", "--workers", &workers])
        .args(["--worker-token", "wrong"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("refused the token (401)"), "{stderr}");

    let out = belier()
        .args([
            "http://127.0.0.1:18080/",
            "--rate",
            "200",
            "-z",
            "2s",
            "--output",
            "json",
        ])
        .args(["--workers", &workers, "--worker-token", NS_TOKEN])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report = json(&String::from_utf8_lossy(&out.stdout));
    // What the two targets served, from their own count as they stop.
    let mut served = 0;
    for (mut target, target_err, mut worker, _) in children {
        let _ = worker.kill();
        let _ = worker.wait();
        let ok = Command::new("kill")
            .args(["-INT", &target.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -INT");
        let line = target_err
            .lines()
            .map_while(Result::ok)
            .find(|l| l.contains("served"))
            .expect("the target's count");
        let _ = target.wait();
        let n: u64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
        assert!(n > 0, "each namespace's target was loaded: {line}");
        served += n;
    }
    assert_eq!(served, 400, "200/s for 2 s over the two workers");
    assert_eq!(report["summary"]["requests"], served);
}
/// Peak memory (VmHWM) of process `pid`, kB, while it lives.
fn peak_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn fifty_thousand_pausing_users_over_ten_workers() {
    let _serial = one_at_a_time();
    // HTTP/2 (100 users a connection): users on a hundredth as many connections, which one
    // nginx and this machine's ports take. The users ramp up over 10 s, so that the iterations start at
    // an even rate rather than all at once.
    let Some(nginx) = Nginx::start_with(Options {
        h2c: true,
        ..Options::default()
    }) else {
        return;
    };
    let dir = temp_dir("users");
    let plan = dir.join("plan.yaml");
    // The issue asks for 100,000 users. On the 2-core development machine, with debug builds,
    // one worker process holding 10,000 such users takes 22 % of a core, so ten of them need
    // more than the machine has: 100,000 users sent 69 % to 86 % of their requests in two
    // runs, 75,000 sent 80 %; 50,000 send 99.97 %. So this test runs 50,000 (5,000 a worker).
    let users = 50_000u64;
    std::fs::write(
        &plan,
        format!(
            "target: {}\nhttp2: true\nmax_streams: 100\n\
             load:\n  stages: ['10s:{users}', '20s:{users}']\n  iterations: {users}\n\
             scenarios:\n  - name: idle\n    steps:\n      - get: /\n      - pause: 10s\n      \
             - get: /\n",
            nginx.h2c_url("").trim_end_matches('/')
        ),
    )
    .unwrap();
    let before = nginx.stub_status().requests;
    let mut coordinator = BELIER.spawn(&[
        "run",
        plan.to_str().unwrap(),
        "--spawn",
        "10",
        "--output",
        "json",
    ]);
    let pids = worker_pids(&mut coordinator, 10);
    coordinator.wait_for("workers started together");
    let mut peaks = vec![0u64; pids.len()];
    let deadline = Instant::now() + Duration::from_secs(21);
    while Instant::now() < deadline {
        for (peak, &pid) in peaks.iter_mut().zip(&pids) {
            *peak = (*peak).max(peak_kb(pid).unwrap_or(0));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let (code, stdout, stderr) = coordinator.finish();
    assert_eq!(code, Some(0), "{stderr}");
    // This probe is one request more.
    let served = nginx.stub_status().requests - before - 1;
    let report = json(&stdout);
    eprintln!(
        "{users} users over 10 workers: {served} requests in 20 s; workers' peak memory (VmHWM): {:?} MiB",
        peaks.iter().map(|kb| kb / 1024).collect::<Vec<_>>()
    );
    // The users arrive evenly over the first 10 s, and each sends again 10 s after its first
    // request: an iteration a user, 2 requests each. Counted rather than timed: bounded by
    // the 20 s the ramp and one pause take, the second requests of the last users fell either
    // side of the end once the machine was loaded (the iterations budget ends the run once
    // they are done; the stages' 30 s only bound it).
    let expected = 2 * users;
    assert_eq!(served, expected, "nginx served {served} requests");
    assert_eq!(report["summary"]["requests"], served);
}

#[test]
fn the_web_console_of_a_coordinator_steers_every_worker() {
    let _serial = one_at_a_time();
    let server = Server::start(Config {
        threads: 2,
        record_requests: 10_000,
        ..Config::default()
    })
    .unwrap();
    let dir = temp_dir("steer");
    let (merged, own) = (dir.join("merged.jsonl"), dir.join("workers"));
    let port = free_port();
    let web = format!("--web=127.0.0.1:{port}");
    let args = ["--rate", "200", "-z", "6s", &web, "--web-linger", "0s"];
    let (coordinator, _) = spawned(&server, &args, 2, &merged, &own);
    // The workers start 0.5 s after they were told; the change goes 3 s into the run.
    std::thread::sleep(Duration::from_millis(3_000));
    // A rate beyond what --rate accepts is refused by the coordinator, and no worker hears of it.
    let refused = ureq::post(&format!("http://127.0.0.1:{port}/api/run/rate"))
        .config()
        .http_status_as_error(false)
        .build()
        .send(r#"{"rate": 1e12}"#)
        .unwrap();
    assert_eq!(refused.status().as_u16(), 400);
    let why = refused.into_body().read_to_string().unwrap();
    assert!(why.contains("limit of 10000000"), "{why}");
    std::thread::sleep(Duration::from_millis(500));
    let steered_at = Instant::now();
    let answer = ureq::post(&format!("http://127.0.0.1:{port}/api/run/rate"))
        .send(r#"{"rate": 400}"#)
        .unwrap_or_else(|e| panic!("the console refused the change: {e}"));
    assert_eq!(answer.status().as_u16(), 200);
    let (code, stdout, stderr) = coordinator.finish();
    assert_eq!(code, Some(0), "{stderr}");

    // Each worker's clock as measured, in the report and in the merged file.
    let saved = report(std::slice::from_ref(&merged));
    for r in [&json(&stdout), &saved] {
        let workers = r["run"]["workers"].as_array().expect("the workers' clocks");
        let shards: Vec<&str> = workers
            .iter()
            .map(|w| w["shard"].as_str().unwrap())
            .collect();
        assert_eq!(shards, ["1/2", "2/2"]);
        for w in workers {
            assert!(w["address"].as_str().unwrap().starts_with("127.0.0.1:"));
            let rtt = w["rtt_ms"].as_f64().unwrap();
            assert!(rtt > 0.0 && rtt < 50.0, "round trip {rtt} ms");
            assert_eq!(w["start_skew_ms"].as_f64().unwrap(), rtt / 2.0);
            // One machine, one clock: the offset is within the round trip.
            assert!(w["offset_ms"].as_f64().unwrap().abs() <= rtt, "{w}");
        }
    }
    let text = belier()
        .args(["report", merged.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("worker 2/2 at 127.0.0.1:") && text.contains("round trip"),
        "{text}"
    );
    // The merged file is the whole run, not one worker's shard.
    assert!(!text.contains("of a run split in"), "{text}");

    let two = Duration::from_secs(2);
    let requests = server.recent_requests();
    let count = |from: Instant, to: Instant| {
        requests
            .iter()
            .filter(|r| r.arrived >= from && r.arrived < to)
            .count() as f64
    };
    let before = count(steered_at - two, steered_at);
    let after = count(steered_at, steered_at + two);
    eprintln!("requests in the 2 s before the change: {before}, after: {after}");
    assert!(
        (before - 400.0).abs() <= 12.0,
        "{before} requests in the 2 s before the change, not 400 ± 3 %"
    );
    assert!(
        (after - 800.0).abs() <= 24.0,
        "{after} requests in the 2 s after the change, not 800 ± 3 %"
    );

    let changes: Vec<Value> = std::fs::read_to_string(&merged)
        .unwrap()
        .lines()
        .map(json)
        .filter_map(|line| line.get("change").cloned())
        .collect();
    assert_eq!(changes.len(), 1, "one change line: {changes:?}");
    assert_eq!(changes[0]["what"], "rate");
    assert_eq!(changes[0]["from"], 200.0);
    assert_eq!(changes[0]["level"], 400.0);
    let at = changes[0]["at_s"].as_f64().unwrap();
    assert!((2.9..3.3).contains(&at), "the change at {at} s");
}

/// A coordinator has the watchers a run on one machine has: its exporter (`--metrics-listen`)
/// serves the merged run, whose request counter is exactly what the target counted from every
/// worker, and its report carries the workers' host readings. `--raw` is refused (exit 2,
/// naming the flag) before any worker starts: each request's row stays on its worker.
#[test]
fn a_coordinators_exporter_counts_every_workers_requests_and_raw_is_refused() {
    let _serial = one_at_a_time();
    let server = Server::start(Config::default()).unwrap();
    let url = server.url("/");
    let dir = temp_dir("spawn-exporter");
    let raw = dir.join("raw.csv").display().to_string();
    let out = belier()
        .args([&url, "-n", "10", "--spawn", "2", "--raw", &raw])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--raw"), "{stderr}");
    assert!(
        !stderr.contains("worker 1 at"),
        "no worker started: {stderr}"
    );
    assert_eq!(server.counts().requests, 0);

    let listen = format!("127.0.0.1:{}", free_port());
    let mut coordinator = BELIER.spawn(&[
        &url,
        "-n",
        "600",
        "-c",
        "4",
        "--spawn",
        "2",
        "--output",
        "json",
        "--metrics-listen",
        &listen,
        "--metrics-linger",
        "60s",
    ]);
    coordinator.wait_for("serving the final metrics");
    let page = ureq::get(&format!("http://{listen}/metrics"))
        .call()
        .expect("the coordinator's exporter answers")
        .body_mut()
        .read_to_string()
        .unwrap();
    // Ctrl-C ends the linger; the run itself was not interrupted.
    coordinator.interrupt();
    let (code, stdout, stderr) = coordinator.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(server.counts().requests, 600);
    let exported: f64 = page
        .lines()
        .filter(|l| l.starts_with("belier_requests_total{"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<f64>().unwrap())
        .sum();
    assert_eq!(exported, 600.0, "{page}");
    assert!(page.contains("belier_run_ended 1"), "{page}");
    let report = json(&stdout);
    assert_eq!(report["summary"]["requests"], 600);
    assert!(report["host"]["fd_limit"].as_u64() > Some(0), "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}
