//! Reading a results file back, one record at a time.

use std::io::{BufRead, Read as _};
use std::time::Duration;

use belier_stats::{Gauges, Recorder};
use hdrhistogram::serialization::Deserializer;

use crate::change::Change;
use crate::coarsening::intervals_to_time;
use crate::line::{End, Header, IntervalLine, Line, FORMAT, OLDEST_VERSION, VERSION};

/// Why a results file cannot be read; the message names the source and line.
#[derive(Debug)]
pub struct ResultsError(pub String);

impl std::fmt::Display for ResultsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ResultsError {}

/// One record read back: what was recorded over `width` from `offset`, one interval or, in a
/// coarsened stretch of a run, several.
#[derive(Clone, Debug)]
pub struct Record {
    /// First interval it covers.
    pub index: u64,
    /// Intervals it covers (1 unless the writer coarsened).
    pub intervals: u64,
    /// Start from the start of the run.
    pub offset: Duration,
    /// Length: `intervals` × the interval.
    pub width: Duration,
    /// Everything recorded in it.
    pub recorder: Recorder,
    /// The gauges: peaks over its intervals.
    pub gauges: Gauges,
}

/// Reads a results file line by line: the header at once, then one record at a time, so
/// reading an hour-long run holds one record in memory, not 3,600.
pub struct Reader {
    input: Box<dyn BufRead>,
    source: String,
    line: usize,
    header: Header,
    /// First interval after the records read so far: records must not go back in time.
    next_index: u64,
    /// The end line, once read.
    pub end: Option<End>,
    /// What the reader had to tolerate so far.
    pub notes: Vec<String>,
    /// The changes made to the run, as read so far (all of them once the records are read).
    pub changes: Vec<Change>,
    exhausted: bool,
    deserializer: Deserializer,
    buf: Vec<u8>,
}

