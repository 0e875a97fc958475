//! The server's own account of its time: the W3C `Server-Timing` response header
//! (`app;dur=12.3;desc="db and render", cache;desc=hit`) and the single-figure headers some
//! servers send instead (`X-Response-Time: 12.3ms`).
//!
//! Both read header values as the bytes they arrived in, with no allocation, so a response path
//! can call them per response. Durations are milliseconds, as the header states them.
//!
//! Decisions where the specification leaves room:
//! - A metric whose `dur` is missing or is no finite number at or above zero has no duration:
//!   it is reported to the caller with `None`, and a recorder of durations skips it (the W3C
//!   processing model would read it as 0 ms, which would pull a metric's low percentiles down
//!   with figures the server never measured).
//! - When a metric repeats `dur`, the first one counts, as the W3C processing model says.
//! - A comma inside a quoted `desc` does not end the metric; an unterminated quote ends the
//!   header value.

/// One metric of a `Server-Timing` header value: its name, and its duration in milliseconds if
/// the metric gave a readable one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Metric<'a> {
    /// The metric's name as sent (`app`, `db`, `total`), trimmed of spaces.
    pub name: &'a [u8],
    /// Its `dur` parameter in milliseconds; `None` when absent or unreadable.
    pub duration_ms: Option<f64>,
}

/// Calls `visit` with each metric of one `Server-Timing` header value, in order. Entries with
/// no name (`, ,`) are skipped. Several headers are several calls.
pub fn for_each_metric<'a>(value: &'a [u8], mut visit: impl FnMut(Metric<'a>)) {
    let mut rest = value;
    while !rest.is_empty() {
        let end = unquoted(rest, b',');
        let (entry, after) = rest.split_at(end);
        rest = after.get(1..).unwrap_or_default();
        if let Some(metric) = metric(entry) {
            visit(metric);
        }
    }
}

/// The metrics of one `Server-Timing` header value, collected: for tests and for callers off
/// the hot path (the response path uses [`for_each_metric`]).
pub fn metrics(value: &[u8]) -> Vec<Metric<'_>> {
    let mut all = Vec::new();
    for_each_metric(value, |metric| all.push(metric));
    all
}

/// Reads a single-figure response-time header (`X-Response-Time: 12.3ms`) into milliseconds.
/// A bare number is milliseconds; the units `us`/`µs`, `ms` and `s` are read as written,
/// with or without a space before them. `None` for anything else, or a negative or non-finite
/// figure.
pub fn response_time_ms(value: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(value).ok()?.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit.trim() {
        "" | "ms" => 1.0,
        "s" => 1000.0,
        "us" | "µs" => 0.001,
        _ => return None,
    };
    let figure = number.parse::<f64>().ok()? * scale;
    (figure.is_finite() && figure >= 0.0).then_some(figure)
}

/// Where the part of `text` before `separator` ends: the first `separator` outside a quoted
/// string, or the end of the text.
fn unquoted(text: &[u8], separator: u8) -> usize {
    let mut quoted = false;
    let mut escaped = false;
    for (at, &byte) in text.iter().enumerate() {
        match (quoted, escaped, byte) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (_, false, b'"') => quoted = !quoted,
            (false, _, byte) if byte == separator => return at,
            _ => {}
        }
    }
    text.len()
}

/// One entry (`name;param=value;…`) as a metric, or `None` when it has no name. A `;` inside
/// a quoted value does not start a parameter.
fn metric(entry: &[u8]) -> Option<Metric<'_>> {
    let end = unquoted(entry, b';');
    let name = trim(&entry[..end]);
    if name.is_empty() {
        return None;
    }
    let mut rest = entry.get(end + 1..).unwrap_or_default();
    while !rest.is_empty() {
        let end = unquoted(rest, b';');
        let (param, after) = rest.split_at(end);
        rest = after.get(1..).unwrap_or_default();
        if let Some(at) = param.iter().position(|&byte| byte == b'=') {
            if trim(&param[..at]).eq_ignore_ascii_case(b"dur") {
                let duration_ms = duration(trim(&param[at + 1..]));
                return Some(Metric { name, duration_ms });
            }
        }
    }
    Some(Metric {
        name,
        duration_ms: None,
    })
}

