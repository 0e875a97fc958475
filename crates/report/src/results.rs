//! Results files: everything a run recorded, interval by interval, written as the run goes and
//! read back later to report, merge, compare or plot.
//!
//! The file is JSON Lines. The first line is the header (`{"header": …}`: format, version,
//! run name, interval, and the run information); then one `{"interval": …}` line per record,
//! flushed as soon as the record is complete, so a process killed with SIGKILL loses at most
//! the record in progress; last, an `{"end": …}` line. Each record carries its first interval
//! (`index`), its start and length (`offset_s`, `width_s`), its counters and its latency,
//! uncorrected-latency and lag histograms in HdrHistogram's V2 compressed encoding, base64
//! (the form HdrHistogram interval logs use), so every value survives: merging files gives
//! exactly the percentiles one recorder would have given.
//!
//! A record covers one interval, except in long costly runs: past the first minute, when a
//! record costs more bytes than [`BUDGET_BYTES_PER_HOUR`] allows for its span, records
//! double in width, on a grid aligned with the start of the run ([`Coarsening`] holds the
//! rule). Totals and whole-run percentiles stay exact; only the series gets coarser.

use std::io::{self, BufRead, Write};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use belier_stats::{Counters, Gauges, Metric, Point, Recorder, Series, Settled};
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::{HostUsage, RunInfo};

mod coarsening;
pub use coarsening::{Coarsening, BUDGET_BYTES_PER_HOUR, FULL_RESOLUTION};

/// Value of the header's `format` field.
pub const FORMAT: &str = "belier-results";
/// Version of the file layout this build writes. Version 2 added each record's `offset_s` and
/// `width_s` (records may span several intervals); version 1 files still read.
pub const VERSION: u32 = 2;
/// Oldest layout version this build reads.
pub const OLDEST_VERSION: u32 = 1;

/// The first line of a results file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// Layout version, [`VERSION`].
    pub version: u32,
    /// Run name: files with the same name are shards of one run and merge.
    pub name: String,
    /// Interval length, seconds.
    pub interval_s: f64,
    /// How the results were obtained.
    pub run: RunInfo,
}

/// The last line of a complete results file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct End {
    /// Length of the run, seconds.
    pub elapsed_s: f64,
    /// The run was stopped early by the user.
    pub interrupted: bool,
    /// Warnings the report showed.
    pub warnings: Vec<String>,
    /// What belier used of its machine.
    pub host: Option<HostUsage>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Line {
    Header(Header),
    Interval(IntervalLine),
    End(End),
}

/// One record: what was recorded over one interval or, in a coarsened stretch of a long run,
/// over several (see [`Coarsening`]).
#[derive(Serialize, Deserialize)]
struct IntervalLine {
    /// First interval the record covers.
    index: u64,
    /// Start of the record from the start of the run, seconds: `index` × the interval.
    /// Absent in version 1 files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    offset_s: Option<f64>,
    /// Length of the record, seconds: a whole number of intervals. Absent in version 1
    /// files, whose records are all one interval long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    width_s: Option<f64>,
    in_flight: u64,
    cpu: f64,
    #[serde(default)]
    connections_peak: u64,
    counters: Counters,
    latency: String,
    uncorrected: String,
    lag: String,
    /// Connection and response phases (connect, tls, ttfb, transfer), when not empty.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    phases: std::collections::BTreeMap<String, String>,
    /// Scripted users: each step's latency histogram, by step number (the steps' counters,
    /// the checks and the iterations are in `counters`). Absent for single-request runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    steps_latency: Vec<String>,
}

/// Histograms written under `phases`, only when they hold values.
const PHASES: [Metric; 4] = [Metric::Connect, Metric::Tls, Metric::Ttfb, Metric::Transfer];

