//! `--tui` in a real terminal: tmux (Debian's package) runs belier against the built-in target,
//! keys go in with `send-keys`, the screen comes back with `capture-pane`. Without tmux the
//! test says `skipped: ` and passes, except under CI (`CI=true`), where it fails.

use std::io::Write;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use belier_testserver::{Config, Server};

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
        let tmux = Tmux {
            socket: format!("belier-tui-test-{}", std::process::id()),
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
