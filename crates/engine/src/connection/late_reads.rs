//! Reads made late still carry the kernel's time: over TLS (and HTTP/2), a response that
//! waited in the socket is timed when it arrived, not when the connection came to read it.

use std::time::{Duration, Instant};

use belier_testserver::{Config as ServerConfig, Server, TlsConfig};
use tokio::io::AsyncWriteExt;

use super::{Connection, Progress, Stream};
use crate::endpoint::Endpoint;
use crate::tls::{Tls, TlsOptions};

/// How long a test leaves a response waiting in the socket before reading it.
pub(super) const LATE: Duration = Duration::from_millis(20);

/// A TLS test server (HTTP/2 too when `http2`) and a client configuration that trusts it.
pub(super) fn tls_server(http2: bool, alpn: &[u8]) -> (Server, Tls) {
    let (tls, ca) = TlsConfig::self_signed(&["localhost"]);
    let server = Server::start(ServerConfig {
        tls: Some(tls),
        http2,
        ..ServerConfig::default()
    })
    .expect("test server starts");
    let options = TlsOptions {
        ca_pem: Some(ca.into_bytes()),
        alpn: vec![alpn.to_vec()],
        ..TlsOptions::default()
    };
    let client = Tls::new(&options, "localhost").expect("client TLS");
    (server, client)
}

/// Waits (bounded) until bytes wait in the socket under `stream`; the moment it saw them.
pub(super) fn bytes_waiting(stream: &Stream) -> Instant {
    let Stream::Tls(tls) = stream else {
        panic!("a TLS stream")
    };
    let start = Instant::now();
    let mut byte = [std::mem::MaybeUninit::<u8>::uninit(); 1];
    loop {
        if let Ok(n) = tls.get_ref().0.sock_ref().peek(&mut byte) {
            assert!(n > 0, "the server closed the connection");
            return Instant::now();
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "no response in 5 s"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// A current-thread runtime, as a worker's.
pub(super) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";

/// One HTTP/1.1 exchange over `conn` whose response is read [`LATE`] after it arrived: the
/// progress, when the bytes were first seen waiting, and when the read returned.
async fn late_exchange(conn: &mut Connection) -> (Progress, Instant, Instant) {
    let mut p = Progress {
        kernel_stamps: true,
        sent: Some(Instant::now()),
        ..Progress::default()
    };
    conn.stream.write_all(REQUEST).await.unwrap();
    conn.stream.flush().await.unwrap();
    let seen = bytes_waiting(&conn.stream);
    std::thread::sleep(LATE);
    let response = conn.exchange(REQUEST, REQUEST.len(), false, &mut p).await;
    let read = Instant::now();
    assert_eq!(response.unwrap().status, 200);
    (p, seen, read)
}

#[test]
fn a_tls_response_read_late_is_timed_when_it_arrived() {
    let (server, tls) = tls_server(false, b"http/1.1");
    runtime().block_on(async {
        let endpoint = Endpoint::Tcp(server.addr());
        let mut p = Progress {
            kernel_stamps: true,
            ..Progress::default()
        };
        let mut conn = Connection::open(&endpoint, Some(&tls), &mut p)
            .await
            .unwrap();
        assert!(conn.stamped, "stamps on under TLS");
        // Linux may turn stamping on machine-wide a moment after the first socket asks (see
        // the stamp module): exchange, bounded, until a response comes stamped.
        let warm = Instant::now();
        let (p, seen, read) = loop {
            let (p, seen, read) = late_exchange(&mut conn).await;
            if p.completed.is_some() {
                break (p, seen, read);
            }
            assert!(warm.elapsed() < Duration::from_secs(2), "no stamp in 2 s");
        };
        let first = p.first_byte.unwrap();
        // The kernel's time: no later than the bytes were seen waiting (give or take the
        // clocks' conversion, which CI once measured at 1.03 ms), well before the read that
        // returned them.
        assert!(
            first <= seen + Duration::from_millis(2),
            "{:?}",
            first - seen
        );
        assert!(read - first >= LATE, "{:?}", read - first);
        assert!(p.completed.unwrap() >= first);
        assert_eq!(server.counts().requests, server.counts().responses);
    });
}

/// How long the HTTP/2 tests' server holds each response.
const H2_DELAY: Duration = Duration::from_millis(10);

/// One HTTP/2 exchange on `group` whose response arrives while the worker's thread is
/// blocked, and is read [`LATE`] or more after it came: the progress and when the exchange
/// returned.
async fn late_h2_exchange(
    group: &std::rc::Rc<crate::http2::Group>,
    target: &crate::http2::Target<'_>,
    request: &crate::http2::Template,
    server: &Server,
) -> (Progress, Instant) {
    let mut p = Progress {
        kernel_stamps: true,
        ..Progress::default()
    };
    let asked = server.counts().requests;
    let exchange = group.exchange(target, request, &mut p);
    let block = async {
        // Once the server has the request (its driver task wrote it), the thread stops: the
        // response comes H2_DELAY later and waits in the socket.
        while server.counts().requests == asked {
            tokio::time::sleep(Duration::from_micros(100)).await;
        }
        std::thread::sleep(H2_DELAY + 2 * LATE);
    };
    let (response, ()) = tokio::join!(exchange, block);
    let read = Instant::now();
    assert_eq!(response.unwrap().status, 200);
    (p, read)
}

/// HTTP/2 on `server` (over TLS with `tls`): a response read late is timed by the stamps of
/// the reads that brought its HEADERS and its END_STREAM frames.
fn h2_response_read_late(server: &Server, tls: Option<&Tls>) {
    let spec = crate::RequestSpec {
        method: "GET".into(),
        host: "localhost".into(),
        port: server.addr().port(),
        path_and_query: format!("/?delay={}ms", H2_DELAY.as_millis()),
        headers: Vec::new(),
        body: Vec::new(),
    };
    let request = crate::http2::Template::new(&spec, tls.is_some(), false).unwrap();
    let endpoint = Endpoint::Tcp(server.addr());
    let target = crate::http2::Target {
        addr: &endpoint,
        tls,
    };
    let group = std::rc::Rc::new(crate::http2::Group::new(Default::default(), false));
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime(), async {
        let warm = Instant::now();
        let (p, read) = loop {
            let (p, read) = late_h2_exchange(&group, &target, &request, server).await;
            if p.completed.is_some() {
                break (p, read);
            }
            assert!(warm.elapsed() < Duration::from_secs(2), "no stamp in 2 s");
        };
        let (sent, first) = (p.sent.unwrap(), p.first_byte.unwrap());
        assert!(first - sent >= H2_DELAY, "{:?}", first - sent);
        assert!(read - first >= LATE, "{:?}", read - first);
        assert!(p.completed.unwrap() >= first);
    });
}

#[test]
fn an_h2c_response_read_late_is_timed_when_its_frames_arrived() {
    let server = Server::start(ServerConfig {
        http2: true,
        ..ServerConfig::default()
    })
    .expect("test server starts");
    h2_response_read_late(&server, None);
}

#[test]
fn an_h2_response_over_tls_read_late_is_timed_when_its_frames_arrived() {
    let (server, tls) = tls_server(true, b"h2");
    h2_response_read_late(&server, Some(&tls));
}
