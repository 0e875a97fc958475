//! A GitHub-flavoured markdown summary, to paste into a pull request, an issue or a wiki.
//!
//! Everything that came from the user or the network (run names, the URL, error messages,
//! warnings) goes through [`md`], so it shows as typed: it cannot end a table cell, start a
//! new line, or turn into a link, emphasis or raw HTML.

use std::fmt::Write as _;

use belier_results::Model;

use crate::format::{bytes, cut, ms, ms_f, rate, thousands, NAME_COLUMN};
use crate::open_loop::OpenLoop;
use crate::summary::Summary;
use crate::verdict::Verdict;
use crate::wording::{latency_cell, sent_rate, threads};
use crate::{NamedReport, Report};

/// Renders `runs` as markdown: a summary table with one column per run, then for each run its
/// status codes, error kinds and verdict.
pub fn render_markdown(runs: &[NamedReport]) -> String {
    let mut out = String::with_capacity(2048 + runs.len() * 1024);
    // Writing into a String cannot fail; `let _` discards that impossible error.
    let _ = write_markdown(&mut out, runs);
    out
}

fn write_markdown(out: &mut String, runs: &[NamedReport]) -> std::fmt::Result {
    writeln!(out, "## belier results\n")?;
    if runs.is_empty() {
        return writeln!(out, "No runs.");
    }
    write!(out, "| |")?;
    for run in runs {
        write!(out, " {} |", md(run.name))?;
    }
    write!(out, "\n| :-- |")?;
    for _ in runs {
        write!(out, " --: |")?;
    }
    writeln!(out)?;

    let summaries: Vec<Summary> = runs.iter().map(|run| Summary::of(run.report)).collect();
    write_outcome_rows(out, &summaries)?;
    write_latency_rows(out, &summaries)?;
    write_transfer_rows(out, &summaries)?;
    if summaries.iter().any(|s| s.open_loop.is_some()) {
        write_open_loop_rows(out, &summaries)?;
    }
    let message_rows = crate::messages::rows(&summaries);
    for (label, cell) in &message_rows {
        row(out, &summaries, label, cell)?;
    }
    writeln!(
        out,
        "\nLatency is measured from the intended start of each request to its last byte, \
         responses only."
    )?;
    if !message_rows.is_empty() {
        writeln!(out, "{}", crate::messages::note(&summaries))?;
    }

    for (run, s) in runs.iter().zip(&summaries) {
        write_run(out, run, s)?;
    }
    Ok(())
}

/// One row of the comparison table: `label`, then `cell` of each run.
fn row(
    out: &mut String,
    summaries: &[Summary],
    label: &str,
    cell: &dyn Fn(&Summary) -> String,
) -> std::fmt::Result {
    write!(out, "| {label} |")?;
    for s in summaries {
        write!(out, " {} |", cell(s))?;
    }
    writeln!(out)
}

/// The comparison table's counts and rates: what was sent and how it fared.
fn write_outcome_rows(out: &mut String, summaries: &[Summary]) -> std::fmt::Result {
    row(out, summaries, "Requests", &|s| {
        thousands(s.report.totals.requests())
    })?;
    row(out, summaries, "Succeeded", &|s| {
        thousands(s.report.totals.succeeded())
    })?;
    row(out, summaries, "Success", &|s| {
        format!("{:.2} %", s.success_ratio * 100.0)
    })?;
    row(out, summaries, "Errors (no response)", &|s| {
        thousands(s.report.totals.errors())
    })?;
    row(out, summaries, "Duration", &|s| {
        format!("{:.3} s", s.report.elapsed.as_secs_f64())
    })?;
    row(out, summaries, "Attempted rate", &|s| {
        format!("{}/s", rate(s.attempted_rate))
    })?;
    row(out, summaries, "Throughput", &|s| {
        format!("{}/s", rate(s.throughput))
    })?;
    Ok(())
}

