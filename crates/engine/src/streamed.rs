//! Streamed response bodies read as messages: Server-Sent Events, the chunks reads bring, or
//! an LLM API's token chunks (OpenAI-compatible streaming). A [`Splitter`] is fed the body's
//! bytes as reads bring them and says how many messages each piece completed, which the
//! exchange stamps with the read's arrival (see `StreamProgress::arrived`).

use std::time::Instant;

use belier_stats::MessageUnit;

/// How a streamed response body is cut into messages (`--stream`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyStream {
    /// Server-Sent Events: an event ends at a blank line; comments (`:` lines) and blocks
    /// without a `data` field are no events (as a browser's `EventSource` dispatches none).
    Sse,
    /// Each read that brought body bytes is one message.
    Chunks,
    /// OpenAI-compatible streaming: `data: {json}` events whose `choices[].delta.content`
    /// (or `choices[].text`) is not empty are the messages (token chunks); `data: [DONE]`
    /// ends the stream; a `usage.completion_tokens` is the stream's token count of record.
    Llm,
}

impl BodyStream {
    /// What its messages are called in the reports.
    pub fn unit(self) -> MessageUnit {
        match self {
            BodyStream::Sse => MessageUnit::Events,
            BodyStream::Chunks => MessageUnit::Chunks,
            BodyStream::Llm => MessageUnit::Tokens,
        }
    }
}

/// The longest line, and the most data of one event, a splitter holds: a longer one fails
/// the request (a stream that never ends its line must not grow belier's memory).
pub const MAX_EVENT_BYTES: usize = 64 * 1024;

/// A body that cannot be cut into messages.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SplitError(pub &'static str);

/// Cuts one response body into messages as it comes.
#[derive(Debug)]
pub(crate) struct Splitter {
    mode: BodyStream,
    /// The line being read.
    line: Vec<u8>,
    /// The last byte ended a line with `\r` (a `\n` right after belongs to it).
    after_cr: bool,
    /// The event being read has a `data` field.
    has_data: bool,
    /// LLM: the event's data, lines joined by `\n`.
    data: Vec<u8>,
    /// Chunks: when the last read that brought body bytes arrived.
    last_read: Option<Instant>,
    /// LLM: chunks with content, and the count `usage.completion_tokens` gave.
    chunks_with_content: u64,
    usage: Option<u64>,
    /// LLM: `[DONE]` came; what follows counts no more.
    done: bool,
    /// SSE: the fields a reconnection carries on (see [`EventSource`]).
    source: EventSource,
    /// Body bytes came: a byte order mark is no longer the stream's first.
    begun: bool,
}

/// What an SSE stream tells the client that reconnects it (WHATWG HTML §9.2.6): the last
/// event id and the reconnection time. Other modes read no such field.
#[derive(Debug, Default)]
struct EventSource {
    /// The last event ID buffer: the latest `id` field's value.
    id_buffer: Vec<u8>,
    /// An `id` field came since the last event was dispatched.
    id_pending: bool,
    /// The last event id this stream set (at the blank line after its `id`); `None`: it set
    /// none, and the one before it stands. Empty: reset (a reconnection carries none).
    last_id: Option<Vec<u8>>,
    /// The latest valid `retry` field, milliseconds.
    retry_ms: Option<u64>,
}

impl Splitter {
    pub(crate) fn new(mode: BodyStream) -> Splitter {
        Splitter {
            mode,
            line: Vec::new(),
            after_cr: false,
            has_data: false,
            data: Vec::new(),
            last_read: None,
            chunks_with_content: 0,
            usage: None,
            done: false,
            source: EventSource::default(),
            begun: false,
        }
    }

    /// The last event id this stream set, as an `EventSource` keeps it for its reconnection:
    /// the value of the latest `id` field (without NUL) before a blank line, empty when that
    /// field had none; `None` when the stream set none (an event that did not end before the
    /// stream did sets none).
    pub(crate) fn last_event_id(&self) -> Option<&[u8]> {
        self.source.last_id.as_deref()
    }

