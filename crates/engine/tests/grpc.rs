//! gRPC unary calls over the HTTP/2 connection layer, against a server written here with h2's
//! server API that answers as a gRPC server does (status in the trailers, or trailers-only),
//! counting calls on its own side. The real grpc-go server's tests are the CLI's.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use belier_grpc::{frame, Code, Compression};
use belier_stats::ErrorKind;
use common::{config, requests, run};

/// Calls the server took, on its own side, and whether each looked like a gRPC request.
#[derive(Default)]
struct Counts {
    calls: AtomicU64,
    not_grpc: AtomicU64,
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
        tokio::spawn(answer(request, respond, path, n));
    }
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
