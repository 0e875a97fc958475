//! SSE reconnection (`Config::sse_reconnect`): what a connection slot keeps between its
//! streams as a browser's `EventSource` does (WHATWG HTML §9.2), and when and with what its
//! next request goes. A stream that ended, closed by the server or failed mid-body, is
//! reconnected after the reconnection time (the stream's last `retry:`, else the run's
//! delay), with `Last-Event-ID` when an id is set. A response that is not a 200 with
//! `Content-Type: text/event-stream` stops it, as it fails an `EventSource`: the slot then
//! starts over as a new client would, its next request a new stream, at once and without an
//! id (the closed loop keeps its level; the stop is counted).

use std::time::{Duration, Instant};

use belier_stats::Reconnection;

use crate::connection::Progress;
use crate::local::Local;
use crate::plan::Plan;

// A module apart: the exchange fills one in, and depends on nothing else here.
pub(crate) mod attempt;

pub(crate) use attempt::Attempt;

/// The header a reconnection carries its last event id in.
const LAST_EVENT_ID: &[u8] = b"Last-Event-ID: ";

/// A connection slot's `EventSource`.
#[derive(Debug)]
pub(crate) struct Session {
    /// The run's reconnection time (`Config::sse_reconnect`).
    delay: Duration,
    /// The reconnection time: the last `retry:` a stream set, else `delay`.
    retry: Duration,
    /// Its `Last-Event-ID` header line, with its line end; empty while no id is set.
    id_line: Vec<u8>,
    /// When the stream to reconnect ended; `None`: the next request is a new stream.
    ended: Option<Instant>,
}

impl Session {
    /// A slot that has sent nothing yet, reconnecting after `delay` until told otherwise.
    pub(crate) fn new(delay: Duration) -> Session {
        Session {
            delay,
            retry: delay,
            id_line: Vec::new(),
            ended: None,
        }
    }

    /// Waits until the next request may go: at once for a new stream; for a reconnection,
    /// until the reconnection time has passed since its stream ended, or the run's end
    /// (when no request is left to send, it does not wait). Returns how the request goes.
    pub(crate) async fn wait(&self, local: &Local, plan: &Plan) -> Attempt {
        let Some(ended) = self.ended else {
            return Attempt::default();
        };
        let due = ended + self.retry;
        let due = plan.deadline.map_or(due, |d| due.min(d));
        if local.schedule.budget.get() > 0 && !local.schedule.stopping.get() {
            tokio::time::sleep_until(due.into()).await;
        }
        Attempt {
            sent_as: Some(Reconnection {
                with_id: !self.id_line.is_empty(),
                waited_us: 0,
            }),
            accepted: None,
        }
    }

    /// The reconnection that starts at `start`: how long it waited since its stream ended.
    pub(crate) fn started(&self, attempt: &mut Attempt, start: Instant) {
        if let (Some(r), Some(ended)) = (&mut attempt.sent_as, self.ended) {
            let waited = start.saturating_duration_since(ended);
            r.waited_us = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        }
    }

    /// The header line a reconnection carries (`None`: a new stream's request, or no id).
    pub(crate) fn header_line(&self, attempt: &Attempt) -> Option<&[u8]> {
        attempt
            .sent_as
            .filter(|r| r.with_id)
            .map(|_| &self.id_line[..])
    }

    /// Takes in what the request's stream said and when it ended (`at`): the last event id
    /// and reconnection time it set, and whether the next request reconnects. A request that
    /// failed before its response head came is a network error, which an `EventSource`
    /// reconnects too.
    pub(crate) fn ended(&mut self, progress: &Progress, at: Instant) {
        if let Some(split) = &progress.split {
            if let Some(id) = split.last_event_id() {
                self.id_line.clear();
                if !id.is_empty() {
                    // An id holds no CR, LF (it ended a line) nor NUL (ignored): it cannot
                    // split the request.
                    self.id_line.extend_from_slice(LAST_EVENT_ID);
                    self.id_line.extend_from_slice(id);
                    self.id_line.extend_from_slice(b"\r\n");
                }
            }
            if let Some(ms) = split.retry_ms() {
                self.retry = Duration::from_millis(ms);
            }
        }
        match progress.reconnect.is_some_and(|a| a.stopped()) {
            // Starting over: a new client knows no id, and no server's retry.
            true => *self = Session::new(self.delay),
            false => self.ended = Some(at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BodyStream;

    /// A request whose stream brought `body` and whose head was `accepted` or not.
    fn stream(body: &[u8], accepted: bool, at: Instant) -> Progress {
        let mut p = Progress::default();
        p.split_body_as(BodyStream::Sse);
        p.split.as_mut().unwrap().feed(body, at).unwrap();
        p.reconnect = Some(Attempt {
            sent_as: None,
            accepted: Some(accepted),
        });
        p
    }

    #[test]
    fn the_last_id_and_retry_carry_over_streams_and_a_stop_forgets_them() {
        let mut s = Session::new(Duration::from_secs(3));
        let at = Instant::now();
        let reconnect = Attempt {
            sent_as: Some(Reconnection {
                with_id: true,
                waited_us: 0,
            }),
            accepted: None,
        };
        let line = |s: &Session| s.header_line(&reconnect).map(<[u8]>::to_vec);
        s.ended(&stream(b"retry: 50\nid: 7\ndata: a\n\n", true, at), at);
        assert_eq!((s.ended, s.retry), (Some(at), Duration::from_millis(50)));
        assert_eq!(line(&s), Some(b"Last-Event-ID: 7\r\n".to_vec()));
        // A stream that sets none keeps it (a failed one too: no head came).
        let mut failed = stream(b"data: b\n\n", true, at);
        failed.reconnect = Some(Attempt::default());
        s.ended(&failed, at);
        assert_eq!(line(&s), Some(b"Last-Event-ID: 7\r\n".to_vec()));
        // An empty id resets it.
        s.ended(&stream(b"id\ndata: c\n\n", true, at), at);
        assert!(s.id_line.is_empty());
        // A new stream's request carries none.
        s.ended(&stream(b"id: 8\n\n", true, at), at);
        assert_eq!(s.header_line(&Attempt::default()), None);
        // A response that is no event stream stops it: a new client's state.
        s.ended(&stream(b"", false, at), at);
        assert_eq!(
            (s.ended, s.retry, s.id_line.len()),
            (None, Duration::from_secs(3), 0)
        );
        // The wait is counted from the stream's end to the reconnection's start.
        s.ended(&stream(b"", true, at), at);
        let mut attempt = reconnect;
        s.started(&mut attempt, at + Duration::from_millis(51));
        assert_eq!(attempt.sent_as.unwrap().waited_us, 51_000);
    }
}
