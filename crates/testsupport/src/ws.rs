//! The WebSocket servers of the WebSocket tests, each counting on its own side: a Go server
//! on gorilla/websocket (`ws-server/main.go`, a Go module with its go.sum, built once per test
//! process into `target/ws-server/`, as the grpc-go server is) and a Python server on the
//! `websockets` package (`ws-server/echo.py`). Both print "listening PORT" once they listen
//! on 127.0.0.1 and "counts Sockets=N In=N Out=N Deflate=N" when their standard input closes;
//! started with [`WsServer::go_deflating`] or [`WsServer::python_deflating`] they agree to
//! permessage-deflate and count the sockets that did.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::missing::{find_program, missing};
use crate::process::CountingServer;

const GO_INSTALL: &str = "Go 1.22 or later: scripts/install-test-deps";
const PYTHON_INSTALL: &str = "Python 3 with the websockets package: scripts/install-test-deps";

/// What a server counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Sockets upgraded.
    pub sockets: u64,
    /// Messages read.
    pub messages_in: u64,
    /// Messages written.
    pub messages_out: u64,
    /// Sockets that agreed to permessage-deflate.
    pub deflated: u64,
}

/// A running WebSocket server; stopped when [`WsServer::counts`] is called or it is dropped.
pub struct WsServer {
    server: CountingServer,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl WsServer {
    /// The gorilla/websocket server (paths in ws-server/main.go: /echo, /echo?delay=D,
    /// /close?after=N&code=C, /refuse, /json); `None` (after [`missing`]) without Go.
    pub fn go() -> Option<WsServer> {
        WsServer::go_with(&[])
    }

    /// The gorilla/websocket server agreeing to permessage-deflate where offered (its
    /// answer: no context takeover either way).
    pub fn go_deflating() -> Option<WsServer> {
        WsServer::go_with(&["-deflate"])
    }

    fn go_with(args: &[&str]) -> Option<WsServer> {
        static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
        let binary = BUILT
            .get_or_init(|| crate::grpc::build_go_server("ws-server", GO_INSTALL))
            .clone()?;
        let mut command = Command::new(binary);
        command.args(args);
        Some(WsServer::spawn(command))
    }

    /// The Python `websockets` server (ws-server/echo.py: an echo on any path); `None`
    /// (after [`missing`]) without Python or its websockets package.
    pub fn python() -> Option<WsServer> {
        WsServer::python_with(&[])
    }

    /// The Python `websockets` server with its default compression: permessage-deflate,
    /// 12-bit windows both ways, context kept.
    pub fn python_deflating() -> Option<WsServer> {
        WsServer::python_with(&["--deflate"])
    }

    fn python_with(args: &[&str]) -> Option<WsServer> {
        let python = find_program("python3", PYTHON_INSTALL)?;
        let found = Command::new(&python)
            .args(["-c", "import websockets"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            missing("the websockets package is not installed", PYTHON_INSTALL);
            return None;
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("ws-server/echo.py");
        let mut command = Command::new(python);
        command.arg(script).args(args);
        Some(WsServer::spawn(command))
    }

    fn spawn(mut command: Command) -> WsServer {
        let server = CountingServer::start(&mut command, "WebSocket server");
        WsServer {
            port: server.port,
            server,
        }
    }

    /// `ws://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("ws://127.0.0.1:{}{path}", self.port)
    }

    /// Stops the server and returns what it counted.
    pub fn counts(mut self) -> Counts {
        let count = self.server.counts();
        Counts {
            sockets: count("Sockets"),
            messages_in: count("In"),
            messages_out: count("Out"),
            deflated: count("Deflate"),
        }
    }
}
