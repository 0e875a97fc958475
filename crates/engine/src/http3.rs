//! HTTP/3 connections (QUIC v1, TLS 1.3, ALPN `h3`) shared by groups of stream slots, as
//! HTTP/2's are (see the `http2` module): the first slot that needs the group's connection
//! opens it (that request records the QUIC handshake as its connect and TLS phases, and counts
//! the connection), its driver runs as a local task, and once it ends (the server's idle
//! timeout, a CONNECTION_CLOSE, a GOAWAY) the next slot that needs it opens a new one.
//!
//! QUIC and HTTP/3 framing, QPACK and flow control are `quinn`'s and `h3`'s; each connection
//! has a UDP socket of its own (quinn's endpoint, with GSO/GRO where the kernel has them).
//! The request's head is the run's HTTP/2 template (`:method`, `:scheme`, `:authority`,
//! `:path` and the headers), built once.
//!
//! A stream the server refused before processing it (`H3_REQUEST_REJECTED`), or one that
//! could not start because the connection was closing (after a GOAWAY), goes again on a new
//! connection, counted as re-sent, as HTTP/2's streams above a GOAWAY's id do (RFC 9114
//! §4.1.1, §5.2); any other failure is the request's, never retried. Bytes are the UDP
//! payloads the connection carried since the previous exchange on it ended.
//!
//! QUIC's own figures (handshakes, datagrams, lost packets, each connection's end) are counted
//! per connection (see `figures`).

mod figures;
mod stamped_socket;

pub(crate) use figures::Tally;

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::Instant;

use belier_stats::ErrorKind;
use bytes::{Buf, Bytes};
use futures_util::FutureExt;
use h3::error::{Code, ConnectionError, StreamError};

use crate::connection::{
    Cause, Failure, OpenConnections, Phase, Progress, Response, StreamProgress,
};
use crate::endpoint::Endpoint;
use crate::http2::Template;
use crate::parsed_response::{read_head, Body};
use crate::tls::Tls;

/// What an HTTP/3 run shares among its workers: the QUIC client configuration (TLS 1.3 from
/// the run's TLS settings, ALPN `h3`) and the server name it checks.
#[derive(Clone)]
pub(crate) struct Client {
    config: quinn::ClientConfig,
    server_name: String,
    /// Send a connection's first requests as 0-RTT early data when a ticket allows it.
    early: bool,
}

/// Why HTTP/3 cannot be set up.
#[derive(Debug, thiserror::Error)]
#[error("HTTP/3: {0}")]
pub struct Http3Error(String);

impl Client {
    /// The client of a run whose TLS settings are `tls`; `early`: it sends 0-RTT early data
    /// (the run's connections keep the server's tickets for those to come).
    pub(crate) fn new(tls: &Tls, early: bool) -> Result<Client, Http3Error> {
        let mut config = (**tls.connector.config()).clone();
        config.alpn_protocols = vec![b"h3".to_vec()];
        if early {
            config.resumption = rustls::client::Resumption::default();
            config.enable_early_data = true;
        }
        let quic = quinn::crypto::rustls::QuicClientConfig::try_from(Arc::new(config))
            .map_err(|e| Http3Error(e.to_string()))?;
        Ok(Client {
            config: quinn::ClientConfig::new(Arc::new(quic)),
            server_name: tls.server_name.to_str().into_owned(),
            early,
        })
    }
}

type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;
type RequestStream = h3::client::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// Whether a 0-RTT connection's early data was accepted, once its handshake completed (false
/// too when the connection was lost before).
type EarlyAccepted = futures_util::future::Shared<quinn::ZeroRttAccepted>;