/// Writes a results file as the run goes.
///
/// Intervals come in one at a time; each record holds one interval or, once the run is
/// long and records cost more than the size budget, several (see [`Coarsening`]). A record
/// is written and flushed as soon as its last interval is in, so a killed run loses at most
/// the record in progress.
pub struct ResultsWriter<W: Write> {
    out: W,
    encoder: Encoder,
    line: Vec<u8>,
    interval: Duration,
    coarsening: Coarsening,
    /// The record being filled, when it spans more than the intervals written so far.
    pending: Option<Pending>,
    /// What the pending record recorded; kept between records to reuse its allocations.
    recorder: Recorder,
}

/// A record waiting for the rest of its intervals.
struct Pending {
    start: u64,
    width: u64,
    last: u64,
    gauges: Gauges,
}

impl<W: Write> ResultsWriter<W> {
    /// Writes the header and flushes it; records coarsen by the default rule
    /// ([`Coarsening::new`]).
    pub fn new(out: W, header: &Header) -> io::Result<Self> {
        let interval = Duration::from_secs_f64(header.interval_s);
        Self::with_coarsening(out, header, Coarsening::new(interval))
    }

    /// Writes the header and flushes it; records coarsen by `coarsening`.
    pub fn with_coarsening(
        mut out: W,
        header: &Header,
        coarsening: Coarsening,
    ) -> io::Result<Self> {
        let mut line = Vec::with_capacity(4096);
        write_line(&mut out, &mut line, &Line::Header(header.clone()))?;
        let interval = Duration::from_secs_f64(header.interval_s);
        Ok(ResultsWriter {
            out,
            encoder: Encoder::default(),
            line,
            interval,
            coarsening,
            pending: None,
            recorder: Recorder::new(),
        })
    }

    /// Adds one settled interval; writes and flushes the record it completes, if any.
    /// Intervals must come in index order.
    pub fn interval(&mut self, s: &Settled) -> io::Result<()> {
        if let Some(p) = &self.pending {
            if s.index >= p.start + p.width {
                self.flush_pending(None)?;
            }
        }
        match &mut self.pending {
            Some(p) => {
                self.recorder += &s.recorder;
                p.gauges = over_time(p.gauges, s.gauges);
                p.last = s.index;
            }
            None => {
                let (start, width) = self.coarsening.record_for(s.index);
                if s.index + 1 == start + width {
                    // A record of this interval alone (or the last of a record whose others
                    // never came): written from the interval itself, without a copy.
                    let bytes = write_record(
                        &mut self.out,
                        &mut self.encoder,
                        &mut self.line,
                        self.interval,
                        start,
                        width,
                        &s.recorder,
                        s.gauges,
                    )?;
                    self.coarsening.recorded(start + width, width, bytes);
                    return Ok(());
                }
                self.recorder.reset();
                self.recorder += &s.recorder;
                self.pending = Some(Pending {
                    start,
                    width,
                    last: s.index,
                    gauges: s.gauges,
                });
            }
        }
        if self
            .pending
            .as_ref()
            .is_some_and(|p| p.last + 1 == p.start + p.width)
        {
            self.flush_pending(None)?;
        }
        Ok(())
    }

    /// Writes the pending record, if any: whole, or cut at `end` (exclusive) when the run
    /// ended inside it.
    fn flush_pending(&mut self, end: Option<u64>) -> io::Result<()> {
        let Some(p) = self.pending.take() else {
            return Ok(());
        };
        let width = end.map_or(p.width, |e| {
            e.clamp(p.start + 1, p.start + p.width) - p.start
        });
        let bytes = write_record(
            &mut self.out,
            &mut self.encoder,
            &mut self.line,
            self.interval,
            p.start,
            width,
            &self.recorder,
            p.gauges,
        )?;
        self.coarsening.recorded(p.start + width, width, bytes);
        Ok(())
    }

    /// Writes the record in progress (cut after its last interval), then the end line, and
    /// flushes.
    pub fn end(mut self, end: &End) -> io::Result<()> {
        let last = self.pending.as_ref().map(|p| p.last + 1);
        self.flush_pending(last)?;
        write_line(&mut self.out, &mut self.line, &Line::End(end.clone()))
    }
}

