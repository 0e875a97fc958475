//! Latency histograms as a standard HdrHistogram interval log, for HdrHistogram's own tools
//! (Java's `HistogramLogProcessor`, HdrHistogram_py's `HistogramLogReader`, the plotters built
//! on them).
//!
//! Each run's latency histogram of each interval becomes one line, its histogram in the V2
//! compressed encoding, base64 — the same bytes a results file holds, so nothing is lost.
//! Values are microseconds. The lines of a single run are untagged, as HdrHistogram's own
//! writers leave them (Java's `HistogramLogProcessor` reads untagged lines unless given
//! `-tag`, and a log of tagged lines alone made it fail); where several runs share one log,
//! each line is tagged with its run's name.
//!
//! Streaming calls' message times follow each interval's latency line, one tagged line per
//! time that interval recorded: `Tag=first_message`, `Tag=gap`, `Tag=round_trip` (with
//! several runs, `Tag=RUN.first_message`…), for `HistogramLogProcessor -tag first_message`.
//! A log without streaming calls has none of them.

use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;

use belier_results::Run;

/// What the log's interval-max column is divided by: values are microseconds, so maxima show
/// in milliseconds. That is the unit HdrHistogram's own writers give that column: Java's
/// `HistogramLogWriter` and HdrHistogram_py divide by 1,000,000 because they assume
/// nanosecond recordings ("1 msec in nsec", the `-outputValueUnitRatio` default of
/// `HistogramLogProcessor`). The column is only for people reading the log; processors decode
/// the histogram and take their unit ratio as an option (pass `-outputValueUnitRatio 1000` to
/// get milliseconds from these microsecond values).
const MAX_VALUE_DIVISOR: f64 = 1000.0;

/// Renders the latency histograms of `runs` (name, results) as one HdrHistogram interval log.
///
/// Lines are ordered by start time. Timestamps are seconds from the earliest run start, given
/// as the log's `#[StartTime: …]` when the runs' `started_at` are RFC 3339 (belier writes
/// them so); a run whose start cannot be read is placed as if it started then. Tags are the run
/// names with the characters the format forbids (comma, space, line breaks) replaced by `_`,
/// and made unique with `-2`, `-3`… if two names collide; a log of one run has no tags.
pub fn render_hdr_log(runs: &[(&str, &Run)]) -> String {
    use std::fmt::Write as _;
    let starts: Vec<Option<SystemTime>> = runs
        .iter()
        .map(|(_, r)| parse_rfc3339(&r.header.run.started_at))
        .collect();
    let log_start = starts.iter().flatten().min().copied();
    let tags = unique_tags(runs.iter().map(|(name, _)| *name));

    // (start from the log start, run, interval)
    let mut lines = Vec::new();
    for (run, (_, r)) in runs.iter().enumerate() {
        let lead = match (starts[run], log_start) {
            (Some(s), Some(l)) => s.duration_since(l).unwrap_or_default(),
            _ => Duration::ZERO,
        };
        for (i, logged) in r.latency_log.iter().enumerate() {
            lines.push((lead + logged.offset, run, i));
        }
    }
    lines.sort_by_key(|&(start, run, _)| (start, run));

    let mut out = header(runs, log_start);
    out.reserve(lines.len() * 1024);
    // The intervals are already encoded (V2 compressed, base64): each line is written in the
    // same form the crate's IntervalLogWriter uses, without decoding them again.
    for (start, run, i) in lines {
        let logged = &runs[run].1.latency_log[i];
        if runs.len() > 1 {
            let _ = write!(out, "Tag={},", tags[run]);
        }
        let line = |max_us: u64, encoded: &str| {
            format!(
                "{:.3},{:.3},{:.3},{encoded}",
                start.as_secs_f64(),
                logged.width.as_secs_f64(),
                max_us as f64 / MAX_VALUE_DIVISOR,
            )
        };
        let _ = writeln!(out, "{}", line(logged.max_us, &logged.encoded));
        for (name, max_us, encoded) in &logged.messages {
            let tag = if runs.len() > 1 {
                format!("{}.{name}", tags[run])
            } else {
                name.to_string()
            };
            let _ = writeln!(out, "Tag={tag},{}", line(*max_us, encoded));
        }
    }
    out
}