/// An open connection: the handle that starts streams on it, and its byte counts so far.
struct Open {
    send: SendRequest,
    connection: quinn::Connection,
    generation: u64,
    /// UDP payload bytes received and sent that earlier exchanges took.
    taken: Cell<(u64, u64)>,
    /// QUIC's figures as last read (shared with the connection's driver, which reads the rest
    /// when it ends).
    read: Rc<figures::Read>,
    /// A 0-RTT connection: whether the server accepted its early data.
    early: Option<EarlyAccepted>,
    /// Its two ends, when the run records requests by address (see [`Progress::route`]).
    route: Option<belier_stats::Route>,
    /// The kernel's stamp of the last datagram its socket read (`Config::kernel_stamps`).
    stamps: Option<stamped_socket::LastStamp>,
    /// The endpoint (UDP socket) the connection lives on: dropped with it.
    _endpoint: quinn::Endpoint,
}

impl Open {
    /// Whether the connection sent early data the server refused: what was sent on it before
    /// the handshake completed was not processed.
    async fn early_refused(&self) -> bool {
        match &self.early {
            Some(accepted) => !accepted.clone().await,
            None => false,
        }
    }

    /// The instant of the kernel's stamp of the last datagram the connection's socket read,
    /// kept between the request's send and `now`; `None` without stamps.
    fn stamped(&self, sent: Option<Instant>, now: Instant) -> Option<Instant> {
        let stamp = self.stamps.as_ref()?.get()?;
        Some(crate::connection::stamp::to_instant(stamp, sent?, now))
    }
}

/// One HTTP/3 connection at a time, shared by the stream slots of a group.
pub(crate) struct Group {
    open: RefCell<Option<Rc<Open>>>,
    /// Held while a slot opens the connection, so that the group's other slots wait for it.
    opening: tokio::sync::Mutex<()>,
    generations: Cell<u64>,
    /// The worker's count of open connections, which this group's connections join.
    connections: Rc<OpenConnections>,
    /// The worker's QUIC figures, which this group's connections add to.
    tally: Rc<Tally>,
    /// The server refused a connection's early data (or it was lost in its handshake): the
    /// group's next connections wait for their handshakes.
    no_early: Cell<bool>,
}

impl Group {
    /// A group whose connections count among `connections`, their QUIC figures in `tally`.
    pub(crate) fn new(connections: Rc<OpenConnections>, tally: Rc<Tally>) -> Group {
        Group {
            open: RefCell::new(None),
            opening: tokio::sync::Mutex::new(()),
            generations: Cell::new(0),
            connections,
            tally,
            no_early: Cell::new(false),
        }
    }

    /// Adds to the worker's tally what the group's open connection did since it was last
    /// read; `ending`: the run lets go of it now, which counts as its end.
    pub(crate) fn read_figures(&self, ending: bool) {
        if let Some(open) = self.current() {
            match ending {
                true => open
                    .read
                    .ended(&open.connection, "belier_closed", &self.tally),
                false => open.read.take(&open.connection, &self.tally),
            }
        }
    }

    fn current(&self) -> Option<Rc<Open>> {
        self.open.borrow().clone()
    }

    /// Tells the server the group's open connection ends (CONNECTION_CLOSE, `H3_NO_ERROR`), as
    /// closing a TCP connection does; its driver sends it when next polled. False when the
    /// group has none open.
    pub(crate) fn close(&self) -> bool {
        let Some(open) = self.current() else {
            return false;
        };
        open.connection.close(
            quinn::VarInt::from_u32(Code::H3_NO_ERROR.value() as u32),
            b"",
        );
        true
    }

    /// Forgets connection `generation` (ended); a newer one stays.
    fn closed(&self, generation: u64) {
        let mut open = self.open.borrow_mut();
        if open.as_ref().is_some_and(|o| o.generation == generation) {
            *open = None;
        }
    }

    /// The TLS description of the current connection.
    pub(crate) fn tls_session(&self) -> Option<String> {
        self.open.borrow().as_ref()?;
        Some("TLSv1.3 (QUIC), ALPN h3".to_string())
    }