/// Encodes histograms (V2 compressed, base64), reusing its buffers.
#[derive(Default)]
struct Encoder {
    serializer: V2DeflateSerializer,
    buf: Vec<u8>,
}

impl Encoder {
    /// Every step's latency histogram, by step number, encoded like the others.
    fn encode_steps(&mut self, r: &Recorder) -> io::Result<Vec<String>> {
        r.steps()
            .iter()
            .map(|row| self.encode(row.latency_us()))
            .collect()
    }

    fn encode(&mut self, h: &Histogram<u64>) -> io::Result<String> {
        self.buf.clear();
        self.serializer
            .serialize(h, &mut self.buf)
            .map_err(|e| io::Error::other(format!("cannot encode a histogram: {e:?}")))?;
        Ok(BASE64.encode(&self.buf))
    }
}

/// Writes one record of `width` intervals from interval `start`; returns its size in bytes.
#[allow(clippy::too_many_arguments)]
fn write_record<W: Write>(
    out: &mut W,
    encoder: &mut Encoder,
    line: &mut Vec<u8>,
    interval: Duration,
    start: u64,
    width: u64,
    recorder: &Recorder,
    gauges: Gauges,
) -> io::Result<usize> {
    let latency = encoder.encode(recorder.histogram(Metric::Latency))?;
    let uncorrected = encoder.encode(recorder.histogram(Metric::Uncorrected))?;
    let lag = encoder.encode(recorder.histogram(Metric::Lag))?;
    let mut phases = std::collections::BTreeMap::new();
    for m in PHASES {
        let h = recorder.histogram(m);
        if !h.is_empty() {
            phases.insert(m.name().to_string(), encoder.encode(h)?);
        }
    }
    let record = Line::Interval(IntervalLine {
        index: start,
        offset_s: Some(interval.as_secs_f64() * start as f64),
        width_s: Some(interval.as_secs_f64() * width as f64),
        in_flight: gauges.in_flight,
        cpu: gauges.cpu,
        connections_peak: gauges.connections_peak,
        counters: recorder.counters(),
        latency,
        uncorrected,
        lag,
        phases,
        steps_latency: encoder.encode_steps(recorder)?,
    });
    write_line(out, line, &record)?;
    Ok(line.len())
}

/// Gauges of consecutive intervals of one writer as one record: the peaks, as the live
/// series keeps them when it merges points.
fn over_time(a: Gauges, b: Gauges) -> Gauges {
    Gauges {
        in_flight: a.in_flight.max(b.in_flight),
        cpu: a.cpu.max(b.cpu),
        connections_peak: a.connections_peak.max(b.connections_peak),
    }
}

