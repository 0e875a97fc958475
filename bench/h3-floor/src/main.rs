//! h3-floor: the least an HTTP/3 client on `quinn` and `h3` does per request, as a floor for
//! `bench/h3` to put beside belier's `--http3` and oha's HTTP/3 mode (which use the same two
//! crates).
//!
//! The loop is belier's in its cheapest form: one thread (a current-thread runtime and a
//! `LocalSet`), `-c` concurrent requests as stream slots, `-s` of them sharing a QUIC
//! connection, each slot sending `GET URL` (the request built once, cloned per request as h3
//! takes it by value), reading the head and the whole body, and going again until the
//! deadline. No timing, no histogram, no per-request bookkeeping beyond two counters: what
//! is left is what quinn and h3 cost. Certificates are accepted unverified (the handshake's
//! signatures are still checked), as belier's and oha's `-k`/`--insecure` do.
//!
//! The output is the subset of belier's JSON summary that `bench/run` reads.

use std::cell::Cell;
use std::net::{Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::task::LocalSet;

const USAGE: &str = "usage: h3-floor [-c CONCURRENT] [-s STREAMS] [-z SECONDS] https://HOST:PORT/PATH";

type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// What to load.
struct Args {
    concurrent: usize,
    streams: usize,
    duration: Duration,
    url: http::Uri,
    addr: SocketAddr,
}

/// Requests that ended, and those that ended with a complete 2xx/3xx response.
#[derive(Default)]
struct Tally {
    requests: Cell<u64>,
    succeeded: Cell<u64>,
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(msg) => {
            eprintln!("h3-floor: {msg}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let began = Instant::now();
    let tally = match LocalSet::new().block_on(&runtime, run(&args)) {
        Ok(tally) => tally,
        Err(e) => {
            eprintln!("h3-floor: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (requests, succeeded) = (tally.requests.get(), tally.succeeded.get());
    let summary = serde_json::json!({ "summary": {
        "requests": requests,
        "succeeded": succeeded,
        "errors": requests - succeeded,
        "duration_s": began.elapsed().as_secs_f64(),
    }});
    println!("{summary}");
    ExitCode::SUCCESS
}

fn parse_args(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut concurrent, mut streams, mut seconds, mut url) = (50, 10, 5.0, None);
    while let Some(arg) = argv.next() {
        let mut number = |flag: &str| -> Result<f64, String> {
            let text = argv.next().ok_or(format!("{flag} needs a value"))?;
            let text = text.strip_suffix('s').unwrap_or(&text).to_string();
            text.parse::<f64>()
                .ok()
                .filter(|n| *n > 0.0)
                .ok_or(format!("{flag} takes a positive number, not {text:?}"))
        };
        match arg.as_str() {
            "-c" => concurrent = number("-c")? as usize,
            "-s" => streams = number("-s")? as usize,
            "-z" => seconds = number("-z")?,
            _ if arg.starts_with("https://") => url = Some(arg),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let url: http::Uri = url
        .ok_or("no https:// URL")?
        .parse()
        .map_err(|e| format!("the URL: {e}"))?;
    let authority = url.authority().ok_or("the URL has no host")?;
    let addr = (authority.host(), authority.port_u16().unwrap_or(443))
        .to_socket_addrs()
        .map_err(|e| format!("{authority}: {e}"))?
        .next()
        .ok_or(format!("{authority}: no address"))?;
    Ok(Args {
        concurrent: concurrent.max(1),
        streams: streams.max(1),
        duration: Duration::from_secs_f64(seconds),
        url,
        addr,
    })
}

/// Opens the connections, runs every slot until the deadline, and counts.
async fn run(args: &Args) -> Result<Rc<Tally>, String> {
    let client = client_config()?;
    let host = args.url.host().unwrap_or("localhost").to_string();
    let request = Rc::new(
        http::Request::get(args.url.clone())
            .body(())
            .map_err(|e| e.to_string())?,
    );
    let tally = Rc::new(Tally::default());
    let deadline = Instant::now() + args.duration;
    let mut slots = Vec::new();
    let mut endpoints = Vec::new();
    let mut left = args.concurrent;
    while left > 0 {
        let endpoint = quinn::Endpoint::client(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)))
            .map_err(|e| e.to_string())?;
        let connection = endpoint
            .connect_with(client.clone(), args.addr, &host)
            .map_err(|e| e.to_string())?
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(connection))
            .await
            .map_err(|e| format!("HTTP/3: {e}"))?;
        tokio::task::spawn_local(async move {
            let _ = driver.wait_idle().await;
        });
        for _ in 0..args.streams.min(left) {
            let (send, request, tally) = (send.clone(), Rc::clone(&request), Rc::clone(&tally));
            slots.push(tokio::task::spawn_local(slot(send, request, tally, deadline)));
        }
        left -= args.streams.min(left);
        endpoints.push(endpoint);
    }
    for slot in slots {
        let _ = slot.await;
    }
    Ok(tally)
}

/// One stream slot: a request after another on its connection until the deadline.
async fn slot(
    mut send: SendRequest,
    request: Rc<http::Request<()>>,
    tally: Rc<Tally>,
    deadline: Instant,
) {
    while Instant::now() < deadline {
        let answered = exchange(&mut send, &request).await;
        tally.requests.set(tally.requests.get() + 1);
        match answered {
            Ok(true) => tally.succeeded.set(tally.succeeded.get() + 1),
            Ok(false) => {}
            // A broken stream or connection: the slot stops (the run's errors show it).
            Err(_) => return,
        }
    }
}

/// One request: sent, its head read, its body read whole and dropped; whether its status
/// was a success (2xx or 3xx).
async fn exchange(
    send: &mut SendRequest,
    request: &http::Request<()>,
) -> Result<bool, h3::error::StreamError> {
    let mut stream = send.send_request(request.clone()).await?;
    stream.finish().await?;
    let response = stream.recv_response().await?;
    while let Some(mut chunk) = stream.recv_data().await? {
        chunk.advance(chunk.remaining());
    }
    Ok((200..400).contains(&response.status().as_u16()))
}

/// TLS 1.3 with ALPN `h3`, any certificate accepted, its signatures checked.
fn client_config() -> Result<quinn::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let algorithms = provider.signature_verification_algorithms;
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(algorithms)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(Arc::new(tls))
        .map_err(|e| e.to_string())?;
    Ok(quinn::ClientConfig::new(Arc::new(quic)))
}

/// Accepts any certificate; checks the handshake's signatures.
#[derive(Debug)]
struct AnyCertificate(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}