    /// Opens the group's connection unless another slot did while this one waited (then `p`
    /// is left as it was).
    pub(crate) async fn connect(
        self: &Rc<Self>,
        client: &Client,
        addr: &Endpoint,
        p: &mut Progress,
    ) -> Result<(), Failure> {
        let _opening = self.opening.lock().await;
        if self.open.borrow().is_some() {
            return Ok(());
        }
        let to = remote(addr)?;
        let local = local_socket(addr, to, p);
        // QUIC's handshake is its connect: a timeout in it is a connect timeout.
        p.phase = Phase::Connecting;
        let (endpoint, stamps) = match p.kernel_stamps {
            true => stamped_socket::endpoint(local).map(|(e, stamps)| (e, Some(stamps))),
            false => quinn::Endpoint::client(local).map(|e| (e, None)),
        }
        .map_err(|e| Failure::io(e, true))?;
        let connecting = endpoint
            .connect_with(client.config.clone(), to, &client.server_name)
            .map_err(|e| failed(&e.to_string(), ErrorKind::OtherIo))?;
        let (connection, early) = self.handshake(client, connecting).await?;
        // QUIC's handshake is its connect and its TLS at once; a 0-RTT connection's requests
        // go before it completes.
        let now = Instant::now();
        p.connected = Some(now);
        p.handshaken = Some(now);
        p.phase = Phase::Exchanging;
        let quic = h3_quinn::Connection::new(connection.clone());
        let (mut driver, send) = h3::client::new(quic)
            .await
            .map_err(|e| h3_connection_failure(&e))?;
        let generation = self.generations.get() + 1;
        self.generations.set(generation);
        let group: Weak<Group> = Rc::downgrade(self);
        let connections = Rc::clone(&self.connections);
        connections.opened();
        match &early {
            Some(accepted) => self.count_early(accepted.clone(), connection.clone()),
            None => self.tally.handshake(),
        }
        let read = Rc::new(figures::Read::default());
        let (ended, tally) = (connection.clone(), Rc::clone(&self.tally));
        let read_at_end = Rc::clone(&read);
        tokio::task::spawn_local(async move {
            // Ends when the connection does: closed by belier letting go of it, or ended by
            // the server (its idle timeout, a GOAWAY, a CONNECTION_CLOSE).
            let seen = driver.wait_idle().await;
            let cause = figures::cause(ended.close_reason().as_ref(), &seen);
            read_at_end.ended(&ended, &cause, &tally);
            // belier's own close (quinn's `LocallyClosed`, as at the run's end) is not the
            // server's, whatever h3 makes of it.
            let by_belier = matches!(seen, ConnectionError::Local { .. })
                || matches!(
                    ended.close_reason(),
                    Some(quinn::ConnectionError::LocallyClosed)
                );
            connections.closed(!by_belier);
            if let Some(group) = group.upgrade() {
                group.closed(generation);
            }
        });
        *self.open.borrow_mut() = Some(Rc::new(Open {
            send,
            connection,
            generation,
            taken: Cell::new((0, 0)),
            read,
            early,
            route: p.route,
            stamps,
            _endpoint: endpoint,
        }));
        Ok(())
    }

    /// QUIC's handshake: 0-RTT when the client sends early data, a ticket allows it and no
    /// connection of the group had it refused (then it returns at once, with the future of
    /// its acceptance), else 1-RTT, waited for.
    async fn handshake(
        &self,
        client: &Client,
        connecting: quinn::Connecting,
    ) -> Result<(quinn::Connection, Option<EarlyAccepted>), Failure> {
        let connecting = match client.early && !self.no_early.get() {
            true => match connecting.into_0rtt() {
                Ok((connection, accepted)) => return Ok((connection, Some(accepted.shared()))),
                Err(connecting) => connecting,
            },
            false => connecting,
        };
        let connection = connecting.await.map_err(|e| quic_failure(&e, true))?;
        Ok((connection, None))
    }