    /// The reconnection time the stream's latest valid `retry` field gave (ASCII digits
    /// only), milliseconds.
    pub(crate) fn retry_ms(&self) -> Option<u64> {
        self.source.retry_ms
    }

    /// How it cuts.
    pub(crate) fn mode(&self) -> BodyStream {
        self.mode
    }

    /// Back to the start of a body (a request sent again).
    pub(crate) fn reset(&mut self) {
        *self = Splitter::new(self.mode);
    }

    /// The stream's output tokens: `usage.completion_tokens` when it came, else its chunks
    /// with content (LLM streams; 0 otherwise).
    pub(crate) fn tokens(&self) -> u64 {
        self.usage.unwrap_or(self.chunks_with_content)
    }

    /// Takes `data`, body bytes a read that arrived `at` brought; returns the messages it
    /// completed.
    pub(crate) fn feed(&mut self, data: &[u8], at: Instant) -> Result<u64, SplitError> {
        if self.mode == BodyStream::Chunks {
            // A read may hand its body over in pieces (chunked framing): one message a read.
            let new = !data.is_empty() && self.last_read != Some(at);
            if new {
                self.last_read = Some(at);
            }
            return Ok(u64::from(new));
        }
        // An event stream may open with a UTF-8 byte order mark, which is not part of its
        // first line (one split across two pieces of the body is not recognised).
        let data = match self.begun || data.is_empty() {
            true => data,
            false => {
                self.begun = true;
                data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data)
            }
        };
        let mut complete = 0;
        for &b in data {
            let after_cr = std::mem::replace(&mut self.after_cr, b == b'\r');
            match b {
                b'\n' if after_cr => {}
                b'\n' | b'\r' => complete += u64::from(self.end_line()?),
                _ if self.line.len() < MAX_EVENT_BYTES => self.line.push(b),
                _ => return Err(SplitError("an event line longer than 64 KiB")),
            }
        }
        Ok(complete)
    }

    /// A line ended: a field, a comment, or the blank line that ends an event. Returns
    /// whether it completed a message.
    fn end_line(&mut self) -> Result<bool, SplitError> {
        if self.line.is_empty() {
            return Ok(self.end_event());
        }
        let line = std::mem::take(&mut self.line);
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => {
                self.line = line;
                self.line.clear();
                return Ok(false);
            }
            Some(i) => (&line[..i], &line[i + 1..]),
            None => (&line[..], &line[line.len()..]),
        };
        if self.mode == BodyStream::Sse {
            self.source.field(field, value);
        }
        if field == b"data" {
            if self.mode == BodyStream::Llm {
                let value = value.strip_prefix(b" ").unwrap_or(value);
                if self.has_data {
                    self.data.push(b'\n');
                }
                if self.data.len() + value.len() > MAX_EVENT_BYTES {
                    return Err(SplitError("an event's data longer than 64 KiB"));
                }
                self.data.extend_from_slice(value);
            }
            self.has_data = true;
        }
        // Keeps the line's allocation for the next.
        self.line = line;
        self.line.clear();
        Ok(false)
    }

    /// The blank line: whether the event it ends is a message.
    fn end_event(&mut self) -> bool {
        if std::mem::take(&mut self.source.id_pending) {
            let last = self.source.last_id.get_or_insert_with(Vec::new);
            last.clone_from(&self.source.id_buffer);
        }
        let had_data = std::mem::take(&mut self.has_data);
        let message = match self.mode {
            BodyStream::Llm => had_data && self.llm_event(),
            _ => had_data,
        };
        self.data.clear();
        message
    }

    /// An LLM stream's event: whether it carried output.
    fn llm_event(&mut self) -> bool {
        if self.done {
            return false;
        }
        if self.data == b"[DONE]" {
            self.done = true;
            return false;
        }
        // Not JSON (a keep-alive, a server's own note): no token.
        let Ok(chunk) = serde_json::from_slice::<serde_json::Value>(&self.data) else {
            return false;
        };
        if let Some(n) = chunk["usage"]["completion_tokens"].as_u64() {
            self.usage = Some(n);
        }
        let not_empty = |v: &serde_json::Value| v.as_str().is_some_and(|s| !s.is_empty());
        let content = chunk["choices"].as_array().is_some_and(|choices| {
            choices
                .iter()
                .any(|c| not_empty(&c["delta"]["content"]) || not_empty(&c["text"]))
        });
        self.chunks_with_content += u64::from(content);
        content
    }
}

