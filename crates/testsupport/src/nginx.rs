//! A private nginx for one test: its own temp dir, config, certificate and access log, listening
//! on free loopback ports, so belier's numbers can be checked against a server belier did not write.
//!
//! nginx runs in the foreground as a single process (`daemon off; master_process off`) with every
//! path inside the temp dir, so it runs as root or not without touching /var, and killing the one
//! child process stops it. The access log is the independent witness: one line per request,
//! written unbuffered by nginx, with the connection serial number so connections can be counted.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::missing::find_program;
use crate::net::free_port;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// Where nginx is looked for when it is not on `PATH` (root's `PATH` has /usr/sbin, a user's
/// often does not).
/// How long nginx gets to start listening; it takes a few milliseconds, a loaded CI machine more.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Tries at starting nginx: the free port we pick is released before nginx binds it, so another
/// test may take it in between.
const START_ATTEMPTS: u32 = 3;

/// nginx logs a request after its response has gone out, so a client can finish before the last
/// line is written. The log counts as complete once it has not grown for this long...
const LOG_QUIET: Duration = Duration::from_millis(200);
/// ...or, for a log that keeps growing, after this long.
const LOG_SETTLE_LIMIT: Duration = Duration::from_secs(5);

/// What nginx serves at `/static/page.txt`: 40 KB of text that compresses well.
pub fn compressible_page() -> Vec<u8> {
    (0..1000)
        .map(|i| format!("line {i:05}: belier asks nginx for gzip.\n"))
        .collect::<String>()
        .into_bytes()
}

/// One access log line, in the format the generated config asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub method: String,
    pub uri: String,
    pub status: u16,
    pub bytes_sent: u64,
    /// `TLSv1.3`, `TLSv1.2`, or `-` on the plain port.
    pub ssl_protocol: String,
    /// `HTTP/1.1`, `HTTP/1.0` or `HTTP/2.0`.
    pub server_protocol: String,
    /// nginx's serial number of the connection the request came on.
    pub connection: u64,
    /// How many requests that connection had carried, this one included.
    pub connection_requests: u64,
    /// `r` when the TLS handshake of the connection resumed a session, `.` otherwise (and on
    /// the plain ports).
    pub ssl_session_reused: String,
    /// Bytes nginx read for the request: request line, headers and body (HTTP/2: its frames).
    pub request_length: u64,
    /// Its `traceparent` header, `-` without one.
    pub traceparent: String,
    /// Its `tracestate` header (without spaces, as the tests send it), `-` without one.
    pub tracestate: String,
}

impl LogLine {
    fn parse(line: &str) -> Option<LogLine> {
        let f: Vec<&str> = line.split(' ').collect();
        let [method, uri, status, bytes_sent, ssl_protocol, server_protocol, connection, connection_requests, ssl_session_reused, request_length, traceparent, tracestate] =
            f[..]
        else {
            return None;
        };
        Some(LogLine {
            method: method.to_owned(),
            uri: uri.to_owned(),
            status: status.parse().ok()?,
            bytes_sent: bytes_sent.parse().ok()?,
            ssl_protocol: ssl_protocol.to_owned(),
            server_protocol: server_protocol.to_owned(),
            connection: connection.parse().ok()?,
            connection_requests: connection_requests.parse().ok()?,
            ssl_session_reused: ssl_session_reused.to_owned(),
            request_length: request_length.parse().ok()?,
            traceparent: traceparent.to_owned(),
            tracestate: tracestate.to_owned(),
        })
    }
}

