//! A real gunicorn (from PyPI) serving a tiny WSGI app that sleeps a fixed time per request and
//! records when it served each one, so a test knows what the server served from the server's
//! own side. When gunicorn is not installed the test says it skipped; under CI (`CI=true`) that
//! is a failure (scripts/install-test-deps installs it).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::missing::missing;

/// The app: sleeps `SLEEP_S`, appends "start end" (seconds) to a file of its worker's own.
const APP: &str = r#"import os, time
SLEEP_S = float(os.environ["APP_SLEEP_S"])
LOG = os.path.join(os.environ["APP_LOG_DIR"], "served-%d.log" % os.getpid())
def app(environ, start_response):
    t0 = time.monotonic()
    time.sleep(SLEEP_S)
    t1 = time.monotonic()
    with open(LOG, "a") as f:
        f.write("%.6f %.6f\n" % (t0, t1))
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
"#;

pub struct Gunicorn {
    child: Child,
    port: u16,
    dir: PathBuf,
    pub workers: usize,
}

impl Gunicorn {
    /// gunicorn with `workers` sync workers, each request held `sleep`; `None` (said on
    /// stderr) when gunicorn is not installed outside CI.
    pub fn start(test: &str, workers: usize, sleep: Duration) -> Option<Gunicorn> {
        let help = Command::new("python3")
            .args(["-m", "gunicorn", "--help"])
            .output();
        let help = match help {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
            _ => {
                missing(
                    "gunicorn is not installed",
                    "python3 -m pip install gunicorn; scripts/install-test-deps installs it",
                );
                return None;
            }
        };
        let dir =
            std::env::temp_dir().join(format!("belier-gunicorn-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("app.py"), APP).unwrap();
        let log = std::fs::File::create(dir.join("gunicorn.log")).unwrap();
        // Ahead of the machine's other work, just below belier: its workers' Python (about 1 ms a
        // request) starved by builds on two cores (load 15-24) made its p99 wander past the
        // SLO at 0.86-0.9 of its best second, which is then not the capacity the SLO allows.
        let mut command = crate::capacity::prioritized_program(
            "python3".as_ref(),
            crate::capacity::TARGET_PRIORITY,
        );
        command
            .args([
                "-m",
                "gunicorn",
                "--bind",
                "127.0.0.1:0",
                "--worker-class",
                "sync",
            ])
            .args(["--workers", &workers.to_string(), "--backlog", "2048"])
            .args(["--chdir", dir.to_str().unwrap()])
            .env("APP_SLEEP_S", sleep.as_secs_f64().to_string())
            .env("APP_LOG_DIR", &dir)
            .stdout(Stdio::null())
            .stderr(log);
        // Newer releases open a control socket in the home folder, shared by every instance.
        if help.contains("--no-control-socket") {
            command.arg("--no-control-socket");
        }
        let child = command.arg("app:app").spawn().expect("python3 starts");
        let mut g = Gunicorn {
            child,
            port: 0,
            dir,
            workers,
        };
        g.port = g.wait_until_ready();
        Some(g)
    }

    /// Reads the port from gunicorn's log and waits for every worker to boot.
    fn wait_until_ready(&mut self) -> u16 {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let log = std::fs::read_to_string(self.dir.join("gunicorn.log")).unwrap_or_default();
            let port = log
                .split("Listening at: http://127.0.0.1:")
                .nth(1)
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|p| p.parse().ok());
            let booted = log.matches("Booting worker").count();
            if let (Some(port), true) = (port, booted >= self.workers) {
                // Every worker answers once, so none starts the search cold.
                for _ in 0..self.workers {
                    let _ = std::net::TcpStream::connect(("127.0.0.1", port));
                }
                std::thread::sleep(Duration::from_millis(300));
                return port;
            }
            assert!(
                Instant::now() < deadline && self.child.try_wait().unwrap().is_none(),
                "gunicorn did not start:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// Every request the app served: (start, end), seconds on the host's monotonic clock.
    pub fn served(&self) -> Vec<(f64, f64)> {
        let mut all = Vec::new();
        for entry in std::fs::read_dir(&self.dir).unwrap() {
            let path = entry.unwrap().path();
            let is_log = path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("served-"));
            if !is_log {
                continue;
            }
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let mut v = line.split(' ').filter_map(|x| x.parse::<f64>().ok());
                if let (Some(a), Some(b)) = (v.next(), v.next()) {
                    all.push((a, b));
                }
            }
        }
        all.sort_by(|a, b| a.1.total_cmp(&b.1));
        all
    }
}

impl Drop for Gunicorn {
    fn drop(&mut self) {
        // SIGTERM to the master stops its workers too; SIGKILL would orphan them.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The most requests served in any `span` (ending at a served request), per second: what the
/// server served at its best.
pub fn best_rate(ends: &[f64], span: f64) -> f64 {
    let mut best = 0usize;
    let mut first = 0;
    for (last, &end) in ends.iter().enumerate() {
        while end - ends[first] > span {
            first += 1;
        }
        best = best.max(last + 1 - first);
    }
    best as f64 / span
}