/// The comparison table's latency rows.
fn write_latency_rows(out: &mut String, summaries: &[Summary]) -> std::fmt::Result {
    row(out, summaries, "Latency min", &|s| {
        latency_cell(s, |l| ms(l.min_us))
    })?;
    row(out, summaries, "Latency mean", &|s| {
        latency_cell(s, |l| ms_f(l.mean_us))
    })?;
    for p in [50.0, 90.0, 99.0, 99.9] {
        row(out, summaries, &format!("Latency p{p}"), &|s| {
            if s.latency.count == 0 {
                "–".into()
            } else {
                ms(s.latency.at(p).unwrap_or(0))
            }
        })?;
    }
    row(out, summaries, "Latency max", &|s| {
        latency_cell(s, |l| ms(l.max_us))
    })?;
    Ok(())
}

/// The comparison table's bytes and connections; rows only some runs have (TLS resumption,
/// decoded bodies, re-sent requests) appear when any run has them.
fn write_transfer_rows(out: &mut String, summaries: &[Summary]) -> std::fmt::Result {
    row(out, summaries, "Bytes in", &|s| {
        bytes(s.report.totals.bytes_in() as f64)
    })?;
    row(out, summaries, "Bytes out", &|s| {
        bytes(s.report.totals.bytes_out() as f64)
    })?;
    row(out, summaries, "Connections", &|s| {
        thousands(s.report.totals.connections_opened())
    })?;
    if summaries
        .iter()
        .any(|s| s.report.totals.tls_session().is_some())
    {
        row(out, summaries, "TLS handshakes resumed", &|s| {
            thousands(s.report.totals.tls_resumed())
        })?;
    }
    if summaries
        .iter()
        .any(|s| s.report.totals.bytes_decoded() > 0)
    {
        row(out, summaries, "Bytes decoded (--compressed)", &|s| {
            bytes(s.report.totals.bytes_decoded() as f64)
        })?;
    }
    if summaries.iter().any(|s| s.report.totals.resent() > 0) {
        row(
            out,
            summaries,
            "Re-sent (server closed unread)",
            &crate::wording::resent,
        )?;
    }
    Ok(())
}

/// The comparison table's open-loop rows (dashes for closed-loop runs).
fn write_open_loop_rows(out: &mut String, summaries: &[Summary]) -> std::fmt::Result {
    row(out, summaries, "Target rate", &|s| {
        open_loop(s, |o| format!("{}/s", rate(o.target_rate)))
    })?;
    row(out, summaries, "Sent rate", &|s| {
        open_loop(s, |_| sent_rate(s))
    })?;
    row(out, summaries, "Dropped", &|s| {
        open_loop(s, |_| thousands(s.report.totals.dropped()))
    })?;
    row(out, summaries, "Lag p99", &|s| {
        open_loop(s, |o| ms(o.lag.at(99.0).unwrap_or(0)))
    })?;
    Ok(())
}

/// `cell` of an open-loop run's figures; a dash for a closed-loop run, which had no arrival
/// rate (a zero would read as a measurement).
fn open_loop(s: &Summary, cell: impl Fn(&OpenLoop) -> String) -> String {
    s.open_loop.as_ref().map_or_else(|| "–".to_string(), cell)
}

/// One run's section: its heading, status codes, errors, steps, scenarios, changes, verdict.
fn write_run(out: &mut String, run: &NamedReport, s: &Summary) -> std::fmt::Result {
    let r = run.report;
    write_run_heading(out, run)?;
    write_status_codes(out, r)?;
    write_errors(out, s)?;
    crate::routes::write_markdown(out, r)?;
    crate::held::write_markdown(out, r)?;
    crate::quic::write_markdown(out, r)?;
    crate::server_timing::write_markdown(out, r)?;
    write_steps(out, s)?;
    write_scenarios(out, r)?;
    crate::changes::write_markdown(out, r)?;
    write_verdict(out, &s.verdict)
}

