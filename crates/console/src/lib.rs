//! belier's web console: a page that watches and steers a run, and the JSON/SSE API behind it
//! (documented in the book: `docs/src/reference/api.md`).
//!
//! The console knows nothing of flags or reports: whoever runs the load hands it each run's
//! steering handle ([`belier_engine::Control`]), its settled intervals and, at the end, its
//! report ([`Hub`]); a console that starts runs itself (`belier web`) does it through a
//! [`Launcher`] its owner provides. The page is served from the binary (no CDN) and draws its
//! charts in SVG with its own small script.
//!
//! [`server`] is the HTTP stack (axum on its own thread) the console shares with belier's
//! Prometheus exporter.
#![deny(missing_docs)]

mod api;
mod guard;
mod hub;
mod launcher;
mod page;
pub mod server;

use std::net::SocketAddr;
use std::sync::Arc;

pub use hub::{Hub, Report, RunEnd, RunId, RunStart, Unit, KEPT_INTERVALS};
pub use launcher::{Form, Launcher};
pub use server::StartError;

/// The address the console listens on unless told otherwise.
pub const DEFAULT_ADDR: &str = "127.0.0.1:5665";

/// How a console is set up.
pub struct Options {
    /// Where to listen.
    pub addr: SocketAddr,
    /// The token every request must carry; required off the loopback (see [`Console::start`]).
    pub token: Option<String>,
    /// Starts runs from the form; without one, the console watches the runs it is handed.
    pub launcher: Option<Arc<dyn Launcher>>,
}

/// Why a console did not start.
#[derive(Debug)]
pub enum ConsoleError {
    /// Off the loopback without a token.
    TokenRequired,
    /// The server did not start.
    Server(StartError),
}

impl std::fmt::Display for ConsoleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConsoleError::TokenRequired => f.write_str(
                "not a loopback address: anything else needs a token (--web-token TOKEN or \
                 BELIER_WEB_TOKEN)",
            ),
            ConsoleError::Server(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ConsoleError {}

/// A running console; stops serving when dropped.
pub struct Console {
    hub: Arc<Hub>,
    server: server::Server,
}

impl Console {
    /// Listens on `options.addr`. An address off the loopback needs a token.
    pub fn start(options: Options) -> Result<Console, ConsoleError> {
        let loopback = options.addr.ip().is_loopback();
        if !loopback && options.token.is_none() {
            return Err(ConsoleError::TokenRequired);
        }
        let hub = Arc::new(Hub::default());
        let shared = |bound: SocketAddr| {
            Arc::new(api::Shared {
                hub: Arc::clone(&hub),
                guard: guard::Guard {
                    loopback_only: loopback && options.token.is_none(),
                    token: options.token,
                    cookie: guard::cookie(bound.port()),
                },
                launcher: options.launcher,
            })
        };
        let server =
            server::Server::start(options.addr, "console", |bound| api::router(shared(bound)))
                .map_err(ConsoleError::Server)?;
        Ok(Console { hub, server })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// The state the run loop feeds.
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }
}
