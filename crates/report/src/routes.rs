//! How a run's requests spread over addresses: the per-backend table (each server address of
//! a name, or of `--resolve`) and the per-source table (`--local-address`), with the skew
//! between the largest and the smallest share, from the recorded results for every renderer.
//! A table shows only when its run used more than one address on that side.

use std::collections::BTreeMap;
use std::fmt::{Display, Write as _};

use belier_stats::{value_at_percentile, AddressRow};
use serde_json::{json, Value};

use crate::format::thousands;
use crate::Report;

/// One address's row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AddressLine {
    pub address: String,
    pub requests: u64,
    /// Its share of the table's requests, 0..=1.
    pub share: f64,
    pub errors: u64,
    pub connections: u64,
    /// Latency of its complete responses, µs: p50 and p99 (`None` without any).
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
}

/// The two tables of `report`: by server address and by source address, each empty unless
/// that side had more than one address.
pub(crate) fn tables(report: &Report) -> (Vec<AddressLine>, Vec<AddressLine>) {
    match report.totals.routes() {
        Some(routes) => (lines(&routes.remote), lines(&routes.local)),
        None => (Vec::new(), Vec::new()),
    }
}

fn lines<A: Display>(rows: &BTreeMap<A, AddressRow>) -> Vec<AddressLine> {
    if rows.len() < 2 {
        return Vec::new();
    }
    let total: u64 = rows.values().map(|r| r.counts.requests).sum();
    rows.iter()
        .map(|(addr, row)| {
            let h = row.values_us();
            let at = |p| (!h.is_empty()).then(|| value_at_percentile(h, p));
            AddressLine {
                address: addr.to_string(),
                requests: row.counts.requests,
                share: row.counts.requests as f64 / total.max(1) as f64,
                errors: row.counts.errors,
                connections: row.counts.connections,
                p50_us: at(50.0),
                p99_us: at(99.0),
            }
        })
        .collect()
}

/// The largest and the smallest share of a table's rows.
fn skew(lines: &[AddressLine]) -> (f64, f64) {
    let shares = lines.iter().map(|l| l.share);
    let largest = shares.clone().fold(0.0, f64::max);
    let smallest = shares.fold(1.0, f64::min);
    (largest, smallest)
}

/// The text report's tables, `Backends` then `Sources`.
pub(crate) fn write_text(out: &mut String, report: &Report) -> std::fmt::Result {
    let (remote, local) = tables(report);
    write_table(out, "Backends", &remote)?;
    write_table(out, "Sources", &local)
}

fn write_table(out: &mut String, title: &str, lines: &[AddressLine]) -> std::fmt::Result {
    if lines.is_empty() {
        return Ok(());
    }
    let (largest, smallest) = skew(lines);
    writeln!(
        out,
        "\n{title}  ({} addresses; largest share {:.1} %, smallest {:.1} %)",
        lines.len(),
        largest * 100.0,
        smallest * 100.0
    )?;
    let width = lines
        .iter()
        .map(|l| l.address.len())
        .max()
        .unwrap_or(0)
        .max(7);
    writeln!(
        out,
        "  {:<width$}  {:>10}  {:>7}  {:>8}  {:>6}  {:>9}  {:>9}",
        "address", "requests", "share", "errors", "conns", "p50 ms", "p99 ms"
    )?;
    let ms = |us: Option<u64>| us.map_or("–".into(), |us| format!("{:.3}", us as f64 / 1000.0));
    for l in lines {
        writeln!(
            out,
            "  {:<width$}  {:>10}  {:>5.1} %  {:>8}  {:>6}  {:>9}  {:>9}",
            l.address,
            thousands(l.requests),
            l.share * 100.0,
            thousands(l.errors),
            thousands(l.connections),
            ms(l.p50_us),
            ms(l.p99_us)
        )?;
    }
    Ok(())
}

/// The markdown report's tables, `Backends` then `Sources`, as the text report has them.
pub(crate) fn write_markdown(out: &mut String, report: &Report) -> std::fmt::Result {
    let (remote, local) = tables(report);
    for (title, lines) in [("Backends", remote), ("Sources", local)] {
        if lines.is_empty() {
            continue;
        }
        let (largest, smallest) = skew(&lines);
        writeln!(
            out,
            "\n{title}: {} addresses; largest share {:.1} %, smallest {:.1} %.\n",
            lines.len(),
            largest * 100.0,
            smallest * 100.0
        )?;
        writeln!(
            out,
            "| Address | Requests | Share | Errors | Connections | p50 | p99 |\n\
             | :-- | --: | --: | --: | --: | --: | --: |"
        )?;
        let ms =
            |us: Option<u64>| us.map_or("–".into(), |us| format!("{:.3} ms", us as f64 / 1000.0));
        for l in &lines {
            writeln!(
                out,
                "| `{}` | {} | {:.1} % | {} | {} | {} | {} |",
                l.address,
                thousands(l.requests),
                l.share * 100.0,
                thousands(l.errors),
                thousands(l.connections),
                ms(l.p50_us),
                ms(l.p99_us)
            )?;
        }
    }
    Ok(())
}

