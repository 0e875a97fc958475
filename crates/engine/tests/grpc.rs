//! gRPC calls over the HTTP/2 connection layer, unary and streaming, against a server written
//! here with h2's server API that answers as a gRPC server does (status in the trailers, or
//! trailers-only), counting calls and messages on its own side. The real grpc-go server's
//! tests are the CLI's.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use belier_engine::GrpcStream;
use belier_grpc::{frame, Code, Compression};
use belier_stats::ErrorKind;
use common::{config, requests, run};

/// Calls the server took, on its own side, and whether each looked like a gRPC request;
/// streaming calls' messages each way, and those not as the test sent them.
#[derive(Default)]
struct Counts {
    calls: AtomicU64,
    not_grpc: AtomicU64,
    messages_in: AtomicU64,
    messages_out: AtomicU64,
    unexpected: AtomicU64,
}

type H2Server = common::h2_server::H2Server<Counts>;

fn start() -> H2Server {
    H2Server::listen(serve)
}

async fn serve(io: Box<dyn common::h2_server::Io>, counts: Arc<Counts>) {
    let Ok(mut conn) = h2::server::handshake(io).await else {
        return;
    };
    while let Some(Ok((request, respond))) = conn.accept().await {
        let n = counts.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let headers = request.headers();
        let grpc = request.method() == "POST"
            && headers["content-type"] == "application/grpc"
            && headers["te"] == "trailers";
        if !grpc {
            counts.not_grpc.fetch_add(1, Ordering::SeqCst);
        }
        let path = request.uri().path().to_string();
        if STREAMING.contains(&path.as_str()) {
            // A stream's body has no length: its messages go one at a time.
            if headers.contains_key("content-length") {
                counts.unexpected.fetch_add(1, Ordering::SeqCst);
            }
            tokio::spawn(stream(request, respond, path, Arc::clone(&counts)));
        } else {
            tokio::spawn(answer(request, respond, path, n));
        }
    }
}

/// The streaming methods: `Lots` (server streaming), `Up` (client), `Chat` (bidirectional).
const STREAMING: [&str; 3] = ["/t.S/Lots", "/t.S/Up", "/t.S/Chat"];

/// Response messages of a `Lots` call, and the gaps between them the server makes: ten
/// messages a DATA frame each, 2 ms apart; 2 ms later a frame of two (the second's gap is
/// 0); 2 ms later one cut across two frames 2 ms apart.
const LOTS: u64 = 13;
const LOTS_GAP: Duration = Duration::from_millis(2);

/// Answers a streaming call: `Lots` sends [`LOTS`] messages for the one it reads; `Up` reads
/// them all (hi, ho, hi, … expected) and answers one; `Chat` answers each one as it comes.
async fn stream(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<bytes::Bytes>,
    path: String,
    counts: Arc<Counts>,
) {
    let message = |text: &[u8]| frame::encode(text, Compression::Identity);
    let head = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    let mut body = request.into_body();
    let mut frames = belier_grpc::Frames::new(None, frame::MAX_MESSAGE, true);
    let mut send = None;
    let mut out = 0;
    let mut expected: &[u8] = b"\x0a\x02hi";
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        let before = frames.messages();
        frames.feed(&chunk).unwrap();
        let read = frames.messages() - before;
        counts.messages_in.fetch_add(read, Ordering::SeqCst);
        if read > 0 && path != "/t.S/Lots" {
            // One message a chunk as belier sends them, alternating as the test gives them.
            if read > 1 || frames.last() != Some(expected) {
                counts.unexpected.fetch_add(1, Ordering::SeqCst);
            }
            expected = if expected == b"\x0a\x02hi" {
                b"\x0a\x02ho"
            } else {
                b"\x0a\x02hi"
            };
        }
        if path == "/t.S/Chat" {
            let send = match &mut send {
                Some(send) => send,
                None => send.insert(respond.send_response(head.clone(), false).unwrap()),
            };
            for _ in 0..read {
                let _ = send.send_data(message(b"\x0a\x04echo"), false);
                out += 1;
            }
        }
    }
    let mut send = match send {
        Some(send) => send,
        None => respond.send_response(head, false).unwrap(),
    };
    match path.as_str() {
        "/t.S/Lots" => {
            for _ in 0..10 {
                let _ = send.send_data(message(b"\x0a\x03one"), false);
                tokio::time::sleep(LOTS_GAP).await;
            }
            let two = [message(b"\x0a\x01a"), message(b"\x0a\x01b")].concat();
            let _ = send.send_data(two.into(), false);
            tokio::time::sleep(LOTS_GAP).await;
            let cut = message(b"\x0a\x03cut");
            let _ = send.send_data(cut.slice(..4), false);
            tokio::time::sleep(LOTS_GAP).await;
            let _ = send.send_data(cut.slice(4..), false);
            out += LOTS;
        }
        "/t.S/Up" => {
            let _ = send.send_data(message(b"\x0a\x04done"), false);
            out += 1;
        }
        _ => {}
    }
    counts.messages_out.fetch_add(out, Ordering::SeqCst);
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", "0".parse().unwrap());
    let _ = send.send_trailers(trailers);
}