/// A run's heading: its name, what was run and how, and what the reader must know first.
fn write_run_heading(out: &mut String, run: &NamedReport) -> std::fmt::Result {
    let r = run.report;
    let info = r.info;
    writeln!(out, "\n### {}\n", md(run.name))?;
    let load = match info.model {
        Model::Closed => format!(
            "closed loop, {} connections on {}",
            info.connections,
            threads(info.threads)
        ),
        Model::Open => format!(
            "open loop at {}/s, up to {} connections on {}",
            rate(info.rate.unwrap_or(0.0)),
            info.max_connections.unwrap_or(info.connections),
            threads(info.threads)
        ),
    };
    let shards = if info.shards > 1 {
        format!(", {} shards merged", info.shards)
    } else {
        String::new()
    };
    writeln!(
        out,
        "{} {} — {load}{shards}; started {}, ran {:.3} s",
        md(&info.method),
        md(&info.url),
        md(&info.started_at),
        r.elapsed.as_secs_f64()
    )?;
    if let Some(line) = crate::wording::plan_line(info) {
        writeln!(out, "\n{}", md(&line))?;
    }
    if r.interrupted {
        writeln!(
            out,
            "\n**Interrupted:** stopped early by the user; the figures cover the run so far."
        )?;
    }
    for w in &r.warnings {
        writeln!(out, "\n**Warning:** {}", md(w))?;
    }
    Ok(())
}

/// A run's status codes, or that none came.
fn write_status_codes(out: &mut String, r: &Report) -> std::fmt::Result {
    let t = r.totals;
    if t.responses() == 0 {
        writeln!(out, "\nNo responses.")?;
    } else {
        writeln!(out, "\n| Status | Responses |\n| --: | --: |")?;
        for (code, n) in t.status_counts() {
            let code = if code == 0 {
                "other".to_string()
            } else {
                code.to_string()
            };
            writeln!(out, "| {code} | {} |", thousands(n))?;
        }
        for (code, n) in t.grpc_counts() {
            let name = belier_stats::grpc_code_name(code);
            writeln!(out, "| {name} | {} |", thousands(n))?;
        }
    }
    Ok(())
}

/// A run's error kinds, with an example message each.
fn write_errors(out: &mut String, s: &Summary) -> std::fmt::Result {
    if s.errors.is_empty() {
        writeln!(out, "\nNo errors.")?;
    } else {
        writeln!(out, "\n| Error | Count | Example |\n| :-- | --: | :-- |")?;
        for e in &s.errors {
            writeln!(
                out,
                "| {} | {} | {} |",
                e.kind.description(),
                thousands(e.count),
                md(e.example.unwrap_or(""))
            )?;
        }
    }
    Ok(())
}

/// Whether belier kept up, and if not, each finding.
fn write_verdict(out: &mut String, v: &Verdict) -> std::fmt::Result {
    if v.kept_up {
        writeln!(out, "\n**Verdict:** belier kept up ({}).", md(&v.summary))
    } else {
        writeln!(
            out,
            "\n**Verdict: WARNING**, the generator may have shaped these results ({}):",
            md(&v.summary)
        )?;
        for f in &v.findings {
            writeln!(out, "- {}", md(f))?;
        }
        Ok(())
    }
}