    /// Counts a 0-RTT connection's handshake once it completes, and whether its early data
    /// was accepted; a refusal keeps the group's next connections from sending early data.
    fn count_early(self: &Rc<Self>, accepted: EarlyAccepted, connection: quinn::Connection) {
        let group = Rc::downgrade(self);
        let tally = Rc::clone(&self.tally);
        tokio::task::spawn_local(async move {
            let ok = accepted.await;
            if !ok {
                if let Some(group) = group.upgrade() {
                    group.no_early.set(true);
                }
            }
            if connection.close_reason().is_none() || ok {
                tally.handshake();
                tally.early(ok);
            }
        });
    }

    /// Sends `request` as a stream on the group's connection (opening it if needed) and reads
    /// the response, recording progress into `p`; `resend`: it may go again on a new
    /// connection when the one it went on turns out to have ended idle under it.
    pub(crate) async fn exchange(
        self: &Rc<Self>,
        client: &Client,
        addr: &Endpoint,
        (request, resend): (&Template, bool),
        p: &mut Progress,
    ) -> Result<Response, Failure> {
        let mut mine = None;
        loop {
            let Some(open) = self.current() else {
                let before = p.connected;
                self.connect(client, addr, p).await?;
                if p.connected != before {
                    mine = Some(self.generations.get());
                }
                continue;
            };
            p.phase = Phase::Exchanging;
            // The stream goes over the connection's route, whoever opened it.
            p.route = open.route;
            let result = exchange(&open, request, p).await;
            take_bytes(&open, p);
            match result {
                Ok(response) => return Ok(response),
                // Sent as early data the server refused: not processed, it goes again (on a
                // connection that waits for its handshake).
                Err(_) if open.early_refused().await => {
                    self.closed(open.generation);
                    p.resent = true;
                }
                // Not processed, or sent on a connection the server had let go of: on a new
                // connection, unless this one was opened for it (then its failure is the
                // request's).
                Err(
                    Attempt::Unprocessed(failure)
                    | Attempt::GoingAway(failure)
                    | Attempt::Idle(failure),
                ) if mine == Some(open.generation) => {
                    self.closed(open.generation);
                    return Err(failure);
                }
                Err(Attempt::Idle(failure)) if !resend => {
                    self.closed(open.generation);
                    return Err(failure);
                }
                Err(
                    attempt @ (Attempt::Unprocessed(_) | Attempt::GoingAway(_) | Attempt::Idle(_)),
                ) => {
                    match attempt {
                        Attempt::GoingAway(_) => open.read.let_go("goaway"),
                        Attempt::Unprocessed(_) => open.read.let_go("request_rejected"),
                        _ => {}
                    }
                    self.closed(open.generation);
                    p.resent = true;
                }
                Err(Attempt::Failed(failure)) => {
                    if open.connection.close_reason().is_some() {
                        self.closed(open.generation);
                    }
                    return Err(failure);
                }
            }
        }
    }
}

/// How an attempt on a connection failed.
enum Attempt {
    /// The server said it did not process the request (`H3_REQUEST_REJECTED`): it goes again.
    Unprocessed(Failure),
    /// The connection was going away (the server's GOAWAY) before the request started: it
    /// goes again.
    GoingAway(Failure),
    /// The connection ended by its idle timeout before any of the response came: QUIC ends
    /// an idle connection silently (RFC 9000 §10.1), so a request sent as the server's timer
    /// ran out is lost with it. It goes again when re-sending is allowed, as an HTTP/1.1
    /// request does on a connection the server closed idle.
    Idle(Failure),
    /// For good: the request's failure.
    Failed(Failure),
}

