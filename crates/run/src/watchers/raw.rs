//! `--raw FILE`: every request as one CSV row, streamed as the samples arrive. The status
//! column holds an HTTP status, or a gRPC call's status code as `grpc:CODE`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use belier_stats::{Outcome, Sample};

use crate::watcher::{Seen, Watcher};

/// The CSV header; times are microseconds from the start of the run.
const HEADER: &str = "intended_us,dispatched_us,sent_us,first_byte_us,done_us,latency_us,status,error,bytes_in,bytes_out\n";

/// Streams samples to a CSV file.
pub struct RawWriter {
    out: BufWriter<File>,
    start: Instant,
    line: String,
}

impl RawWriter {
    /// Creates `path` and writes the header; times are counted from `start`, the run's.
    pub fn create(path: &Path, start: Instant) -> std::io::Result<RawWriter> {
        let mut out = BufWriter::new(File::create(path)?);
        out.write_all(HEADER.as_bytes())?;
        Ok(RawWriter {
            out,
            start,
            line: String::with_capacity(128),
        })
    }

    /// Appends `samples`.
    pub fn write(&mut self, samples: &[Sample]) -> std::io::Result<()> {
        use std::fmt::Write as _;
        let us = |t: Instant| t.saturating_duration_since(self.start).as_micros();
        for s in samples {
            self.line.clear();
            let (status, error) = match s.outcome {
                Outcome::Response { status } => (status.to_string(), ""),
                // A gRPC call's status code, told from an HTTP status by its prefix.
                Outcome::Grpc { code } => (format!("grpc:{code}"), ""),
                Outcome::Error(kind) => (String::new(), kind.name()),
            };
            let first_byte = s.first_byte.map(|t| us(t).to_string()).unwrap_or_default();
            // Writing to a String cannot fail.
            let _ = writeln!(
                self.line,
                "{},{},{},{first_byte},{},{},{status},{error},{},{}",
                us(s.intended),
                us(s.dispatched),
                us(s.sent),
                us(s.done),
                s.latency_us(),
                s.bytes_in,
                s.bytes_out
            );
            self.out.write_all(self.line.as_bytes())?;
        }
        Ok(())
    }

    /// Flushes what is buffered.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// The raw file as a watcher: every batch of samples appended as it arrives. A write failure
/// stops the file with a warning; the run and its report go on.
pub struct RawFile {
    writer: Option<RawWriter>,
}

impl RawFile {
    /// Streams into `writer`.
    pub fn new(writer: RawWriter) -> RawFile {
        RawFile {
            writer: Some(writer),
        }
    }
}

impl Watcher for RawFile {
    fn seen(&mut self, seen: &Seen<'_>, warnings: &mut Vec<String>) {
        let (Seen::Samples { samples, .. }, Some(w)) = (seen, &mut self.writer) else {
            return;
        };
        if let Err(e) = w.write(samples) {
            warnings.push(format!("raw file: writing stopped: {e}"));
            self.writer = None;
        }
    }

    fn stopped(&mut self, warnings: &mut Vec<String>) {
        if let Some(Err(e)) = self.writer.take().map(RawWriter::finish) {
            warnings.push(format!("raw file: the last rows could not be written: {e}"));
        }
    }
}