impl EventSource {
    /// Reads a field of the line: `id` and `retry` are this struct's.
    fn field(&mut self, name: &[u8], value: &[u8]) {
        // A value's one leading space is not part of it.
        let value = value.strip_prefix(b" ").unwrap_or(value);
        match name {
            // An id with NUL in it is ignored (it could not go back in a header).
            b"id" if !value.contains(&0) => {
                self.id_buffer.clear();
                self.id_buffer.extend_from_slice(value);
                self.id_pending = true;
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits past what a u64 holds mean "longer than any run": saturate.
                let ms = value.iter().fold(0u64, |ms, &d| {
                    ms.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                });
                self.retry_ms = Some(ms);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `pieces` one read each; returns the messages each completed.
    fn split(mode: BodyStream, pieces: &[&[u8]]) -> (Vec<u64>, Splitter) {
        let mut s = Splitter::new(mode);
        let start = Instant::now();
        let counts = pieces
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let at = start + std::time::Duration::from_millis(i as u64);
                s.feed(p, at).unwrap()
            })
            .collect();
        (counts, s)
    }

    #[test]
    fn sse_events_end_at_blank_lines_of_any_line_ending_and_comments_are_none() {
        let (counts, _) = split(
            BodyStream::Sse,
            &[
                b": hello\n\n",
                b"data: a\n\nda",
                b"ta: b\r\n\r\nevent: x\ndata: c\r\rdata",
                b": d\n",
                b"\n",
                b"id: 7\n\n",
            ],
        );
        assert_eq!(counts, [0, 1, 2, 0, 1, 0]);
    }

    #[test]
    fn a_crlf_split_across_reads_ends_one_line() {
        // The event ends at the second `\r`; the `\n` after it belongs to it.
        let (counts, _) = split(BodyStream::Sse, &[b"data: a\r", b"\n\r", b"\n"]);
        assert_eq!(counts, [0, 1, 0]);
    }

    #[test]
    fn chunks_count_reads_not_pieces() {
        let mut s = Splitter::new(BodyStream::Chunks);
        let at = Instant::now();
        assert_eq!(s.feed(b"ab", at), Ok(1));
        assert_eq!(s.feed(b"cd", at), Ok(0));
        assert_eq!(s.feed(b"", at + std::time::Duration::from_millis(1)), Ok(0));
        assert_eq!(
            s.feed(b"e", at + std::time::Duration::from_millis(1)),
            Ok(1)
        );
    }

    #[test]
    fn llm_chunks_with_content_are_tokens_and_usage_is_the_count_of_record() {
        let role = br#"data: {"choices":[{"delta":{"role":"assistant","content":""}}]}"#;
        let tok = br#"data: {"choices":[{"delta":{"content":"Hi"}}]}"#;
        let text = br#"data: {"choices":[{"text":" there"}]}"#;
        let usage = br#"data: {"choices":[],"usage":{"completion_tokens":5}}"#;
        let body = [
            &role[..],
            b"\n\n",
            tok,
            b"\n\n",
            text,
            b"\n\n: ping\n\n",
            usage,
            b"\n\ndata: [DONE]\n\n",
            tok,
            b"\n\n",
        ];
        let (counts, s) = split(BodyStream::Llm, &body);
        assert_eq!(counts.iter().sum::<u64>(), 2);
        assert_eq!(s.tokens(), 5);
        let (_, without_usage) = split(BodyStream::Llm, &[tok, b"\n\n", tok, b"\n\n"]);
        assert_eq!(without_usage.tokens(), 2);
    }

    #[test]
    fn the_last_event_id_is_set_at_the_blank_line_after_its_field() {
        let last = |pieces: &[&[u8]]| {
            let (_, s) = split(BodyStream::Sse, pieces);
            s.last_event_id()
                .map(|id| String::from_utf8(id.to_vec()).unwrap())
        };
        assert_eq!(last(&[b"data: a\n\n"]), None);
        assert_eq!(last(&[b"id: 1\ndata: a\n\n"]), Some("1".into()));
        // An id stands for the events after it that name none.
        assert_eq!(last(&[b"id: 1\ndata: a\n\ndata: b\n\n"]), Some("1".into()));
        // Only one leading space goes; an id without data still sets it at its blank line.
        assert_eq!(last(&[b"id:  x y\n\n"]), Some(" x y".into()));
        assert_eq!(last(&[b"id:7\r\n", b"\r\n"]), Some("7".into()));
        // A leading byte order mark is not part of the first field's name; a later one is.
        assert_eq!(last(&[b"", b"\xEF\xBB\xBFid: 3\n\n"]), Some("3".into()));
        assert_eq!(last(&[b"\n", b"\xEF\xBB\xBFid: 3\n\n"]), None);
        // An event the stream's end cut sets none.
        assert_eq!(last(&[b"id: 1\n\nid: 2\ndata: b\n"]), Some("1".into()));
        // An id with NUL is ignored; an empty one resets it (no colon: an empty value too).
        assert_eq!(last(&[b"id: 1\n\nid: 2\0\n\n"]), Some("1".into()));
        assert_eq!(last(&[b"id: 1\n\nid:\n\n"]), Some(String::new()));
        assert_eq!(last(&[b"id: 1\n\nid\n\n"]), Some(String::new()));
        // Not a field named id.
        assert_eq!(last(&[b"ids: 1\n\n: id: 2\n\n"]), None);
        // Other modes read no id.
        let (_, chunks) = split(BodyStream::Chunks, &[b"id: 1\n\n"]);
        assert_eq!(chunks.last_event_id(), None);
    }

    #[test]
    fn retry_takes_ascii_digits_only_at_once() {
        let retry = |pieces: &[&[u8]]| split(BodyStream::Sse, pieces).1.retry_ms();
        assert_eq!(retry(&[b"retry: 50\n"]), Some(50));
        assert_eq!(retry(&[b"retry:50\n\nretry: 2000\n\n"]), Some(2000));
        for ignored in [
            &b"retry: 50\nretry: 5s\n"[..],
            b"retry: 50\nretry: -1\n",
            b"retry: 50\nretry: 1.5\n",
            b"retry: 50\nretry:\n",
            b"retry: 50\nretry:  60\n",
            b"retry: 50\nretry\n",
        ] {
            assert_eq!(retry(&[ignored]), Some(50), "{ignored:?}");
        }
        assert_eq!(
            retry(&[b"retry: 99999999999999999999999\n"]),
            Some(u64::MAX)
        );
        assert_eq!(retry(&[b"data: retry: 5\n\n"]), None);
    }

    #[test]
    fn an_over_long_line_is_an_error_not_a_growing_buffer() {
        let mut s = Splitter::new(BodyStream::Sse);
        let long = vec![b'x'; MAX_EVENT_BYTES + 1];
        assert!(s.feed(&long, Instant::now()).is_err());
        let mut s = Splitter::new(BodyStream::Llm);
        let line = [
            b"data: ".as_slice(),
            &vec![b'x'; MAX_EVENT_BYTES - 10],
            b"\n",
        ]
        .concat();
        assert_eq!(s.feed(&line, Instant::now()), Ok(0));
        assert!(s.feed(&line, Instant::now()).is_err());
    }
}
