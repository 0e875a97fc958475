//! The server's own time as its responses' headers give it (`Config::server_timing`): which
//! header to read, and the value one exchange keeps of it until its sample is recorded.
//!
//! The engine only copies the header's value; it is read into figures when the response is
//! recorded ([`belier_stats::Recorder::record_server_timing`]), once its latency is known. The
//! buffers the values are copied into are a worker's, reused from one request to the next, so
//! a run that reads the header allocates nothing per request, and one that does not reads no
//! header at all.

use std::cell::RefCell;
use std::sync::Arc;

use belier_stats::TimingHeader;

/// The name of the W3C header.
const SERVER_TIMING: &str = "server-timing";
/// Most bytes of header value one response keeps (a head is at most 64 KiB anyway); what
/// comes beyond is left out, and usually reads as malformed.
const MOST_VALUE_BYTES: usize = 8 * 1024;

/// Which response header gives the server's own time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerTimingHeader {
    /// `Server-Timing` (W3C): metrics with durations, `app;dur=12.3, db;dur=4`. Several
    /// headers of a response are one list.
    ServerTiming,
    /// A header of one figure, `X-Response-Time: 12.3ms` (`us`, `ms`, `s`; a bare number is
    /// milliseconds). The name is matched without regard to case; only the first such header
    /// of a response counts.
    Figure(String),
}

impl ServerTimingHeader {
    /// The header's name.
    pub fn name(&self) -> &str {
        match self {
            ServerTimingHeader::ServerTiming => SERVER_TIMING,
            ServerTimingHeader::Figure(name) => name,
        }
    }

    /// The header as the recorder reads it: a figure header's one metric is named after the
    /// header, in lower case as HTTP/2 writes header names.
    pub(crate) fn as_recorded(&self) -> TimingHeader<'_> {
        match self {
            ServerTimingHeader::ServerTiming => TimingHeader::ServerTiming,
            ServerTimingHeader::Figure(name) => TimingHeader::Figure(name),
        }
    }
}

/// One exchange's copy of the header's value.
#[derive(Debug)]
pub(crate) struct Capture {
    pub header: Arc<ServerTimingHeader>,
    found: bool,
    value: Vec<u8>,
}

impl Capture {
    /// Whether a header of this name is the one to keep.
    pub(crate) fn wants(&self, name: &[u8]) -> bool {
        name.eq_ignore_ascii_case(self.header.name().as_bytes())
    }

    /// Keeps one header's value: `Server-Timing` headers join into one list, a figure header
    /// keeps its first.
    pub(crate) fn keep(&mut self, value: &[u8]) {
        if self.found {
            if let ServerTimingHeader::Figure(_) = *self.header {
                return;
            }
            self.value.push(b',');
        }
        self.found = true;
        let room = MOST_VALUE_BYTES.saturating_sub(self.value.len());
        self.value
            .extend_from_slice(&value[..value.len().min(room)]);
    }

    /// Forgets what was kept (an interim response's headers are not the final one's).
    pub(crate) fn clear(&mut self) {
        self.found = false;
        self.value.clear();
    }

    /// The value kept, `None` when the response had no such header.
    pub(crate) fn value(&self) -> Option<&[u8]> {
        self.found.then_some(self.value.as_slice())
    }
}

/// A worker's buffers for the values its exchanges keep, one per request in flight at most.
#[derive(Debug, Default)]
pub(crate) struct Buffers(RefCell<Vec<Vec<u8>>>);

impl Buffers {
    /// A capture of `header` for one exchange, in a buffer reused when one is free.
    pub(crate) fn capture(&self, header: &Arc<ServerTimingHeader>) -> Capture {
        Capture {
            header: Arc::clone(header),
            found: false,
            value: self.0.borrow_mut().pop().unwrap_or_default(),
        }
    }

    /// Takes back an exchange's buffer for the next one.
    pub(crate) fn give_back(&self, capture: Capture) {
        let mut value = capture.value;
        value.clear();
        self.0.borrow_mut().push(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_timing_headers_join_and_a_figure_header_keeps_its_first() {
        let buffers = Buffers::default();
        let st = Arc::new(ServerTimingHeader::ServerTiming);
        let mut c = buffers.capture(&st);
        assert!(c.wants(b"Server-Timing") && !c.wants(b"server-timings"));
        assert_eq!(c.value(), None);
        c.keep(b"app;dur=1");
        c.keep(b"db;dur=2");
        assert_eq!(c.value(), Some(&b"app;dur=1,db;dur=2"[..]));
        c.clear();
        c.keep(b"");
        assert_eq!(c.value(), Some(&b""[..]));
        buffers.give_back(c);
        let figure = Arc::new(ServerTimingHeader::Figure("x-response-time".into()));
        let mut c = buffers.capture(&figure);
        // The buffer came back empty.
        assert_eq!(c.value(), None);
        assert!(c.wants(b"X-Response-Time"));
        c.keep(b"5ms");
        c.keep(b"6ms");
        assert_eq!(c.value(), Some(&b"5ms"[..]));
        c.keep(&[b'x'; 2 * MOST_VALUE_BYTES]);
        c.clear();
        c.keep(&[b'x'; 2 * MOST_VALUE_BYTES]);
        assert_eq!(c.value().map(<[u8]>::len), Some(MOST_VALUE_BYTES));
    }
}