/// The per-step table, checks, iterations and thresholds of a run of scripted users.
fn write_steps(out: &mut String, s: &Summary) -> std::fmt::Result {
    let r = s.report;
    if s.has_steps {
        let column = if s.has_targets { "Target" } else { "Step" };
        writeln!(
            out,
            "\n| {column} | Requests | Failures | Fail % | Rate | Min | p50 | p90 | p99 | Max |\n\
             | :-- | --: | --: | --: | --: | --: | --: | --: | --: | --: |"
        )?;
        for l in &s.steps {
            let mut cells = l.cells(ms, "–");
            cells[2].push_str(" %");
            cells[3].push_str("/s");
            writeln!(
                out,
                "| {} | {} |",
                md(&cut(&l.name, NAME_COLUMN)),
                cells.join(" | ")
            )?;
        }
        if !s.checks.is_empty() {
            writeln!(
                out,
                "\n| Check | Passed | Failed | Pass % |\n| :-- | --: | --: | --: |"
            )?;
            for c in &s.checks {
                writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    md(&cut(&c.name, NAME_COLUMN)),
                    thousands(c.passed),
                    thousands(c.failed),
                    crate::format::pass_percent(c.pass_ratio)
                )?;
            }
        }
        if !s.metrics.is_empty() {
            writeln!(
                out,
                "\n| Custom metric | Kind | Count | Rate | Min | p50 | p90 | p99 | Max |\n\
                 | :-- | :-- | --: | --: | --: | --: | --: | --: | --: |"
            )?;
            for m in &s.metrics {
                let mut cells = m.cells(ms, "–");
                cells[2].push_str("/s");
                writeln!(
                    out,
                    "| {} | {} |",
                    md(&cut(&m.name, NAME_COLUMN)),
                    cells.join(" | ")
                )?;
            }
        }
        writeln!(
            out,
            "\nIterations completed: {} ({}/s).",
            thousands(r.totals.iterations()),
            rate(s.iteration_rate)
        )?;
    }
    if !r.thresholds.is_empty() {
        writeln!(
            out,
            "\n| Threshold | Result | Actual |\n| :-- | :-: | --: |"
        )?;
        for t in &r.thresholds {
            writeln!(
                out,
                "| {} | {} | {} |",
                md(&t.expression),
                if t.passed { "✓ pass" } else { "✗ fail" },
                md(&t.actual)
            )?;
        }
    }
    Ok(())
}

/// A plan whose scenarios have loads of their own: each executor's row.
fn write_scenarios(out: &mut String, r: &crate::Report) -> std::fmt::Result {
    if r.scenarios.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\n#### Scenarios (each its own load, at the same time)\n"
    )?;
    writeln!(
        out,
        "| scenario | load | requests | failures | fail % | rate/s | p50 | p90 | p99 |"
    )?;
    writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|")?;
    for sc in &r.scenarios {
        let cells = crate::scenarios::cells(sc, ms, "-");
        writeln!(
            out,
            "| {} | {} | {} |",
            md(&cut(&sc.name, NAME_COLUMN)),
            md(&sc.load),
            cells.join(" | ")
        )?;
    }
    Ok(())
}

