//! Serving HTTP beside a run: an axum router on its own thread and current-thread tokio
//! runtime, apart from the engine's, bound on the caller's thread so that a taken address fails
//! before any load is sent. The web console and the Prometheus exporter both serve this way.

use std::future::IntoFuture as _;
use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::Duration;

use axum::Router;

/// How long a stopping server lets requests in progress finish before it drops them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Why a server could not start.
#[derive(Debug)]
pub enum StartError {
    /// The address could not be bound (taken, not local, not permitted).
    Bind(std::io::Error),
    /// The runtime or its thread could not be made.
    Start(std::io::Error),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Bind(e) => write!(f, "cannot listen there: {e}"),
            StartError::Start(e) => write!(f, "cannot start: {e}"),
        }
    }
}

impl std::error::Error for StartError {}

/// A running server; stops serving when dropped (requests in progress get a second).
pub struct Server {
    stop: tokio::sync::watch::Sender<bool>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` and serves `app` on a thread named `name`.
    pub fn start(addr: SocketAddr, app: Router, name: &str) -> Result<Server, StartError> {
        let socket = std::net::TcpListener::bind(addr)
            .and_then(|s| s.set_nonblocking(true).map(|()| s))
            .map_err(StartError::Bind)?;
        let bound = socket.local_addr().unwrap_or(addr);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(StartError::Start)?;
        let socket = {
            let _context = runtime.enter();
            tokio::net::TcpListener::from_std(socket).map_err(StartError::Start)?
        };
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || serve(&runtime, socket, app, stopped))
            .map_err(StartError::Start)?;
        Ok(Server {
            stop,
            addr: bound,
            thread: Some(thread),
        })
    }

    /// The address it listens on (with the port chosen when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.send_replace(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answers requests until `stopped` turns true, then lets those in progress finish (for
/// [`SHUTDOWN_GRACE`] at most).
fn serve(
    runtime: &tokio::runtime::Runtime,
    socket: tokio::net::TcpListener,
    app: Router,
    stopped: tokio::sync::watch::Receiver<bool>,
) {
    let stop = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
        // A dropped sender stops it too.
        let _ = stopped.wait_for(|&stop| stop).await;
    };
    runtime.block_on(async {
        let server = tokio::spawn(
            axum::serve(socket, app)
                .with_graceful_shutdown(stop(stopped.clone()))
                .into_future(),
        );
        stop(stopped).await;
        // Whatever is still running when the runtime is dropped is dropped with it.
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, server).await;
    });
}

/// Compares in time independent of where the first difference is, so a token cannot be
/// guessed byte by byte from response times.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
}