/// The log's header: belier's version, the format's, what the values are (and the message
/// tags, when a run streamed), the divisor of the max column and the start time.
fn header(runs: &[(&str, &Run)], log_start: Option<SystemTime>) -> String {
    let version = runs.first().map_or(env!("CARGO_PKG_VERSION"), |(_, r)| {
        r.header.run.belier_version.as_str()
    });
    let streamed = runs
        .iter()
        .any(|(_, r)| r.latency_log.iter().any(|l| !l.messages.is_empty()));
    let mut builder = IntervalLogWriterBuilder::new();
    builder
        .add_comment(&format!("[Logged with belier {version}]"))
        .add_comment("[Histogram log format version 1.3]")
        .add_comment(if runs.len() > 1 {
            "[Latency in microseconds, from each request's intended start to its last byte; \
             responses only; one tag per run]"
        } else {
            "[Latency in microseconds, from each request's intended start to its last byte; \
             responses only]"
        })
        .with_max_value_divisor(MAX_VALUE_DIVISOR);
    if streamed {
        builder.add_comment(
            "[Tags first_message, gap, round_trip: streaming calls' message times in \
             microseconds (to the first message, between messages, message to its reply)]",
        );
    }
    if let Some(start) = log_start {
        builder.with_start_time(start);
    }
    let mut head = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    builder
        .begin_log_with(&mut head, &mut serializer)
        .expect("writing to memory cannot fail");
    String::from_utf8(head).expect("the log header is UTF-8 text")
}

/// One tag per name: forbidden characters replaced, empty names named, duplicates numbered.
fn unique_tags<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut tags: Vec<String> = Vec::new();
    for name in names {
        let mut base: String = name
            .chars()
            .map(|c| {
                if c == ',' || c.is_whitespace() {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        if base.is_empty() {
            base = "untitled".into();
        }
        let mut tag = base.clone();
        let mut n = 1;
        while tags.contains(&tag) {
            n += 1;
            tag = format!("{base}-{n}");
        }
        tags.push(tag);
    }
    tags
}

/// `2026-11-22T10:00:00Z`, with optional fractional seconds and a `Z` or `±HH:MM` offset, as a
/// time; `None` when it is not such a date at or after 1970.
fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    let digits = |from: usize, len: usize| -> Option<u32> {
        let part = b.get(from..from + len)?;
        part.iter().all(u8::is_ascii_digit).then(|| {
            part.iter()
                .fold(0u32, |acc, &d| acc * 10 + u32::from(d - b'0'))
        })
    };
    let punct = |at: usize, allowed: &[u8]| b.get(at).is_some_and(|c| allowed.contains(c));
    if !(punct(4, b"-")
        && punct(7, b"-")
        && punct(10, b"Tt ")
        && punct(13, b":")
        && punct(16, b":"))
    {
        return None;
    }
    let (year, month, day) = (digits(0, 4)?, digits(5, 2)?, digits(8, 2)?);
    let (hour, minute, second) = (digits(11, 2)?, digits(14, 2)?, digits(17, 2)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if year < 1970
        || !(1..=12).contains(&month)
        || day == 0
        || day > month_days[month as usize - 1]
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut at = 19;
    let mut nanos = 0u32;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let from = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        if at == from {
            return None;
        }
        // Nanosecond resolution; further digits are dropped.
        for i in 0..9 {
            let d = if from + i < at { b[from + i] - b'0' } else { 0 };
            nanos = nanos * 10 + u32::from(d);
        }
    }
    let offset_s: i64 = match b.get(at..)? {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (h, m) = (i64::from(digits(at + 1, 2)?), i64::from(digits(at + 4, 2)?));
            if h > 23 || m > 59 {
                return None;
            }
            let offset = h * 3600 + m * 60;
            if *sign == b'+' {
                offset
            } else {
                -offset
            }
        }
        _ => return None,
    };
    let days = days_from_civil(i64::from(year), month, day);
    let local = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second);
    let utc = u64::try_from(local - offset_s).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::new(utc, nanos))
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y.rem_euclid(400);
    let month_from_march = i64::from((month + 9) % 12);
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests;
