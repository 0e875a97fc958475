//! The HTTP/3 servers of the HTTP/3 tests, each built from the Go module proxy into
//! `target/NAME/` on first use (as the grpc-go server is): quic-go's `http3` server
//! (`h3-server/main.go`: it counts requests, HTTP/3 requests and connections on its own side,
//! and its connections by peer address, with knobs for a short idle timeout, a GOAWAY after
//! N requests and 0-RTT), and Caddy itself (`caddy-server/`: the released
//! program with its standard modules) serving HTTP/3 only, with its JSON access log on.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::process::CountingServer;

const GO_INSTALL: &str = "Go 1.26 or later: scripts/install-test-deps";

/// What the quic-go server counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Requests answered.
    pub requests: u64,
    /// Of them, over HTTP/3.
    pub h3: u64,
    /// QUIC connections accepted.
    pub connections: u64,
    /// Of them, connections whose handshake used 0-RTT (early data accepted; `-0rtt`).
    pub early: u64,
}

/// quic-go's HTTP/3 server on a UDP port of 127.0.0.1; stopped by [`QuicGo::counts`] or
/// when dropped.
pub struct QuicGo {
    server: CountingServer,
    /// Its UDP port.
    pub port: u16,
    /// The PEM certificate it serves (self-signed), for `--cacert`.
    pub ca: PathBuf,
}

impl QuicGo {
    /// Starts the server with `args` (`-idle 200ms`, `-goaway N`, `-0rtt`); `None` (after
    /// [`crate::missing::missing`]) without Go.
    pub fn start(args: &[&str]) -> Option<QuicGo> {
        static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
        let binary = BUILT
            .get_or_init(|| crate::grpc::build_go_server("h3-server", GO_INSTALL))
            .clone()?;
        let ca = crate::dirs::temp_dir(&format!("h3-server-{}", instance())).join("ca.pem");
        let mut command = Command::new(binary);
        command.args(args).arg("-ca").arg(&ca);
        let server = CountingServer::start(&mut command, "quic-go HTTP/3 server");
        Some(QuicGo {
            port: server.port,
            server,
            ca,
        })
    }

    /// `https://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// Stops the server and returns what it counted.
    pub fn counts(self) -> Counts {
        self.counts_by_peer().0
    }

    /// Stops the server and returns what it counted, and its connections by the peer's IP
    /// address.
    pub fn counts_by_peer(mut self) -> (Counts, BTreeMap<IpAddr, u64>) {
        let count = self.server.counts();
        let counts = Counts {
            requests: count("Requests"),
            h3: count("H3"),
            connections: count("Conns"),
            early: count("Early"),
        };
        let line = self.server.next_line();
        let peers = line
            .strip_prefix("peers")
            .unwrap_or_else(|| panic!("a peers line: {line:?}"))
            .split_whitespace()
            .map(|field| {
                let (ip, n) = field.split_once('=').expect("IP=N");
                (ip.parse().expect("an IP"), n.parse().expect("a count"))
            })
            .collect();
        (counts, peers)
    }
}

/// Caddy serving HTTP/3 only (`servers { protocols h3 }`) on a UDP port of 127.0.0.1, its
/// certificate from its internal CA, `ok` on every path, each request logged as JSON. Killed
/// when dropped.
pub struct Caddy {
    child: Child,
    /// Its UDP port.
    pub port: u16,
    dir: PathBuf,
}

impl Caddy {
    /// Starts Caddy serving HTTP/3 only and waits until it serves; `None` (after
    /// [`crate::missing::missing`]) without Go.
    pub fn start() -> Option<Caddy> {
        Caddy::serving("h3")
    }

    /// Starts Caddy serving HTTP/1.1, HTTP/2 and HTTP/3 on one port (TCP and UDP): it then
    /// advertises HTTP/3 in each TCP response's `Alt-Svc` (`h3=":PORT"; ma=2592000`).
    pub fn with_alt_svc() -> Option<Caddy> {
        Caddy::serving("h1 h2 h3")
    }

    /// Starts Caddy serving HTTP/3 only, gzipping its answers for clients that take gzip
    /// (`encode gzip`); `/big` answers [`BIG_BODY_BYTES`] bytes of text.
    pub fn gzipping() -> Option<Caddy> {
        let big = "x".repeat(BIG_BODY_BYTES);
        let site = format!(
            "encode gzip\n\theader Content-Type \"text/plain; charset=utf-8\"\n\t\
             respond /big \"{big}\" 200\n\trespond \"ok\" 200"
        );
        Caddy::serving_with("h3", &site)
    }

