//! `--raw FILE`: every request as one CSV row, streamed as the samples arrive.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use belier_stats::{Outcome, Sample};

use crate::settings::InputError;

/// The CSV header; times are microseconds from the start of the run.
const HEADER: &str = "intended_us,dispatched_us,sent_us,first_byte_us,done_us,latency_us,status,error,bytes_in,bytes_out\n";

/// Streams samples to a CSV file.
pub struct RawWriter {
    out: BufWriter<File>,
    start: Instant,
    line: String,
}

impl RawWriter {
    /// Creates `path` and writes the header.
    pub fn create(path: &Path, start: Instant) -> Result<RawWriter, InputError> {
        let fail = |e: std::io::Error| {
            InputError::new(
                "--raw <FILE>",
                path.display(),
                format!("cannot write it: {e}"),
            )
        };
        let mut out = BufWriter::new(File::create(path).map_err(fail)?);
        out.write_all(HEADER.as_bytes()).map_err(fail)?;
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
