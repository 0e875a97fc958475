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
    counters: Counters,
    latency: String,
    uncorrected: String,
    lag: String,
}

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
        let line = Line::Interval(IntervalLine {
            index: s.index,
            in_flight: s.gauges.in_flight,
            cpu: s.gauges.cpu,
            counters: s.recorder.counters(),
            latency,
            uncorrected,
            lag,
        });
        write_line(&mut self.out, &line)
    }

    /// Writes the end line and flushes it.
    pub fn end(mut self, end: &End) -> io::Result<()> {
        write_line(&mut self.out, &Line::End(end.clone()))
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

/// A results file read back.
#[derive(Clone, Debug)]
pub struct Results {
    /// Its header.
    pub header: Header,
    /// Its intervals, in index order.
    pub intervals: Vec<Settled>,
    /// Its end line; absent when the run was killed before writing it.
    pub end: Option<End>,
    /// What the reader had to tolerate (a truncated last line, a missing end).
    pub notes: Vec<String>,
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

/// Reads a results file; `source` names it in messages (a path, or `-` for standard input).
pub fn read_results(mut input: impl BufRead, source: &str) -> Result<Results, ResultsError> {
    let fail = |line: usize, what: String| ResultsError(format!("{source}:{line}: {what}"));
    let mut raw = Vec::new();
    let mut lines: Vec<(Vec<u8>, bool)> = Vec::new();
    loop {
        raw.clear();
        let n = input
            .read_until(b'\n', &mut raw)
            .map_err(|e| ResultsError(format!("{source}: cannot read: {e}")))?;
        if n == 0 {
            break;
        }
        let complete = raw.last() == Some(&b'\n');
        lines.push((raw.clone(), complete));
    }
    let mut header = None;
    let mut intervals = Vec::new();
    let mut end = None;
    let mut notes = Vec::new();
    let mut deserializer = Deserializer::new();
    let count = lines.len();
    for (i, (bytes, complete)) in lines.iter().enumerate() {
        let number = i + 1;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let line: Line = match serde_json::from_slice(bytes) {
            Ok(line) => line,
            Err(_) if number == count && !complete && header.is_some() => {
                notes.push(format!(
                    "{source}:{number}: truncated last line ignored (the run was stopped while writing it)"
                ));
                break;
            }
            Err(e) => return Err(fail(number, format!("not a belier results line: {e}"))),
        };
        match (line, &header) {
            (Line::Header(h), None) => {
                if h.format != FORMAT {
                    return Err(fail(
                        number,
                        format!("format '{}' is not {FORMAT}", h.format),
                    ));
                }
                if h.version != VERSION {
                    return Err(fail(
                        number,
                        format!(
                            "version {} is not supported (this belier reads {VERSION})",
                            h.version
                        ),
                    ));
                }
                if !(h.interval_s.is_finite() && h.interval_s > 0.0) {
                    return Err(fail(number, "interval_s must be positive".into()));
                }
                header = Some(h);
            }
            (_, None) => return Err(fail(number, "the first line must be the header".into())),
            (Line::Header(_), Some(_)) => return Err(fail(number, "a second header".into())),
            (Line::Interval(l), Some(h)) => {
                let mut recorder = Recorder::from_counters(&l.counters)
                    .map_err(|e| fail(number, e.to_string()))?;
                let mut add = |metric: Metric, encoded: &str| -> Result<(), ResultsError> {
                    let bytes = BASE64.decode(encoded).map_err(|e| {
                        fail(
                            number,
                            format!("{} histogram is not base64: {e}", metric.name()),
                        )
                    })?;
                    let hist: Histogram<u64> = deserializer
                        .deserialize(&mut bytes.as_slice())
                        .map_err(|e| {
                            fail(
                                number,
                                format!("{} histogram cannot be decoded: {e:?}", metric.name()),
                            )
                        })?;
                    recorder
                        .add_histogram(metric, &hist)
                        .map_err(|e| fail(number, e.to_string()))
                };
                add(Metric::Latency, &l.latency)?;
                add(Metric::Uncorrected, &l.uncorrected)?;
                add(Metric::Lag, &l.lag)?;
                let interval = Duration::from_secs_f64(h.interval_s);
                intervals.push(Settled {
                    index: l.index,
                    offset: interval * u32::try_from(l.index).unwrap_or(u32::MAX),
                    recorder,
                    gauges: Gauges {
                        in_flight: l.in_flight,
                        cpu: l.cpu,
                    },
                });
            }
            (Line::End(e), Some(_)) => end = Some(e),
        }
    }
    let header = header
        .ok_or_else(|| ResultsError(format!("{source}: empty, not a belier results file")))?;
    if end.is_none() {
        notes.push(format!(
            "{source}: no end line (the run was killed); the report covers the {} intervals written",
            intervals.len()
        ));
    }
    intervals.sort_by_key(|s| s.index);
    Ok(Results {
        header,
        intervals,
        end,
        notes,
    })
}

impl Results {
    /// Merges shards of one run (files with the same name): intervals with the same index add
    /// up exactly; the run information sums what the shards shared out.
    pub fn merge(mut shards: Vec<Results>) -> Result<Results, ResultsError> {
        let mut merged = shards.remove(0);
        for shard in shards {
            if shard.header.interval_s != merged.header.interval_s {
                return Err(ResultsError(format!(
                    "cannot merge '{}': intervals of {} s and {} s",
                    merged.header.name, merged.header.interval_s, shard.header.interval_s
                )));
            }
            let (a, b) = (&mut merged.header.run, &shard.header.run);
            a.connections += b.connections;
            a.threads += b.threads;
            a.host_cores += b.host_cores;
            a.shards += b.shards;
            a.requests = sum(a.requests, b.requests);
            a.rate = a.rate.zip(b.rate).map(|(x, y)| x + y);
            a.max_connections = sum(a.max_connections, b.max_connections);
            a.max_in_flight = sum(a.max_in_flight, b.max_in_flight);
            if a.stages.len() == b.stages.len() {
                for (x, y) in a.stages.iter_mut().zip(&b.stages) {
                    x.target += y.target;
                }
            }
            if b.started_at < a.started_at {
                a.started_at.clone_from(&b.started_at);
            }
            for s in shard.intervals {
                match merged.intervals.binary_search_by_key(&s.index, |m| m.index) {
                    Ok(i) => {
                        let m = &mut merged.intervals[i];
                        m.recorder += &s.recorder;
                        m.gauges = m.gauges.combine(s.gauges);
                    }
                    Err(i) => merged.intervals.insert(i, s),
                }
            }
            merged.end = match (merged.end.take(), shard.end) {
                (Some(x), Some(y)) => Some(End {
                    elapsed_s: x.elapsed_s.max(y.elapsed_s),
                    interrupted: x.interrupted || y.interrupted,
                    warnings: x.warnings.into_iter().chain(y.warnings).collect(),
                    host: match (x.host, y.host) {
                        (Some(p), Some(q)) => Some(HostUsage {
                            open_fds_peak: p.open_fds_peak.max(q.open_fds_peak),
                            fd_limit: p.fd_limit.min(q.fd_limit),
                            ephemeral_ports_peak: p
                                .ephemeral_ports_peak
                                .max(q.ephemeral_ports_peak),
                            ephemeral_ports_total: p
                                .ephemeral_ports_total
                                .min(q.ephemeral_ports_total),
                        }),
                        (p, q) => p.or(q),
                    },
                }),
                (x, y) => x.or(y),
            };
            merged.notes.extend(shard.notes);
        }
        Ok(merged)
    }

    /// Totals, series and length of the run, limited to intervals starting in
    /// `[from, to)` when given.
    pub fn summarise(&self, from: Option<Duration>, to: Option<Duration>) -> Summary {
        let interval = Duration::from_secs_f64(self.header.interval_s);
        let end = match &self.end {
            Some(e) => Duration::from_secs_f64(e.elapsed_s),
            None => self
                .intervals
                .last()
                .map_or(Duration::ZERO, |s| s.offset + interval),
        };
        let chosen: Vec<&Settled> = self
            .intervals
            .iter()
            .filter(|s| from.is_none_or(|f| s.offset >= f) && to.is_none_or(|t| s.offset < t))
            .collect();
        let mut collector = Collector::new(1, interval);
        for s in &chosen {
            collector.add(0, s.index, &s.recorder, s.gauges);
        }
        let start = chosen.first().map_or(Duration::ZERO, |s| s.offset);
        let stop = chosen
            .last()
            .map_or(start, |s| (s.offset + interval).min(end.max(s.offset)));
        collector.finish_worker(0, stop);
        let (totals, series) = collector.finish();
        Summary {
            totals,
            series,
            elapsed: stop.saturating_sub(start),
        }
    }
}

/// What a report needs from results: totals, series, and the time they cover.
#[derive(Debug)]
pub struct Summary {
    /// Everything recorded in the chosen intervals.
    pub totals: Recorder,
    /// One point per chosen interval.
    pub series: Series,
    /// Time the chosen intervals cover.
    pub elapsed: Duration,
}

fn sum<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
    a.zip(b).map(|(x, y)| x + y)
}

#[cfg(test)]
mod tests;
