//! The server's counters: atomics bumped by every connection, and the snapshot a caller reads.

use std::sync::atomic::AtomicU64;

/// A snapshot of the server's counters, all monotonic since start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Request heads parsed, counted before the body is read and before any delay or fault.
    /// Unparsable heads are not requests.
    pub requests: u64,
    /// TCP connections accepted, whether or not their TLS handshake succeeded.
    pub connections: u64,
    /// Complete responses to counted requests, including `400` for a bad knob value but not
    /// interim `100 Continue` nor the `400` that precedes closing on an unparsable request.
    /// Counted when the response is complete in the output buffer, just before it is written, so
    /// a client that has read a response always finds it counted.
    pub responses: u64,
    /// Request body bytes read, after chunked decoding.
    pub body_bytes_received: u64,
    /// TLS handshakes completed by the server. Like [`Counts::connections`], this can lag the
    /// client: a TLS 1.3 client is done with its handshake before the server is.
    pub tls_handshakes: u64,
    /// TLS handshakes that failed: the client rejected the certificate, sent no acceptable
    /// client certificate or ALPN protocol, spoke something else than TLS (plain HTTP, say), or
    /// closed before the handshake was done.
    pub tls_failures: u64,
    /// gRPC request messages read whole by the target's gRPC service.
    pub grpc_messages_received: u64,
    /// gRPC reply messages the service handed to the connection.
    pub grpc_messages_sent: u64,
}

/// The live counters behind [`Counts`].
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) requests: AtomicU64,
    pub(crate) connections: AtomicU64,
    pub(crate) responses: AtomicU64,
    pub(crate) body_bytes_received: AtomicU64,
    pub(crate) tls_handshakes: AtomicU64,
    pub(crate) tls_failures: AtomicU64,
    pub(crate) grpc_messages_received: AtomicU64,
    pub(crate) grpc_messages_sent: AtomicU64,
    /// A gauge, unlike the others: connections accepted and not yet closed.
    pub(crate) open: AtomicU64,
}