/// How a test's nginx is set up beyond its plain HTTP/1.1 port.
#[derive(Debug, Clone)]
pub struct Options {
    /// An HTTPS port that also offers HTTP/2 through ALPN.
    pub tls: bool,
    /// A plain port that speaks HTTP/2 only, with prior knowledge (h2c).
    pub h2c: bool,
    /// Requests a keep-alive connection (HTTP/2: a connection's streams) may carry before
    /// nginx closes it (HTTP/2: with a graceful GOAWAY).
    pub keepalive_requests: u64,
    /// How long nginx keeps an idle keep-alive connection open, in nginx's syntax (`50ms`).
    pub keepalive_timeout: String,
    /// How long nginx waits for a whole request head before it ends the connection (and
    /// logs a 408), in nginx's syntax.
    pub client_header_timeout: String,
    /// Serve a self-signed certificate with `CA:TRUE` (what `openssl req -x509` makes) as the
    /// server's own, rather than one signed by a test CA; `ca.pem` is then that certificate.
    pub self_signed: bool,
    /// Also listen on Unix domain sockets in the temp dir: `http.sock` (HTTP/1.1), `h2c.sock`
    /// (HTTP/2 with prior knowledge) and, with `tls`, `tls.sock` (HTTPS offering h2).
    pub unix: bool,
    /// Proxy `/ws/…` to a WebSocket server on this port of 127.0.0.1, passing the Upgrade
    /// on (HTTP/1.1 upstream, `Upgrade` and `Connection` set), as nginx's docs say.
    pub websocket_upstream: Option<u16>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tls: false,
            h2c: false,
            // A keep-alive connection must carry a whole test run; nginx's default closes it
            // after 1000.
            keepalive_requests: 100_000,
            keepalive_timeout: "60s".to_owned(),
            client_header_timeout: "60s".to_owned(),
            self_signed: false,
            unix: false,
            websocket_upstream: None,
        }
    }
}

/// nginx's own counters from `stub_status`, which count independently of the access log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StubStatus {
    pub active: u64,
    pub accepts: u64,
    pub handled: u64,
    pub requests: u64,
}

/// A running private nginx; stopped and its temp dir removed on drop.
pub struct Nginx {
    child: Option<Child>,
    dir: PathBuf,
    http_port: u16,
    https_port: Option<u16>,
    h2c_port: Option<u16>,
    options: Options,
}

impl Nginx {
    /// Starts nginx with a plain HTTP port and, when `with_tls`, an HTTPS port that also offers
    /// HTTP/2 through ALPN. Returns `None` when nginx is not installed (after saying so on
    /// stderr); under CI (`CI=true`) a missing nginx is a failure instead, so the interop tests
    /// cannot pass by silently running nothing.
    pub fn start(with_tls: bool) -> Option<Nginx> {
        Nginx::start_with(Options {
            tls: with_tls,
            ..Options::default()
        })
    }

    /// Like [`Nginx::start`], set up as `options` say.
    pub fn start_with(options: Options) -> Option<Nginx> {
        let binary = find_program("nginx", "apt-get install -y nginx-light")?;
        let mut last_error = String::new();
        for _ in 0..START_ATTEMPTS {
            match Nginx::try_start(&binary, &options) {
                Ok(nginx) => return Some(nginx),
                Err(e) if e.contains("Address already in use") => last_error = e,
                Err(e) => panic!("nginx did not start: {e}"),
            }
        }
        panic!("nginx did not start after {START_ATTEMPTS} tries: {last_error}");
    }

    fn try_start(binary: &Path, options: &Options) -> Result<Nginx, String> {
        let dir = make_temp_dir();
        let http_port = free_port();
        let https_port = options.tls.then(free_port);
        let h2c_port = options.h2c.then(free_port);
        // Built before the child exists, so a failure here still removes the dir through Drop.
        let mut nginx = Nginx {
            child: None,
            dir,
            http_port,
            https_port,
            h2c_port,
            options: options.clone(),
        };
        if options.tls && options.self_signed {
            nginx.write_self_signed();
        } else if options.tls {
            nginx.write_certificates();
        }
        std::fs::write(nginx.dir.join("nginx.conf"), nginx.config()).unwrap();
        std::fs::create_dir_all(nginx.dir.join("static")).unwrap();
        std::fs::write(nginx.dir.join("static/page.txt"), compressible_page()).unwrap();
        let child = Command::new(binary)
            .arg("-p")
            .arg(&nginx.dir)
            .arg("-c")
            .arg(nginx.dir.join("nginx.conf"))
            // Before it reads the config nginx opens its built-in error log path; point that
            // at the temp dir too.
            .arg("-e")
            .arg(nginx.dir.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(nginx.dir.join("stderr.log")).unwrap())
            .spawn()
            .map_err(|e| format!("{}: {e}", binary.display()))?;
        nginx.child = Some(child);
        nginx.wait_listening()?;
        Ok(nginx)
    }

