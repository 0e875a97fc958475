//! The human-readable report.

use std::fmt::Write as _;

use belier_stats::ErrorKind;

use crate::format::{bytes, ms, ms_f, percentile_label, rate, thousands};
use crate::Report;

/// Renders `report` as plain text, one section per heading.
pub fn render_text(report: &Report) -> String {
    let mut out = String::with_capacity(2048);
    // Writing into a String cannot fail; the `let _` below discard that impossible error.
    let _ = write_text(&mut out, report);
    out
}

fn write_text(out: &mut String, r: &Report) -> std::fmt::Result {
    let info = r.info;
    let t = r.totals;
    writeln!(
        out,
        "belier {}  {} {}",
        info.belier_version, info.method, info.url
    )?;
    let stop = match (info.requests, info.duration_s) {
        (Some(n), Some(d)) => format!("{} requests or {d} s, whichever first", thousands(n)),
        (Some(n), None) => format!("{} requests", thousands(n)),
        (None, Some(d)) => format!("{d} s"),
        (None, None) => "until stopped".into(),
    };
    writeln!(
        out,
        "  {} connections on {} threads, keep-alive {}, timeout {} s, stop after {stop}",
        info.connections,
        info.threads,
        if info.keepalive { "on" } else { "off" },
        info.timeout_s,
    )?;
    writeln!(
        out,
        "  started {} on a {}-core host, target address {}",
        info.started_at, info.host_cores, info.address
    )?;
    if r.interrupted {
        writeln!(
            out,
            "  INTERRUPTED: stopped early by the user; the figures cover the run so far"
        )?;
    }
    for w in &r.warnings {
        writeln!(out, "  WARNING: {w}")?;
    }

    let requests = t.requests();
    writeln!(out, "\nSummary")?;
    writeln!(
        out,
        "  Requests      {:>12}   {}/s attempted",
        thousands(requests),
        rate(r.attempted_rate())
    )?;
    writeln!(
        out,
        "  Succeeded     {:>12}   {}/s throughput, {:.2} % success",
        thousands(t.succeeded()),
        rate(r.throughput()),
        r.success_ratio() * 100.0
    )?;
    writeln!(
        out,
        "  Responses     {:>12}   (any status)",
        thousands(t.responses())
    )?;
    writeln!(
        out,
        "  Errors        {:>12}   (no complete response)",
        thousands(t.errors())
    )?;
    writeln!(out, "  Duration      {:>12.3} s", r.elapsed.as_secs_f64())?;
    let per_request = |b: u64| {
        if requests == 0 {
            0.0
        } else {
            b as f64 / requests as f64
        }
    };
    writeln!(
        out,
        "  Bytes in      {:>12}   {} per request",
        bytes(t.bytes_in() as f64),
        bytes(per_request(t.bytes_in()))
    )?;
    writeln!(
        out,
        "  Bytes out     {:>12}   {} per request",
        bytes(t.bytes_out() as f64),
        bytes(per_request(t.bytes_out()))
    )?;
    writeln!(
        out,
        "  Connections   {:>12}   opened",
        thousands(t.connections_opened())
    )?;

    let l = t.latency_summary();
    writeln!(
        out,
        "\nLatency  (from intended send to last byte; {} responses)",
        thousands(l.count)
    )?;
    writeln!(out, "  {:<8}{:>16}", "min", ms(l.min_us))?;
    writeln!(out, "  {:<8}{:>16}", "mean", ms_f(l.mean_us))?;
    writeln!(out, "  {:<8}{:>16}", "stdev", ms_f(l.stdev_us))?;
    for &(p, v) in &l.percentiles_us {
        writeln!(out, "  {:<8}{:>16}", percentile_label(p), ms(v))?;
    }

    writeln!(out, "\nStatus codes")?;
    let mut any = false;
    for (code, n) in t.status_counts() {
        any = true;
        let code = if code == 0 {
            "other".to_string()
        } else {
            code.to_string()
        };
        writeln!(out, "  {code:<8}{:>12}", thousands(n))?;
    }
    if !any {
        writeln!(out, "  (no responses)")?;
    }

    writeln!(out, "\nErrors")?;
    if t.errors() == 0 {
        writeln!(out, "  none")?;
    }
    for kind in ErrorKind::ALL {
        let n = t.errors_of(kind);
        if n == 0 {
            continue;
        }
        write!(out, "  {:<30}{:>12}", kind.description(), thousands(n))?;
        match t.error_example(kind) {
            Some(example) => writeln!(out, "   e.g. {example}")?,
            None => writeln!(out)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::fixtures;

    #[test]
    fn golden_text_report() {
        let info = fixtures::info();
        let (totals, series) = fixtures::results();
        let report = Report {
            info: &info,
            totals: &totals,
            series: &series,
            elapsed: Duration::from_millis(1_500),
            interrupted: false,
            warnings: vec![],
        };
        let got = render_text(&report);
        crate::golden::check("report.txt", &got);
    }

    #[test]
    fn interrupted_and_empty_runs_still_render() {
        let info = fixtures::info();
        let totals = belier_stats::Recorder::new();
        let series = belier_stats::Series::new();
        let report = Report {
            info: &info,
            totals: &totals,
            series: &series,
            elapsed: Duration::ZERO,
            interrupted: true,
            warnings: vec!["1 worker thread crashed".into()],
        };
        let got = render_text(&report);
        assert!(got.contains("INTERRUPTED"));
        assert!(got.contains("WARNING: 1 worker thread crashed"));
        assert!(got.contains("(no responses)"));
        assert!(!got.contains("NaN"));
    }
}
