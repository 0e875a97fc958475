//! A real Apache httpd (Debian's apache2) with the prefork MPM: one process per connection,
//! `MaxRequestWorkers` of them at most, keep-alive on with Debian's defaults. A keep-alive
//! connection holds its worker until it closes or idles past `KeepAliveTimeout`, so a server
//! like this runs out of workers for held connections long before it runs out of CPU: what
//! held-connection tests need. It logs every request it served, so a test counts them from
//! the server's side. When apache2 is not installed the test says it skipped; under CI
//! (`CI=true`) that is a failure (scripts/install-test-deps installs it).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::missing::find_program;
use crate::net::{free_port, wait_for_listener};

/// A running private Apache; stopped on drop.
pub struct Apache {
    child: Child,
    dir: PathBuf,
    port: u16,
}

/// Where Debian keeps Apache's modules.
const MODULES: &str = "/usr/lib/apache2/modules";

impl Apache {
    /// Apache with the prefork MPM and `workers` processes (started at once, never more),
    /// keep-alive on (100 requests a connection, 5 s idle: Debian's defaults), listening on a
    /// free port of 127.0.0.1 and serving a small page at `/`. `None` (said on stderr) when
    /// apache2 is not installed outside CI.
    pub fn start(test: &str, workers: u32) -> Option<Apache> {
        let apache = find_program("apache2", "apt-get install apache2")?;
        let dir = crate::dirs::temp_dir(&format!("apache-{test}"));
        let docs = dir.join("htdocs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(docs.join("index.html"), "<p>belier was here</p>\n").unwrap();
        let port = free_port();
        std::fs::write(dir.join("httpd.conf"), config(&dir, port, workers)).unwrap();
        let log = std::fs::File::create(dir.join("stderr.log")).unwrap();
        let child = Command::new(apache)
            .args([
                "-f",
                dir.join("httpd.conf").to_str().unwrap(),
                "-DFOREGROUND",
            ])
            .stdout(Stdio::null())
            .stderr(log)
            // The prefork parent stops its workers by signalling its whole process group:
            // in the test's group, that would be the test and whatever started it.
            .process_group(0)
            .spawn()
            .expect("apache2 starts");
        let mut a = Apache { child, dir, port };
        let up = wait_for_listener(([127, 0, 0, 1], port).into(), Duration::from_secs(20));
        let errors = || std::fs::read_to_string(a.dir.join("error.log")).unwrap_or_default();
        assert!(
            up && a.child.try_wait().unwrap().is_none(),
            "apache2 did not start:\n{}\n{}",
            std::fs::read_to_string(a.dir.join("stderr.log")).unwrap_or_default(),
            errors()
        );
        a.wait_for_workers(workers);
        Some(a)
    }

    /// Waits until every worker process is up, so that a test's load meets all of them.
    fn wait_for_workers(&mut self, workers: u32) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let own = self.child.id();
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "apache2 ended ({status}):\n{}",
                    std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
                );
            }
            let children = std::fs::read_to_string(format!("/proc/{own}/task/{own}/children"))
                .unwrap_or_default()
                .split_whitespace()
                .count();
            if children as u32 >= workers {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("apache2 did not start its {workers} workers within 20 s");
    }

    /// The page's URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/index.html", self.port)
    }

    /// Requests served so far (the access log's lines), once the log stops growing.
    pub fn requests_served(&self) -> usize {
        let path = self.dir.join("access.log");
        let read = || std::fs::read_to_string(&path).unwrap_or_default();
        let mut text = read();
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let now = read();
            if now.len() == text.len() {
                return text.lines().count();
            }
            text = now;
        }
    }
}

/// The whole configuration: only what this server needs, nothing of the machine's own.
fn config(dir: &std::path::Path, port: u16, workers: u32) -> String {
    let d = dir.display();
    // Run as root (CI), the workers need a user to become; Debian's is www-data.
    let user = match crate::process::running_as_root() {
        true => "User www-data\nGroup www-data\n",
        false => "",
    };
    format!(
        "ServerRoot {d}
ServerName 127.0.0.1
Listen 127.0.0.1:{port}
PidFile {d}/httpd.pid
Mutex file:{d} default
ErrorLog {d}/error.log
LogLevel warn
LoadModule mpm_prefork_module {MODULES}/mod_mpm_prefork.so
LoadModule authz_core_module {MODULES}/mod_authz_core.so
{user}StartServers {workers}
MinSpareServers {workers}
MaxSpareServers {workers}
ServerLimit {workers}
MaxRequestWorkers {workers}
MaxConnectionsPerChild 0
KeepAlive On
MaxKeepAliveRequests 100
KeepAliveTimeout 5
Timeout 60
LogFormat \"%m %U %>s %{{remote}}p %k\" served
CustomLog {d}/access.log served
DocumentRoot {d}/htdocs
<Directory {d}/htdocs>
    Require all granted
</Directory>
"
    )
}

impl Drop for Apache {
    fn drop(&mut self) {
        // SIGTERM to the parent stops its workers too; a kill would leave them listening.
        crate::process::stop(&mut self.child, "-TERM");
    }
}
