//! HTTP/2 against a server written here with h2's server API, over prior-knowledge h2c and
//! over TLS (ALPN h2), counting connections and requests on its own side.

mod common;

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
    /// Answers 10 requests per connection, then sends GOAWAY and closes it once they are done.
    GoAwayAfter10,
    /// Never answers.
    Stall,
    /// Drops the connection (no GOAWAY) at the first request.
    Drop,
    /// 200 with two `server-timing` headers: `app;dur=7.5`, then `total;dur=9` (and a body).
    Timed,
}

/// Requests the server took, on its own side.
#[derive(Default)]
struct Counts {
    requests: AtomicU64,
}

type H2Server = common::h2_server::H2Server<Counts>;

impl H2Server {
    fn start(mode: Mode) -> H2Server {
        H2Server::listen(move |io, counts| serve(io, mode, counts))
    }

    /// A server over TLS with a fresh certificate for `localhost`; returns it and its CA (PEM).
    fn start_tls(mode: Mode) -> (H2Server, String) {
        H2Server::listen_tls(move |io, counts| serve(io, mode, counts))
    }

    fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::SeqCst)
    }
}

async fn serve<T>(io: T, mode: Mode, counts: Arc<Counts>)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let Ok(mut conn) = h2::server::handshake(io).await else {
        return;
    };
    let mut served = 0;
    while let Some(Ok((request, mut respond))) = conn.accept().await {
        counts.requests.fetch_add(1, Ordering::SeqCst);
        served += 1;
        match mode {
            Mode::GoAwayAfter10 if served == 10 => conn.graceful_shutdown(),
            Mode::Drop => return,
            _ => {}
        }
        tokio::spawn(async move {
            // Drain the request body, if any.
            let mut body = request.into_body();
            while let Some(Ok(chunk)) = body.data().await {
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            match mode {
                Mode::Ok | Mode::GoAwayAfter10 | Mode::Drop => {
                    let response = http::Response::builder().status(200).body(()).unwrap();
                    if let Ok(mut send) = respond.send_response(response, false) {
                        let _ = send.send_data(Bytes::from(vec![b'x'; 1024]), true);
                    }
                }
                Mode::Timed => {
                    let response = http::Response::builder()
                        .status(200)
                        .header("server-timing", "app;dur=7.5")
                        .header("server-timing", "total;dur=9")
                        .body(())
                        .unwrap();
                    if let Ok(mut send) = respond.send_response(response, false) {
                        let _ = send.send_data(Bytes::from_static(b"ok"), true);
                    }
                }
                Mode::Refuse => respond.send_reset(h2::Reason::REFUSED_STREAM),
                Mode::Stall => {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    drop(respond);
                }
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
fn server_timing_headers_of_every_stream_are_read_as_one_list() {
    let s = H2Server::start(Mode::Timed);
    let mut c = requests(200, 4, h2_config(&s, 10));
    c.server_timing = Some(belier_engine::ServerTimingHeader::ServerTiming);
    let out = run(&c);
    assert_eq!(s.requests(), 200);
    let times = out.totals.server_times().expect("server times recorded");
    assert_eq!(
        (
            times.counts.timed,
            times.counts.missing,
            times.counts.malformed
        ),
        (200, 0, 0)
    );
    let names: Vec<&str> = times.metrics.keys().map(String::as_str).collect();
    assert_eq!(names, ["app", "total"]);
    let app = times.metrics["app"].values_us();
    assert_eq!(app.len(), 200);
    assert!(app.equivalent(app.min(), 7_500) && app.equivalent(app.max(), 7_500));
    // The server's time is its `total`, not the larger sum of the two.
    let server = times.server.values_us();
    assert!(server.equivalent(server.max(), 9_000));
    // Off, nothing is read.
    let plain = run(&requests(20, 2, h2_config(&s, 10)));
    assert!(plain.totals.server_times().is_none());
}

#[test]
fn requests_share_connections_by_max_streams() {
    let s = H2Server::start(Mode::Ok);
    let out = run(&requests(1000, 20, h2_config(&s, 10)));
    assert_eq!(out.totals.succeeded(), 1000, "{:?}", out.totals.counters());
    assert_eq!(s.requests(), 1000);
    assert_eq!(s.connections(), 2);
    assert_eq!(out.totals.connections_opened(), 2);
    // Frames on the wire: each response a HEADERS frame (9-byte header, `:status 200` as one
    // HPACK byte) and a DATA frame (9 + 1,024); the connections' SETTINGS and acks on top.
    let per_response = 9 + 1 + 9 + 1024;
    let bytes_in = out.totals.bytes_in();
    assert!(
        (1000 * per_response..=1000 * per_response + 200).contains(&bytes_in),
        "{bytes_in}"
    );
}

#[test]
fn users_fill_connections_of_max_streams_each() {
    let s = H2Server::start(Mode::Ok);
    let mut c = requests(2000, 100, h2_config(&s, 10));
    c.threads = 4;
    let out = run(&c);
    assert_eq!(out.totals.succeeded(), 2000, "{:?}", out.totals.counters());
    assert_eq!(s.requests(), 2000);
    assert_eq!(s.connections(), 10);
    assert_eq!(out.totals.connections_opened(), 10);
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
fn an_open_loop_opens_its_connection_before_the_first_arrival() {
    // 2,000/s on one worker, 100 streams a connection: the 20 stream slots of the first 10 ms
    // share one connection, opened (handshake and SETTINGS included) ahead of the schedule,
    // so no request waits for it or records its connect.
    let s = H2Server::start(Mode::Ok);
    let mut c = lasting(h2_config(&s, 100), Duration::from_millis(500));
    c.threads = 1;
    c.load = open(Profile::constant(2000.0), 100, None);
    let out = run(&c);
    let t = &out.totals;
    assert_eq!(t.succeeded(), 1000);
    assert_eq!(s.requests(), 1000);
    assert_eq!(s.connections(), 1);
    assert_eq!(t.connections_opened(), 1);
    assert_eq!(t.histogram(belier_stats::Metric::Connect).len(), 0);
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

#[test]
fn over_tls_with_alpn_h2() {
    let (s, ca) = H2Server::start_tls(Mode::Ok);
    let mut c = requests(500, 20, h2_config(&s, 10));
    c.request.host = "localhost".into();
    c.connect_to = Some(s.addr);
    c.tls = Some(belier_engine::TlsOptions {
        ca_pem: Some(ca.into_bytes()),
        // The engine offers h2 alone whatever the options say.
        alpn: vec![b"http/1.1".to_vec()],
        ..belier_engine::TlsOptions::default()
    });
    let out = run(&c);
    assert_eq!(out.totals.succeeded(), 500, "{:?}", out.totals.counters());
    assert_eq!(s.requests(), 500);
    assert_eq!(s.connections(), 2);
    assert_eq!(out.totals.connections_opened(), 2);
    assert_eq!(out.totals.histogram(belier_stats::Metric::Tls).len(), 2);
    let session = out.totals.tls_session().unwrap();
    assert!(session.contains("ALPN h2"), "{session}");
}

#[test]
fn goaway_makes_new_connections_and_every_request_is_accounted_for() {
    let s = H2Server::start(Mode::GoAwayAfter10);
    let out = run(&requests(300, 8, h2_config(&s, 4)));
    let t = &out.totals;
    // Streams the server took are answered; those beyond its GOAWAY never reached it and
    // fail (never retried) or were sent on a new connection.
    assert_eq!(t.requests(), 300, "{:?}", t.counters());
    assert_eq!(t.succeeded() + t.errors(), 300, "{:?}", t.counters());
    assert_eq!(t.succeeded(), s.requests(), "{:?}", t.counters());
    assert_eq!(t.connections_opened(), s.connections());
    // A graceful GOAWAY lets the streams already on their way finish, so a connection may
    // carry a few more than 10.
    assert!(s.connections() > 10, "{}", s.connections());
}

#[test]
fn a_stalled_server_gives_timeouts() {
    let s = H2Server::start(Mode::Stall);
    let mut c = requests(10, 10, h2_config(&s, 100));
    c.timeout = Duration::from_millis(300);
    let out = run(&c);
    assert_eq!(
        out.totals.errors_of(ErrorKind::Timeout),
        10,
        "{:?}",
        out.totals.counters()
    );
    assert_eq!(s.connections(), 1);
}

#[test]
fn a_dropped_connection_closes_its_streams_before_the_response() {
    let s = H2Server::start(Mode::Drop);
    let out = run(&requests(50, 5, h2_config(&s, 5)));
    let t = &out.totals;
    assert_eq!(t.requests(), 50, "{:?}", t.counters());
    assert_eq!(t.succeeded(), 0, "{:?}", t.counters());
    assert_eq!(
        t.errors_of(ErrorKind::ClosedBeforeResponse) + t.errors_of(ErrorKind::ConnectionReset),
        50,
        "{:?}",
        t.counters()
    );
}