/// One request on `open`.
async fn exchange(open: &Open, request: &Template, p: &mut Progress) -> Result<Response, Attempt> {
    // A streamed body counts its messages from here; an attempt that goes again counts none.
    if let Some(split) = &mut p.split {
        split.reset();
        p.stream = Some(StreamProgress::default());
    }
    let mut send = open.send.clone();
    let mut stream = send
        .send_request(request.head().clone())
        .await
        .map_err(|e| attempt(&e, false))?;
    p.sent = Some(Instant::now());
    if !request.body().is_empty() {
        stream
            .send_data(request.body().clone())
            .await
            .map_err(|e| attempt(&e, false))?;
    }
    stream.finish().await.map_err(|e| attempt(&e, false))?;
    let response = stream
        .recv_response()
        .await
        .map_err(|e| attempt(&e, false))?;
    let now = Instant::now();
    p.first_byte = Some(open.stamped(p.sent, now).unwrap_or(now));
    let (head, ()) = response.into_parts();
    read_head(&head, b"HTTP/3 ", p);
    let body = match request.is_head() {
        // No body follows a HEAD's head, whatever its headers say: only its end is read.
        true => None,
        false => Some(Body::new(&head, p).map_err(Attempt::Failed)?),
    };
    read_body(body, &mut stream, p)
        .await
        .map_err(Attempt::Failed)?;
    p.completed = open.stamped(p.sent, Instant::now());
    Ok(Response {
        status: head.status.as_u16(),
        grpc: None,
        reusable: true,
    })
}

/// Reads the response's body to its end as h3 hands it over: kept, decoded and cut into
/// messages as `p` asks (see [`Body`]); otherwise only counted, as the connection's bytes
/// (see `take_bytes`).
async fn read_body(
    mut body: Option<Body>,
    stream: &mut RequestStream,
    p: &mut Progress,
) -> Result<(), Failure> {
    while let Some(mut chunk) = stream
        .recv_data()
        .await
        .map_err(|e| stream_failure(&e, true))?
    {
        if let Some(body) = body.as_mut().filter(|b| b.wanted()) {
            while chunk.has_remaining() {
                let piece = chunk.chunk();
                body.take(p, piece)?;
                let n = piece.len();
                chunk.advance(n);
            }
        }
    }
    match body {
        Some(body) => body.finish(p),
        None => Ok(()),
    }
}

/// Counts into `p` the UDP payload bytes `open` carried since the last exchange took them.
fn take_bytes(open: &Open, p: &mut Progress) {
    let stats = open.connection.stats();
    let (rx, tx) = (stats.udp_rx.bytes, stats.udp_tx.bytes);
    let (taken_rx, taken_tx) = open.taken.replace((rx, tx));
    p.bytes_in += rx.saturating_sub(taken_rx);
    p.bytes_out += tx.saturating_sub(taken_tx);
}

/// The address the UDP socket of a connection to `to` binds: the next of `p.sources` of its
/// family (`--local-address`), or the unspecified address; its port is the kernel's choice.
/// A run that spreads its connections over several addresses records the route in `p`, as
/// over TCP.
fn local_socket(addr: &Endpoint, to: SocketAddr, p: &mut Progress) -> SocketAddr {
    let unspecified: std::net::IpAddr = match to {
        SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
    };
    let source = p.sources.as_ref().and_then(|s| s.next_for(&to));
    let local = source.unwrap_or(unspecified);
    if matches!(addr, Endpoint::Addresses(_)) || p.sources.is_some() {
        p.route = Some(belier_stats::Route { remote: to, local });
    }
    SocketAddr::new(local, 0)
}

/// The server's address: HTTP/3 goes over UDP to an IP address.
fn remote(addr: &Endpoint) -> Result<SocketAddr, Failure> {
    match addr {
        Endpoint::Tcp(a) => Ok(*a),
        Endpoint::Addresses(list) => Ok(list.pick().1),
        Endpoint::Unix(_) => Err(failed(
            "HTTP/3 goes over UDP, not a Unix socket",
            ErrorKind::OtherIo,
        )),
    }
}

fn failed(why: &str, kind: ErrorKind) -> Failure {
    Failure {
        kind,
        cause: Cause::Message(format!("HTTP/3: {why}")),
    }
}

