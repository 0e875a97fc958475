//! The server handle: configuration, start and stop, and the counters and recorded requests it reads.

use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{mpsc, Arc, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, UnixListener};
use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;

use crate::behaviour::Behaviour;
use crate::connection::{Connection, OpenGuard};
use crate::counts::Counts;
use crate::handlers::{Handlers, Pool, PoolStats};
use crate::shared::{SeenRequest, Shared};
use crate::socket::{Accepted, Listener};
use crate::tls::{self, TlsConfig};

/// Pause after a failed `accept` (typically out of file descriptors) so that the accept loop
/// does not spin while the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// How often [`Server::wait_for`] looks at the counters.
const WAIT_POLL: Duration = Duration::from_millis(1);

/// How to run a [`Server`].
#[derive(Clone, Debug)]
pub struct Config {
    /// Address to listen on; port 0 picks a free port (see [`Server::addr`]).
    pub listen: SocketAddr,
    /// Listen on this Unix domain socket instead of [`Config::listen`]: the server creates
    /// it (a file already there is an error) and removes it when it stops. Everything else,
    /// TLS and HTTP/2 included, is as over TCP; the `reset` fault, which a Unix socket has no
    /// form of, closes the connection instead.
    pub unix_socket: Option<PathBuf>,
    /// Tokio worker threads serving connections. With 1, everything runs on the one server
    /// thread.
    pub threads: usize,
    /// Behaviour for requests whose query string does not override it.
    pub defaults: Behaviour,
    /// Keep the last this many requests for [`Server::recent_requests`]; 0 keeps none and takes
    /// no lock per request.
    pub record_requests: usize,
    /// Serve HTTPS: every connection starts with a TLS handshake, then gets the same HTTP/1.1
    /// handling, knobs and faults as without. `None` serves plain HTTP. See
    /// [`TlsConfig::self_signed`] for a configuration to test with.
    pub tls: Option<TlsConfig>,
    /// Also speak HTTP/2: with TLS, `h2` is offered in ALPN first (before [`TlsConfig::alpn`]'s
    /// protocols) and a connection that picks it is served over HTTP/2; without, a connection
    /// that opens with the HTTP/2 preface (h2c with prior knowledge) is. The knobs, counters
    /// and recording are the same; faults take their HTTP/2 form (see the crate's docs).
    pub http2: bool,
    /// A known capacity: every request (but `/metrics`) waits for one of a fixed number of
    /// handlers, which holds it for a service time; see [`Handlers`]. `None`: requests are
    /// answered as they come.
    pub handlers: Option<Handlers>,
    /// Also speak HTTP/3, over QUIC on the same port's UDP side, with [`Config::tls`]'s
    /// certificate (ALPN `h3`): the same knobs, counters and recording, faults in their QUIC
    /// form (see the `http3` module). HTTP/2 answers then advertise it (`Alt-Svc:
    /// h3=":PORT"; ma=86400`). Needs [`Config::tls`] and a TCP listener (not
    /// [`Config::unix_socket`]).
    pub http3: bool,
}

impl Default for Config {
    /// `127.0.0.1:0`, one thread, default behaviour, no recording, plain HTTP.
    fn default() -> Self {
        Config {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            unix_socket: None,
            threads: 1,
            defaults: Behaviour::default(),
            record_requests: 0,
            tls: None,
            http2: false,
            handlers: None,
            http3: false,
        }
    }
}