/// The statistics CSV's address rows, after a run's `Aggregated` row: `backend ADDRESS` and
/// `source ADDRESS`, each with its requests, errors (as failures), rate over the run, and
/// p50 and p99 (min, p90, max and bytes are empty: not kept by address).
pub(crate) fn write_csv(
    out: &mut String,
    run: &str,
    report: &Report,
    per_s: &dyn Fn(u64) -> f64,
) -> std::fmt::Result {
    let (remote, local) = tables(report);
    let rows = remote
        .iter()
        .map(|l| ("backend", l))
        .chain(local.iter().map(|l| ("source", l)));
    let ms = |us: Option<u64>| us.map_or(String::new(), |us| format!("{:.3}", us as f64 / 1000.0));
    for (side, l) in rows {
        let failed = l.errors as f64 / l.requests.max(1) as f64 * 100.0;
        writeln!(
            out,
            "{run},{side} {},{},{},{failed:.2},{:.3},{:.3},,{},,{},,,",
            l.address,
            l.requests,
            l.errors,
            per_s(l.requests),
            per_s(l.errors),
            ms(l.p50_us),
            ms(l.p99_us)
        )?;
    }
    Ok(())
}

/// The JSON document's `backends` and `sources`, each present only when that side had more
/// than one address: the rows, and the skew.
pub(crate) fn json(report: &Report) -> Vec<(&'static str, Value)> {
    let (remote, local) = tables(report);
    [("backends", remote), ("sources", local)]
        .into_iter()
        .filter(|(_, lines)| !lines.is_empty())
        .map(|(key, lines)| {
            let (largest, smallest) = skew(&lines);
            let rows: Vec<Value> = lines
                .iter()
                .map(|l| {
                    json!({
                        "address": l.address,
                        "requests": l.requests,
                        "share": l.share,
                        "errors": l.errors,
                        "connections": l.connections,
                        "p50_us": l.p50_us,
                        "p99_us": l.p99_us,
                    })
                })
                .collect();
            let doc = json!({
                "addresses": rows,
                "largest_share": largest,
                "smallest_share": smallest,
            });
            (key, doc)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use belier_stats::{Outcome, Route, Sample};

    use crate::seeded;

    /// [`seeded::base`] with 30 requests over two server addresses from one source: 20 to
    /// the first (one connection, 2–3 ms), 10 to the second (one connection, one a refusal).
    fn spread() -> seeded::Run {
        let mut run = seeded::base();
        let t = Instant::now();
        let local = "127.0.1.1".parse().unwrap();
        for i in 0..30u64 {
            let (remote, outcome) = match i {
                0..20 => ("127.0.0.11:80", Outcome::Response { status: 200 }),
                29 => (
                    "127.0.0.12:80",
                    Outcome::Error(belier_stats::ErrorKind::ClosedMidBody),
                ),
                _ => ("127.0.0.12:80", Outcome::Response { status: 200 }),
            };
            let sample = Sample::simulated(t, 0, 2_000 + i * 50, outcome);
            let route = Route {
                remote: remote.parse().unwrap(),
                local,
            };
            run.totals.record(&sample);
            run.totals.record_route(&sample, route, matches!(i, 0 | 20));
        }
        run
    }

    #[test]
    fn each_format_shows_the_backends_and_one_source_shows_no_table() {
        let run = spread();
        let report = run.report();
        let text = crate::render_text(&report);
        assert!(
            text.contains("\nBackends  (2 addresses; largest share 66.7 %, smallest 33.3 %)\n"),
            "{text}"
        );
        assert!(!text.contains("Sources"), "one source: no table\n{text}");
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with("127.0.0.12:80"))
            .unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells[..6],
            ["127.0.0.12:80", "10", "33.3", "%", "1", "1"],
            "{row}"
        );
        let doc: serde_json::Value = serde_json::from_str(&crate::render_json(&report)).unwrap();
        let backends = &doc["backends"];
        assert_eq!(backends["addresses"][0]["requests"], 20);
        assert_eq!(backends["addresses"][1]["errors"], 1);
        assert!(doc.get("sources").is_none());
        let schema: serde_json::Value = serde_json::from_str(crate::SCHEMA).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}");
        let markdown = crate::render_markdown(&[crate::NamedReport {
            name: "spread",
            report: &report,
        }]);
        assert!(
            markdown.contains("| `127.0.0.11:80` | 20 | 66.7 % | 0 | 1 |"),
            "{markdown}"
        );
        let html = crate::render_html(&[crate::HtmlRun {
            name: "spread".into(),
            report: &report,
        }]);
        assert!(
            html.contains("Backends of spread</h2>"),
            "no Backends table"
        );
        let csv = crate::render_csv_stats(&[crate::NamedReport {
            name: "spread",
            report: &report,
        }]);
        let rows: Vec<&str> = csv.lines().filter(|l| l.contains(",backend ")).collect();
        assert_eq!(rows.len(), 2, "{csv}");
        let cells: Vec<&str> = rows[1].split(',').collect();
        assert_eq!(cells.len(), 14, "{}", rows[1]);
        assert_eq!(
            cells[..5],
            ["spread", "backend 127.0.0.12:80", "10", "1", "10.00"]
        );
        assert!(
            html.contains(
                "<tr><th>127.0.0.12:80</th><td>10</td><td>33.3 %</td><td>1</td><td>1</td>"
            ),
            "no row of the second address"
        );
    }
}
