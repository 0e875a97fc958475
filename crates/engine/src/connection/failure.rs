//! How an exchange fails: where it was ([`Phase`]), the error kind it is counted under and
//! its cause for the report's example message ([`Failure`]).

use std::io;

use belier_stats::ErrorKind;

use crate::decode::DecodeError;
use crate::http1::Malformed;

/// Where an exchange is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    #[default]
    Connecting,
    Handshaking,
    Exchanging,
}

/// A failed exchange: its kind for counting, its cause for the report's example message.
#[derive(Debug)]
pub(crate) struct Failure {
    pub kind: ErrorKind,
    pub cause: Cause,
}

#[derive(Debug)]
pub(crate) enum Cause {
    Io(io::Error),
    Protocol(&'static str),
    /// A message made on a failure path (never per successful request).
    Message(String),
    Http2(h2::Error),
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cause::Io(e) => e.fmt(f),
            Cause::Protocol(s) => f.write_str(s),
            Cause::Message(s) => f.write_str(s),
            Cause::Http2(e) => write!(f, "HTTP/2: {e}"),
        }
    }
}

impl Failure {
    pub(crate) fn protocol(kind: ErrorKind, what: &'static str) -> Self {
        Failure {
            kind,
            cause: Cause::Protocol(what),
        }
    }

    pub(crate) fn io(e: io::Error, connecting: bool) -> Self {
        match io_kind(e.kind(), connecting) {
            ErrorKind::PortsExhausted => Failure {
                kind: ErrorKind::PortsExhausted,
                cause: Cause::Message(format!("{e}: {PORTS_FIX}")),
            },
            kind => Failure {
                kind,
                cause: Cause::Io(e),
            },
        }
    }
}

/// What a report says to do about [`ErrorKind::PortsExhausted`].
const PORTS_FIX: &str = "no local port was free towards this destination; spread the \
     connections over more source addresses (--local-address 127.0.1.0/28, or addresses the \
     host has), keep connections alive rather than opening new ones, or widen \
     net.ipv4.ip_local_port_range";

/// The error kind of an I/O error.
pub(crate) fn io_kind(kind: io::ErrorKind, connecting: bool) -> ErrorKind {
    use io::ErrorKind as E;
    match kind {
        E::ConnectionRefused => ErrorKind::ConnectRefused,
        E::ConnectionReset | E::ConnectionAborted | E::BrokenPipe => ErrorKind::ConnectionReset,
        E::TimedOut if connecting => ErrorKind::ConnectTimeout,
        E::AddrNotAvailable if connecting => ErrorKind::PortsExhausted,
        E::TimedOut => ErrorKind::Timeout,
        _ => ErrorKind::OtherIo,
    }
}

impl Failure {
    /// The request timeout fired during `phase`.
    pub(crate) fn timeout(phase: Phase) -> Self {
        match phase {
            Phase::Connecting => Failure::protocol(
                ErrorKind::ConnectTimeout,
                "connect did not complete within the timeout",
            ),
            Phase::Handshaking => Failure::protocol(
                ErrorKind::ConnectTimeout,
                "TLS handshake did not complete within the timeout",
            ),
            Phase::Exchanging => Failure::protocol(
                ErrorKind::Timeout,
                "no complete response within the timeout",
            ),
        }
    }
}

impl From<DecodeError> for Failure {
    fn from(e: DecodeError) -> Self {
        Failure {
            kind: ErrorKind::BodyDecode,
            cause: Cause::Message(e.0),
        }
    }
}

impl From<crate::request::InvalidRequest> for Failure {
    /// A user's request the encoder refused: nothing of it was sent (the HTTP/2 encoder's
    /// refusals count the same way).
    fn from(e: crate::request::InvalidRequest) -> Self {
        Failure {
            kind: ErrorKind::OtherIo,
            cause: Cause::Message(format!("the request was not sent: {e}")),
        }
    }
}

impl From<Malformed> for Failure {
    fn from(m: Malformed) -> Self {
        Failure::protocol(ErrorKind::MalformedResponse, m.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_free_port_at_connect_is_its_own_kind_and_says_what_to_do() {
        let e = io::Error::from(io::ErrorKind::AddrNotAvailable);
        let f = Failure::io(e, true);
        assert_eq!(f.kind, ErrorKind::PortsExhausted);
        assert!(
            f.cause.to_string().contains("--local-address"),
            "{}",
            f.cause
        );
        // Not while connecting: some other I/O error.
        let later = Failure::io(io::Error::from(io::ErrorKind::AddrNotAvailable), false);
        assert_eq!(later.kind, ErrorKind::OtherIo);
    }
}
