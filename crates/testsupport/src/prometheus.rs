//! A private Prometheus for one test (Debian's `prometheus` package): its own temp dir, config
//! and storage, listening on a free loopback port, scraping the given targets every second.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::missing::find_program;

/// Prometheus servers started by this process so far.
static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// How long Prometheus gets to become ready.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running Prometheus; stopped and its directory removed on drop.
pub struct Prometheus {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl Prometheus {
    /// Starts Prometheus scraping `targets` (`host:port`, their `/metrics`) every second.
    /// `None` when Prometheus is not installed (after saying so on stderr); under CI
    /// (`CI=true`) a missing Prometheus is a failure instead, so the test cannot pass by
    /// silently running nothing.
    pub fn start(targets: &[SocketAddr]) -> Option<Prometheus> {
        Prometheus::start_with(targets, &[])
    }

    /// As [`Prometheus::start`], with more command-line `flags`
    /// (`--web.enable-remote-write-receiver`).
    pub fn start_with(targets: &[SocketAddr], flags: &[&str]) -> Option<Prometheus> {
        let binary = find_program("prometheus", "apt-get install -y prometheus")?;
        let dir = std::env::temp_dir().join(format!(
            "belier-prometheus-{}-{}-{}",
            std::process::id(),
            targets.first().map_or(0, |t| t.port()),
            // Tests of one file run in one process, maybe with no target each.
            STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        std::fs::write(
            dir.join("prometheus.yml"),
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: target\n    static_configs:\n      \
                 - targets: [{}]\n",
                list.join(", ")
            ),
        )
        .unwrap();
        let port = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(binary)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
            .spawn()
            .expect("prometheus starts");
        let mut p = Prometheus { child, dir, port };
        p.wait_ready();
        p.wait_scraped(targets.len());
        Some(p)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("prometheus exited with {status}: {}", self.log());
            }
            if self.get("/-/ready").starts_with("HTTP/1.1 200") {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "prometheus not ready: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until every target has been scraped once (Prometheus starts scraping some
    /// seconds after it is ready).
    fn wait_scraped(&mut self, targets: usize) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let response = self.get("/api/v1/query?query=up%3D%3D1");
            if response.matches("\"instance\"").count() >= targets {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "prometheus scraped no target: {response}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `GET path`, the whole response as text (empty when it cannot connect).
    pub fn get(&self, path: &str) -> String {
        let Ok(mut s) = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)) else {
            return String::new();
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        );
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    /// Kills it now (its directory stays until drop).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr.log")).unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
