//! Keep-alive connections a server closes while they are idle, against a server written here
//! that closes them on cue: a close belier can see before it reuses the connection, and a close
//! that crosses the next request (the request arrives and is dropped unread). Neither is the
//! server failing a request, so neither may count as an error; the second is re-sent once, and
//! counted as re-sent.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use belier_engine::{Config, Profile, StopWhen};
use belier_stats::ErrorKind;
use common::{config, open, run};

/// What the server does with each connection after answering its first request.
#[derive(Clone, Copy)]
enum AfterFirst {
    /// Close it 20 ms later, while it is idle (a keep-alive timeout).
    CloseWhenIdle,
    /// Wait for the next request to arrive, then close without reading it (the close
    /// crossing the request on the wire, made reliable).
    DropNextUnread,
    /// Nothing: keep answering.
    KeepServing,
}

/// Counts of the server's side.
#[derive(Default)]
struct Seen {
    connections: AtomicU64,
    /// Requests the server read and answered.
    answered: AtomicU64,
}

/// Serves `GET`s with a 2-byte body on 127.0.0.1; the first connection that carries a request
/// gets `first`, later ones are served for as long as the client keeps them.
fn serve(first: AfterFirst) -> (std::net::SocketAddr, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let counts = Arc::clone(&seen);
    std::thread::spawn(move || {
        let claimed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            counts.connections.fetch_add(1, Ordering::SeqCst);
            let (counts, claimed) = (Arc::clone(&counts), Arc::clone(&claimed));
            std::thread::spawn(move || connection(stream, first, &counts, &claimed));
        }
    });
    (addr, seen)
}

fn connection(
    mut stream: TcpStream,
    first: AfterFirst,
    seen: &Seen,
    claimed: &std::sync::atomic::AtomicBool,
) {
    let mut mine = None;
    loop {
        if !read_request(&mut stream) {
            return;
        }
        seen.answered.fetch_add(1, Ordering::SeqCst);
        if stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .is_err()
        {
            return;
        }
        // The first connection to carry a request (an open loop may have opened others
        // ahead of it) is the one that gets closed.
        let behaviour = *mine.get_or_insert_with(|| {
            if claimed.swap(true, Ordering::SeqCst) {
                AfterFirst::KeepServing
            } else {
                first
            }
        });
        match behaviour {
            AfterFirst::KeepServing => {}
            AfterFirst::CloseWhenIdle => {
                std::thread::sleep(Duration::from_millis(20));
                let _ = stream.shutdown(Shutdown::Both);
                return;
            }
            AfterFirst::DropNextUnread => {
                let mut byte = [0u8; 1];
                // Blocks until the next request's first bytes are there, reads none of them.
                let _ = stream.peek(&mut byte);
                return;
            }
        }
    }
}

/// Reads one request head; false at the end of the stream.
fn read_request(stream: &mut TcpStream) -> bool {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return false,
        }
    }
    true
}

/// Two requests 100 ms apart on one connection (the open loop's cap), one worker.
fn two_requests(addr: std::net::SocketAddr, resend: bool) -> Config {
    let mut c = config(addr, "/");
    c.load = open(Profile::constant(10.0), 1, None);
    c.threads = 1;
    c.resend = resend;
    c.stop = StopWhen {
        requests: Some(2),
        duration: Some(Duration::from_secs(5)),
        iterations: None,
    };
    c
}

#[test]
fn an_idle_connection_the_server_closed_is_not_reused() {
    let (addr, seen) = serve(AfterFirst::CloseWhenIdle);
    // The second request 500 ms after the first (not 100): the server's close, 20 ms after
    // its first answer, comes before it however late that answer went out, up to a 480 ms
    // stall; at 100 ms one at a load of 15 crossed it, and was closed before its response.
    let mut c = two_requests(addr, true);
    c.load = open(Profile::constant(2.0), 1, None);
    let out = run(&c);
    assert_eq!(out.totals.requests(), 2);
    assert_eq!(out.totals.errors(), 0, "{:?}", out.totals.counters().errors);
    assert_eq!(seen.answered.load(Ordering::SeqCst), 2);
    // Seen before the second request went out: a new connection, nothing re-sent.
    assert_eq!(out.totals.resent(), 0);
    assert_eq!(out.totals.server_closes(), 1);
    assert_eq!(out.totals.connections_opened(), 2);
}

#[test]
fn a_request_that_crossed_the_close_goes_once_more() {
    let (addr, seen) = serve(AfterFirst::DropNextUnread);
    let out = run(&two_requests(addr, true));
    assert_eq!(out.totals.requests(), 2);
    assert_eq!(out.totals.succeeded(), 2);
    assert_eq!(out.totals.errors(), 0, "{:?}", out.totals.counters().errors);
    assert_eq!(out.totals.resent(), 1);
    assert_eq!(out.totals.server_closes(), 1);
    // The server answered each request once: the dropped one was never read.
    assert_eq!(seen.answered.load(Ordering::SeqCst), 2);
    assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
    // Its latency counts from its intended start, through both attempts.
    assert_eq!(out.totals.latency_us().len(), 2);
}

#[test]
fn without_resending_the_crossed_request_is_an_error_of_its_kind() {
    let (addr, seen) = serve(AfterFirst::DropNextUnread);
    let out = run(&two_requests(addr, false));
    assert_eq!(out.totals.requests(), 2);
    assert_eq!(out.totals.succeeded(), 1);
    assert_eq!(out.totals.resent(), 0);
    let closed = out.totals.errors_of(ErrorKind::ClosedBeforeResponse)
        + out.totals.errors_of(ErrorKind::ConnectionReset);
    assert_eq!(closed, 1, "{:?}", out.totals.counters().errors);
    assert_eq!(seen.answered.load(Ordering::SeqCst), 1);
}

#[test]
fn a_method_that_is_not_idempotent_is_never_resent() {
    let (addr, seen) = serve(AfterFirst::DropNextUnread);
    let mut c = two_requests(addr, true);
    c.request.method = "POST".into();
    let out = run(&c);
    assert_eq!(out.totals.succeeded(), 1);
    assert_eq!(out.totals.errors(), 1);
    assert_eq!(out.totals.resent(), 0);
    assert_eq!(seen.answered.load(Ordering::SeqCst), 1);
}
