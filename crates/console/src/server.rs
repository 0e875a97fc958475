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
    /// Binds `addr` and serves the router `app` makes for the address bound (the port chosen
    /// when 0 was asked for) on a thread named `name`.
    pub fn start(
        addr: SocketAddr,
        name: &str,
        app: impl FnOnce(SocketAddr) -> Router,
    ) -> Result<Server, StartError> {
        let socket = std::net::TcpListener::bind(addr)
            .and_then(|s| s.set_nonblocking(true).map(|()| s))
            .map_err(StartError::Bind)?;
        let bound = socket.local_addr().unwrap_or(addr);
        let app = app(bound);
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

/// Whether a `Host` header names the loopback: an IP literal whose address is a loopback one
/// (`127.0.0.1`, `127.1.2.3`, `[::1]`), or exactly `localhost`, each with or without a port.
/// A listener on the loopback without a token checks it on every request: a page of another
/// site that rebinds its own name to 127.0.0.1 still sends that name, and is refused.
pub fn loopback_host(host: &str) -> bool {
    let name = match host.rsplit_once(':') {
        Some((name, port))
            if !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit()) =>
        {
            name
        }
        _ => host,
    };
    if let Some(v6) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        return v6
            .parse::<std::net::Ipv6Addr>()
            .is_ok_and(|ip| ip.is_loopback());
    }
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Compares in time independent of where the first difference is, so a token cannot be
/// guessed byte by byte from response times.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_literals_and_localhost_name_the_loopback() {
        for yes in [
            "127.0.0.1",
            "127.0.0.1:5665",
            "127.3.2.1:80",
            "localhost",
            "localhost:5665",
            "LocalHost:1",
            "[::1]",
            "[::1]:5665",
            "[0:0:0:0:0:0:0:1]:9",
        ] {
            assert!(loopback_host(yes), "{yes}");
        }
        for no in [
            "",
            "127.attacker.example:5665",
            "127.0.0.1.attacker.example",
            "127.0.0.1.nip.io:5665",
            "localhost.attacker.example",
            "localhost.attacker.example:5665",
            "localhost.",
            "attacker.localhost",
            "[::1].attacker.example",
            "::1",
            "[::2]:5665",
            "[::ffff:127.0.0.1]",
            "10.0.0.1:5665",
            "0.0.0.0:5665",
            "127.1",
            "127.0.0.1:",
            "127.0.0.1:5665:5665",
            "localhost:123456",
            "user@127.0.0.1",
        ] {
            assert!(!loopback_host(no), "{no}");
        }
    }
}