impl Reader {
    /// Opens a results file and reads its header; `source` names it in messages (a path,
    /// or `-` for standard input).
    pub fn open(mut input: Box<dyn BufRead>, source: &str) -> Result<Reader, ResultsError> {
        let mut buf = Vec::new();
        let mut line = 0;
        let header = loop {
            buf.clear();
            let n = read_line(&mut input, &mut buf)
                .map_err(|e| ResultsError(format!("{source}:{}: {e}", line + 1)))?;
            if n == 0 {
                return Err(ResultsError(format!(
                    "{source}: empty, not a belier results file"
                )));
            }
            line += 1;
            if buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let fail = |what: String| ResultsError(format!("{source}:{line}: {what}"));
            match serde_json::from_slice::<Line>(&buf) {
                Ok(Line::Header(h)) => {
                    if h.format != FORMAT {
                        return Err(fail(format!("format '{}' is not {FORMAT}", h.format)));
                    }
                    if !(OLDEST_VERSION..=VERSION).contains(&h.version) {
                        return Err(fail(format!(
                            "version {} is not supported (this belier reads {OLDEST_VERSION} to {VERSION})",
                            h.version
                        )));
                    }
                    if seconds(h.interval_s).is_none_or(|d| d.is_zero()) {
                        return Err(fail(format!(
                            "interval_s {} is not a positive number of seconds",
                            h.interval_s
                        )));
                    }
                    break h;
                }
                Ok(_) => return Err(fail("the first line must be the header".into())),
                Err(e) => return Err(fail(format!("not a belier results file: {e}"))),
            }
        };
        Ok(Reader {
            input,
            source: source.to_string(),
            line,
            header,
            next_index: 0,
            end: None,
            notes: Vec::new(),
            changes: Vec::new(),
            exhausted: false,
            deserializer: Deserializer::new(),
            buf,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The next record, or `None` at the end of the file. A last line cut short (the writer
    /// was killed while writing it) ends the file with a note; anything else that is not a
    /// results line, or a record that starts before the previous one ends, is an error naming
    /// the line.
    pub fn next_record(&mut self) -> Result<Option<Record>, ResultsError> {
        while !self.exhausted {
            self.buf.clear();
            let n = read_line(&mut self.input, &mut self.buf)
                .map_err(|e| ResultsError(format!("{}:{}: {e}", self.source, self.line + 1)))?;
            if n == 0 {
                self.exhausted = true;
                if self.end.is_none() {
                    self.notes.push(format!(
                        "{}: no end line (the run was killed); the report covers the intervals written",
                        self.source
                    ));
                }
                break;
            }
            self.line += 1;
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let complete = self.buf.last() == Some(&b'\n');
            let (source, number) = (self.source.clone(), self.line);
            let fail = |what: String| ResultsError(format!("{source}:{number}: {what}"));
            let line: Line = match serde_json::from_slice(&self.buf) {
                Ok(line) => line,
                Err(_) if !complete => {
                    self.notes.push(format!(
                        "{source}:{number}: truncated last line ignored (the run was stopped while writing it)"
                    ));
                    continue;
                }
                Err(e) => return Err(fail(format!("not a belier results line: {e}"))),
            };
            match line {
                Line::Header(_) => return Err(fail("a second header".into())),
                Line::End(e) if seconds(e.elapsed_s).is_none() => {
                    return Err(fail(format!(
                        "elapsed_s {} is not a number of seconds",
                        e.elapsed_s
                    )))
                }
                Line::End(e) => self.end = Some(e),
                Line::Change(c) if seconds(c.at_s).is_none() => {
                    return Err(fail(format!("at_s {} is not a number of seconds", c.at_s)))
                }
                Line::Change(c) => self.changes.push(c),
                Line::Interval(l) => return self.record(l).map(Some).map_err(fail),
            }
        }
        Ok(None)
    }

    /// The record an interval line holds, checked against the header's interval and the
    /// records before it; what is wrong with it, in words, otherwise.
    fn record(&mut self, l: IntervalLine) -> Result<Record, String> {
        let interval_s = self.header.interval_s;
        let intervals = match l.width_s {
            None => 1,
            Some(w) => whole_intervals(w, interval_s).ok_or_else(|| {
                format!("width_s {w} is not a whole number of {interval_s} s intervals")
            })?,
        };
        if let Some(o) = l.offset_s {
            let expected = l.index as f64 * interval_s;
            if (o - expected).abs() > 1e-6 * expected.max(1.0) {
                return Err(format!(
                    "offset_s {o} is not interval {} × {interval_s} s",
                    l.index
                ));
            }
        }
        if l.index < self.next_index {
            return Err(format!(
                "the record at interval {} starts before the previous one ends (interval {})",
                l.index, self.next_index
            ));
        }
        self.next_index = l.index.saturating_add(intervals);
        let recorder = l.stored.restore(&mut self.deserializer)?;
        let interval = Duration::from_secs_f64(interval_s);
        Ok(Record {
            index: l.index,
            intervals,
            offset: intervals_to_time(interval, l.index),
            width: intervals_to_time(interval, intervals),
            recorder,
            gauges: Gauges {
                in_flight: l.in_flight,
                cpu: l.cpu,
                connections_peak: l.connections_peak,
                held: l.held,
            },
        })
    }
}

/// Longest line a results file may have. A record of a run at full resolution takes a few
/// kilobytes, one of a plan of [`belier_stats::MOST_ROWS`] steps a few megabytes; a line is
/// held whole while it is parsed, so a file of one endless line must not be read to its end.
pub const MOST_LINE_BYTES: usize = 64 << 20;

/// The next line of `input` into `buf` (appended, with its newline when it has one); its
/// length, 0 at the end. An error, in words, when it cannot be read or is longer than
/// [`MOST_LINE_BYTES`].
fn read_line(input: &mut dyn BufRead, buf: &mut Vec<u8>) -> Result<usize, String> {
    let n = input
        .take(MOST_LINE_BYTES as u64 + 1)
        .read_until(b'\n', buf)
        .map_err(|e| format!("cannot read: {e}"))?;
    if n > MOST_LINE_BYTES {
        return Err(format!(
            "line longer than {} MiB, more than any belier writes",
            MOST_LINE_BYTES >> 20
        ));
    }
    Ok(n)
}

/// `secs` as a duration, if it is one: finite, not negative, and not past `Duration::MAX`
/// (converting those panics).
fn seconds(secs: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(secs).ok()
}

/// `width_s` as a number of `interval_s` intervals, if it is a positive whole number of them.
fn whole_intervals(width_s: f64, interval_s: f64) -> Option<u64> {
    let n = (width_s / interval_s).round();
    let whole =
        n >= 1.0 && n < u64::MAX as f64 && (n * interval_s - width_s).abs() <= 1e-6 * width_s;
    whole.then_some(n as u64)
}
