//! The HTML report: one self-contained page comparing one or more runs.
//!
//! The page needs nothing but a browser to open: CSS is inline, charts are SVG drawn here, and
//! there is no script at all. A Content-Security-Policy forbids scripts and every fetch, so even
//! a string that slipped past escaping could neither run nor call home. Everything that came
//! from the user or the network (run names, URL, method, error messages, warnings) goes through
//! [`esc`](escape::esc), which is safe both in text and in quoted attributes.

mod capacity;
mod charts;
mod distribution;
mod escape;
mod head;
mod legend;
mod run;
mod svg;
#[cfg(test)]
mod tests;
mod trend;
mod verdict;

use std::fmt::{self, Write as _};

use belier_stats::{ErrorKind, LatencySummary};

use crate::format::{bytes, ms, ms_f, rate, thousands};
use crate::open_loop::OpenLoop;
use crate::summary::Summary;
use crate::wording::latency_cell;
use crate::Report;

pub use capacity::render_capacity_html;
pub use run::HtmlRun;
pub use trend::render_trend_html;

use escape::esc;
use head::write_head;
use legend::colour;

/// Renders `runs` as one self-contained HTML page: a header per run, a summary table with one
/// column per run, charts with one colour per run (latency and rates over time, the latency
/// percentile spectrum, status codes) and a table of error kinds.
pub fn render_html(runs: &[HtmlRun]) -> String {
    let mut out = String::with_capacity(64 * 1024);
    // Writing into a String cannot fail; `let _` discards that impossible error.
    let _ = write_page(&mut out, runs);
    out
}

fn write_page(out: &mut String, runs: &[HtmlRun]) -> fmt::Result {
    let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    write_head(out, "report", &names.join(" vs "), "")?;
    let version = runs
        .first()
        .map_or("", |r| r.report.info.belier_version.as_str());
    writeln!(
        out,
        "<header><h1>belier report</h1><p class=\"sub\">belier {} · latency is measured from \
         the intended send to the last response byte</p></header>",
        esc(version)
    )?;
    if runs.is_empty() {
        out.push_str("<p>No runs to show.</p>\n</main>\n</body>\n</html>\n");
        return Ok(());
    }
    let summaries: Vec<Summary> = runs.iter().map(|run| Summary::of(run.report)).collect();
    write_runs(out, runs, &summaries)?;
    write_summary(out, runs, &summaries)?;
    write_steps(out, runs, &summaries)?;
    write_routes(out, runs)?;
    write_held(out, runs)?;
    write_quic(out, runs)?;
    write_slowest(out, runs)?;
    write_server_timing(out, runs)?;
    out.push_str("<h2>Charts</h2>\n");
    let timeline = charts::Timeline::of(runs);
    out.push_str(&charts::latency_over_time(runs, &timeline));
    out.push_str(&charts::rates_over_time(runs, &timeline));
    if let Some(lag) = charts::lag_over_time(runs, &timeline) {
        out.push_str(&lag);
    }
    out.push_str(&distribution::latency_spectrum(runs));
    out.push_str(&distribution::status_codes(runs));
    write_errors(out, runs, &summaries)?;
    out.push_str("</main>\n</body>\n</html>\n");
    Ok(())
}