/// A failed attempt, before any of the response came (see [`Attempt`]).
fn attempt(e: &StreamError, body: bool) -> Attempt {
    match e {
        StreamError::RemoteTerminate { code, .. } if *code == Code::H3_REQUEST_REJECTED => {
            Attempt::Unprocessed(stream_failure(e, body))
        }
        StreamError::RemoteClosing { .. } => Attempt::GoingAway(stream_failure(e, body)),
        StreamError::ConnectionError {
            0: ConnectionError::Timeout { .. },
            ..
        } => Attempt::Idle(stream_failure(e, body)),
        _ => Attempt::Failed(stream_failure(e, body)),
    }
}

/// The failure of a stream: reset by the server, or its connection's end (`body`: after the
/// response's head came).
fn stream_failure(e: &StreamError, body: bool) -> Failure {
    match e {
        StreamError::RemoteTerminate { .. } => failed(&e.to_string(), ErrorKind::StreamReset),
        StreamError::ConnectionError { 0: c, .. } => {
            let mut f = h3_connection_failure(c);
            if f.kind == ErrorKind::ClosedBeforeResponse && body {
                f.kind = ErrorKind::ClosedMidBody;
            }
            f
        }
        StreamError::RemoteClosing { .. } => {
            failed(&e.to_string(), ErrorKind::ClosedBeforeResponse)
        }
        _ => failed(&e.to_string(), ErrorKind::MalformedResponse),
    }
}

/// The failure of a connection's end as h3 saw it.
fn h3_connection_failure(e: &ConnectionError) -> Failure {
    match e {
        ConnectionError::Timeout { .. } => failed(&e.to_string(), ErrorKind::Timeout),
        ConnectionError::Remote { .. } => failed(&e.to_string(), ErrorKind::ClosedBeforeResponse),
        // belier closed it on the server's protocol error (a frame where none may come, a
        // stream that ended without its response's head).
        ConnectionError::Local {
            error: h3::error::LocalError::Application { code, .. },
            ..
        } if *code != Code::H3_NO_ERROR => failed(&e.to_string(), ErrorKind::MalformedResponse),
        _ => failed(&e.to_string(), ErrorKind::OtherIo),
    }
}

/// The failure of QUIC's handshake or connection (`connecting`: before it was up).
fn quic_failure(e: &quinn::ConnectionError, connecting: bool) -> Failure {
    use quinn::ConnectionError as E;
    let kind = match e {
        E::TimedOut if connecting => ErrorKind::ConnectTimeout,
        E::TimedOut => ErrorKind::Timeout,
        E::TransportError(t) if is_crypto_code(u64::from(t.code)) => tls_kind(t.code),
        E::ConnectionClosed(c) if is_crypto_code(u64::from(c.error_code)) => ErrorKind::TlsAlert,
        E::Reset => ErrorKind::ConnectionReset,
        E::ApplicationClosed(_) | E::ConnectionClosed(_) => ErrorKind::ClosedBeforeResponse,
        E::VersionMismatch | E::TransportError(_) => ErrorKind::MalformedResponse,
        E::LocallyClosed | E::CidsExhausted => ErrorKind::OtherIo,
    };
    failed(&e.to_string(), kind)
}

/// Whether a QUIC error code is a TLS alert's (0x0100–0x01ff, RFC 9001 §4.8).
fn is_crypto_code(code: u64) -> bool {
    (0x100..0x200).contains(&code)
}

/// A TLS failure of belier's side: the server's certificate (bad certificate alerts belier
/// sends) or the protocol.
fn tls_kind(code: quinn::TransportErrorCode) -> ErrorKind {
    let alert = u64::from(code).saturating_sub(0x100);
    match alert {
        // bad_certificate, unsupported, revoked, expired, unknown, unknown_ca.
        42..=46 | 48 => ErrorKind::TlsCertificate,
        _ => ErrorKind::TlsProtocol,
    }
}