/// `/t.S/Hello`: OK with a message, but every 10th call RESOURCE_EXHAUSTED trailers-only;
/// `/t.S/Slow`: OK after 2 s; `/t.S/Reset`: RST_STREAM; `/t.S/Missing`: no grpc-status.
async fn answer(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<bytes::Bytes>,
    path: String,
    n: u64,
) {
    let mut body = request.into_body();
    let mut frames = belier_grpc::Frames::new(None, frame::MAX_MESSAGE, true);
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        frames.feed(&chunk).unwrap();
    }
    assert_eq!(frames.last(), Some(&b"\x0a\x02hi"[..]));
    let head = |status: Option<u8>| {
        let mut b = http::Response::builder()
            .status(200)
            .header("content-type", "application/grpc");
        if let Some(code) = status {
            b = b.header("grpc-status", code.to_string());
        }
        b.body(()).unwrap()
    };
    match path.as_str() {
        "/t.S/Hello" if n.is_multiple_of(10) => {
            let _ = respond.send_response(head(Some(8)), true);
        }
        "/t.S/Reset" => respond.send_reset(h2::Reason::INTERNAL_ERROR),
        _ => {
            if path == "/t.S/Slow" {
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            let Ok(mut send) = respond.send_response(head(None), false) else {
                return;
            };
            let _ = send.send_data(
                frame::encode(b"\x0a\x05hello", Compression::Identity),
                false,
            );
            let mut trailers = http::HeaderMap::new();
            if path != "/t.S/Missing" {
                trailers.insert("grpc-status", "0".parse().unwrap());
            }
            let _ = send.send_trailers(trailers);
        }
    }
}

fn grpc_config(server: &H2Server, method: &str) -> belier_engine::Config {
    let mut c = config(server.addr, &format!("/t.S/{method}"));
    c.http2 = true;
    c.grpc = true;
    c.max_streams = 10;
    c.request.method = "POST".into();
    c.request.headers = vec![
        ("content-type".into(), "application/grpc".into()),
        ("te".into(), "trailers".into()),
    ];
    c.request.body = frame::encode(b"\x0a\x02hi", Compression::Identity).to_vec();
    c
}

fn code_count(totals: &belier_stats::Recorder, code: Code) -> u64 {
    let found = totals.grpc_counts().find(|(c, _)| *c == code.number());
    found.map_or(0, |(_, n)| n)
}

#[test]
fn each_call_is_counted_by_its_status_code_from_trailers_or_a_trailers_only_answer() {
    let s = start();
    let out = run(&requests(1000, 20, grpc_config(&s, "Hello")));
    let t = &out.totals;
    assert_eq!(s.state.calls.load(Ordering::SeqCst), 1000);
    assert_eq!(s.state.not_grpc.load(Ordering::SeqCst), 0);
    assert_eq!(
        t.grpc_counts().collect::<Vec<_>>(),
        [(0, 900), (8, 100)],
        "{:?}",
        t.counters()
    );
    // Calls, not HTTP responses: no HTTP status is counted, and a non-OK one is a failed call.
    assert_eq!(t.status_counts().count(), 0);
    assert_eq!((t.requests(), t.succeeded(), t.errors()), (1000, 900, 0));
}

#[test]
fn a_call_past_its_timeout_is_deadline_exceeded() {
    let s = start();
    let mut c = requests(4, 2, grpc_config(&s, "Slow"));
    c.timeout = Duration::from_millis(200);
    let out = run(&c);
    assert_eq!(code_count(&out.totals, Code::DeadlineExceeded), 4);
    assert_eq!(out.totals.errors(), 0);
}

#[test]
fn a_reset_stream_stays_a_transport_error_and_no_status_is_internal() {
    let s = start();
    let out = run(&requests(10, 2, grpc_config(&s, "Reset")));
    assert_eq!(out.totals.errors_of(ErrorKind::StreamReset), 10);
    assert_eq!(out.totals.grpc_counts().count(), 0);
    let out = run(&requests(10, 2, grpc_config(&s, "Missing")));
    assert_eq!(code_count(&out.totals, Code::Internal), 10);
}