/// Serializes `line` into `buf` (reused), writes it with its newline and flushes.
fn write_line<W: Write>(out: &mut W, buf: &mut Vec<u8>, line: &Line) -> io::Result<()> {
    buf.clear();
    serde_json::to_writer(&mut *buf, line)?;
    buf.push(b'\n');
    out.write_all(buf)?;
    out.flush()
}

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
            let n = input
                .read_until(b'\n', &mut buf)
                .map_err(|e| ResultsError(format!("{source}: cannot read: {e}")))?;
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
                    if !(h.interval_s.is_finite() && h.interval_s > 0.0) {
                        return Err(fail("interval_s must be positive".into()));
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
            let n = self
                .input
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| ResultsError(format!("{}: cannot read: {e}", self.source)))?;
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
                Line::End(e) => self.end = Some(e),
                Line::Interval(l) => {
                    let interval_s = self.header.interval_s;
                    let intervals = match l.width_s {
                        None => 1,
                        Some(w) => whole_intervals(w, interval_s).ok_or_else(|| {
                            fail(format!(
                                "width_s {w} is not a whole number of {interval_s} s intervals"
                            ))
                        })?,
                    };
                    if let Some(o) = l.offset_s {
                        let expected = l.index as f64 * interval_s;
                        if (o - expected).abs() > 1e-6 * expected.max(1.0) {
                            return Err(fail(format!(
                                "offset_s {o} is not interval {} × {interval_s} s",
                                l.index
                            )));
                        }
                    }
                    if l.index < self.next_index {
                        return Err(fail(format!(
                            "the record at interval {} starts before the previous one ends (interval {})",
                            l.index, self.next_index
                        )));
                    }
                    self.next_index = l.index.saturating_add(intervals);
                    let mut recorder =
                        Recorder::from_counters(&l.counters).map_err(|e| fail(e.to_string()))?;
                    let mut stored = vec![
                        (Metric::Latency, &l.latency),
                        (Metric::Uncorrected, &l.uncorrected),
                        (Metric::Lag, &l.lag),
                    ];
                    for (name, encoded) in &l.phases {
                        let metric = Metric::from_name(name)
                            .filter(|m| PHASES.contains(m))
                            .ok_or_else(|| fail(format!("unknown phase '{name}'")))?;
                        stored.push((metric, encoded));
                    }
                    for (metric, encoded) in stored {
                        let bytes = BASE64.decode(encoded).map_err(|e| {
                            fail(format!("{} histogram is not base64: {e}", metric.name()))
                        })?;
                        let hist: Histogram<u64> = self
                            .deserializer
                            .deserialize(&mut bytes.as_slice())
                            .map_err(|e| {
                                fail(format!(
                                    "{} histogram cannot be decoded: {e:?}",
                                    metric.name()
                                ))
                            })?;
                        recorder
                            .add_histogram(metric, &hist)
                            .map_err(|e| fail(e.to_string()))?;
                    }
                    restore_steps(&mut self.deserializer, &mut recorder, &l.steps_latency)
                        .map_err(fail)?;
                    let interval = Duration::from_secs_f64(interval_s);
                    return Ok(Some(Record {
                        index: l.index,
                        intervals,
                        offset: intervals_to_time(interval, l.index),
                        width: intervals_to_time(interval, intervals),
                        recorder,
                        gauges: Gauges {
                            in_flight: l.in_flight,
                            cpu: l.cpu,
                            connections_peak: l.connections_peak,
                        },
                    }));
                }
            }
        }
        Ok(None)
    }
}

