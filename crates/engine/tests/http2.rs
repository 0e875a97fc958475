//! HTTP/2 against a prior-knowledge (h2c) server written here with h2's server API, counting
//! connections and requests on its own side.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use belier_engine::Profile;
use belier_stats::ErrorKind;
use bytes::Bytes;
use common::{config, lasting, open, requests, run};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// 200 with a 1 KiB body.
    Ok,
    /// RST_STREAM(REFUSED_STREAM) for every request.
    Refuse,
}

#[derive(Default)]
struct Counts {
    connections: AtomicU64,
    requests: AtomicU64,
}

struct H2Server {
    addr: SocketAddr,
    counts: Arc<Counts>,
    _runtime: tokio::runtime::Runtime,
}

impl H2Server {
    fn start(mode: Mode) -> H2Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let counts = Arc::new(Counts::default());
        let c = Arc::clone(&counts);
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                c.connections.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(tcp, mode, Arc::clone(&c)));
            }
        });
        H2Server {
            addr,
            counts,
            _runtime: runtime,
        }
    }

    fn connections(&self) -> u64 {
        self.counts.connections.load(Ordering::SeqCst)
    }

    fn requests(&self) -> u64 {
        self.counts.requests.load(Ordering::SeqCst)
    }
}

async fn serve(tcp: tokio::net::TcpStream, mode: Mode, counts: Arc<Counts>) {
    let Ok(mut conn) = h2::server::handshake(tcp).await else {
        return;
    };
    while let Some(Ok((request, mut respond))) = conn.accept().await {
        counts.requests.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            // Drain the request body, if any.
            let mut body = request.into_body();
            while let Some(Ok(chunk)) = body.data().await {
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            match mode {
                Mode::Ok => {
                    let response = http::Response::builder().status(200).body(()).unwrap();
                    if let Ok(mut send) = respond.send_response(response, false) {
                        let _ = send.send_data(Bytes::from(vec![b'x'; 1024]), true);
                    }
                }
                Mode::Refuse => respond.send_reset(h2::Reason::REFUSED_STREAM),
            }
        });
    }
}

fn h2_config(server: &H2Server, max_streams: usize) -> belier_engine::Config {
    let mut c = config(server.addr, "/");
    c.http2 = true;
    c.max_streams = max_streams;
    c
}

#[test]
fn requests_share_connections_by_max_streams() {
    let s = H2Server::start(Mode::Ok);
    let out = run(&requests(1000, 20, h2_config(&s, 10)));
    assert_eq!(out.totals.succeeded(), 1000, "{:?}", out.totals.counters());
    assert_eq!(s.requests(), 1000);
    assert_eq!(s.connections(), 2);
    assert_eq!(out.totals.connections_opened(), 2);
    assert_eq!(out.totals.bytes_in(), 1000 * 1024);
}

#[test]
fn a_post_body_goes_out_on_each_stream() {
    let s = H2Server::start(Mode::Ok);
    let mut c = requests(100, 4, h2_config(&s, 100));
    c.request.method = "POST".into();
    c.request.body = b"hello".to_vec();
    c.request.headers = vec![("Connection".into(), "keep-alive".into())];
    let out = run(&c);
    assert_eq!(out.totals.succeeded(), 100, "{:?}", out.totals.counters());
    assert_eq!(s.requests(), 100);
    // Four users fit in one connection: a single worker runs them.
    assert_eq!(s.connections(), 1);
}

#[test]
fn refused_streams_are_counted_as_stream_resets() {
    let s = H2Server::start(Mode::Refuse);
    let out = run(&requests(200, 10, h2_config(&s, 5)));
    assert_eq!(
        out.totals.errors_of(ErrorKind::StreamReset),
        200,
        "{:?}",
        out.totals.counters()
    );
    assert_eq!(s.requests(), 200);
    assert_eq!(s.connections(), 2);
    let example = out.totals.error_example(ErrorKind::StreamReset).unwrap();
    assert!(example.contains("refused"), "{example}");
}

#[test]
fn open_loop_sends_exactly_rate_times_duration() {
    let s = H2Server::start(Mode::Ok);
    let mut c = lasting(h2_config(&s, 100), Duration::from_secs(1));
    c.load = open(Profile::constant(200.0), 100, None);
    let out = run(&c);
    assert_eq!(out.totals.requests(), 200, "{:?}", out.totals.counters());
    assert_eq!(out.totals.succeeded(), 200);
    assert_eq!(s.requests(), 200);
    // Light load: each worker's first connection has free streams for every request.
    assert!(s.connections() <= 2, "{}", s.connections());
}

#[test]
fn a_server_that_is_gone_counts_connect_errors() {
    let s = H2Server::start(Mode::Ok);
    let addr = s.addr;
    drop(s);
    let mut c = config(addr, "/");
    c.http2 = true;
    let out = run(&requests(20, 4, c));
    assert_eq!(
        out.totals.errors_of(ErrorKind::ConnectRefused),
        20,
        "{:?}",
        out.totals.counters()
    );
}
