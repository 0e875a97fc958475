//! Streamed answers, for `--stream` runs and their tests: `GET /sse` sends Server-Sent Events,
//! `POST /v1/chat/completions` (and `/v1/completions`) an OpenAI-compatible token stream, each
//! with a set first delay and gap, over HTTP/1.1 (chunked), HTTP/2 and HTTP/3 alike.
//!
//! Knobs (query string): `events` (or `tokens`): how many (default 10); `first` (or `ttft`):
//! the wait before the first; `gap` (or `itl`): between one and the next (durations such as
//! `20ms`; a bare number is milliseconds; default 0 and 10ms); `/sse` only: `retry`, the
//! reconnection time (milliseconds) a `retry:` field asks for before the first event (none
//! by default), for `--sse-reconnect`. An LLM stream starts with a
//! role chunk without content at once, as OpenAI's does, and ends with a `finish_reason`
//! chunk, a `usage` chunk giving `completion_tokens` and `data: [DONE]`.

use std::time::Duration;

/// Most events or tokens one stream sends (bounds what a request can hold the server to).
const MOST_EVENTS: u64 = 1_000_000;

/// Which stream a path asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Sse,
    Chat,
    Completions,
}

/// A streamed answer: what it sends, and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Streamed {
    kind: Kind,
    count: u64,
    first: Duration,
    gap: Duration,
    /// SSE: the `retry:` field sent at once, milliseconds.
    retry: Option<u64>,
}

/// The content type of every streamed answer.
pub(crate) const CONTENT_TYPE: &str = "text/event-stream";

impl Streamed {
    /// The streamed answer `method` and `target` ask for, if the path is one; `Err`: a knob
    /// that does not read (the answer is a `400` saying so).
    pub(crate) fn of(method: &str, target: &str) -> Option<Result<Streamed, String>> {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let kind = match (method, path) {
            ("GET", "/sse") => Kind::Sse,
            ("POST", "/v1/chat/completions") => Kind::Chat,
            ("POST", "/v1/completions") => Kind::Completions,
            _ => return None,
        };
        let mut s = Streamed {
            kind,
            count: 10,
            first: Duration::ZERO,
            gap: Duration::from_millis(10),
            retry: None,
        };
        Some(s.apply(query).map(|()| s))
    }

    fn apply(&mut self, query: &str) -> Result<(), String> {
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            match name {
                "events" | "tokens" => {
                    self.count = value
                        .parse()
                        .ok()
                        .filter(|&n| n <= MOST_EVENTS)
                        .ok_or_else(|| format!("{name}={value}: a count up to {MOST_EVENTS}"))?;
                }
                "first" | "ttft" => self.first = duration(name, value)?,
                "gap" | "itl" => self.gap = duration(name, value)?,
                "retry" if self.kind == Kind::Sse => {
                    let ms = value.parse().map_err(|_| {
                        format!("retry={value}: a reconnection time in milliseconds")
                    })?;
                    self.retry = Some(ms);
                }
                _ => return Err(format!("unknown stream knob {name:?}")),
            }
        }
        Ok(())
    }

    /// The pieces of the body in order, each with when it is due from the start of the answer.
    pub(crate) fn pieces(&self) -> impl Iterator<Item = (Duration, Vec<u8>)> + '_ {
        let due = |i: u64| self.first + self.gap * u32::try_from(i).unwrap_or(u32::MAX);
        let opening = match (self.kind, self.retry) {
            (Kind::Sse, None) => None,
            (Kind::Sse, Some(ms)) => {
                Some((Duration::ZERO, format!("retry: {ms}\n\n").into_bytes()))
            }
            _ => Some((Duration::ZERO, self.chunk(None))),
        };
        let events = (0..self.count).map(move |i| (due(i), self.event(i)));
        let last = due(self.count.saturating_sub(1));
        let closing = (self.kind != Kind::Sse).then(|| (last, self.closing()));
        opening.into_iter().chain(events).chain(closing)
    }

    /// Event or token `i`.
    fn event(&self, i: u64) -> Vec<u8> {
        match self.kind {
            Kind::Sse => format!("id: {i}\nevent: tick\ndata: event {i}\n\n").into_bytes(),
            _ => self.chunk(Some(&format!("t{i} "))),
        }
    }

    /// An LLM stream's chunk with `content`, or its opening chunk (a role, no content).
    fn chunk(&self, content: Option<&str>) -> Vec<u8> {
        let json = match (self.kind, content) {
            (Kind::Completions, content) => format!(
                r#"{{"object":"text_completion","choices":[{{"index":0,"text":"{}"}}]}}"#,
                content.unwrap_or_default()
            ),
            (_, Some(content)) => format!(
                r#"{{"object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"content":"{content}"}},"finish_reason":null}}]}}"#
            ),
            (_, None) => r#"{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#.to_owned(),
        };
        format!("data: {json}\n\n").into_bytes()
    }

    /// An LLM stream's end: why it stopped, the usage, `[DONE]`.
    fn closing(&self) -> Vec<u8> {
        let n = self.count;
        format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n\
             data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":1,\"completion_tokens\":{n},\"total_tokens\":{}}}}}\n\n\
             data: [DONE]\n\n",
            n + 1
        )
        .into_bytes()
    }
}

/// A duration knob: `20ms`, `1s`, or a bare number of milliseconds.
fn duration(name: &str, value: &str) -> Result<Duration, String> {
    value
        .parse::<u64>()
        .map(Duration::from_millis)
        .or_else(|_| belier_vocabulary::duration::parse(value))
        .map_err(|_| format!("{name}={value}: a duration such as 20ms (or a number of ms)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_knobs_read() {
        assert_eq!(Streamed::of("GET", "/"), None);
        assert_eq!(Streamed::of("POST", "/sse"), None);
        let s = Streamed::of("GET", "/sse?events=3&first=100&gap=20ms")
            .unwrap()
            .unwrap();
        let dues: Vec<_> = s.pieces().map(|(d, _)| d.as_millis()).collect();
        assert_eq!(dues, [100, 120, 140]);
        assert!(Streamed::of("GET", "/sse?nope=1").unwrap().is_err());
        let s = Streamed::of("GET", "/sse?events=1&retry=250")
            .unwrap()
            .unwrap();
        let pieces: Vec<_> = s
            .pieces()
            .map(|(_, p)| String::from_utf8(p).unwrap())
            .collect();
        assert_eq!(
            pieces,
            ["retry: 250\n\n", "id: 0\nevent: tick\ndata: event 0\n\n"]
        );
        assert!(Streamed::of("GET", "/sse?retry=soon").unwrap().is_err());
        assert!(Streamed::of("POST", "/v1/completions?retry=5")
            .unwrap()
            .is_err());
        assert!(Streamed::of("GET", "/sse?gap=soon").unwrap().is_err());
    }

    #[test]
    fn an_llm_stream_opens_with_a_role_and_closes_with_usage_and_done() {
        let s = Streamed::of("POST", "/v1/chat/completions?tokens=2&ttft=50&itl=5")
            .unwrap()
            .unwrap();
        let pieces: Vec<_> = s.pieces().collect();
        let dues: Vec<_> = pieces.iter().map(|(d, _)| d.as_millis()).collect();
        assert_eq!(dues, [0, 50, 55, 55]);
        let last = String::from_utf8(pieces[3].1.clone()).unwrap();
        assert!(last.contains("\"completion_tokens\":2"), "{last}");
        assert!(last.ends_with("data: [DONE]\n\n"), "{last}");
    }
}