fn write_runs(out: &mut String, runs: &[HtmlRun], summaries: &[Summary]) -> fmt::Result {
    out.push_str("<h2>Runs</h2>\n<div class=\"runs\">\n");
    for (i, (run, s)) in runs.iter().zip(summaries).enumerate() {
        let r = run.report;
        let info = r.info;
        write!(
            out,
            "<section class=\"run\" style=\"--c:{}\"><h3><i class=\"sw\"></i>{}",
            colour(i),
            esc(&run.name)
        )?;
        if r.interrupted {
            out.push_str(" <span class=\"badge\">interrupted</span>");
        }
        write!(
            out,
            "</h3><div class=\"target\"><b>{}</b> {}</div><dl class=\"facts\">",
            esc(&info.method),
            esc(&info.url)
        )?;
        let facts = [
            ("load", crate::wording::load_line(info)),
            ("connections", connections_fact(r, s)),
            ("threads", info.threads.to_string()),
            ("protocol", info.protocol.clone()),
            (
                "keep-alive",
                if info.keepalive { "on" } else { "off" }.into(),
            ),
            ("started", info.started_at.clone()),
            ("duration", format!("{:.3} s", r.elapsed.as_secs_f64())),
            (
                "stop after",
                crate::wording::bound(info).unwrap_or_else(|| "– (ran until stopped)".into()),
            ),
            ("timeout", format!("{} s", info.timeout_s)),
            ("address", info.address.clone()),
            (
                "host",
                if info.shard_hosts.is_empty() {
                    format!("{} cores, belier {}", info.host_cores, info.belier_version)
                } else {
                    format!(
                        "{}, belier {}",
                        crate::wording::hosts(info),
                        info.belier_version
                    )
                },
            ),
        ];
        for (name, value) in facts {
            write!(out, "<dt>{name}</dt><dd>{}</dd>", esc(&value))?;
        }
        out.push_str("</dl>");
        if r.interrupted {
            out.push_str(
                "<p class=\"warn\">Stopped early by the user; the figures cover the run so far.</p>",
            );
        }
        for w in &r.warnings {
            write!(out, "<p class=\"warn\">Warning: {}</p>", esc(w))?;
        }
        crate::changes::write_html(out, r)?;
        if s.open_loop.is_some() {
            verdict::write_verdict(out, &s.verdict)?;
        }
        out.push_str("</section>\n");
    }
    out.push_str("</div>\n");
    Ok(())
}

/// The run card's connections: a closed loop's number; an open loop's opened and at most open
/// at once, with the limit beside (the limit alone read as what the run used).
fn connections_fact(r: &Report, s: &Summary) -> String {
    if !r.is_open_loop() {
        return r.info.connections.to_string();
    }
    let mut fact = format!(
        "{} opened, at most {} open at once",
        thousands(r.totals.connections_opened()),
        thousands(s.connections_peak)
    );
    if let Some(limit) = r.info.max_connections {
        let _ = write!(fact, " (limit {})", thousands(limit as u64));
    }
    fact
}