#[test]
fn a_grpc_call_needs_http2() {
    let s = start();
    let mut c = requests(1, 1, grpc_config(&s, "Hello"));
    c.http2 = false;
    let e = belier_engine::start(&c).err().expect("refused");
    assert!(e.to_string().contains("gRPC"), "{e}");
}

/// A streaming call of `method` sending `messages` request messages `interval` apart, taken
/// in turn from two: hi, ho.
fn stream_config(
    server: &H2Server,
    method: &str,
    messages: u32,
    interval: Duration,
) -> belier_engine::Config {
    let mut c = grpc_config(server, method);
    let hi = frame::encode(b"\x0a\x02hi", Compression::Identity);
    let ho = frame::encode(b"\x0a\x02ho", Compression::Identity);
    c.request.body = [hi, ho].concat();
    c.grpc_stream = Some(GrpcStream { messages, interval });
    c
}

/// The server's count of messages in and out, and of those not as the test sent them.
fn server_messages(s: &H2Server) -> (u64, u64, u64) {
    let c = &s.state;
    (
        c.messages_in.load(Ordering::SeqCst),
        c.messages_out.load(Ordering::SeqCst),
        c.unexpected.load(Ordering::SeqCst),
    )
}

#[test]
fn a_server_stream_s_messages_are_counted_with_their_first_and_their_gaps() {
    let s = start();
    let out = run(&requests(
        100,
        10,
        stream_config(&s, "Lots", 1, Duration::ZERO),
    ));
    assert_eq!(server_messages(&s), (100, 100 * LOTS, 0));
    let t = &out.totals;
    assert_eq!(
        t.grpc_counts().collect::<Vec<_>>(),
        [(0, 100)],
        "{:?}",
        t.counters()
    );
    let m = t.messages().expect("streaming calls' messages");
    assert_eq!((m.calls(), m.sent(), m.received()), (100, 100, 100 * LOTS));
    assert_eq!(m.first_message().count, 100);
    // Twelve gaps a call: eleven of at least the server's 2 ms, one of 0 (two messages read
    // in one frame).
    let gaps = m.gaps();
    assert_eq!((gaps.count, gaps.min_us), (100 * (LOTS - 1), 0));
    assert!(gaps.at(50.0).unwrap() >= 2_000, "{gaps:?}");
    // Thirteen answers to one message: no round trips.
    assert_eq!(m.round_trips().count, 0);
    // The call's latency is the whole stream's.
    assert!(t.latency_summary().min_us >= 11 * 2_000);
}

#[test]
fn a_client_stream_sends_its_messages_in_turn_at_the_interval() {
    let s = start();
    let c = stream_config(&s, "Up", 5, Duration::from_millis(2));
    let out = run(&requests(50, 10, c));
    assert_eq!(server_messages(&s), (250, 50, 0));
    let m = out.totals.messages().unwrap();
    assert_eq!((m.calls(), m.sent(), m.received()), (50, 250, 50));
    assert_eq!(m.round_trips().count, 0);
    assert_eq!(out.totals.grpc_counts().collect::<Vec<_>>(), [(0, 50)]);
    // Four intervals between five messages.
    assert!(out.totals.latency_summary().min_us >= 4 * 2_000);
}

#[test]
fn a_bidirectional_stream_s_messages_are_counted_both_ways() {
    let s = start();
    let out = run(&requests(
        200,
        20,
        stream_config(&s, "Chat", 4, Duration::ZERO),
    ));
    assert_eq!(server_messages(&s), (800, 800, 0));
    let m = out.totals.messages().unwrap();
    assert_eq!((m.calls(), m.sent(), m.received()), (200, 800, 800));
    assert_eq!(m.gaps().count, 600);
    // Each answer answers a message, in turn: a round trip each.
    assert_eq!(m.round_trips().count, 800);
    assert!(m.round_trips().max_us <= out.totals.latency_summary().max_us);
    assert_eq!(out.totals.errors(), 0);
}

#[test]
fn a_client_stream_cut_by_its_deadline_counts_the_messages_it_sent() {
    let s = start();
    let mut c = stream_config(&s, "Up", 100, Duration::from_millis(50));
    c.timeout = Duration::from_millis(230);
    let out = run(&requests(4, 2, c));
    assert_eq!(code_count(&out.totals, Code::DeadlineExceeded), 4);
    let m = out.totals.messages().unwrap();
    // One with the head, then one every 50 ms until the deadline: five a call, give or
    // take one on a loaded machine.
    assert_eq!((m.calls(), m.received()), (4, 0));
    assert!((16..=20).contains(&m.sent()), "{}", m.sent());
    // Unary calls keep no message counts.
    let out = run(&requests(10, 2, grpc_config(&s, "Hello")));
    assert!(out.totals.messages().is_none());
}