    fn config(&self) -> String {
        let d = self.dir.display();
        let mut tls = String::new();
        if let Some(port) = self.https_port {
            // nginx 1.22 turns HTTP/2 on per listen socket; the `http2 on;` directive only
            // arrived in 1.25.1.
            write!(
                tls,
                "        listen 127.0.0.1:{port} ssl http2;\n\
                 \x20       ssl_certificate {d}/server.pem;\n\
                 \x20       ssl_certificate_key {d}/server.key;\n\
                 \x20       ssl_protocols TLSv1.2 TLSv1.3;\n"
            )
            .unwrap();
        }
        if let Some(port) = self.h2c_port {
            writeln!(tls, "        listen 127.0.0.1:{port} http2;").unwrap();
        }
        if self.options.unix {
            writeln!(tls, "        listen unix:{d}/http.sock;").unwrap();
            writeln!(tls, "        listen unix:{d}/h2c.sock http2;").unwrap();
            if self.options.tls {
                writeln!(tls, "        listen unix:{d}/tls.sock ssl http2;").unwrap();
            }
        }
        format!(
            "daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;

events {{
    worker_connections 4096;
}}

http {{
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;

    log_format belier '$request_method $request_uri $status $bytes_sent $ssl_protocol $server_protocol $connection $connection_requests $ssl_session_reused $request_length $http_traceparent $http_tracestate';
    access_log {d}/access.log belier;

    keepalive_requests {keepalive_requests};
    keepalive_timeout {keepalive_timeout};
    client_header_timeout {client_header_timeout};

    server {{
        listen 127.0.0.1:{http_port};
{tls}        server_name localhost;

        location / {{
            return 200 \"hello\\n\";
        }}

        # A compressible file, gzipped when asked (--compressed tests).
        location /static/ {{
            root {d};
            gzip on;
            gzip_types text/plain;
            gzip_min_length 0;
        }}

        location = /status {{
            stub_status;
            access_log off;
        }}
{websocket}    }}
}}
",
            http_port = self.http_port,
            websocket = self.websocket_location(),
            keepalive_requests = self.options.keepalive_requests,
            keepalive_timeout = self.options.keepalive_timeout,
            client_header_timeout = self.options.client_header_timeout,
        )
    }

    /// A test CA, and a server certificate it signed for `localhost` and 127.0.0.1 (a client
    /// that verifies properly refuses a CA certificate used as the server's own).
    /// A self-signed certificate for `localhost` and 127.0.0.1 that is its own CA, as
    /// `openssl req -x509` makes them, served as the server's certificate.
    fn write_self_signed(&self) {
        let (cert, key) = self_signed_ca(&["localhost", "127.0.0.1"]);
        std::fs::write(self.ca_pem_path(), &cert).unwrap();
        std::fs::write(self.dir.join("server.pem"), &cert).unwrap();
        std::fs::write(self.dir.join("server.key"), key).unwrap();
    }

