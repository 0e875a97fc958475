//! The run's slowest requests, one by one (see [`belier_stats::Exemplars`]): what a
//! percentile cannot say, which request was slow, when it was due and, when it was traced
//! (`--trace-sample`), the trace that finds it in the server's traces and logs. Read from the
//! recorded results, in each report format.

use std::fmt::Write;

use belier_stats::Exemplar;
use serde_json::{json, Value};

use crate::format::{cut, NAME_COLUMN};
use crate::Report;
use belier_vocabulary::format::ms;

/// One slowest request as every format shows it.
pub(crate) struct Line {
    /// Its latency, as the report writes times.
    pub latency: String,
    /// What it answered: `200`, or a gRPC call's code name.
    pub answer: String,
    /// When it was due, `12:00:03.123 UTC`.
    pub due: String,
    /// Its trace id, when it was traced.
    pub trace: Option<String>,
    /// Its span id, likewise.
    pub span: Option<String>,
    /// A scripted user's request: its step's name.
    pub step: Option<String>,
}

/// The run's slowest requests, slowest first; empty when it recorded no response.
pub(crate) fn lines(report: &Report) -> Vec<Line> {
    report
        .totals
        .exemplars()
        .iter()
        .map(|e| line(report, e))
        .collect()
}

fn line(report: &Report, e: &Exemplar) -> Line {
    Line {
        latency: ms(e.latency_us),
        answer: match e.grpc {
            Some(code) => belier_stats::grpc_code_name(code).to_string(),
            None => e.status.to_string(),
        },
        due: time_of_day(e.intended_unix_us),
        trace: e.trace_id.map(|t| t.to_string()),
        span: e.span_id.map(|s| s.to_string()),
        step: e.step.map(|n| {
            let n = n as usize;
            report
                .info
                .steps
                .get(n)
                .cloned()
                .unwrap_or_else(|| format!("step {n}"))
        }),
    }
}

/// `unix_us` as the time of day in UTC to the millisecond, as servers' logs write it.
pub(crate) fn time_of_day(unix_us: u64) -> String {
    let ms = unix_us / 1000;
    let secs = ms / 1000;
    let day = secs % 86_400;
    format!(
        "{:02}:{:02}:{:02}.{:03} UTC",
        day / 3600,
        day / 60 % 60,
        day % 60,
        ms % 1000
    )
}

/// The text report's "Slowest requests" section.
pub(crate) fn write_text(out: &mut String, report: &Report) -> std::fmt::Result {
    let lines = lines(report);
    if lines.is_empty() {
        return Ok(());
    }
    let traced = lines.iter().filter(|l| l.trace.is_some()).count();
    writeln!(
        out,
        "\nSlowest requests  (the run's {} slowest responses{})",
        lines.len(),
        match traced {
            0 => "; --trace-sample gives them trace ids".to_string(),
            n if n == lines.len() => ", with their traces".to_string(),
            n => format!(", {n} of them traced"),
        }
    )?;
    for l in &lines {
        write_line(out, l)?;
    }
    let of_steps = step_lines(report);
    if of_steps.len() > 1 {
        writeln!(out, "  the slowest of each step:")?;
        for l in &of_steps {
            write_line(out, l)?;
        }
    }
    Ok(())
}

fn write_line(out: &mut String, l: &Line) -> std::fmt::Result {
    write!(out, "  {:>10}  {:<5} due {}", l.latency, l.answer, l.due)?;
    if let (Some(trace), Some(span)) = (&l.trace, &l.span) {
        write!(out, "  trace {trace} span {span}")?;
    }
    if let Some(step) = &l.step {
        write!(out, "  step '{}'", cut(step, NAME_COLUMN))?;
    }
    writeln!(out)
}

/// A plan's steps' slowest responses, one line each: every step has its own exemplars,
/// so a fast step's slowest request is kept beside a slow step's.
pub(crate) fn step_lines(report: &Report) -> Vec<Line> {
    (0..report.totals.steps().len())
        .filter_map(|i| report.totals.step_exemplars(i).first())
        .map(|e| line(report, e))
        .collect()
}

/// The JSON report's `slowest`: the exemplars as recorded, slowest first; `None` without
/// responses.
pub(crate) fn json(report: &Report) -> Option<Value> {
    let kept = report.totals.exemplars();
    (!kept.is_empty()).then(|| json!(kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_of_day_are_utc_to_the_millisecond() {
        // 2026-11-29T01:02:03.456789Z
        assert_eq!(time_of_day(1_795_914_123_456_789), "01:02:03.456 UTC");
        assert_eq!(time_of_day(0), "00:00:00.000 UTC");
    }
}
