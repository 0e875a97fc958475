//! `--tui` in a real terminal: tmux (Debian's package) runs belier against the built-in target,
//! keys go in with `send-keys`, the screen comes back with `capture-pane`; on one machine, on a
//! coordinator of two spawned workers, and for a streaming gRPC run. Without tmux the tests say
//! `skipped: ` and pass, except under CI (`CI=true`), where they fail.

use std::io::Write;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use belier_testserver::{Config, Server};
use belier_testsupport::process;

/// How long any one thing the test waits for may take (a debug build on a busy machine).
const WAIT: Duration = Duration::from_secs(30);

/// A tmux server of its own (`tmux -L`), killed on drop with every session in it.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// `None` (after saying why) when tmux is not installed; under CI that is a failure.
    fn start(command: &str) -> Option<Tmux> {
        if !Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!(
                    "tmux is not installed, and CI must run the dashboard test: install it in \
                     scripts/install-test-deps (apt-get install -y tmux)"
                );
            }
            let _ = writeln!(
                std::io::stderr(),
                "skipped: tmux not installed (apt-get install -y tmux)"
            );
            return None;
        }
        // A server per test: the tests of this file run at the same time.
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmux = Tmux {
            socket: format!("belier-tui-test-{}-{n}", std::process::id()),
        };
        let out = tmux.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "tui",
            "-x",
            "120",
            "-y",
            "40",
            command,
        ]);
        assert!(out.status.success(), "tmux new-session: {out:?}");
        Some(tmux)
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs")
    }

    /// Types `keys` literally into the session.
    fn send(&self, keys: &str) {
        let out = self.run(&["send-keys", "-t", "tui", "-l", keys]);
        assert!(out.status.success(), "tmux send-keys: {out:?}");
    }

    /// The screen, and with `history` the lines scrolled off it too.
    fn screen(&self, history: bool) -> String {
        let mut args = vec!["capture-pane", "-p", "-t", "tui"];
        if history {
            args.extend(["-S", "-"]);
        }
        String::from_utf8_lossy(&self.run(&args).stdout).into_owned()
    }

    /// Polls the screen until `ready` holds, for at most [`WAIT`]; returns that screen.
    fn wait_for(&self, what: &str, history: bool, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen(history);
            if ready(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "no {what} after {WAIT:?}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

#[test]
fn the_dashboard_steers_the_rate_and_the_report_follows() {
    let server = Server::start(Config {
        threads: 1,
        ..Config::default()
    })
    .expect("test server starts");
    let saved = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tui-{}.jsonl", std::process::id()));
    // The run is longer than the test needs: `q` ends it. The shell then keeps the pane (and
    // the report on it) open for capture-pane.
    let command = format!(
        "'{}' --tui --rate 50 -z 30s --save '{}' {}; sleep 30",
        env!("CARGO_BIN_EXE_belier"),
        saved.display(),
        server.url("/")
    );
    let Some(tmux) = Tmux::start(&command) else {
        return;
    };
    let dashboard = tmux.wait_for("dashboard", false, |s| {
        s.contains("Requests/s") && s.contains("target 50.0/s")
    });
    for panel in ["Latency (ms)", "Responses", "Load", "Generator", "q stop"] {
        assert!(dashboard.contains(panel), "{panel:?} missing:\n{dashboard}");
    }
    // The charts and panels come from settled intervals: wait for the first one.
    tmux.wait_for("first interval", false, |s| s.contains("lag p99"));

    tmux.send("+");
    tmux.wait_for("rate raised by 10 %", false, |s| {
        s.contains("target 55.0/s")
    });
    tmux.send("+");
    let raised = tmux.wait_for("rate raised twice", false, |s| s.contains("target 60.5/s"));
    assert!(raised.contains("RUNNING"), "{raised}");
    let _ = writeln!(std::io::stderr(), "the dashboard:\n{raised}");

    tmux.send("q");
    let report = tmux.wait_for("report", true, |s| s.contains("Status codes"));
    for line in [
        "Summary",
        "INTERRUPTED: stopped early by the user",
        "Latency  (from intended start",
    ] {
        assert!(report.contains(line), "{line:?} missing from\n{report}");
    }
    // The dashboard left the alternate screen: its panels are not on the normal one.
    assert!(!report.contains("Requests/s ─"), "{report}");
    let seen = server.counts().requests;
    assert!(seen > 0, "the server saw no request");

    // Each `+` is a line of the results file, written as it was made, and the report read back
    // from the file lists both.
    let file = std::fs::read_to_string(&saved).expect("the results file was written");
    let changes: Vec<(String, f64, f64, f64)> = file
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            let c = v.get("change")?;
            Some((
                c["what"].as_str()?.to_string(),
                c["from"].as_f64()?,
                c["level"].as_f64()?,
                c["at_s"].as_f64()?,
            ))
        })
        .collect();
    let levels: Vec<(&str, f64, f64)> = changes
        .iter()
        .map(|(what, from, level, _)| (what.as_str(), *from, *level))
        .collect();
    assert_eq!(
        levels,
        [("rate", 50.0, 55.0), ("rate", 55.0, 60.5)],
        "{file}"
    );
    assert!(
        changes[0].3 > 0.0 && changes[0].3 <= changes[1].3,
        "{changes:?}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .arg("report")
        .arg(&saved)
        .output()
        .expect("belier report runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.contains("\nChanges\n"), "{text}");
    for change in ["rate 50/s → 55/s", "rate 55/s → 60.5/s"] {
        assert!(text.contains(change), "{change:?} missing from\n{text}");
    }
    let _ = std::fs::remove_file(&saved);
}

#[test]
fn the_dashboard_cannot_raise_the_level_beyond_the_open_file_limit() {
    let server = Server::start(Config {
        threads: 1,
        ..Config::default()
    })
    .expect("test server starts");
    // 100 open files, 64 of them kept for belier's own: 36 connections at most (the limit a
    // console's or a worker's steering meets too), 34 to start.
    let command = format!(
        "ulimit -n 100; '{}' --tui -c 34 -t 1 -z 8s {}; sleep 30",
        env!("CARGO_BIN_EXE_belier"),
        server.url("/")
    );
    let Some(tmux) = Tmux::start(&command) else {
        return;
    };
    tmux.wait_for("dashboard", false, |s| s.contains("target 34 connections"));
    tmux.wait_for("first interval", false, |s| s.contains("lag p99"));
    // 10 % up would be 37: `+` stops at the limit, then is refused there.
    tmux.send("+");
    tmux.wait_for("the level at the limit", false, |s| {
        s.contains("level set to 36 connections (the limit)")
    });
    tmux.send("+");
    let refused = tmux.wait_for("the refusal", false, |s| s.contains("at the limit ("));
    let header = refused.lines().next().unwrap_or_default();
    assert!(
        header.contains("target 36 connections")
            && header.contains("at the limit (36 connections)"),
        "{header}"
    );
    assert!(header.contains("RUNNING"), "the run goes on: {header}");
    // It ends as it was asked to, every request it counts seen by the target.
    let report = tmux.wait_for("report", true, |s| s.contains("Status codes"));
    assert!(!report.contains("INTERRUPTED"), "{report}");
    let requests: u64 = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests"))
        .and_then(|rest| rest.split_whitespace().next())
        .map(|n| n.replace(',', ""))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no request count in\n{report}"));
    assert_eq!(requests, server.counts().requests, "{report}");
}

/// The process ids of the workers `--spawn` started (their `--dir` says so).
fn spawned_workers() -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().map_while(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.get(1).is_some_and(|a| a == "worker")
            && args.iter().any(|a| a.contains("belier-spawned-"))
        {
            pids.push(pid);
        }
    }
    pids
}

/// The "N requests" of the dashboard's header.
fn header_requests(screen: &str) -> u64 {
    let header = screen.lines().next().unwrap_or_default();
    let before = header
        .split(" requests")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .unwrap_or_default();
    before
        .parse()
        .unwrap_or_else(|_| panic!("no request count in {header:?}"))
}

#[test]
fn a_coordinators_dashboard_shows_the_merged_run_and_its_keys_steer_every_worker() {
    let server = Server::start(Config {
        threads: 1,
        record_requests: 10_000,
        ..Config::default()
    })
    .expect("test server starts");
    let saved = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tui-spawn-{}.jsonl", std::process::id()));
    let command = format!(
        "'{}' --tui --rate 100 -z 30s --spawn 2 --save '{}' {}; sleep 30",
        env!("CARGO_BIN_EXE_belier"),
        saved.display(),
        server.url("/")
    );
    let Some(tmux) = Tmux::start(&command) else {
        return;
    };
    tmux.wait_for("the coordinator's dashboard", false, |s| {
        s.contains("target 100.0/s") && s.contains("over 2 workers")
    });
    tmux.wait_for("first interval", false, |s| s.contains("lag p99"));
    // Two seconds at 100/s (50/s from each worker) before the change.
    std::thread::sleep(Duration::from_millis(2_500));
    let screen = tmux.screen(false);
    let unchanged_at = Instant::now();
    let (shown, sent) = (header_requests(&screen), server.counts().requests);
    // The header counts the merged records received so far: both workers' requests, but
    // for the interval or so in flight (a single worker would have half of them).
    assert!(
        shown <= sent && shown + 150 >= sent && sent >= 300,
        "{shown} requests shown, {sent} sent:\n{screen}"
    );
    assert!(screen.contains("Requests/s"), "{screen}");

    // Three presses of `+`: 100 → 110 → 121 → 133.1/s, the whole run's, which each worker
    // takes half of.
    for target in ["target 110.0/s", "target 121.0/s", "target 133.1/s"] {
        tmux.send("+");
        tmux.wait_for(target, false, |s| s.contains(target));
    }
    let changed_at = Instant::now();
    std::thread::sleep(Duration::from_millis(2_600));
    let workers = spawned_workers();
    assert_eq!(workers.len(), 2, "{workers:?}");
    let ports: Vec<_> = workers.iter().map(|&p| process::local_ports(p)).collect();
    tmux.send("q");
    tmux.wait_for("report", true, |s| s.contains("Status codes"));

    // At the server: each worker's requests in the 2 s before the change and in 2 s after
    // it (from 0.4 s after the screen showed it, time for the change to reach the workers).
    let requests = server.recent_requests();
    let two = Duration::from_secs(2);
    let count = |worker: usize, from: Instant| {
        requests
            .iter()
            .filter(|r| r.arrived >= from && r.arrived < from + two)
            .filter(|r| {
                server
                    .peer(r.connection)
                    .is_some_and(|peer| ports[worker].contains(&peer.port()))
            })
            .count() as f64
    };
    for worker in 0..2 {
        let before = count(worker, unchanged_at - two);
        let after = count(worker, changed_at + Duration::from_millis(400));
        let _ = writeln!(
            std::io::stderr(),
            "worker {}: {before} requests in 2 s before the change, {after} after",
            worker + 1
        );
        assert!(
            (before - 100.0).abs() <= 3.0,
            "worker {}: {before} requests in the 2 s before, not 100 ± 3 %",
            worker + 1
        );
        assert!(
            (after - 133.1).abs() <= 4.0,
            "worker {}: {after} requests in 2 s after, not 133 ± 3 %",
            worker + 1
        );
    }
    // The merged results file holds every request the server saw, and the three changes.
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(["report", "--type", "json"])
        .arg(&saved)
        .output()
        .expect("belier report runs");
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["summary"]["requests"].as_u64(),
        Some(server.counts().requests)
    );
    let file = std::fs::read_to_string(&saved).unwrap();
    assert_eq!(file.matches("\"change\"").count(), 3, "{file}");
    let _ = std::fs::remove_file(&saved);
}

