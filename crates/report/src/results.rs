//! Results files: everything a run recorded, interval by interval, written as the run goes and
//! read back later to report, merge, compare or plot.
//!
//! The file is JSON Lines. The first line is the header (`{"header": …}`: format, version,
//! run name, interval, and the run information); then one `{"interval": …}` line per
//! interval, flushed as soon as the interval is complete, so a process killed with SIGKILL
//! loses at most the interval in progress; last, an `{"end": …}` line. Each interval carries
//! its counters and its latency, uncorrected-latency and lag histograms in HdrHistogram's V2
//! compressed encoding, base64 (the form HdrHistogram interval logs use), so every value
//! survives: merging files gives exactly the percentiles one recorder would have given.

use std::io::{self, BufRead, Write};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use belier_stats::{Collector, Counters, Gauges, Metric, Recorder, Series, Settled};
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::{HostUsage, RunInfo};

/// Value of the header's `format` field.
pub const FORMAT: &str = "belier-results";
/// Version of the file layout this build writes and reads.
pub const VERSION: u32 = 1;

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

#[derive(Serialize, Deserialize)]
struct IntervalLine {
    index: u64,
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
pub struct ResultsWriter<W: Write> {
    out: W,
    serializer: V2DeflateSerializer,
    buf: Vec<u8>,
}

impl<W: Write> ResultsWriter<W> {
    /// Writes the header and flushes it.
    pub fn new(mut out: W, header: &Header) -> io::Result<Self> {
        write_line(&mut out, &Line::Header(header.clone()))?;
        Ok(ResultsWriter {
            out,
            serializer: V2DeflateSerializer::new(),
            buf: Vec::with_capacity(4096),
        })
    }

    /// Writes one settled interval and flushes it.
    pub fn interval(&mut self, s: &Settled) -> io::Result<()> {
        let latency = self.encode(s.recorder.histogram(Metric::Latency))?;
        let uncorrected = self.encode(s.recorder.histogram(Metric::Uncorrected))?;
        let lag = self.encode(s.recorder.histogram(Metric::Lag))?;
        let mut phases = std::collections::BTreeMap::new();
        for m in PHASES {
            let h = s.recorder.histogram(m);
            if !h.is_empty() {
                phases.insert(m.name().to_string(), self.encode(h)?);
            }
        }
        let line = Line::Interval(IntervalLine {
            index: s.index,
            in_flight: s.gauges.in_flight,
            cpu: s.gauges.cpu,
            connections_peak: s.gauges.connections_peak,
            counters: s.recorder.counters(),
            latency,
            uncorrected,
            lag,
            phases,
            steps_latency: self.encode_steps(&s.recorder)?,
        });
        write_line(&mut self.out, &line)
    }

    /// Writes the end line and flushes it.
    pub fn end(mut self, end: &End) -> io::Result<()> {
        write_line(&mut self.out, &Line::End(end.clone()))
    }

    /// Every step's latency histogram, encoded like the others.
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

fn write_line<W: Write>(out: &mut W, line: &Line) -> io::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")?;
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

/// Reads a results file line by line: the header at once, then one interval at a time, so
/// reading an hour-long run holds one interval in memory, not 3,600.
pub struct Reader {
    input: Box<dyn BufRead>,
    source: String,
    line: usize,
    header: Header,
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
                    if h.version != VERSION {
                        return Err(fail(format!(
                            "version {} is not supported (this belier reads {VERSION})",
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

    /// The next interval, or `None` at the end of the file. A last line cut short (the
    /// writer was killed while writing it) ends the file with a note; anything else that is
    /// not a results line is an error naming the line.
    pub fn next_interval(&mut self) -> Result<Option<Settled>, ResultsError> {
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
                    let interval = Duration::from_secs_f64(self.header.interval_s);
                    return Ok(Some(Settled {
                        index: l.index,
                        offset: interval * u32::try_from(l.index).unwrap_or(u32::MAX),
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
    /// Everything recorded in the chosen intervals.
    pub totals: Recorder,
    /// One point per chosen interval.
    pub series: Series,
    /// Time the chosen intervals cover.
    pub elapsed: Duration,
    /// The chosen intervals' latency histograms, when asked for.
    pub latency_log: Vec<LoggedInterval>,
}

/// Reads the shards of one run together, interval by interval in index order, merging
/// intervals with the same index exactly and keeping those starting in `[from, to)`.
/// Memory holds only intervals some shard has not reached yet, whatever the run's length.
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
    let in_window =
        |offset: Duration| from.is_none_or(|f| offset >= f) && to.is_none_or(|t| offset < t);

    let mut collector = Collector::new(shards.len(), interval);
    collector.keep_settled();
    let mut next: Vec<Option<Settled>> = Vec::with_capacity(shards.len());
    for shard in shards.iter_mut() {
        next.push(shard.next_interval()?);
    }
    let mut latency_log = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut encoded = Vec::new();
    let (mut first, mut last) = (None::<Duration>, None::<Duration>);
    // Always the shard whose next interval comes first, so shards advance together.
    while let Some(i) = (0..next.len())
        .filter(|&i| next[i].is_some())
        .min_by_key(|&i| next[i].as_ref().map(|s| s.index))
    {
        let s = next[i].take().expect("chosen because present");
        if in_window(s.offset) {
            first = Some(first.map_or(s.offset, |f| f.min(s.offset)));
            last = Some(last.map_or(s.offset, |l| l.max(s.offset)));
            collector.add(i, s.index, &s.recorder, s.gauges);
        } else {
            collector.skip(i, s.index);
        }
        next[i] = shards[i].next_interval()?;
        if next[i].is_none() {
            collector.finish_worker(i, Duration::ZERO);
        }
        for settled in collector.drain_settled() {
            if keep_latency_log {
                let h = settled.recorder.histogram(Metric::Latency);
                encoded.clear();
                serializer
                    .serialize(h, &mut encoded)
                    .map_err(|e| ResultsError(format!("cannot encode a histogram: {e:?}")))?;
                latency_log.push(LoggedInterval {
                    offset: settled.offset,
                    width: interval,
                    max_us: if h.is_empty() { 0 } else { h.max() },
                    encoded: BASE64.encode(&encoded),
                });
            }
        }
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
    // The run ends where its end line says, or with the last interval written.
    let run_end = match &end {
        Some(e) => Duration::from_secs_f64(e.elapsed_s),
        None => last.map_or(Duration::ZERO, |l| l + interval),
    };
    let start = first.unwrap_or_default();
    let stop = last.map_or(start, |l| (l + interval).min(run_end.max(l)));
    if let Some(logged) = latency_log.last_mut() {
        logged.width = stop.saturating_sub(logged.offset);
    }
    collector.finish_worker(0, stop);
    let (totals, series) = collector.finish();
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
