//! Writing a results file as the run goes: intervals in, records out, coarsened by the
//! file's [`Coarsening`] rule.

use std::io::{self, Write};
use std::time::Duration;

use belier_stats::{Gauges, Recorder, Settled};

use crate::change::Change;
use crate::coarsening::{over_time, Coarsening};
use crate::histogram::Encoder;
use crate::line::{End, Header, IntervalLine, Line};

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

    /// Writes a change made to the run and flushes, at once. A change line says its own time
    /// (`at_s`) and is not placed in time among the records: one made during a record that is
    /// still being filled (a coarsened one) comes before that record.
    pub fn change(&mut self, change: &Change) -> io::Result<()> {
        write_line(&mut self.out, &mut self.line, &Line::Change(*change))
    }

    /// Writes the record in progress (cut after its last interval), then the end line, and
    /// flushes.
    pub fn end(mut self, end: &End) -> io::Result<()> {
        let last = self.pending.as_ref().map(|p| p.last + 1);
        self.flush_pending(last)?;
        write_line(&mut self.out, &mut self.line, &Line::End(end.clone()))
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
    let stored = encoder.store(recorder)?;
    let record = Line::Interval(IntervalLine::new([start, width], interval, gauges, stored));
    write_line(out, line, &record)?;
    Ok(line.len())
}

/// Serializes `line` into `buf` (reused), writes it with its newline and flushes.
fn write_line<W: Write>(out: &mut W, buf: &mut Vec<u8>, line: &Line) -> io::Result<()> {
    buf.clear();
    serde_json::to_writer(&mut *buf, line)?;
    buf.push(b'\n');
    out.write_all(buf)?;
    out.flush()
}
