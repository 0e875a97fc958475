//! Small HTTP servers written in Python for one test (stdlib only: a `socketserver` with a
//! thread per connection), for what a test needs the server to do and log on its own side
//! that belier's built-in target does not: stream on a schedule, time its own handler.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The end of a server's script: serves the script's `Handler` (a
/// `socketserver.StreamRequestHandler`) on a free port of 127.0.0.1, one thread per
/// connection, and prints the port on standard output's first line. A script is its handler
/// followed by this.
pub const SERVE: &str = r#"
class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// A Python server started from a script ending in [`SERVE`], killed on drop.
pub struct PythonServer {
    child: Child,
    /// The port it listens on, at 127.0.0.1.
    pub port: u16,
}

impl PythonServer {
    /// Runs `python3 -c SCRIPT ARGS…`, the script being `handler` (its imports and its
    /// `Handler` class) followed by [`SERVE`], and waits for its port.
    pub fn start<S: AsRef<OsStr>>(handler: &str, args: &[S]) -> PythonServer {
        let mut child = Command::new("python3")
            .args(["-c", &format!("{handler}{SERVE}")])
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs (scripts/install-test-deps installs it)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("the server prints its port");
        let port = line.trim().parse().expect("the server prints its port");
        PythonServer { child, port }
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for PythonServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