/// Adds the stored step latency histograms to `recorder`, whose step counters are restored.
fn restore_steps(
    deserializer: &mut Deserializer,
    recorder: &mut Recorder,
    encoded: &[String],
) -> Result<(), String> {
    for (step, encoded) in encoded.iter().enumerate() {
        let bytes = BASE64
            .decode(encoded)
            .map_err(|e| format!("step {step} histogram is not base64: {e}"))?;
        let hist: Histogram<u64> = deserializer
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("step {step} histogram cannot be decoded: {e:?}"))?;
        recorder
            .add_step_histogram(step, &hist)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// One interval's latency histogram, kept encoded for an HdrHistogram interval log.
#[derive(Clone, Debug)]
pub struct LoggedInterval {
    /// Start from the start of the run.
    pub offset: Duration,
    /// Length.
    pub width: Duration,
    /// Largest latency in it, µs.
    pub max_us: u64,
    /// V2 compressed encoding, base64.
    pub encoded: String,
}

/// A run read back from its results files: shards merged, summarised over a time window.
#[derive(Debug)]
pub struct Run {
    /// The header; for merged shards, the run information sums what the shards shared out.
    pub header: Header,
    /// The end line (merged), absent when a run was killed before writing it.
    pub end: Option<End>,
    /// What the readers had to tolerate (truncated last lines, missing ends).
    pub notes: Vec<String>,
    /// Everything recorded in the chosen records.
    pub totals: Recorder,
    /// One point per chosen span (a record, or records of several shards merged).
    pub series: Series,
    /// Time the chosen records cover.
    pub elapsed: Duration,
    /// The chosen spans' latency histograms, when asked for.
    pub latency_log: Vec<LoggedInterval>,
}

/// Records of all shards that overlap in time, merged: one point of the series.
struct Span {
    /// First interval.
    start: u64,
    /// First interval after it.
    end: u64,
    recorder: Recorder,
    /// Per shard, the peaks of its gauges over the span; shards then combine.
    gauges: Vec<Option<Gauges>>,
}

/// Reads the shards of one run together, record by record in time order, and merges records
/// that overlap in time into one span: each span is one point of the series, and the totals
/// are every chosen span merged, so they are exact whatever the records' widths.
///
/// Records written one interval each (old files, the start of every run) make one span per
/// interval, all shards summed. Coarsened records are aligned on their width (see
/// [`Coarsening`]), so records of shards that coarsened at different moments nest, and a span
/// is the widest record among them, holding the narrower ones of the other shards.
///
/// The window keeps the spans that overlap `[from, to)`, whole: a span that starts before
/// `from` or ends after `to` is kept with everything it holds, and the elapsed time is the
/// time the kept spans cover, so rates stay right. On a coarsened stretch the report may thus
/// cover up to one record more than the window on each side.
///
/// Memory holds one record per shard and the span being merged, whatever the run's length.
pub fn read_run(
    mut shards: Vec<Reader>,
    from: Option<Duration>,
    to: Option<Duration>,
    keep_latency_log: bool,
) -> Result<Run, ResultsError> {
    let mut header = shards
        .first()
        .map(|r| r.header.clone())
        .ok_or_else(|| ResultsError("no results file".into()))?;
    for other in &shards[1..] {
        if other.header.interval_s != header.interval_s {
            return Err(ResultsError(format!(
                "cannot merge '{}': intervals of {} s and {} s",
                header.name, header.interval_s, other.header.interval_s
            )));
        }
        merge_info(&mut header.run, &other.header.run);
    }
    let interval = Duration::from_secs_f64(header.interval_s);
    let at = |index: u64| intervals_to_time(interval, index);
    let in_window = |span: &Span| {
        from.is_none_or(|f| at(span.end) > f) && to.is_none_or(|t| at(span.start) < t)
    };

    let mut next: Vec<Option<Record>> = Vec::with_capacity(shards.len());
    for shard in shards.iter_mut() {
        next.push(shard.next_record()?);
    }
    let mut totals = Recorder::new();
    let mut series = Series::new();
    let mut latency_log = Vec::new();
    let mut encoder = Encoder::default();
    let (mut first, mut last) = (None::<u64>, None::<(u64, u64)>);
    let mut span: Option<Span> = None;
    let mut take = |s: Span| -> Result<(), ResultsError> {
        if !in_window(&s) {
            return Ok(());
        }
        let gauges = s
            .gauges
            .iter()
            .flatten()
            .copied()
            .reduce(Gauges::combine)
            .unwrap_or_default();
        let (offset, width) = (at(s.start), at(s.end) - at(s.start));
        first.get_or_insert(s.start);
        last = Some((s.start, s.end));
        series.push(Point::of(&s.recorder, gauges, offset, width));
        totals += &s.recorder;
        if keep_latency_log {
            let h = s.recorder.histogram(Metric::Latency);
            latency_log.push(LoggedInterval {
                offset,
                width,
                max_us: if h.is_empty() { 0 } else { h.max() },
                encoded: encoder.encode(h).map_err(|e| ResultsError(e.to_string()))?,
            });
        }
        Ok(())
    };
    // Always the shard whose next record starts first, so shards advance together and a span
    // is complete once the next record starts at or after its end.
    while let Some(i) = (0..next.len())
        .filter(|&i| next[i].is_some())
        .min_by_key(|&i| next[i].as_ref().map(|r| r.index))
    {
        let r = next[i].take().expect("chosen because present");
        next[i] = shards[i].next_record()?;
        let r_end = r.index.saturating_add(r.intervals);
        match &mut span {
            Some(s) if r.index < s.end => {
                s.end = s.end.max(r_end);
                s.recorder += &r.recorder;
                let g = &mut s.gauges[i];
                *g = Some(g.map_or(r.gauges, |g| over_time(g, r.gauges)));
            }
            _ => {
                let mut gauges = vec![None; next.len()];
                gauges[i] = Some(r.gauges);
                let started = Span {
                    start: r.index,
                    end: r_end,
                    recorder: r.recorder,
                    gauges,
                };
                if let Some(done) = span.replace(started) {
                    take(done)?;
                }
            }
        }
    }
    if let Some(done) = span.take() {
        take(done)?;
    }

    let mut end: Option<End> = None;
    let mut notes = Vec::new();
    for shard in shards {
        notes.extend(shard.notes);
        end = match (end, shard.end) {
            (Some(x), Some(y)) => Some(merge_end(x, y)),
            (x, y) => x.or(y),
        };
    }
    // The run ends where its end line says, or with the last record written.
    let last = last.map(|(s, e)| (at(s), at(e)));
    let run_end = match &end {
        Some(e) => Duration::from_secs_f64(e.elapsed_s),
        None => last.map_or(Duration::ZERO, |(_, e)| e),
    };
    let start = first.map(at).unwrap_or_default();
    let stop = last.map_or(start, |(s, e)| e.min(run_end.max(s)));
    if let Some(logged) = latency_log.last_mut() {
        logged.width = stop.saturating_sub(logged.offset);
    }
    series.end_at(stop);
    Ok(Run {
        header,
        end,
        notes,
        totals,
        series,
        elapsed: stop.saturating_sub(start),
        latency_log,
    })
}

/// `n` intervals, exactly (no floating point, so shards agree on every boundary).
fn intervals_to_time(interval: Duration, n: u64) -> Duration {
    let nanos = interval.as_nanos().saturating_mul(u128::from(n));
    let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX);
    Duration::new(secs, (nanos % 1_000_000_000) as u32)
}

