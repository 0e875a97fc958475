//! `belier record`: an HTTP forward proxy that passes a client's traffic to the origin and
//! writes a plan of it as it goes.
//!
//! Plain HTTP requests come in absolute form (`GET http://host/path`); HTTPS comes through
//! `CONNECT host:443`, which the recorder answers itself with a certificate for that host
//! minted by its own CA ([`CA_CERT_FILE`] in the directory it is given, made on first use), so
//! a client that trusts that CA lets it read the requests before they are sent on over TLS.
//! Each exchange (of every host, or of `include_hosts`) becomes a step, one plan for all of
//! them: its target is the first HTML page's origin (or the first request's) and steps on
//! other hosts carry an absolute `url:`; after each, the whole plan is written again to a temporary file renamed over
//! the plan, so stopping at any moment leaves the last complete, valid plan.
//!
//! Off the loopback, clients must send `Proxy-Authorization` with the token (`Bearer TOKEN`,
//! or Basic with TOKEN as the password, as `curl --proxy-user user:TOKEN` does).
//!
//! The plan keeps no credential: `Authorization`, `X-Api-Key` and `X-Auth-Token` values read
//! `{{ env.BELIER_… }}` instead (unless made from an earlier response), `Cookie` and
//! `Proxy-Authorization` are left out, and the file is its owner's only ([`write_plan`]).
#![deny(missing_docs)]

mod book;
mod ca;
mod error;
mod proxy;
mod upstream;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use book::{write_plan, Summary};
pub use ca::{CA_CERT_FILE, CA_KEY_FILE};
pub use error::RecordError;

/// What the recorder does.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Where the proxy listens.
    pub listen: SocketAddr,
    /// Token clients must present in `Proxy-Authorization`; required off the loopback.
    pub token: Option<String>,
    /// The plan file, rewritten after each recorded exchange.
    pub out: PathBuf,
    /// Stop recording after this many exchanges.
    pub max_requests: Option<u64>,
    /// Record only these hosts (`host` or `host:port`); empty: the first host recorded.
    pub include_hosts: Vec<String>,
    /// Directory of the CA (made there on first use).
    pub ca_dir: PathBuf,
    /// PEM certificates to trust for origins over HTTPS, instead of the system's roots.
    pub upstream_ca_pem: Option<Vec<u8>>,
}

/// A running recorder; [`Running::stop`] ends it.
pub struct Running {
    addr: SocketAddr,
    ca_cert: PathBuf,
    book: Arc<book::Book>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Binds `settings.listen`, loads or makes the CA, and serves on a thread of its own.
pub fn start(settings: Settings) -> Result<Running, RecordError> {
    if !settings.listen.ip().is_loopback() && settings.token.is_none() {
        return Err(RecordError::NeedsToken(settings.listen));
    }
    let authority = Arc::new(ca::Authority::load_or_create(&settings.ca_dir)?);
    let upstream = Arc::new(upstream::Upstream::new(
        settings.upstream_ca_pem.as_deref(),
    )?);
    let listener = std::net::TcpListener::bind(settings.listen).map_err(|e| RecordError::Bind {
        addr: settings.listen,
        why: e.to_string(),
    })?;
    let addr = listener.local_addr().map_err(|e| RecordError::Bind {
        addr: settings.listen,
        why: e.to_string(),
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| RecordError::Runtime(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RecordError::Runtime(e.to_string()))?;
    let book = Arc::new(book::Book::new(
        settings.out.clone(),
        settings.max_requests,
        settings.include_hosts.clone(),
    ));
    let ca_cert = authority.cert_path().to_path_buf();
    let proxy = Arc::new(proxy::Proxy {
        token: settings.token.clone(),
        authority,
        upstream,
        book: Arc::clone(&book),
    });
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("belier-record".into())
        .spawn(move || runtime.block_on(proxy::serve(listener, proxy, stopped)))
        .map_err(|e| RecordError::Runtime(e.to_string()))?;
    Ok(Running {
        addr,
        ca_cert,
        book,
        stop: Some(stop),
        thread: Some(thread),
    })
}

impl Running {
    /// The address the proxy listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The CA certificate clients trust for HTTPS.
    pub fn ca_cert(&self) -> &Path {
        &self.ca_cert
    }

    /// Exchanges recorded so far.
    pub fn recorded(&self) -> u64 {
        self.book.recorded()
    }

    /// Whether `max_requests` exchanges were recorded.
    pub fn full(&self) -> bool {
        self.book.full()
    }

    /// Stops the proxy (connections in progress are dropped) and says what was recorded.
    pub fn stop(mut self) -> Summary {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.book.summary()
    }
}
