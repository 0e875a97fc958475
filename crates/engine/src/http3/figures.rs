//! QUIC's own figures, counted per connection: what each carried (UDP datagrams and the system
//! calls that moved them, packets sent and lost) and why it ended. A worker's live connections
//! give what they did since they were last read at each interval's end; an ended one gives
//! the rest when it ends.

use std::cell::{Cell, RefCell};

use belier_stats::Quic;
use h3::error::Code;

/// A worker's QUIC figures not handed over yet, shared by its HTTP/3 groups.
#[derive(Debug, Default)]
pub(crate) struct Tally(RefCell<Quic>);

impl Tally {
    /// What was counted since the last call.
    pub(crate) fn take(&self) -> Quic {
        self.0.take()
    }

    fn add(&self, f: impl FnOnce(&mut Quic)) {
        f(&mut self.0.borrow_mut());
    }

    /// Counts one completed handshake.
    pub(crate) fn handshake(&self) {
        self.add(|q| q.handshakes += 1);
    }

    /// Counts a 0-RTT connection's early data, accepted or refused.
    pub(crate) fn early(&self, accepted: bool) {
        self.add(|q| match accepted {
            true => q.early_accepted += 1,
            false => q.early_rejected += 1,
        });
    }
}

/// What one connection's figures were when last read, so that each reading adds only what
/// came since.
#[derive(Debug, Default)]
pub(crate) struct Read {
    counts: Cell<Counts>,
    /// Whether the connection's end was counted (by the run letting go of it at its end, or
    /// by its driver).
    ended: Cell<bool>,
    /// Why belier let go of the connection, when the server made it (see [`Read::let_go`]).
    let_go: Cell<Option<&'static str>>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    datagrams_sent: u64,
    datagrams_received: u64,
    sends: u64,
    receives: u64,
    packets_sent: u64,
    packets_lost: u64,
    bytes_lost: u64,
    congestion_events: u64,
}

impl Counts {
    fn of(connection: &quinn::Connection) -> Counts {
        let s = connection.stats();
        Counts {
            datagrams_sent: s.udp_tx.datagrams,
            datagrams_received: s.udp_rx.datagrams,
            sends: s.udp_tx.ios,
            receives: s.udp_rx.ios,
            packets_sent: s.path.sent_packets,
            packets_lost: s.path.lost_packets,
            bytes_lost: s.path.lost_bytes,
            congestion_events: s.path.congestion_events,
        }
    }
}

impl Read {
    /// Adds to `tally` what `connection` did since the last reading.
    pub(crate) fn take(&self, connection: &quinn::Connection, tally: &Tally) {
        let now = Counts::of(connection);
        let was = self.counts.replace(now);
        tally.add(|q| {
            q.datagrams_sent += now.datagrams_sent.saturating_sub(was.datagrams_sent);
            q.datagrams_received += now
                .datagrams_received
                .saturating_sub(was.datagrams_received);
            q.sends += now.sends.saturating_sub(was.sends);
            q.receives += now.receives.saturating_sub(was.receives);
            q.packets_sent += now.packets_sent.saturating_sub(was.packets_sent);
            q.packets_lost += now.packets_lost.saturating_sub(was.packets_lost);
            q.bytes_lost += now.bytes_lost.saturating_sub(was.bytes_lost);
            q.congestion_events += now.congestion_events.saturating_sub(was.congestion_events);
        });
    }

    /// Notes that belier lets go of the connection because of the server: its GOAWAY
    /// (`goaway`), or a request it refused unprocessed (`request_rejected`). Belier's close of
    /// it once its streams are done then counts under that cause.
    pub(crate) fn let_go(&self, why: &'static str) {
        if self.let_go.get().is_none() {
            self.let_go.set(Some(why));
        }
    }

    /// Adds to `tally` the rest of what `connection` did, and its end, named by [`cause`]
    /// (or by why belier let go of it, when the server made it).
    pub(crate) fn ended(&self, connection: &quinn::Connection, cause: &str, tally: &Tally) {
        if self.ended.replace(true) {
            return;
        }
        self.take(connection, tally);
        let cause = match (cause, self.let_go.get()) {
            ("belier_closed", Some(why)) => why,
            _ => cause,
        };
        tally.add(|q| q.end(cause));
    }
}

/// Why a connection ended, as [`Quic::ended`] names it, from QUIC's reason (`reason`) and what
/// h3 saw (`seen`): belier letting go of it, the server's close code, or the network's.
pub(crate) fn cause(
    reason: Option<&quinn::ConnectionError>,
    seen: &h3::error::ConnectionError,
) -> String {
    use quinn::ConnectionError as E;
    if let h3::error::ConnectionError::Local { error, .. } = seen {
        return match error {
            h3::error::LocalError::Application { code, .. } if *code != Code::H3_NO_ERROR => {
                format!("belier_error:{code:?}")
            }
            _ => "belier_closed".to_string(),
        };
    }
    match reason {
        Some(E::TimedOut) => "idle_timeout".into(),
        Some(E::Reset) => "stateless_reset".into(),
        Some(E::ApplicationClosed(close)) => {
            format!("{:?}", Code::from(close.error_code.into_inner()))
        }
        Some(E::ConnectionClosed(close)) => transport_name(close.error_code),
        Some(E::TransportError(e)) => format!("belier_error:{}", transport_name(e.code)),
        Some(E::VersionMismatch) => "version_mismatch".into(),
        Some(E::LocallyClosed) | None => "belier_closed".into(),
        Some(E::CidsExhausted) => "belier_error:cids_exhausted".into(),
    }
}

/// A QUIC transport error code's name (`PROTOCOL_VIOLATION`), a TLS alert's as `tls_alert_N`.
fn transport_name(code: quinn::TransportErrorCode) -> String {
    let value = u64::from(code);
    match value {
        0x100..=0x1ff => format!("tls_alert_{}", value - 0x100),
        _ => format!("{code:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_codes_and_alerts_are_named() {
        assert_eq!(
            transport_name(quinn::TransportErrorCode::PROTOCOL_VIOLATION),
            "PROTOCOL_VIOLATION"
        );
        assert_eq!(
            transport_name(quinn::TransportErrorCode::crypto(42)),
            "tls_alert_42"
        );
        assert_eq!(format!("{:?}", Code::from(0x100)), "H3_NO_ERROR");
        assert_eq!(format!("{:?}", Code::from(0x1f)), "0x1f");
    }
}
