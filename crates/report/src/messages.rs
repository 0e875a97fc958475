//! The messages of a run's streaming gRPC calls (or streamed bodies') as rows of the
//! markdown and HTML summary tables: one list, so that both formats show the same figures under the same labels. The
//! rows appear only when a run had messages (a run of other requests has a dash in each), so
//! a report of HTTP runs is unchanged.

use belier_stats::LatencySummary;

use crate::format::{ms, ms_f, rate, thousands};
use crate::summary::{MessageFigures, Summary};

/// A row: its label and the cell of one run.
pub(crate) type Row = (&'static str, fn(&Summary) -> String);

/// The note under a table with message rows: what the times measure.
const NOTE: &str = "Message times: first, from a streaming call's send to its first \
     response message; gap, between a call's consecutive response messages; round trip, from a \
     request message to the response message that answered it.";

/// `figure` of a run's messages; a dash for a run without them (a zero would read as a
/// measurement).
fn cell(s: &Summary, figure: impl Fn(&MessageFigures) -> String) -> String {
    s.messages.as_ref().map_or_else(|| "–".into(), figure)
}

/// Percentile `p` of `times`; a dash when there were none.
fn at(times: &LatencySummary, p: f64) -> String {
    if times.count == 0 {
        return "–".into();
    }
    ms(times.at(p).unwrap_or(0))
}

/// The rows every run with messages has.
const ROWS: [Row; 11] = [
    ("Streaming calls", |s| {
        cell(s, |m| thousands(m.counts.calls))
    }),
    ("Messages received", |s| {
        cell(s, |m| thousands(m.counts.received))
    }),
    ("Messages received/s", |s| {
        cell(s, |m| format!("{}/s", rate(m.received_rate)))
    }),
    ("Received per call", |s| {
        cell(s, |m| format!("{:.1}", m.received_per_call))
    }),
    ("Messages sent", |s| cell(s, |m| thousands(m.counts.sent))),
    ("Messages sent/s", |s| {
        cell(s, |m| format!("{}/s", rate(m.sent_rate)))
    }),
    ("Sent per call", |s| {
        cell(s, |m| format!("{:.1}", m.sent_per_call))
    }),
    ("First message p50", |s| cell(s, |m| at(&m.first, 50.0))),
    ("First message p99", |s| cell(s, |m| at(&m.first, 99.0))),
    ("Message gap p50", |s| cell(s, |m| at(&m.gaps, 50.0))),
    ("Message gap p99", |s| cell(s, |m| at(&m.gaps, 99.0))),
];

/// The rows of runs whose responses answered their messages one for one.
const ROUND_TRIP_ROWS: [Row; 2] = [
    ("Round trip p50", |s| cell(s, |m| at(&m.round_trips, 50.0))),
    ("Round trip p99", |s| cell(s, |m| at(&m.round_trips, 99.0))),
];

/// The note under a table of streamed bodies' rows (`--stream`).
const STREAM_NOTE: &str = "Streams: first, from when the request was due to its first event, \
     chunk or token (TTFT); gap, between a stream's consecutive ones (ITL for tokens); tokens/s \
     per stream, once its first token came.";

/// The rows of runs of streamed bodies (`--stream`): what their messages are goes in the
/// labels, since a run's unit may differ from the next run's.
const STREAM_ROWS: [Row; 7] = [
    ("Streams", |s| cell(s, |m| thousands(m.counts.calls))),
    ("Events, chunks or tokens", |s| {
        cell(s, |m| {
            format!(
                "{} {}s",
                thousands(m.counts.received),
                m.counts.unit.singular()
            )
        })
    }),
    ("Received/s", |s| {
        cell(s, |m| format!("{}/s", rate(m.received_rate)))
    }),
    ("First (TTFT) p50", |s| cell(s, |m| at(&m.first, 50.0))),
    ("First (TTFT) p99", |s| cell(s, |m| at(&m.first, 99.0))),
    ("Gap (ITL) p50", |s| cell(s, |m| at(&m.gaps, 50.0))),
    ("Gap (ITL) p99", |s| cell(s, |m| at(&m.gaps, 99.0))),
];

/// The rows of runs of LLM streams.
const TOKEN_ROWS: [Row; 3] = [
    ("Output tokens", |s| cell(s, |m| thousands(m.counts.tokens))),
    ("Output tokens/s", |s| {
        cell(s, |m| format!("{}/s", rate(m.token_rate)))
    }),
    ("Tokens/s per stream", |s| {
        cell(s, |m| format!("{:.1}/s", m.tokens_per_stream_rate))
    }),
];

/// The rows of runs of SSE streams that reconnected (`--sse-reconnect`).
const RECONNECTION_ROWS: [Row; 4] = [
    ("Reconnections", |s| {
        cell(s, |m| thousands(m.counts.reconnections))
    }),
    ("With Last-Event-ID", |s| {
        cell(s, |m| thousands(m.counts.reconnections_with_id))
    }),
    ("Reconnection wait (mean)", |s| {
        cell(s, |m| ms_f(m.reconnection_wait_mean_us))
    }),
    ("Reconnections stopped", |s| {
        cell(s, |m| thousands(m.counts.reconnection_stops))
    }),
];

/// Whether every run with messages streamed bodies (`--stream`) rather than gRPC calls.
fn streamed(summaries: &[Summary]) -> bool {
    let mut with = summaries
        .iter()
        .filter_map(|s| s.messages.as_ref())
        .peekable();
    with.peek().is_some() && with.all(|m| m.counts.unit.is_streamed_body())
}

/// The note under a table with message rows.
pub(crate) fn note(summaries: &[Summary]) -> &'static str {
    match streamed(summaries) {
        true => STREAM_NOTE,
        false => NOTE,
    }
}