    fn write_certificates(&self) {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name
            .push(DnType::CommonName, "belier nginx test CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, ca_key);

        let key = KeyPair::generate().unwrap();
        let mut server =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
        server
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        server.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        server.use_authority_key_identifier_extension = true;
        let server_cert = server.signed_by(&key, &issuer).unwrap();

        std::fs::write(self.ca_pem_path(), ca_cert.pem()).unwrap();
        // The chain nginx sends: the server certificate, then the CA that signed it.
        std::fs::write(
            self.dir.join("server.pem"),
            server_cert.pem() + ca_cert.pem().as_str(),
        )
        .unwrap();
        std::fs::write(self.dir.join("server.key"), key.serialize_pem()).unwrap();
    }

    fn wait_listening(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        let ports: Vec<u16> = std::iter::once(self.http_port)
            .chain(self.https_port)
            .chain(self.h2c_port)
            .collect();
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                return Err(format!("nginx exited with {status}: {}", self.errors()));
            }
            // These probes are connections without a request: they appear in stub_status's
            // `accepts` but never in the access log.
            let sockets = self.unix_sockets();
            if ports
                .iter()
                .all(|&p| TcpStream::connect((Ipv4Addr::LOCALHOST, p)).is_ok())
                && sockets
                    .iter()
                    .all(|s| std::os::unix::net::UnixStream::connect(s).is_ok())
            {
                // Connectable is not ours: while nginx retries a port another process holds,
                // it listens on its other ports, and the busy one answers for that process.
                let errors = self.errors();
                if errors.contains("bind()") {
                    return Err(format!("Address already in use: {errors}"));
                }
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "nginx not listening after {START_TIMEOUT:?}: {}",
                    self.errors()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What nginx said on stderr and in its error log.
    fn errors(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        format!("{}{}", read("stderr.log"), read("error.log"))
    }

    /// The location that proxies WebSockets ([`Options::websocket_upstream`]), or nothing.
    fn websocket_location(&self) -> String {
        let Some(port) = self.options.websocket_upstream else {
            return String::new();
        };
        format!(
            "
        location /ws/ {{
            proxy_pass http://127.0.0.1:{port}/;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection \"upgrade\";
        }}
"
        )
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn http_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.http_port)
    }

    /// `https://127.0.0.1:PORT{path}`; the certificate is also valid for `localhost`.
    pub fn https_url(&self, path: &str) -> String {
        let port = self
            .https_port
            .expect("nginx was started without TLS: use Nginx::start(true)");
        format!("https://127.0.0.1:{port}{path}")
    }

    /// `http://127.0.0.1:PORT{path}` of the port that speaks HTTP/2 only (h2c, prior knowledge).
    pub fn h2c_url(&self, path: &str) -> String {
        let port = self
            .h2c_port
            .expect("nginx was started without h2c: set Options::h2c");
        format!("http://127.0.0.1:{port}{path}")
    }

    /// The Unix domain socket `name` (`http.sock`, `h2c.sock`, `tls.sock`) of
    /// [`Options::unix`].
    pub fn unix_socket(&self, name: &str) -> PathBuf {
        assert!(self.options.unix, "nginx was started without Unix sockets");
        self.dir.join(name)
    }

    fn unix_sockets(&self) -> Vec<PathBuf> {
        if !self.options.unix {
            return Vec::new();
        }
        let mut names = vec!["http.sock", "h2c.sock"];
        if self.options.tls {
            names.push("tls.sock");
        }
        names.iter().map(|n| self.dir.join(n)).collect()
    }

    /// The test CA's certificate (PEM), for belier's `--cacert`.
    pub fn ca_pem_path(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// Every access log line so far, once nginx has finished writing them.
    pub fn access_log_lines(&self) -> Vec<String> {
        let path = self.dir.join("access.log");
        let read = || std::fs::read_to_string(&path).unwrap_or_default();
        let started = Instant::now();
        let mut text = read();
        let mut unchanged_since = Instant::now();
        while unchanged_since.elapsed() < LOG_QUIET && started.elapsed() < LOG_SETTLE_LIMIT {
            std::thread::sleep(Duration::from_millis(20));
            let now = read();
            if now.len() != text.len() {
                text = now;
                unchanged_since = Instant::now();
            }
        }
        // A line still being written has no newline yet; it belongs to a later read.
        text.lines()
            .take(text.matches('\n').count())
            .map(str::to_owned)
            .collect()
    }

    /// The access log, parsed; panics on a line the configured format cannot have produced.
    pub fn requests(&self) -> Vec<LogLine> {
        self.access_log_lines()
            .iter()
            .map(|l| LogLine::parse(l).unwrap_or_else(|| panic!("unexpected log line {l:?}")))
            .collect()
    }

    /// How many distinct connections carried the logged requests.
    pub fn connections_seen(&self) -> usize {
        let mut ids: Vec<u64> = self.requests().iter().map(|r| r.connection).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    }

    /// nginx's `stub_status` counters, read over a connection of our own: that connection and
    /// its request are included in the figures (and the start-up probes in `accepts`), but the
    /// request is kept out of the access log.
    pub fn stub_status(&self) -> StubStatus {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, self.http_port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream
            .write_all(b"GET /status HTTP/1.0\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let body = response
            .split_once("\r\n\r\n")
            .map_or("", |(_, body)| body)
            .to_owned();
        // Active connections: 1
        // server accepts handled requests
        //  3 3 1
        let numbers: Vec<u64> = body
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        let [active, accepts, handled, requests, ..] = numbers[..] else {
            panic!("unexpected stub_status response: {response:?}");
        };
        StubStatus {
            active,
            accepts,
            handled,
            requests,
        }
    }

    /// Stops nginx and removes its temp dir; dropping does the same.
    pub fn stop(mut self) {
        self.shutdown();
    }

    #[allow(
        clippy::print_stderr,
        reason = "nginx's own errors explain a failed test"
    )]
    fn shutdown(&mut self) {
        if let Some(mut child) = self.child.take() {
            // A single process with no workers: killing it leaves nothing behind.
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!("nginx log of the failed test:\n{}", self.errors());
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A self-signed `CA:TRUE` certificate for `names`, and its key, both PEM.
pub fn self_signed_ca(names: &[&str]) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.distinguished_name.push(DnType::CommonName, names[0]);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

fn make_temp_dir() -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "belier-nginx-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    // Left over from an earlier process that had our pid and was killed before cleaning up.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    dir
}
