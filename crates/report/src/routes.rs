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