/// `s` as literal inline markdown, safe inside a table cell: characters that markdown or a
/// table would act on are backslash-escaped (CommonMark lets any ASCII punctuation be), and a
/// line break becomes a space, since a cell or a line of text cannot hold one.
fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' | '|' | '`' | '*' | '_' | '[' | ']' | '<' | '>' => {
                out.push('\\');
                out.push(c);
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\r' | '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{seeded, Report};

    #[test]
    fn golden_markdown() {
        crate::golden::check("report.md", &seeded::render_pair(render_markdown));
    }

    #[test]
    fn golden_markdown_with_steps() {
        let run = seeded::with_steps();
        let report = run.report();
        let got = render_markdown(&[NamedReport {
            name: "shop",
            report: &report,
        }]);
        crate::golden::check("report-steps.md", &got);
    }

    #[test]
    fn golden_markdown_with_messages_beside_a_run_without() {
        let got = seeded::render_with_messages(render_markdown);
        crate::golden::check("report-grpc.md", &got);
        for line in [
            "| Streaming calls | – | 201 |",
            "| Messages received | – | 20,001 |",
            "| Messages sent | – | 201 |",
            "| Round trip p99 | – | 1.500 ms |",
        ] {
            assert!(got.contains(line), "{line:?} in\n{got}");
        }
    }

    #[test]
    fn escapes_what_would_break_a_table_or_render() {
        assert_eq!(md("plain text 1.5"), "plain text 1.5");
        assert_eq!(md("a|b"), "a\\|b");
        assert_eq!(md("a\\|b"), "a\\\\\\|b");
        assert_eq!(md("two\nlines\r\nthree\rfour"), "two lines three four");
        assert_eq!(md("<img src=x>"), "\\<img src=x\\>");
        assert_eq!(
            md("*bold* _it_ `code` [link]"),
            "\\*bold\\* \\_it\\_ \\`code\\` \\[link\\]"
        );
    }

    #[test]
    fn a_run_without_responses_has_no_latency_figures() {
        let a = seeded::base();
        let (totals, series) = (belier_stats::Recorder::new(), belier_stats::Series::new());
        let empty = Report {
            totals: &totals,
            series: &series,
            ..a.report()
        };
        let reports = [a.report(), empty];
        let got = render_markdown(&seeded::named(&reports));
        let p50 = got
            .lines()
            .find(|l| l.starts_with("| Latency p50 |"))
            .unwrap();
        assert!(p50.ends_with("| – |"), "{p50}");
        let html = crate::render_html(&[
            crate::HtmlRun {
                name: "a".into(),
                report: &reports[0],
            },
            crate::HtmlRun {
                name: "b".into(),
                report: &reports[1],
            },
        ]);
        assert!(
            html.contains("<td>–</td>"),
            "the empty run's latency cells are blank"
        );
    }

    #[test]
    fn grpc_calls_are_listed_by_their_codes_name_in_markdown_and_html() {
        use belier_stats::{Outcome, Recorder, Sample};
        let a = seeded::base();
        let mut totals = Recorder::new();
        for code in [0, 0, 8] {
            let now = std::time::Instant::now();
            totals.record(&Sample::simulated(now, 0, 1_000, Outcome::Grpc { code }));
        }
        let report = Report {
            totals: &totals,
            ..a.report()
        };
        let got = render_markdown(&[NamedReport {
            name: "grpc",
            report: &report,
        }]);
        assert!(got.contains("| OK | 2 |"), "{got}");
        assert!(got.contains("| RESOURCE_EXHAUSTED | 1 |"), "{got}");
        let html = crate::render_html(&[crate::HtmlRun {
            name: "grpc".into(),
            report: &report,
        }]);
        assert!(html.contains("gRPC status"), "the chart's axis names gRPC");
        assert!(
            html.contains(">RESOURCE_EXHAUSTED<"),
            "a bar's tick names the code"
        );
    }

    #[test]
    fn every_table_row_has_one_cell_per_column() {
        let (a, b) = (seeded::base(), seeded::new());
        let mut b_report = b.report();
        b_report.warnings = vec!["a | b\nc".into()];
        b_report.interrupted = true;
        let reports = [a.report(), b_report];
        let got = render_markdown(&seeded::named(&reports));
        // Unescaped pipes per table line: every line of a table has the same number.
        let cells = |line: &str| {
            line.replace("\\\\", "")
                .replace("\\|", "")
                .matches('|')
                .count()
        };
        let mut table: Option<usize> = None;
        for line in got.lines() {
            if line.starts_with('|') {
                let n = cells(line);
                assert_eq!(*table.get_or_insert(n), n, "{line}\n{got}");
            } else {
                table = None;
            }
        }
        assert!(got.contains("**Interrupted:**"), "{got}");
        assert!(got.contains("**Warning:** a \\| b c"), "{got}");
    }

    #[test]
    fn closed_loop_only_has_no_open_loop_rows() {
        let a = seeded::base();
        let report = a.report();
        let got = render_markdown(&[NamedReport {
            name: "only",
            report: &report,
        }]);
        assert!(!got.contains("Target rate"), "{got}");
        assert!(got.contains("| Requests | 1,000 |"), "{got}");
        assert!(got.contains("**Verdict:** belier kept up"), "{got}");
    }

    #[test]
    fn empty_run_renders_without_tables_of_nothing() {
        let info = crate::fixtures::info();
        let totals = belier_stats::Recorder::new();
        let series = belier_stats::Series::new();
        let report = Report {
            elapsed: std::time::Duration::ZERO,
            ..crate::fixtures::report(&info, &totals, &series)
        };
        let got = render_markdown(&[NamedReport {
            name: "empty",
            report: &report,
        }]);
        assert!(got.contains("No responses."), "{got}");
        assert!(got.contains("No errors."), "{got}");
        assert!(!got.contains("NaN"), "{got}");
        assert_eq!(render_markdown(&[]), "## belier results\n\nNo runs.\n");
    }
}