/// A `dur` value (a number, possibly quoted) as milliseconds, if finite and not negative.
fn duration(value: &[u8]) -> Option<f64> {
    let value = value
        .strip_prefix(b"\"")
        .and_then(|inner| inner.strip_suffix(b"\""))
        .unwrap_or(value);
    let figure = std::str::from_utf8(value).ok()?.parse::<f64>().ok()?;
    (figure.is_finite() && figure >= 0.0).then_some(figure)
}

/// `bytes` without the spaces and tabs at either end.
fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !matches!(b, b' ' | b'\t'));
    let Some(start) = start else { return &[] };
    let end = bytes
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t'))
        .unwrap_or(start);
    &bytes[start..=end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A metric as the tests write it: its name and duration.
    type Named = (String, Option<f64>);

    fn read(value: &str) -> Vec<Named> {
        metrics(value.as_bytes())
            .into_iter()
            .map(|m| (String::from_utf8(m.name.to_vec()).unwrap(), m.duration_ms))
            .collect()
    }

    fn named(name: &str, duration: Option<f64>) -> Named {
        (name.to_string(), duration)
    }

    #[test]
    fn reads_each_metric_of_a_header_value() {
        let cases: &[(&str, Vec<Named>)] = &[
            ("app;dur=12.3", vec![named("app", Some(12.3))]),
            (
                "db;dur=53, app;dur=47.2",
                vec![named("db", Some(53.0)), named("app", Some(47.2))],
            ),
            ("cache;desc=hit", vec![named("cache", None)]),
            (
                "app ; desc=\"a, b; c\" ; dur = 4, total;dur=9",
                vec![named("app", Some(4.0)), named("total", Some(9.0))],
            ),
            ("app;dur=\"7.5\"", vec![named("app", Some(7.5))]),
            ("app;DUR=3;dur=8", vec![named("app", Some(3.0))]),
            ("app;desc=\"x;dur=5\";dur=6", vec![named("app", Some(6.0))]),
            (
                "app;dur=abc, db;dur=-1",
                vec![named("app", None), named("db", None)],
            ),
            (" , ,miss", vec![named("miss", None)]),
            ("", vec![]),
            (
                "app;desc=\"unterminated, db;dur=1",
                vec![named("app", None)],
            ),
            (
                "app;desc=\"say \\\"hi\\\", ok\";dur=2",
                vec![named("app", Some(2.0))],
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(&read(value), expected, "{value:?}");
        }
    }

    #[test]
    fn reads_single_figure_response_times() {
        let cases: &[(&str, Option<f64>)] = &[
            ("12.3ms", Some(12.3)),
            ("12.3", Some(12.3)),
            (" 12.3 ms ", Some(12.3)),
            ("0.25s", Some(250.0)),
            ("800us", Some(0.8)),
            ("800µs", Some(0.8)),
            ("-3ms", None),
            ("12 minutes", None),
            ("fast", None),
            ("", None),
        ];
        for (value, expected) in cases {
            assert_eq!(response_time_ms(value.as_bytes()), *expected, "{value:?}");
        }
    }

    proptest::proptest! {
        /// Whatever bytes a server sends, reading them neither panics nor yields an empty
        /// name or a negative or non-finite duration.
        #[test]
        fn any_bytes_read_without_panic(value in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            check(&value);
        }

        /// The same for texts made of the header's own punctuation, which reach the quote,
        /// escape and parameter paths far more often than random bytes.
        #[test]
        fn header_like_texts_read_without_panic(value in "[ad=ur;,\"\\ .0-9e-]{0,40}") {
            check(value.as_bytes());
        }
    }

    fn check(value: &[u8]) {
        for_each_metric(value, |metric| {
            assert!(!metric.name.is_empty());
            assert!(metric.duration_ms.is_none_or(|d| d.is_finite() && d >= 0.0));
        });
        assert!(response_time_ms(value).is_none_or(|d| d.is_finite() && d >= 0.0));
    }
}