#[test]
fn a_streaming_grpc_run_s_dashboard_has_a_messages_panel() {
    let server = Server::start(Config {
        http2: true,
        ..Config::default()
    })
    .expect("test server starts");
    let proto = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tui-target-{}.proto", std::process::id()));
    let printed = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(["target", "--print-proto"])
        .output()
        .expect("belier target runs");
    std::fs::write(&proto, printed.stdout).unwrap();
    // 20 calls a second of 10 replies each: about 200 messages in a second, 20 out.
    let command = format!(
        "'{}' grpc {} --plaintext --call belier.target.Target/ServerStream --proto '{}' \
         -d '{{\"count\": 10}}' --tui --rate 20 -z 30s; sleep 30",
        env!("CARGO_BIN_EXE_belier"),
        server.addr(),
        proto.display()
    );
    let Some(tmux) = Tmux::start(&command) else {
        return;
    };
    let panel = tmux.wait_for("messages panel", false, |s| {
        s.contains("Messages") && s.contains("calls")
    });
    let count = |label: &str| -> u64 {
        let line = panel
            .lines()
            .find_map(|l| l.split(&format!("│{label} ")).nth(1))
            .unwrap_or_else(|| panic!("no {label:?} line in\n{panel}"));
        let n = line.split_whitespace().next().unwrap();
        n.replace(',', "").parse().unwrap()
    };
    // Each call sent one message and received ten, all settled together.
    let (calls, received, sent) = (count("calls"), count("in"), count("out"));
    assert!(calls > 0, "{panel}");
    assert_eq!((sent, received), (calls, 10 * calls), "{panel}");
    tmux.send("q");
    let report = tmux.wait_for("report", true, |s| s.contains("Messages  ("));
    assert!(report.contains("per call"), "{report}");
    server.stop();
}
