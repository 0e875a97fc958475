use std::time::{Duration, Instant};

use crate::ErrorKind;

/// How one request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A complete response arrived, with this status code.
    Response {
        /// The HTTP status code.
        status: u16,
    },
    /// A gRPC call ended with this status code (0 is OK; see [`GRPC_CODES`]): its response
    /// came, or its deadline passed first (`DEADLINE_EXCEEDED`, 4). A non-OK code is a failed
    /// call, not a transport error: those are [`Outcome::Error`] as for any request.
    Grpc {
        /// The gRPC status code, `0..GRPC_CODES`.
        code: u8,
    },
    /// No complete response: the request failed in this way.
    Error(ErrorKind),
}

/// How many gRPC status codes there are (`OK` 0 to `UNAUTHENTICATED` 16); a recorder counts
/// a code outside them as `UNKNOWN` (2), as gRPC's clients read one.
pub const GRPC_CODES: usize = 17;

/// The gRPC status codes' names as the spec writes them, by number.
const GRPC_CODE_NAMES: [&str; GRPC_CODES] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The name of gRPC status code `code` (`RESOURCE_EXHAUSTED` for 8), as every report and
/// output labels it; `UNKNOWN` for a number outside the 17, as gRPC's clients read one.
pub fn grpc_code_name(code: u8) -> &'static str {
    GRPC_CODE_NAMES
        .get(usize::from(code))
        .copied()
        .unwrap_or(GRPC_CODE_NAMES[2])
}

/// Everything recorded about one request.
///
/// Each sample knows when it was *meant* to start (`intended`) as well as when a connection
/// actually took it up (`dispatched`) and wrote it (`sent`). Latency is measured from
/// `intended`, so a generator that falls behind its schedule, or requests that queue for a free
/// connection, cannot hide the wait (no coordinated omission). In the closed-loop model
/// `intended` and `dispatched` coincide.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// When the request was due to start.
    pub intended: Instant,
    /// When a connection took it up (before connecting, if it had to).
    pub dispatched: Instant,
    /// Open loop: when belier had it ready to go. That is when a connection took it up, or,
    /// if every connection belier may open was busy, when it was queued to wait for one. The
    /// lag up to here is belier's own lateness, the rest the wait for a connection. `None` in a
    /// closed loop (no schedule to be late on).
    pub ready: Option<Instant>,
    /// When the TCP connect completed, if this request opened a connection.
    pub connected: Option<Instant>,
    /// When the TLS handshake completed, if this request opened a TLS connection.
    pub handshaken: Option<Instant>,
    /// When its first byte was written (after any connect).
    pub sent: Instant,
    /// When the first response byte arrived, if any did.
    pub first_byte: Option<Instant>,
    /// When the request finished, successfully or not.
    pub done: Instant,
    /// How it ended.
    pub outcome: Outcome,
    /// Bytes read from the socket for this request (wire bytes: head, framing and body).
    pub bytes_in: u64,
    /// Bytes written to the socket for this request.
    pub bytes_out: u64,
    /// Its trace context, when it was sampled for tracing (`--trace-sample`).
    pub trace: Option<crate::Trace>,
}

impl Sample {
    /// A request that was due at `intended`, went out `lag_us` later on a connection already
    /// open and ended `latency_us` after it was due (its latency), with no first byte timed
    /// and no bytes counted: the samples of simulations, seeded reports and tests. Set the
    /// fields a caller varies over it: `Sample { bytes_in: 120, ..Sample::simulated(..) }`.
    pub fn simulated(intended: Instant, lag_us: u64, latency_us: u64, outcome: Outcome) -> Sample {
        let sent = intended + Duration::from_micros(lag_us);
        Sample {
            intended,
            dispatched: sent,
            ready: None,
            connected: None,
            handshaken: None,
            sent,
            first_byte: None,
            done: intended + Duration::from_micros(latency_us),
            outcome,
            bytes_in: 0,
            bytes_out: 0,
            trace: None,
        }
    }

    /// Latency from the intended start to completion, in whole microseconds.
    pub fn latency_us(&self) -> u64 {
        micros(self.done.saturating_duration_since(self.intended))
    }

    /// Latency from dispatch to completion: what a tool that ignores its schedule reports.
    pub fn uncorrected_latency_us(&self) -> u64 {
        micros(self.done.saturating_duration_since(self.dispatched))
    }

    /// TCP connect time, if this request opened a connection.
    pub fn connect_us(&self) -> Option<u64> {
        self.connected
            .map(|c| micros(c.saturating_duration_since(self.dispatched)))
    }

    /// TLS handshake time, if this request opened a TLS connection.
    pub fn tls_us(&self) -> Option<u64> {
        self.handshaken
            .zip(self.connected)
            .map(|(h, c)| micros(h.saturating_duration_since(c)))
    }

    /// Time from the request's first byte written to the response's first byte read: the
    /// server's processing time plus a round trip.
    pub fn ttfb_us(&self) -> Option<u64> {
        self.first_byte
            .map(|f| micros(f.saturating_duration_since(self.sent)))
    }

    /// Time from the response's first byte to its last.
    pub fn transfer_us(&self) -> Option<u64> {
        self.first_byte
            .map(|f| micros(self.done.saturating_duration_since(f)))
    }

    /// Scheduling lag: how long the request waited past its intended start before a
    /// connection took it up (timer accuracy, a busy generator, or no free connection).
    pub fn lag_us(&self) -> u64 {
        micros(self.dispatched.saturating_duration_since(self.intended))
    }

    /// Of the lag, belier's own lateness (intended start to [`Sample::ready`]), microseconds;
    /// the rest of the lag is the wait for a free connection.
    pub fn dispatch_lag_us(&self) -> Option<u64> {
        self.ready
            .map(|h| micros(h.saturating_duration_since(self.intended)))
    }
}

pub(crate) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
