//! One request, taken apart: what `belier probe` shows (curl's --write-out use case).

use std::time::{Duration, Instant};

use belier_stats::ErrorKind;

use crate::connection::{Connection, Phase, Progress};
use crate::{request, tls, Config, StartError};

/// How long each phase of the one request took; a phase that did not happen is `None`.
#[derive(Clone, Copy, Debug)]
pub struct Phases {
    /// Name resolution.
    pub dns: Duration,
    /// TCP connect, if it completed.
    pub connect: Option<Duration>,
    /// TLS handshake, for https.
    pub tls: Option<Duration>,
    /// Request written to first response byte.
    pub ttfb: Option<Duration>,
    /// First to last response byte.
    pub transfer: Option<Duration>,
    /// From the start of the connect to the last byte.
    pub total: Duration,
}

impl Phases {
    /// The phases between name resolution and the total, in the order they happen, by name.
    pub fn on_the_connection(&self) -> [(&'static str, Option<Duration>); 4] {
        [
            ("connect", self.connect),
            ("tls", self.tls),
            ("ttfb", self.ttfb),
            ("transfer", self.transfer),
        ]
    }
}

/// Everything one request showed.
#[derive(Debug)]
pub struct Probe {
    /// The address connected to.
    pub addr: crate::Endpoint,
    /// How long each phase took.
    pub phases: Phases,
    /// TLS version, cipher and ALPN protocol, for https.
    pub tls_session: Option<String>,
    /// The status code, if a complete response arrived.
    pub status: Option<u16>,
    /// The response head as received (status line and headers).
    pub head: String,
    /// Wire bytes written.
    pub bytes_out: u64,
    /// Wire bytes read.
    pub bytes_in: u64,
    /// How the request failed, if it did.
    pub error: Option<(ErrorKind, String)>,
    /// When the timeout ran out, the phase it ran out in: `connect`, `tls`, `first byte`
    /// (the request was written and nothing came back) or `transfer` (the response started
    /// and did not finish).
    pub timed_out_in: Option<&'static str>,
}

/// Sends `config.request` once on a new connection and reports each phase.
pub fn probe(config: &Config) -> Result<Probe, StartError> {
    let spec = &config.request;
    let dns_started = Instant::now();
    let addr = crate::resolve(config)?;
    let dns = dns_started.elapsed();
    let tls = config
        .tls
        .as_ref()
        .map(|options| {
            let mut options = options.clone();
            if config.http2 {
                // HTTP/2 or nothing, as a run over it offers.
                options.alpn = vec![b"h2".to_vec()];
            }
            tls::Tls::new(&options, &spec.host)
        })
        .transpose()?;
    let bytes = request::encode(spec, false)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(StartError::Worker)?;
    // A local set: an HTTP/3 connection's driver runs as a local task.
    Ok(tokio::task::LocalSet::new().block_on(&runtime, async {
        let mut p = Progress {
            head: Some(Vec::new()),
            ..Progress::default()
        };
        let start = Instant::now();
        let exchange = async {
            if config.http3 {
                return over_http3(config, &addr, tls.as_ref(), &mut p).await;
            }
            if config.http2 {
                return over_http2(config, &addr, tls.as_ref(), &mut p).await;
            }
            let mut conn = Connection::open(&addr, tls.as_ref(), &mut p).await?;
            let session = conn.tls_session();
            // Past the connect and handshake: a timeout from here is the response's.
            p.phase = Phase::Exchanging;
            p.sent = Some(Instant::now());
            let response = conn
                .exchange(&bytes, 0, request::is_head(&spec.method), &mut p)
                .await?;
            Ok::<_, crate::connection::Failure>((response, session))
        };
        let (result, timed_out_in) = match tokio::time::timeout(config.timeout, exchange).await {
            Ok(r) => (r, None),
            Err(_) => {
                let phase = match p.phase {
                    Phase::Connecting => "connect",
                    Phase::Handshaking => "tls",
                    Phase::Exchanging if p.first_byte.is_none() => "first byte",
                    Phase::Exchanging => "transfer",
                };
                (
                    Err(crate::connection::Failure::timeout(p.phase)),
                    Some(phase),
                )
            }
        };
        let done = Instant::now();
        let between = |a: Option<Instant>, b: Option<Instant>| {
            a.zip(b).map(|(a, b)| b.saturating_duration_since(a))
        };
        let (status, tls_session, error) = match result {
            Ok((response, session)) => (Some(response.status), session, None),
            Err(f) => (None, None, Some((f.kind, f.cause.to_string()))),
        };
        Probe {
            addr,
            phases: Phases {
                dns,
                connect: p.connected.map(|c| c - start),
                // QUIC's handshake is its connect and its TLS at once.
                tls: between(p.connected, p.handshaken).filter(|_| !config.http3),
                ttfb: between(p.sent, p.first_byte),
                transfer: p.first_byte.map(|f| done - f),
                total: done - start,
            },
            tls_session,
            status,
            head: String::from_utf8_lossy(p.head.as_deref().unwrap_or_default()).into_owned(),
            bytes_out: p.bytes_out,
            bytes_in: p.bytes_in,
            error,
            timed_out_in,
        }
    }))
}

/// The probe's request over HTTP/2 (ALPN `h2` over TLS, prior knowledge without), as one
/// stream on a connection of its own: its response and the connection's TLS description.
async fn over_http2(
    config: &Config,
    addr: &crate::Endpoint,
    tls: Option<&tls::Tls>,
    p: &mut Progress,
) -> Result<(crate::connection::Response, Option<String>), crate::connection::Failure> {
    let template = crate::http2::Template::new(&config.request, tls.is_some(), false)?;
    let group = std::rc::Rc::new(crate::http2::Group::new(Default::default(), false));
    let target = crate::http2::Target { addr, tls };
    let response = group.exchange(&target, &template, p).await?;
    Ok((response, group.tls_session()))
}

/// The probe's request over HTTP/3, on a QUIC connection of its own: its response and the
/// connection's TLS description.
async fn over_http3(
    config: &Config,
    addr: &crate::Endpoint,
    tls: Option<&tls::Tls>,
    p: &mut Progress,
) -> Result<(crate::connection::Response, Option<String>), crate::connection::Failure> {
    let failed = |why: String| crate::connection::Failure {
        kind: ErrorKind::OtherIo,
        cause: crate::connection::Cause::Message(why),
    };
    let tls = tls.ok_or_else(|| failed("HTTP/3 needs an https:// URL".into()))?;
    let client = crate::http3::Client::new(tls, false).map_err(|e| failed(e.to_string()))?;
    let template = crate::http2::Template::new(&config.request, true, false)?;
    let group = std::rc::Rc::new(crate::http3::Group::new(
        Default::default(),
        Default::default(),
    ));
    let response = group.exchange(&client, addr, (&template, false), p).await?;
    Ok((response, group.tls_session()))
}
