//! Private Pushgateway and InfluxDB servers for one test (Debian's `prometheus-pushgateway`
//! and `influxdb` packages): each in its own temp dir, on a free loopback port, stopped on
//! drop.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::missing::find_program;
use crate::net::free_port;

/// How long a server gets to become ready.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Servers started by this process so far (each gets its own directory).
static STARTED: AtomicUsize = AtomicUsize::new(0);

/// A running server; stopped and its directory removed on drop.
pub struct Daemon {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl Daemon {
    /// A Pushgateway, or `None` (said on stderr) when it is not installed outside CI.
    pub fn pushgateway() -> Option<Daemon> {
        let binary = find_program(
            "prometheus-pushgateway",
            "apt-get install -y prometheus-pushgateway",
        )?;
        let port = free_port();
        let dir = fresh_dir("pushgateway");
        let mut command = Command::new(binary);
        command
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn");
        Some(Daemon::spawn(command, dir, port, "/-/ready"))
    }

    /// An InfluxDB 1.x with database `belier`, or `None` (said on stderr) when it is not
    /// installed outside CI.
    pub fn influxdb() -> Option<Daemon> {
        let binary = find_program("influxd", "apt-get install -y influxdb")?;
        let (port, rpc) = (free_port(), free_port());
        let dir = fresh_dir("influxdb");
        let d = dir.display();
        let config = format!(
            "reporting-disabled = true\nbind-address = \"127.0.0.1:{rpc}\"\n\
             [meta]\n  dir = \"{d}/meta\"\n\
             [data]\n  dir = \"{d}/data\"\n  wal-dir = \"{d}/wal\"\n  query-log-enabled = false\n\
             [http]\n  bind-address = \"127.0.0.1:{port}\"\n  log-enabled = false\n\
             [monitor]\n  store-enabled = false\n[continuous_queries]\n  enabled = false\n"
        );
        std::fs::write(dir.join("influxdb.conf"), config).unwrap();
        let mut command = Command::new(binary);
        command.arg("-config").arg(dir.join("influxdb.conf"));
        let daemon = Daemon::spawn(command, dir, port, "/ping");
        let (status, body) = daemon.request("POST", "/query?q=CREATE+DATABASE+belier");
        assert_eq!(status, 200, "{body}");
        Some(daemon)
    }

    fn spawn(mut command: Command, dir: PathBuf, port: u16, ready: &str) -> Daemon {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
            .spawn()
            .expect("the server starts");
        let mut daemon = Daemon { child, dir, port };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = daemon.child.try_wait().unwrap() {
                panic!("the server exited with {status}: {}", daemon.log());
            }
            if (200..300).contains(&daemon.request("GET", ready).0) {
                return daemon;
            }
            assert!(Instant::now() < deadline, "not ready: {}", daemon.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `METHOD path`: the status (0 when it cannot connect) and the body.
    pub fn request(&self, method: &str, path: &str) -> (u16, String) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(5)))
            .http_status_as_error(false)
            .build()
            .into();
        let url = format!("{}{path}", self.url());
        let response = match method {
            "POST" => agent.post(&url).send_empty(),
            _ => agent.get(&url).call(),
        };
        match response {
            Ok(mut r) => (
                r.status().as_u16(),
                r.body_mut().read_to_string().unwrap_or_default(),
            ),
            Err(_) => (0, String::new()),
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr.log")).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn fresh_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "belier-{what}-{}-{}",
        std::process::id(),
        STARTED.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
