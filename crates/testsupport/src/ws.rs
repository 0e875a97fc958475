//! The WebSocket servers of the WebSocket tests, each counting on its own side: a Go server
//! on gorilla/websocket (`ws-server/main.go`, a Go module with its go.sum, built once per test
//! process into `target/ws-server/`, as the grpc-go server is) and a Python server on the
//! `websockets` package (`ws-server/echo.py`). Both print "listening PORT" once they listen
//! on 127.0.0.1 and "counts Sockets=N In=N Out=N" when their standard input closes.

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
        static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
        let binary = BUILT
            .get_or_init(|| crate::grpc::build_go_server("ws-server", GO_INSTALL))
            .clone()?;
        Some(WsServer::spawn(Command::new(binary)))
    }

    /// The Python `websockets` server (ws-server/echo.py: an echo on any path); `None`
    /// (after [`missing`]) without Python or its websockets package.
    pub fn python() -> Option<WsServer> {
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
        command.arg(script);
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
        }
    }
}