/// `width_s` as a number of `interval_s` intervals, if it is a positive whole number of them.
fn whole_intervals(width_s: f64, interval_s: f64) -> Option<u64> {
    let n = (width_s / interval_s).round();
    let whole =
        n >= 1.0 && n < u64::MAX as f64 && (n * interval_s - width_s).abs() <= 1e-6 * width_s;
    whole.then_some(n as u64)
}

/// Adds a shard's run information to the merged one.
fn merge_info(a: &mut RunInfo, b: &RunInfo) {
    a.connections += b.connections;
    a.threads += b.threads;
    a.host_cores += b.host_cores;
    a.shards += b.shards;
    a.requests = sum(a.requests, b.requests);
    a.rate = a.rate.zip(b.rate).map(|(x, y)| x + y);
    a.max_connections = sum(a.max_connections, b.max_connections);
    a.max_in_flight = sum(a.max_in_flight, b.max_in_flight);
    a.virtual_users = sum(a.virtual_users, b.virtual_users);
    if a.stages.len() == b.stages.len() {
        for (x, y) in a.stages.iter_mut().zip(&b.stages) {
            x.target += y.target;
        }
    }
    if b.started_at < a.started_at {
        a.started_at.clone_from(&b.started_at);
    }
}

fn merge_end(x: End, y: End) -> End {
    End {
        elapsed_s: x.elapsed_s.max(y.elapsed_s),
        interrupted: x.interrupted || y.interrupted,
        warnings: x.warnings.into_iter().chain(y.warnings).collect(),
        host: match (x.host, y.host) {
            (Some(p), Some(q)) => Some(HostUsage {
                open_fds_peak: p.open_fds_peak.max(q.open_fds_peak),
                fd_limit: p.fd_limit.min(q.fd_limit),
                ephemeral_ports_peak: p.ephemeral_ports_peak.max(q.ephemeral_ports_peak),
                ephemeral_ports_total: p.ephemeral_ports_total.min(q.ephemeral_ports_total),
            }),
            (p, q) => p.or(q),
        },
    }
}

fn sum<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
    a.zip(b).map(|(x, y)| x + y)
}

#[cfg(test)]
mod tests;
