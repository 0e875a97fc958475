//! Changes made to a running test (a level set, a pause, a resume), as every report format
//! lists them. Each format's listing is here, so that the
//! changes read the same in text, Markdown and HTML, and the larger renderers only call in.

use std::fmt::Write as _;

use belier_results::{Change, Model, RunInfo};

use crate::format::rate;
use crate::Report;

/// `at_s` in seconds, without trailing zeros: `2.5 s`, `3 s`, `0.125 s`.
pub(crate) fn at(c: &Change) -> String {
    let s = format!("{:.3}", c.at_s);
    format!("{} s", s.trim_end_matches('0').trim_end_matches('.'))
}

/// A level in the run's unit: `55/s` for an open loop, a plain count for a closed one; a pause
/// is `0` either way.
pub(crate) fn level(info: &RunInfo, level: f64) -> String {
    if level == 0.0 {
        return "0".into();
    }
    let number = rate(level);
    let number = number.strip_suffix(".0").unwrap_or(&number);
    match info.model {
        Model::Open => format!("{number}/s"),
        Model::Closed => number.to_string(),
    }
}

/// `rate 50/s → 55/s`, `pause 55/s → 0`.
pub(crate) fn describe(info: &RunInfo, c: &Change) -> String {
    format!(
        "{} {} → {}",
        c.what.name(),
        level(info, c.from),
        level(info, c.level)
    )
}

/// The text report's "Changes" section; nothing when the run was not steered.
pub(crate) fn write_text(out: &mut String, r: &Report) -> std::fmt::Result {
    if r.changes.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nChanges")?;
    let width = r.changes.iter().map(|c| at(c).len()).max().unwrap_or(0);
    for c in &r.changes {
        writeln!(out, "  at {:<width$}  {}", at(c), describe(r.info, c))?;
    }
    Ok(())
}

/// A Markdown table of the changes, under a run's heading; nothing when it was not steered.
pub(crate) fn write_markdown(out: &mut String, r: &Report) -> std::fmt::Result {
    if r.changes.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nChanges while it ran:\n")?;
    writeln!(
        out,
        "| At | Change | From | To |\n| --: | :-- | --: | --: |"
    )?;
    for c in &r.changes {
        writeln!(
            out,
            "| {} | {} | {} | {} |",
            at(c),
            c.what.name(),
            level(r.info, c.from),
            level(r.info, c.level)
        )?;
    }
    Ok(())
}

/// An HTML list of the changes, in a run's section; nothing when it was not steered. Every
/// piece is belier's own wording or a number, so nothing needs escaping.
pub(crate) fn write_html(out: &mut String, r: &Report) -> std::fmt::Result {
    if r.changes.is_empty() {
        return Ok(());
    }
    out.push_str("<p>Changes while it ran:</p><ul class=\"changes\">");
    for c in &r.changes {
        write!(out, "<li>at {}: {}</li>", at(c), describe(r.info, c))?;
    }
    out.push_str("</ul>");
    Ok(())
}

#[cfg(test)]
mod tests {
    use belier_results::ChangeKind;

    use super::*;
    use crate::{fixtures, seeded};

    #[test]
    fn each_format_lists_the_changes() {
        let run = seeded::steered();
        let report = run.report();
        let text = crate::render_text(&report);
        assert!(
            text.contains(
                "\nChanges\n  at 0.5 s   rate 700/s → 770/s\n  at 0.75 s  pause 770/s → 0\n  \
                 at 1 s     resume 0 → 770/s\n"
            ),
            "{text}"
        );
        let named = [crate::NamedReport {
            name: "steered",
            report: &report,
        }];
        let md = crate::render_markdown(&named);
        assert!(md.contains("| 0.5 s | rate | 700/s | 770/s |\n"), "{md}");
        assert!(md.contains("| 0.75 s | pause | 770/s | 0 |\n"), "{md}");
        let json: serde_json::Value = serde_json::from_str(&crate::render_json(&report)).unwrap();
        assert_eq!(
            json["changes"][0],
            serde_json::json!({"at_s": 0.5, "what": "rate", "level": 770.0, "from": 700.0})
        );
        assert_eq!(json["changes"].as_array().unwrap().len(), 3);
        let schema: serde_json::Value = serde_json::from_str(crate::SCHEMA).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(validator.is_valid(&json));
        let mut broken = json.clone();
        broken["changes"][0]["what"] = "faster".into();
        assert!(!validator.is_valid(&broken));
        let html = crate::render_html(&[crate::HtmlRun {
            name: "steered".into(),
            report: &report,
        }]);
        assert!(html.contains("<li>at 0.5 s: rate 700/s → 770/s</li>"));
        // One marker per change on the rates chart.
        assert_eq!(html.matches("<title>resume 0 → 770/s</title>").count(), 1);
    }

    #[test]
    fn a_run_without_changes_lists_none() {
        let info = fixtures::info();
        let (totals, series) = fixtures::results();
        let report = fixtures::report(&info, &totals, &series);
        assert!(!crate::render_text(&report).contains("Changes"));
        let json: serde_json::Value = serde_json::from_str(&crate::render_json(&report)).unwrap();
        assert!(json.get("changes").is_none());
    }

    #[test]
    fn closed_loop_levels_are_counts() {
        let info = fixtures::info();
        let c = Change {
            at_s: 3.0,
            what: ChangeKind::Connections,
            level: 12.0,
            from: 10.0,
        };
        assert_eq!(describe(&info, &c), "connections 10 → 12");
        assert_eq!(at(&c), "3 s");
        assert_eq!(level(&info, 60.5), "60.5");
    }
}
