use serde::Serialize;

/// Why a request failed to produce a complete HTTP response.
///
/// A response with any status code is not an error kind: status codes are counted separately.
/// Every request that did not end in a complete response ends in exactly one of these kinds, so
/// `responses + Σ errors = requests` always holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The TCP connect was refused (nothing listens, or the backlog overflowed).
    ConnectRefused,
    /// The TCP connect did not complete within the request timeout.
    ConnectTimeout,
    /// The connect found no local port free (`EADDRNOTAVAIL`): every port of the source
    /// address's range is in use or in TIME_WAIT towards this destination.
    PortsExhausted,
    /// The TLS handshake failed on the server's certificate (unknown issuer, wrong name,
    /// expired) or because the server wanted a client certificate.
    TlsCertificate,
    /// The TLS handshake failed on the protocol (a server that does not speak TLS, no common
    /// version or cipher suite, a malformed message).
    TlsProtocol,
    /// The server ended the TLS handshake with a fatal alert.
    TlsAlert,
    /// The peer reset the connection (RST) while the request was being sent or answered.
    ConnectionReset,
    /// HTTP/2: the server reset the request's stream (RST_STREAM, e.g. REFUSED_STREAM) while
    /// the connection itself stayed up.
    StreamReset,
    /// The peer closed the connection before a complete response head arrived.
    ClosedBeforeResponse,
    /// The peer closed the connection after the response head, before the body was complete.
    ClosedMidBody,
    /// The response could not be parsed (HTTP/1.x: bad status line, header or framing; HTTP/2: a
    /// protocol error).
    MalformedResponse,
    /// `--compressed`: the response body did not decode in its `Content-Encoding` (corrupt,
    /// cut short, or a coding belier does not know).
    BodyDecode,
    /// The response did not complete within the request timeout.
    Timeout,
    /// The request was still in flight when the run stopped (deadline or Ctrl-C) and was
    /// abandoned after the grace period.
    Cancelled,
    /// Any other I/O error (unreachable host, address not available, ...).
    OtherIo,
}

impl ErrorKind {
    /// Number of kinds; recorders keep one counter per kind.
    pub const COUNT: usize = 15;

    /// Every kind, in report order.
    pub const ALL: [ErrorKind; Self::COUNT] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::PortsExhausted,
        ErrorKind::TlsCertificate,
        ErrorKind::TlsProtocol,
        ErrorKind::TlsAlert,
        ErrorKind::ConnectionReset,
        ErrorKind::StreamReset,
        ErrorKind::ClosedBeforeResponse,
        ErrorKind::ClosedMidBody,
        ErrorKind::MalformedResponse,
        ErrorKind::BodyDecode,
        ErrorKind::Timeout,
        ErrorKind::Cancelled,
        ErrorKind::OtherIo,
    ];

    /// Position of this kind in [`ErrorKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Stable machine name, as used in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::PortsExhausted => "ports_exhausted",
            ErrorKind::TlsCertificate => "tls_certificate",
            ErrorKind::TlsProtocol => "tls_protocol",
            ErrorKind::TlsAlert => "tls_alert",
            ErrorKind::ConnectionReset => "connection_reset",
            ErrorKind::StreamReset => "stream_reset",
            ErrorKind::ClosedBeforeResponse => "closed_before_response",
            ErrorKind::ClosedMidBody => "closed_mid_body",
            ErrorKind::MalformedResponse => "malformed_response",
            ErrorKind::BodyDecode => "body_decode",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::OtherIo => "other_io",
        }
    }

    /// The kind with this [`ErrorKind::name`].
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// A short human description, as used in the text report.
    pub fn description(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connection refused",
            ErrorKind::ConnectTimeout => "connect timeout",
            ErrorKind::PortsExhausted => "no local port left to connect from",
            ErrorKind::TlsCertificate => "TLS certificate rejected",
            ErrorKind::TlsProtocol => "TLS protocol failure",
            ErrorKind::TlsAlert => "TLS alert from server",
            ErrorKind::ConnectionReset => "connection reset by peer",
            ErrorKind::StreamReset => "HTTP/2 stream reset by the server",
            ErrorKind::ClosedBeforeResponse => "closed before response",
            ErrorKind::ClosedMidBody => "closed mid-body",
            ErrorKind::MalformedResponse => "malformed response",
            ErrorKind::BodyDecode => "body failed to decode (Content-Encoding)",
            ErrorKind::Timeout => "request timeout",
            ErrorKind::Cancelled => "cancelled at stop (in flight)",
            ErrorKind::OtherIo => "other I/O error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_match_positions_in_all() {
        for (i, kind) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(kind.index(), i);
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ErrorKind::COUNT);
        for kind in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(ErrorKind::from_name("nope"), None);
    }
}
