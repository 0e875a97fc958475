//! The per-scenario table of a plan whose scenarios had loads of their own: each executor's
//! figures (kept in the results file's end line) as every format shows them.

use belier_results::ScenarioFigures;

/// Requests, failures, fail % (two decimals), rate, p50, p90 and p99 as `show` formats
/// microseconds (`none` without responses), for every format's table.
pub(crate) fn cells(s: &ScenarioFigures, show: impl Fn(u64) -> String, none: &str) -> [String; 7] {
    let latency = |us: Option<u64>| us.map_or(none.to_string(), &show);
    [
        crate::format::thousands(s.requests),
        crate::format::thousands(s.failures),
        format!("{:.2}", s.failure_ratio() * 100.0),
        crate::format::rate(s.rate),
        latency(s.p50_us),
        latency(s.p90_us),
        latency(s.p99_us),
    ]
}

/// The per-scenario table as text (nothing for a run of one load).
pub(crate) fn write_text(out: &mut String, r: &crate::Report) -> std::fmt::Result {
    use std::fmt::Write;

    use crate::format::{column_width, cut, ms, thousands, NAME_COLUMN};
    if r.scenarios.is_empty() {
        return Ok(());
    }
    let names = r.scenarios.iter().map(|s| s.name.as_str());
    let width = column_width(names, NAME_COLUMN, "scenario".len());
    writeln!(
        out,
        "\nScenarios  (each its own load, run at the same time; latency from intended start)"
    )?;
    writeln!(
        out,
        "  {:<width$}{:>10}{:>10}{:>9}{:>10}{:>11}{:>11}{:>11}  load",
        "scenario", "requests", "failures", "fail %", "rate/s", "p50", "p90", "p99"
    )?;
    for s in &r.scenarios {
        let [requests, failures, fail, per_s, p50, p90, p99] = cells(s, ms, "-");
        writeln!(
            out,
            "  {:<width$}{requests:>10}{failures:>10}{fail:>9}{per_s:>10}{p50:>11}{p90:>11}{p99:>11}  {}{}",
            cut(&s.name, NAME_COLUMN),
            s.load,
            s.arrivals
                .map_or(String::new(), |a| format!(" ({} arrivals)", thousands(a))),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use belier_results::ScenarioFigures;

    use crate::fixtures::{info, report, results};
    use crate::{render_json, render_markdown, render_text, NamedReport};

    #[test]
    fn figures_and_tables_of_each_executor() {
        let (totals, series) = results();
        let f = ScenarioFigures::of(
            "pay | now",
            "open loop",
            true,
            &totals,
            Duration::from_secs(2),
        );
        assert_eq!((f.requests, f.rate), (1000, 500.0));
        assert_eq!(f.arrivals, Some(totals.scheduled()));
        assert!(f.p50_us <= f.p90_us && f.p90_us <= f.p99_us && f.p50_us.is_some());
        let info = info();
        let mut r = report(&info, &totals, &series);
        assert!(!render_text(&r).contains("Scenarios"));
        r.scenarios = vec![f];
        let text = render_text(&r);
        assert!(text.contains("\nScenarios  (each its own load"), "{text}");
        assert!(text.contains("  pay | now     1,000"), "{text}");
        let markdown = render_markdown(&[NamedReport {
            name: "run",
            report: &r,
        }]);
        assert!(
            markdown.contains("| pay \\| now | open loop | 1,000 | 0 | 0.00 | 500.0 |"),
            "{markdown}"
        );
        let html = crate::render_html(&[crate::HtmlRun {
            name: "run".into(),
            report: &r,
        }]);
        assert!(
            html.contains("<tr><th>pay | now</th><td>open loop</td><td>1,000</td>"),
            "{html}"
        );
        let json: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
        assert_eq!(json["scenarios"][0]["requests"], 1000);
    }
}
