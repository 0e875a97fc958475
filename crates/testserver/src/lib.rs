//! belier's built-in target: a fast HTTP/1.1 (and, when asked, HTTP/2 and HTTP/3) server that counts what
//! it sees and misbehaves on request.
//!
//! It serves belier's integration tests (which cross-check belier's numbers against the
//! server's own [`Counts`]), benchmarks, and the `belier target` subcommand.
//!
//! Each request may override the server's default [`Behaviour`] through its query string:
//! `delay=20ms`, `status=503`, `size=1024`, `close=1`, `chunked=1`,
//! `fault=reset|close-before-headers|close-mid-body|malformed|stall` (see [`Fault`]), and for
//! scripted journeys `token=1` (a login answer: a JSON token and a session cookie) and `json=1`
//! (a small JSON body).
//!
//! With [`Config::handlers`] it has a known capacity: a fixed number of handlers, each holding a
//! request for a service time, a bounded queue, and `503` or a close beyond it; `/metrics`
//! serves its counters to Prometheus.
//!
//! With [`Config::tls`] it serves HTTPS instead: the same HTTP/1.1 handling after a rustls
//! handshake, with [`TlsConfig::self_signed`] to make certificates for tests.
//!
//! With [`Config::http2`] it also speaks HTTP/2, through the `h2` crate's server: `h2` in ALPN
//! over TLS, prior knowledge (h2c) over plain TCP. Knobs, counters and recording are the same
//! ([`SeenRequest::version`] says which protocol a request came in); the faults take their
//! HTTP/2 form, stream resets and dropped connections, and `malformed`, which no correct
//! HTTP/2 library can send, is answered `400` saying so.
//!
//! With [`Config::http3`] (and TLS) it also speaks HTTP/3, over QUIC on the same port's UDP
//! side, through `quinn` and `h3`: the same knobs and counters, a QUIC connection counted as
//! a connection.
//!
//! # Why not hyper
//! The server is written directly on tokio and httparse because fault injection needs
//! byte-level control of the socket: resetting a connection after reading a request, closing it
//! halfway through a body whose length was announced, writing a status line no parser accepts,
//! or never answering at all. hyper, rightly, does not let a service produce any of those.
//! Owning the loop also keeps the default path cheap: the response head is built once and a
//! request without a query string allocates nothing. HTTP/2 is another matter: its framing,
//! HPACK and flow control are the `h2` crate's, and its faults are frames that crate sends.
//!
//! # Example
//! ```
//! use std::io::{Read, Write};
//! use belier_testserver::{Config, Server};
//!
//! let server = Server::start(Config::default())?;
//! let mut socket = std::net::TcpStream::connect(server.addr())?;
//! socket.write_all(b"GET /?status=503 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?;
//! let mut response = String::new();
//! socket.read_to_string(&mut response)?;
//! assert!(response.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
//! assert_eq!(server.counts().requests, 1);
//! server.stop();
//! # Ok::<(), std::io::Error>(())
//! ```
#![deny(missing_docs)]

mod answer;
mod behaviour;
mod connection;
mod counts;
mod delay;
mod flow;
mod grpc;
mod handlers;
mod http2;
mod http3;
mod request;
mod response;
mod server;
mod shared;
mod socket;
mod streamed;
mod tls;
mod websocket;

pub use behaviour::{
    Behaviour, Fault, KnobError, ParseFaultError, CLOSE_MID_BODY_DEFAULT_LEN, DEFAULT_BODY,
    JSON_BODY, KNOBS, MAX_REDIRECTS,
};
pub use connection::RECORDED_BODY_BYTES;
pub use counts::Counts;
pub use grpc::TARGET_PROTO;
pub use handlers::{Handlers, PoolStats};
pub use request::MAX_HEAD_BYTES;
pub use server::{Config, Server};
pub use shared::SeenRequest;
pub use tls::TlsConfig;