/// The summary's rows: a label and a function giving the cell for one run.
type Row = (&'static str, fn(&Summary) -> String);

fn latency_at(s: &Summary, p: f64) -> String {
    if s.latency.count == 0 {
        return "–".into();
    }
    ms(s.latency.at(p).unwrap_or(0))
}

/// The summary row of decoded body bytes.
const DECODED_ROW: &str = "Bytes decoded (--compressed)";

const SUMMARY_ROWS: [Row; 24] = [
    ("Requests", |s| thousands(s.report.totals.requests())),
    ("Succeeded (status < 400)", |s| {
        thousands(s.report.totals.succeeded())
    }),
    ("Success", |s| format!("{:.2} %", s.success_ratio * 100.0)),
    ("Responses (any status)", |s| {
        thousands(s.report.totals.responses())
    }),
    ("Errors (no response)", |s| {
        thousands(s.report.totals.errors())
    }),
    ("Duration", |s| {
        format!("{:.3} s", s.report.elapsed.as_secs_f64())
    }),
    ("Attempted rate", |s| {
        format!("{}/s", rate(s.attempted_rate))
    }),
    ("Throughput (succeeded)", |s| {
        format!("{}/s", rate(s.throughput))
    }),
    ("Bytes in", |s| bytes(s.report.totals.bytes_in() as f64)),
    ("Bytes out", |s| bytes(s.report.totals.bytes_out() as f64)),
    (DECODED_ROW, |s| {
        bytes(s.report.totals.bytes_decoded() as f64)
    }),
    ("Connections opened", |s| {
        thousands(s.report.totals.connections_opened())
    }),
    ("Re-sent (server closed unread)", crate::wording::resent),
    ("TLS handshakes resumed", |s| {
        thousands(s.report.totals.tls_resumed())
    }),
    ("Latency min", |s| latency_cell(s, |l| ms(l.min_us))),
    ("mean", |s| latency_cell(s, |l| ms_f(l.mean_us))),
    ("stdev", |s| latency_cell(s, |l| ms_f(l.stdev_us))),
    ("p50", |s| latency_at(s, 50.0)),
    ("p90", |s| latency_at(s, 90.0)),
    ("p99", |s| latency_at(s, 99.0)),
    ("p99.9", |s| latency_at(s, 99.9)),
    ("p99.99", |s| latency_at(s, 99.99)),
    ("max", |s| latency_cell(s, |l| ms(l.max_us))),
    ("Latency samples", |s| thousands(s.latency.count)),
];

/// `figure` of an open-loop run; a dash for a closed-loop run, which had no schedule (a zero
/// would read as a measurement).
fn open_loop(s: &Summary, figure: impl Fn(&OpenLoop) -> String) -> String {
    s.open_loop.as_ref().map_or_else(|| "–".into(), figure)
}

/// p99 of `l`, in milliseconds.
fn p99(l: &LatencySummary) -> String {
    l.at(99.0).map_or("–".into(), ms)
}

/// The open loop's rows, shown when any run is an open loop.
const OPEN_LOOP_ROWS: [Row; 8] = [
    ("Target rate", |s| {
        open_loop(s, |o| format!("{}/s", rate(o.target_rate)))
    }),
    ("Sent rate", |s| {
        open_loop(s, |_| crate::wording::sent_rate(s))
    }),
    ("Dropped", |s| {
        open_loop(s, |_| thousands(s.report.totals.dropped()))
    }),
    ("Scheduling lag p99", |s| open_loop(s, |o| p99(&o.lag))),
    ("of which belier's own, p99", |s| {
        open_loop(s, |o| p99(&o.dispatch))
    }),
    ("Uncorrected latency p50", |s| {
        open_loop(s, |_| s.uncorrected.at(50.0).map_or("–".into(), ms))
    }),
    ("Uncorrected latency p99", |s| {
        open_loop(s, |_| p99(&s.uncorrected))
    }),
    ("Verdict", |s| {
        open_loop(s, |_| {
            if s.verdict.kept_up {
                "kept up".into()
            } else {
                "WARNING".into()
            }
        })
    }),
];

fn write_summary(out: &mut String, runs: &[HtmlRun], summaries: &[Summary]) -> fmt::Result {
    out.push_str("<h2>Summary</h2>\n<table class=\"summary\"><thead><tr><th></th>");
    for (i, run) in runs.iter().enumerate() {
        write!(
            out,
            "<th style=\"--c:{}\"><i class=\"sw\"></i>{}</th>",
            colour(i),
            esc(&run.name)
        )?;
    }
    out.push_str("</tr></thead><tbody>\n");
    // Decoded bytes only where a run decoded bodies (--compressed), as the text report does.
    let decoded = summaries
        .iter()
        .any(|s| s.report.totals.bytes_decoded() > 0);
    for (label, cell) in SUMMARY_ROWS {
        if label == DECODED_ROW && !decoded {
            continue;
        }
        // Latency rows after the first are indented under it.
        let class = match label {
            "Latency min" => " class=\"group\"",
            "mean" | "stdev" | "p50" | "p90" | "p99" | "p99.9" | "p99.99" | "max" => {
                " class=\"sub\""
            }
            _ => "",
        };
        write!(out, "<tr{class}><th>{label}</th>")?;
        for s in summaries {
            write!(out, "<td>{}</td>", esc(&cell(s)))?;
        }
        out.push_str("</tr>\n");
    }
    if summaries.iter().any(|s| s.open_loop.is_some()) {
        for (k, (label, cell)) in OPEN_LOOP_ROWS.into_iter().enumerate() {
            let class = match (k, label) {
                (0, _) => " class=\"group\"",
                (_, "of which belier's own, p99") => " class=\"sub\"",
                _ => "",
            };
            write!(out, "<tr{class}><th>{}</th>", esc(label))?;
            for s in summaries {
                write!(out, "<td>{}</td>", esc(&cell(s)))?;
            }
            out.push_str("</tr>\n");
        }
    }
    let message_rows = crate::messages::rows(summaries);
    for (k, (label, cell)) in message_rows.iter().enumerate() {
        let class = if k == 0 { " class=\"group\"" } else { "" };
        write!(out, "<tr{class}><th>{}</th>", esc(label))?;
        for s in summaries {
            write!(out, "<td>{}</td>", esc(&cell(s)))?;
        }
        out.push_str("</tr>\n");
    }
    out.push_str(
        "</tbody></table>\n<p class=\"note\">Latency covers complete responses only \
                  (any status), in milliseconds with microsecond resolution.</p>\n",
    );
    if !message_rows.is_empty() {
        let note = crate::messages::note(summaries);
        writeln!(out, "<p class=\"note\">{}</p>", esc(note))?;
    }
    Ok(())
}

/// Per-step tables (Locust's), one per run of scripted users, with its thresholds.
fn write_steps(out: &mut String, runs: &[HtmlRun], summaries: &[Summary]) -> fmt::Result {
    for (i, (run, s)) in runs.iter().zip(summaries).enumerate() {
        let r = run.report;
        if !s.has_steps && r.thresholds.is_empty() && r.scenarios.is_empty() {
            continue;
        }
        writeln!(
            out,
            "<h2 style=\"--c:{}\"><i class=\"sw\"></i>{} of {}</h2>",
            colour(i),
            crate::steps::table_names(s.has_targets).0,
            esc(&run.name)
        )?;
        if s.has_steps {
            out.push_str(if s.has_targets {
                "<table class=\"steps\"><thead><tr><th>target</th>"
            } else {
                "<table class=\"steps\"><thead><tr><th>step</th>"
            });
            out.push_str(
                "<th>requests</th>\
                 <th>failures</th><th>fail %</th><th>rate/s</th><th>min</th><th>p50</th>\
                 <th>p90</th><th>p99</th><th>max</th></tr></thead><tbody>\n",
            );
            for l in &s.steps {
                let mut cells = l.cells(ms, "–");
                cells[2].push_str(" %");
                writeln!(
                    out,
                    "<tr><th>{}</th><td>{}</td></tr>",
                    esc(&l.name),
                    cells.join("</td><td>")
                )?;
            }
            out.push_str("</tbody></table>\n");
            if !s.checks.is_empty() {
                out.push_str(
                    "<table class=\"steps\"><thead><tr><th>check</th><th>passed</th>\
                     <th>failed</th><th>pass %</th></tr></thead><tbody>\n",
                );
                for c in &s.checks {
                    writeln!(
                        out,
                        "<tr><th>{}</th><td>{}</td><td>{}</td><td>{}</td></tr>",
                        esc(&c.name),
                        thousands(c.passed),
                        thousands(c.failed),
                        crate::format::pass_percent(c.pass_ratio)
                    )?;
                }
                out.push_str("</tbody></table>\n");
            }
            if !s.metrics.is_empty() {
                out.push_str(
                    "<table class=\"steps\"><thead><tr><th>custom metric</th><th>kind</th>\
                     <th>count</th><th>rate/s</th><th>min</th><th>p50</th><th>p90</th>\
                     <th>p99</th><th>max</th></tr></thead><tbody>\n",
                );
                for m in &s.metrics {
                    writeln!(
                        out,
                        "<tr><th>{}</th><td>{}</td></tr>",
                        esc(&m.name),
                        m.cells(ms, "–").join("</td><td>")
                    )?;
                }
                out.push_str("</tbody></table>\n");
            }
            writeln!(
                out,
                "<p>Iterations completed: {} ({}/s).</p>",
                thousands(r.totals.iterations()),
                rate(s.iteration_rate)
            )?;
        }
        if !r.scenarios.is_empty() {
            out.push_str(
                "<table class=\"steps\"><thead><tr><th>scenario (own load, at once)</th>\
                 <th>load</th><th>requests</th><th>failures</th><th>fail %</th><th>rate/s</th>\
                 <th>p50</th><th>p90</th><th>p99</th></tr></thead><tbody>\n",
            );
            for sc in &r.scenarios {
                let mut cells = crate::scenarios::cells(sc, ms, "–");
                cells[2].push_str(" %");
                writeln!(
                    out,
                    "<tr><th>{}</th><td>{}</td><td>{}</td></tr>",
                    esc(&sc.name),
                    esc(&sc.load),
                    cells.join("</td><td>")
                )?;
            }
            out.push_str("</tbody></table>\n");
        }
        if !r.thresholds.is_empty() {
            out.push_str("<ul class=\"thresholds\">\n");
            for t in &r.thresholds {
                let stopped = t.stopped_run.as_ref().map_or(String::new(), |stop| {
                    format!(
                        "; <strong>stopped the run at {:.1} s</strong> ({})",
                        stop.at_ms as f64 / 1e3,
                        esc(&stop.actual)
                    )
                });
                writeln!(
                    out,
                    "<li>{} <code>{}</code> actual {}{stopped}</li>",
                    if t.passed { "✓" } else { "✗" },
                    esc(&t.expression),
                    esc(&t.actual)
                )?;
            }
            out.push_str("</ul>\n");
        }
    }
    Ok(())
}

/// Each run's Backends and Sources tables (see [`crate::routes`]), when it spread its
/// connections over several addresses.
fn write_routes(out: &mut String, runs: &[HtmlRun]) -> fmt::Result {
    for (i, run) in runs.iter().enumerate() {
        let (remote, local) = crate::routes::tables(run.report);
        for (title, lines) in [("Backends", remote), ("Sources", local)] {
            if lines.is_empty() {
                continue;
            }
            writeln!(
                out,
                "<h2 style=\"--c:{}\"><i class=\"sw\"></i>{title} of {}</h2>",
                colour(i),
                esc(&run.name)
            )?;
            out.push_str(
                "<table class=\"steps\"><thead><tr><th>address</th><th>requests</th>\
                 <th>share</th><th>errors</th><th>connections</th><th>p50</th><th>p99</th>\
                 </tr></thead><tbody>\n",
            );
            let time = |us: Option<u64>| us.map_or("–".into(), ms);
            for l in &lines {
                writeln!(
                    out,
                    "<tr><th>{}</th><td>{}</td><td>{:.1} %</td><td>{}</td><td>{}</td>\
                     <td>{}</td><td>{}</td></tr>",
                    esc(&l.address),
                    thousands(l.requests),
                    l.share * 100.0,
                    thousands(l.errors),
                    thousands(l.connections),
                    time(l.p50_us),
                    time(l.p99_us)
                )?;
            }
            out.push_str("</tbody></table>\n");
        }
    }
    Ok(())
}

/// Each run's server timing table (see [`crate::server_timing`]), when it read the header.
fn write_server_timing(out: &mut String, runs: &[HtmlRun]) -> fmt::Result {
    for (i, run) in runs.iter().enumerate() {
        let Some(f) = crate::server_timing::figures(run.report) else {
            continue;
        };
        writeln!(
            out,
            "<h2 style=\"--c:{}\"><i class=\"sw\"></i>Server timing of {}</h2>\n<p>{}; the \
             server's time is its <code>total</code> metric, else its largest; outside is the \
             latency minus it</p>",
            colour(i),
            esc(&run.name),
            esc(&f.counted())
        )?;
        out.push_str(
            "<table class=\"steps\"><thead><tr><th>metric</th><th>count</th><th>p50</th>\
             <th>p90</th><th>p99</th><th>max</th></tr></thead><tbody>\n",
        );
        for l in f.lines() {
            writeln!(
                out,
                "<tr><th>{}</th><td>{}</td></tr>",
                esc(&l.name),
                l.cells(" ms").join("</td><td>")
            )?;
        }
        out.push_str("</tbody></table>\n");
    }
    Ok(())
}

/// Each run's slowest requests (see [`crate::exemplars`]), with their traces when traced.
fn write_slowest(out: &mut String, runs: &[HtmlRun]) -> fmt::Result {
    for (i, run) in runs.iter().enumerate() {
        let lines = crate::exemplars::lines(run.report);
        if lines.is_empty() {
            continue;
        }
        writeln!(
            out,
            "<h2 style=\"--c:{}\"><i class=\"sw\"></i>Slowest requests of {}</h2>",
            colour(i),
            esc(&run.name)
        )?;
        out.push_str(
            "<table class=\"steps slowest\"><thead><tr><th>latency</th><th>answer</th>\
             <th>due</th><th>trace</th><th>span</th><th>step</th></tr></thead><tbody>\n",
        );
        for l in &lines {
            let cells = [
                l.answer.as_str(),
                l.due.as_str(),
                l.trace.as_deref().unwrap_or(""),
                l.span.as_deref().unwrap_or(""),
                l.step.as_deref().unwrap_or(""),
            ];
            let cells: Vec<String> = cells.iter().map(|c| esc(c).to_string()).collect();
            writeln!(
                out,
                "<tr><th>{}</th><td>{}</td></tr>",
                esc(&l.latency),
                cells.join("</td><td>")
            )?;
        }
        out.push_str("</tbody></table>\n");
    }
    Ok(())
}

/// Each run's held connections (`--hold`), when it held some.
fn write_held(out: &mut String, runs: &[HtmlRun]) -> fmt::Result {
    for (i, run) in runs.iter().enumerate() {
        let Some(h) = crate::held::figures(run.report) else {
            continue;
        };
        writeln!(
            out,
            "<h2 style=\"--c:{}\"><i class=\"sw\"></i>Held connections of {}</h2>",
            colour(i),
            esc(&run.name)
        )?;
        let failed: Vec<String> = h
            .failed
            .iter()
            .map(|(kind, n)| format!("{} {}", esc(kind), thousands(*n)))
            .collect();
        writeln!(
            out,
            "<p>held {} at the most, {} at the fewest once that many had opened, {} at the end \
             (at intervals' ends); opened {}, ended by the server {}, failed {}{}</p>",
            thousands(h.most),
            thousands(h.fewest),
            thousands(h.at_end),
            thousands(h.opened),
            thousands(h.closed),
            thousands(h.failed.values().sum()),
            match failed.is_empty() {
                true => String::new(),
                false => format!(" ({})", failed.join(", ")),
            }
        )?;
    }
    Ok(())
}

/// Each run's QUIC figures, when it went over HTTP/3.
fn write_quic(out: &mut String, runs: &[HtmlRun]) -> fmt::Result {
    for (i, run) in runs.iter().enumerate() {
        let Some(lines) = crate::quic::plain_lines(run.report) else {
            continue;
        };
        writeln!(
            out,
            "<h2 style=\"--c:{}\"><i class=\"sw\"></i>QUIC of {}</h2>",
            colour(i),
            esc(&run.name)
        )?;
        out.push_str("<ul>");
        for line in &lines {
            write!(out, "<li>{}</li>", esc(line))?;
        }
        out.push_str("</ul>\n");
    }
    Ok(())
}

fn write_errors(out: &mut String, runs: &[HtmlRun], summaries: &[Summary]) -> fmt::Result {
    out.push_str("<h2>Errors</h2>\n");
    let kinds: Vec<ErrorKind> = ErrorKind::ALL
        .into_iter()
        .filter(|&k| summaries.iter().any(|s| s.error(k).is_some()))
        .collect();
    if kinds.is_empty() {
        out.push_str("<p>No errors: every request got a complete response.</p>\n");
        return Ok(());
    }
    out.push_str("<table class=\"errors\"><thead><tr><th>kind</th>");
    for (i, run) in runs.iter().enumerate() {
        write!(
            out,
            "<th style=\"--c:{}\"><i class=\"sw\"></i>{}</th>",
            colour(i),
            esc(&run.name)
        )?;
    }
    out.push_str("<th class=\"example\">example</th></tr></thead><tbody>\n");
    for kind in kinds {
        write!(
            out,
            "<tr><th>{}<br><code>{}</code></th>",
            kind.description(),
            kind.name()
        )?;
        for s in summaries {
            let (n, share) = s.error(kind).map_or((0, 0.0), |e| (e.count, e.share));
            write!(
                out,
                "<td>{}<br><small>{:.2} %</small></td>",
                thousands(n),
                share * 100.0
            )?;
        }
        out.push_str("<td class=\"example\">");
        for (i, s) in summaries.iter().enumerate() {
            if let Some(example) = s.error(kind).and_then(|e| e.example) {
                write!(
                    out,
                    "<div style=\"--c:{}\"><i class=\"sw\"></i>{}</div>",
                    colour(i),
                    esc(example)
                )?;
            }
        }
        out.push_str("</td></tr>\n");
    }
    out.push_str("</tbody></table>\n");
    Ok(())
}