/// The message rows `summaries` call for: none when no run had messages, the round trips'
/// when any run had some; streamed bodies' own rows when every run with messages had them.
pub(crate) fn rows(summaries: &[Summary]) -> Vec<Row> {
    let with = |has: fn(&MessageFigures) -> bool| {
        summaries
            .iter()
            .any(|s| s.messages.as_ref().is_some_and(has))
    };
    let mut rows = Vec::new();
    if streamed(summaries) {
        rows.extend(STREAM_ROWS);
        if with(|m| m.counts.tokens > 0) {
            rows.extend(TOKEN_ROWS);
        }
        if with(|m| m.counts.reconnections > 0 || m.counts.reconnection_stops > 0) {
            rows.extend(RECONNECTION_ROWS);
        }
        return rows;
    }
    if with(|_| true) {
        rows.extend(ROWS);
    }
    if with(|m| m.round_trips.count > 0) {
        rows.extend(ROUND_TRIP_ROWS);
    }
    if with(|m| !m.closes.is_empty()) {
        rows.extend(CLOSE_ROWS);
    }
    if with(|m| !m.extensions.is_empty()) {
        rows.extend(EXTENSION_ROWS);
    }
    rows
}

/// What RFC 6455 (§7.4.1) and IANA's registry call WebSocket close code `code`; `None` for
/// a code they leave to applications (3000–4999) or do not assign.
pub(crate) fn close_code_name(code: u16) -> Option<&'static str> {
    Some(match code {
        1000 => "normal",
        1001 => "going away",
        1002 => "protocol error",
        1003 => "unsupported data",
        1005 => "no status code",
        1006 => "abnormal: no close frame",
        1007 => "invalid data",
        1008 => "policy violation",
        1009 => "message too big",
        1010 => "extension required",
        1011 => "internal error",
        1012 => "service restart",
        1013 => "try again later",
        1014 => "bad gateway",
        1015 => "TLS handshake",
        _ => return None,
    })
}

/// WebSocket closes, `1000 normal ×190, 1011 internal error ×10`; a dash without any.
pub(crate) fn closes_line(closes: &[(u16, u64)]) -> String {
    if closes.is_empty() {
        return "–".into();
    }
    closes
        .iter()
        .map(|&(code, n)| match close_code_name(code) {
            Some(name) => format!("{code} {name} ×{}", thousands(n)),
            None => format!("{code} ×{}", thousands(n)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What sockets that offered permessage-deflate agreed,
/// `permessage-deflate; client_max_window_bits=12 ×190, declined ×10`; a dash without any.
pub(crate) fn extensions_line(extensions: &[(String, u64)]) -> String {
    if extensions.is_empty() {
        return "–".into();
    }
    extensions
        .iter()
        .map(|(extension, n)| format!("{extension} ×{}", thousands(*n)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The row of WebSocket runs: their sockets' close codes.
const CLOSE_ROWS: [Row; 1] = [("Close codes", |s| cell(s, |m| closes_line(&m.closes)))];

/// The row of WebSocket runs with --deflate: what their sockets agreed.
const EXTENSION_ROWS: [Row; 1] = [("Compression", |s| {
    cell(s, |m| extensions_line(&m.extensions))
})];

/// Whether a run's URL is a WebSocket endpoint (`belier ws`): its messages are worded as a
/// socket's rather than a streaming call's.
pub(crate) fn is_websocket(url: &str) -> bool {
    let scheme = url.split_once("://").map_or("", |(s, _)| s);
    scheme.eq_ignore_ascii_case("ws") || scheme.eq_ignore_ascii_case("wss")
}

#[cfg(test)]
mod websocket_tests {
    #[test]
    fn close_codes_are_named_where_the_rfc_names_them() {
        assert_eq!(super::closes_line(&[]), "–");
        let line = super::closes_line(&[(1000, 19_000), (1006, 3), (4001, 1)]);
        assert_eq!(
            line,
            "1000 normal ×19,000, 1006 abnormal: no close frame ×3, 4001 ×1"
        );
    }

    #[test]
    fn only_ws_and_wss_urls_are_websocket_runs() {
        for url in ["ws://h/", "WSS://h:1/x", "wss://h"] {
            assert!(super::is_websocket(url), "{url}");
        }
        for url in ["http://h/ws", "https://ws.example/", "h:1", "grpc://h"] {
            assert!(!super::is_websocket(url), "{url}");
        }
    }
}