/// A running test server. Stops (closing every connection) on [`Server::stop`] or drop.
pub struct Server {
    addr: SocketAddr,
    unix_socket: Option<PathBuf>,
    tls: bool,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Binds, then serves on a background thread; returns as soon as the server accepts
    /// connections.
    ///
    /// The server owns its tokio runtime, on threads of its own, so it can be started from
    /// synchronous tests and from inside another runtime alike.
    ///
    /// # Errors
    /// Binding errors (address in use, permission denied), `InvalidInput` for zero threads or
    /// an unusable [`TlsConfig`] (the message says what is wrong with it), and failures to
    /// create the runtime or its threads.
    pub fn start(config: Config) -> io::Result<Server> {
        if config.threads == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the test server needs at least one thread",
            ));
        }
        let acceptor = config
            .tls
            .as_ref()
            .map(|tls| tls.acceptor(config.http2))
            .transpose()?;
        let (listener, addr) = match &config.unix_socket {
            Some(path) => (StdListener::Unix(Listener::bind_unix(path)?), config.listen),
            None => {
                let listener = std::net::TcpListener::bind(config.listen)?;
                listener.set_nonblocking(true)?;
                let addr = listener.local_addr()?;
                (StdListener::Tcp(listener), addr)
            }
        };
        let quic = quic_socket(&config, addr)?;
        if config.handlers.as_ref().is_some_and(|h| h.workers == 0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the test server's handler pool needs at least one worker",
            ));
        }
        let shared = Arc::new(Shared {
            h2c: config.http2,
            alt_svc: quic.is_some().then(|| {
                let value = format!("h3=\":{}\"; ma=86400", addr.port());
                http::HeaderValue::from_str(&value).expect("digits and punctuation")
            }),
            ..Shared::new(config.defaults, config.record_requests, config.handlers)
        });
        let (stop_tx, stop_rx) = oneshot::channel();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("belier-target".to_owned())
            .spawn({
                let shared = Arc::clone(&shared);
                let threads = config.threads;
                let acceptor = acceptor.clone();
                let listeners = Listeners {
                    tcp: listener,
                    quic,
                };
                move || serve(listeners, threads, acceptor, shared, stop_rx, ready_tx)
            })?;
        let ready = ready_rx.recv().unwrap_or_else(|_| {
            Err(io::Error::other(
                "the test server thread died while starting",
            ))
        });
        match ready {
            Ok(()) => Ok(Server {
                addr,
                unix_socket: config.unix_socket,
                tls: acceptor.is_some(),
                shared,
                stop: Some(stop_tx),
                thread: Some(thread),
            }),
            Err(err) => {
                let _ = thread.join();
                if let Some(path) = &config.unix_socket {
                    let _ = std::fs::remove_file(path);
                }
                Err(err)
            }
        }
    }

    /// What the handler pool did so far, when the server has one ([`Config::handlers`]).
    pub fn pool_stats(&self) -> Option<PoolStats> {
        self.shared.pool.as_ref().map(Pool::stats)
    }

    /// The address the server listens on, with the real port when port 0 was asked for.
    /// With [`Config::unix_socket`], nothing listens there: it is [`Config::listen`] as given.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The Unix domain socket the server listens on, if it does ([`Config::unix_socket`]).
    pub fn unix_socket(&self) -> Option<&Path> {
        self.unix_socket.as_deref()
    }

    /// `http://{addr}`, or `https://{addr}` with TLS, followed by `path_and_query` (a `/` is
    /// inserted if missing). With a Unix socket the host is `localhost`: the URL to give a
    /// client beside the socket's path.
    pub fn url(&self, path_and_query: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        let slash = if path_and_query.starts_with('/') {
            ""
        } else {
            "/"
        };
        let host = match self.unix_socket {
            Some(_) => "localhost".to_string(),
            None => self.addr.to_string(),
        };
        format!("{scheme}://{host}{slash}{path_and_query}")
    }

    /// The behaviour applied when a request's query string does not override it.
    pub fn defaults(&self) -> &Behaviour {
        &self.shared.defaults
    }

    /// A snapshot of the counters. Each is read atomically, the set is not: read it once the
    /// clients are done, or use [`Server::wait_for`].
    pub fn counts(&self) -> Counts {
        self.shared.counts()
    }

    /// Connections accepted and not yet closed by either side. Useful to check that a client
    /// does not leak connections: see [`Server::wait_idle`].
    pub fn open_connections(&self) -> u64 {
        self.shared.counters.open.load(Relaxed)
    }

    /// The last [`Config::record_requests`] requests, oldest first; empty when recording is
    /// off.
    pub fn recent_requests(&self) -> Vec<SeenRequest> {
        match &self.shared.recorder {
            Some(recorder) => {
                let ring = recorder.ring.lock().unwrap_or_else(PoisonError::into_inner);
                ring.iter().cloned().collect()
            }
            None => Vec::new(),
        }
    }

    /// The peer address of connection `connection` (numbered from 1, as in
    /// [`SeenRequest::connection`]), when requests are recorded.
    pub fn peer(&self, connection: u64) -> Option<SocketAddr> {
        let recorder = self.shared.recorder.as_ref()?;
        let peers = recorder
            .peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        peers
            .get(usize::try_from(connection.checked_sub(1)?).ok()?)
            .copied()
    }

    /// Blocks until `done` holds for the counters or `timeout` passes; returns whether it held.
    ///
    /// For the counts that race with the client by nature: a connection is counted when the
    /// server accepts it, which can be after the client's `connect` returned.
    /// This blocks the calling thread; from async code, call it via `spawn_blocking`.
    pub fn wait_for(&self, timeout: Duration, mut done: impl FnMut(&Counts) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if done(&self.counts()) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(WAIT_POLL);
        }
    }

    /// Blocks until no connection is open or `timeout` passes; returns whether none is open.
    /// The server notices a client's close when it next reads, which is promptly for idle and
    /// stalled connections. Blocks like [`Server::wait_for`].
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        self.wait_for(timeout, |_| self.open_connections() == 0)
    }

    /// Stops the server as if its process died: the listener closes (new connections are
    /// refused) and every open connection is closed, whatever it was doing. Returns once all
    /// sockets are closed. Dropping the server does the same.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        // Dropping the sender is the signal.
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            // A panic on the server thread has nowhere useful to go from here; the tests
            // relying on the server will fail on their own.
            let _ = thread.join();
            if let Some(path) = &self.unix_socket {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The UDP socket of [`Config::http3`], bound to `addr` (the TCP listener's, its port
/// included), with the TLS configuration it serves; `None` without HTTP/3.
fn quic_socket(
    config: &Config,
    addr: SocketAddr,
) -> io::Result<Option<(std::net::UdpSocket, TlsConfig)>> {
    if !config.http3 {
        return Ok(None);
    }
    let refuse = |why: &str| Err(io::Error::new(io::ErrorKind::InvalidInput, why.to_string()));
    let Some(tls) = &config.tls else {
        return refuse("HTTP/3 needs TLS: QUIC is always TLS 1.3");
    };
    if config.unix_socket.is_some() {
        return refuse("HTTP/3 goes over UDP, not a Unix socket");
    }
    let socket = std::net::UdpSocket::bind(addr)?;
    Ok(Some((socket, tls.clone())))
}

/// The server thread: runtime, accept loops, and on stop, the runtime's drop.
fn serve(
    listeners: Listeners,
    threads: usize,
    acceptor: Option<TlsAcceptor>,
    shared: Arc<Shared>,
    stop: oneshot::Receiver<()>,
    ready: mpsc::SyncSender<io::Result<()>>,
) {
    let mut builder = if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(threads);
        builder
    };
    let runtime = match builder
        .enable_io()
        .enable_time()
        .thread_name("belier-target-worker")
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            let _ = ready.send(Err(err));
            return;
        }
    };
    runtime.block_on(async move {
        let listener = match listeners.tcp {
            StdListener::Tcp(l) => TcpListener::from_std(l).map(Listener::Tcp),
            StdListener::Unix(l) => UnixListener::from_std(l).map(Listener::Unix),
        };
        let quic = listeners
            .quic
            .map(|(socket, tls)| crate::http3::endpoint(socket, &tls))
            .transpose();
        match (listener, quic) {
            (Ok(listener), Ok(quic)) => {
                if let Some(endpoint) = quic {
                    let shared = Arc::clone(&shared);
                    tokio::spawn(crate::http3::accept(endpoint, shared, count_connection));
                }
                let _ = ready.send(Ok(()));
                accept(listener, acceptor, shared, stop).await;
            }
            (Err(err), _) | (_, Err(err)) => {
                let _ = ready.send(Err(err));
            }
        }
    });
    // Dropping the runtime drops every connection task and so closes every socket, before this
    // thread ends and `stop` returns. Cancelling by drop means no connection code path needs to
    // watch for shutdown, and none can be missed.
    drop(runtime);
}