    /// Starts Caddy serving `protocols` (Caddy's words: `h1 h2 h3`).
    fn serving(protocols: &str) -> Option<Caddy> {
        Caddy::serving_with(protocols, "respond \"ok\" 200")
    }

    /// Starts Caddy serving `protocols`, its site's handling as `site` says (Caddyfile lines).
    fn serving_with(protocols: &str, site: &str) -> Option<Caddy> {
        static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
        let binary = BUILT
            .get_or_init(|| crate::grpc::build_go_server("caddy-server", GO_INSTALL))
            .clone()?;
        let port = free_udp_port();
        let dir = crate::dirs::temp_dir(&format!("caddy-{port}"));
        let config = CADDYFILE
            .replace("protocols h3", &format!("protocols {protocols}"))
            .replace("PORT", &port.to_string())
            .replace("LOG", &dir.join("access.log").display().to_string())
            .replace("SITE", site);
        std::fs::write(dir.join("Caddyfile"), config).expect("write the Caddyfile");
        let output = std::fs::File::create(dir.join("caddy.log")).expect("caddy.log");
        let child = Command::new(binary)
            .args(["run", "--config", "Caddyfile", "--adapter", "caddyfile"])
            .current_dir(&dir)
            // Its internal CA and state stay in the test's directory.
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .stdin(Stdio::null())
            .stdout(output.try_clone().expect("caddy.log"))
            .stderr(output)
            .spawn()
            .expect("Caddy starts");
        let caddy = Caddy { child, port, dir };
        caddy.wait_serving();
        Some(caddy)
    }

    fn wait_serving(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let log = self.dir.join("caddy.log");
        while Instant::now() < deadline {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            // Its certificate comes from its internal CA as it starts: a handshake before it
            // fails with an alert.
            if text.contains("serving initial configuration")
                && text.contains("certificate obtained successfully")
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "Caddy did not start within 30 s: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// `https://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// Stops Caddy once its access log stopped growing (it writes each line after its
    /// response went; a loaded machine can hold some back a moment), and returns the log's
    /// lines, one JSON object a request.
    pub fn access_log(mut self) -> Vec<serde_json::Value> {
        let log = self.dir.join("access.log");
        let size = || std::fs::metadata(&log).map_or(0, |m| m.len());
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut last = size();
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(500));
            let now = size();
            if now == last {
                break;
            }
            last = now;
        }
        crate::process::stop(&mut self.child, "-INT");
        let text = std::fs::read_to_string(self.dir.join("access.log")).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).expect("a JSON access log line"))
            .collect()
    }
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const CADDYFILE: &str = r#"{
	admin off
	skip_install_trust
	auto_https disable_redirects
	servers {
		protocols h3
	}
}
https://127.0.0.1:PORT {
	tls internal
	log {
		output file LOG
		format json
	}
	SITE
}
"#;

/// The length of the body [`Caddy::gzipping`] answers `/big` with.
pub const BIG_BODY_BYTES: usize = 4096;

/// A number of its own for each server a test process starts (their files apart).
fn instance() -> u32 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A UDP port of 127.0.0.1 free a moment ago (its TCP side too), and never handed out before
/// in this process:
/// Caddy binds its port with `SO_REUSEPORT`, so two servers of the same process given the same
/// free port would share its datagrams (and each log the other's requests).
fn free_udp_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind a UDP port");
        let port = socket.local_addr().expect("its address").port();
        let tcp_free = std::net::TcpListener::bind(("127.0.0.1", port)).is_ok();
        if tcp_free && !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

#[cfg(test)]
mod tests {
    /// `scripts/test` runs these before the tests it times, so that the first HTTP/3 test does
    /// not pay Go's cold builds (quic-go's server about 20 s, Caddy about 90 s from an empty
    /// Go cache on two cores) inside the suite's clock; each is also an ordinary test of its
    /// build.
    #[test]
    fn the_http3_servers_build() {
        for name in ["h3-server", "caddy-server"] {
            if let Some(built) = crate::grpc::build_go_server(name, super::GO_INSTALL) {
                assert!(built.is_file(), "{} was not written", built.display());
            }
        }
    }
}
