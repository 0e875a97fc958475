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
        Failure {
            kind: io_kind(e.kind(), connecting),
            cause: Cause::Io(e),
        }
    }
}

/// The error kind of an I/O error.
pub(crate) fn io_kind(kind: io::ErrorKind, connecting: bool) -> ErrorKind {
    use io::ErrorKind as E;
    match kind {
        E::ConnectionRefused => ErrorKind::ConnectRefused,
        E::ConnectionReset | E::ConnectionAborted | E::BrokenPipe => ErrorKind::ConnectionReset,
        E::TimedOut if connecting => ErrorKind::ConnectTimeout,
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