async fn accept(
    listener: Listener,
    acceptor: Option<TlsAcceptor>,
    shared: Arc<Shared>,
    mut stop: oneshot::Receiver<()>,
) {
    loop {
        let accepted = tokio::select! {
            biased;
            _ = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok(Accepted::Tcp(stream)) => {
                let peer = stream.peer_addr().ok();
                spawn(stream, peer, acceptor.as_ref(), &shared)
            }
            Ok(Accepted::Unix(stream)) => spawn(stream, None, acceptor.as_ref(), &shared),
            Err(_) => {
                tokio::select! {
                    biased;
                    _ = &mut stop => return,
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                }
            }
        }
    }
}

/// Counts an accepted connection and starts its task. The handshake runs on that task, never
/// on the accept loop.
fn spawn<S>(
    stream: S,
    peer: Option<SocketAddr>,
    acceptor: Option<&TlsAcceptor>,
    shared: &Arc<Shared>,
) where
    S: crate::socket::Socket + crate::connection::Transport,
{
    let seq = count_connection(shared, peer);
    let open = OpenGuard::new(shared);
    let shared = Arc::clone(shared);
    match acceptor {
        None if shared.h2c => tokio::spawn(crate::http2::serve_plain(stream, shared, seq, open)),
        None => tokio::spawn(Connection::new(stream, shared, seq, open).run()),
        Some(acceptor) => tokio::spawn(tls::serve(acceptor.clone(), stream, shared, seq, open)),
    };
}

/// Counts an accepted connection (TCP or QUIC) and records its peer when recording; returns
/// its number, from 1.
fn count_connection(shared: &Arc<Shared>, peer: Option<SocketAddr>) -> u64 {
    let seq = shared.counters.connections.fetch_add(1, Relaxed) + 1;
    if let (Some(recorder), Some(peer)) = (&shared.recorder, peer) {
        let mut peers = recorder
            .peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let at = usize::try_from(seq - 1).unwrap_or(usize::MAX);
        if peers.len() <= at {
            peers.resize(at + 1, SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)));
        }
        peers[at] = peer;
    }
    seq
}

/// What the server thread listens on: the TCP (or Unix) listener, and the UDP socket of
/// HTTP/3 with the TLS configuration it serves.
struct Listeners {
    tcp: StdListener,
    quic: Option<(std::net::UdpSocket, TlsConfig)>,
}

/// A bound listener before the runtime takes it.
enum StdListener {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener),
}
