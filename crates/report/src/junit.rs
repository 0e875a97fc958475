//! JUnit XML, for CI systems that show test results: each run is a test suite, each of its
//! plan's thresholds a test case that fails when the threshold did not hold, saying what the
//! run reached against the limit. The structure is described by `schema/junit.xsd`, which
//! tests validate output against with xmllint.
//!
//! A run without thresholds has no pass/fail rules of its own, and JUnit invents none: it gets
//! one test case, `run`, that fails only when the run is not to be trusted as it stands (it
//! was interrupted, or the verdict found that the generator did not keep up).
//!
//! A run of streaming calls carries its messages' figures as the suite's `<properties>`
//! (`messages_received`, `first_message_p99_us`, `gap_p99_us`…), for CI systems that chart
//! them; other runs have none.
//!
//! Everything that came from the user or the network (run names, expressions, findings) goes
//! through [`xml`], so it cannot end an attribute or open an element.

use std::fmt::Write as _;

use crate::summary::{MessageFigures, Summary};
use crate::NamedReport;

/// One test case: its class, its name and, when it failed, its message, type and details.
pub(crate) struct Case {
    pub classname: &'static str,
    pub name: String,
    pub failure: Option<Failure>,
}

/// Why a [`Case`] failed.
pub(crate) struct Failure {
    /// One line: measured against the limit.
    pub message: String,
    /// `threshold`, `run` or `compare`.
    pub kind: &'static str,
    /// The element's text: the details, one per line.
    pub details: String,
}

/// One test suite: a run, or a comparison.
pub(crate) struct Suite {
    pub name: String,
    /// Seconds.
    pub time: f64,
    /// RFC 3339; `None` leaves the attribute out.
    pub timestamp: Option<String>,
    /// `<properties>`: name and value; none leaves the element out.
    pub properties: Vec<(String, String)>,
    pub cases: Vec<Case>,
}

/// Renders `runs` as a JUnit XML document: one `<testsuite>` per run.
pub fn render_junit(runs: &[NamedReport]) -> String {
    let suites: Vec<Suite> = runs.iter().map(suite).collect();
    render_suites(&suites)
}

fn suite(run: &NamedReport) -> Suite {
    let r = run.report;
    let cases = if r.thresholds.is_empty() {
        vec![run_case(run)]
    } else {
        r.thresholds
            .iter()
            .map(|t| Case {
                classname: "belier.thresholds",
                name: t.expression.clone(),
                // One that stopped the run failed, whatever the whole run's figure became.
                failure: (!t.passed || t.stopped_run.is_some()).then(|| Failure {
                    message: format!("actual {}, limit {}", t.actual, t.expression),
                    kind: "threshold",
                    details: match &t.stopped_run {
                        Some(stop) => format!(
                            "threshold '{}' failed at {:.1} s ({}) and stopped the run; the \
                             run reached {}",
                            t.expression,
                            stop.at_ms as f64 / 1e3,
                            stop.actual,
                            t.actual
                        ),
                        None => format!(
                            "threshold '{}' did not hold: the run reached {}",
                            t.expression, t.actual
                        ),
                    },
                }),
            })
            .collect()
    };
    Suite {
        name: run.name.to_string(),
        time: r.elapsed.as_secs_f64(),
        timestamp: Some(r.info.started_at.clone()),
        properties: Summary::of(r)
            .messages
            .as_ref()
            .map(message_properties)
            .unwrap_or_default(),
        cases,
    }
}

/// A run's streamed messages as properties: counts, then p50, p99 and max of each time it
/// recorded, µs (as the JSON report's `first_message_us`, `gap_us`, `round_trip_us`).
fn message_properties(m: &MessageFigures) -> Vec<(String, String)> {
    let mut p = vec![
        (
            "messages_received".to_string(),
            m.counts.received.to_string(),
        ),
        ("messages_sent".to_string(), m.counts.sent.to_string()),
    ];
    for (name, times) in [
        ("first_message", &m.first),
        ("gap", &m.gaps),
        ("round_trip", &m.round_trips),
    ] {
        if times.count == 0 {
            continue;
        }
        for (stat, value) in [
            ("p50", times.at(50.0).unwrap_or(0)),
            ("p99", times.at(99.0).unwrap_or(0)),
            ("max", times.max_us),
        ] {
            p.push((format!("{name}_{stat}_us"), value.to_string()));
        }
    }
    p
}

/// The single case of a run without thresholds: it fails when the run was interrupted or the
/// generator did not keep up, with the verdict's findings.
fn run_case(run: &NamedReport) -> Case {
    let s = Summary::of(run.report);
    let mut findings = Vec::new();
    if run.report.interrupted {
        findings.push("the run was interrupted before its end".to_string());
    }
    findings.extend(s.verdict.findings.iter().cloned());
    Case {
        classname: "belier.run",
        name: "run".into(),
        failure: (!findings.is_empty()).then(|| Failure {
            message: findings.join("; "),
            kind: "run",
            details: format!("{}\nchecked: {}", findings.join("\n"), s.verdict.summary),
        }),
    }
}

/// The document for `suites`: the XML declaration, then `<testsuites>` with their totals.
pub(crate) fn render_suites(suites: &[Suite]) -> String {
    let mut out = String::with_capacity(512 + suites.len() * 1024);
    // Writing into a String cannot fail; `let _` discards that impossible error.
    let _ = write_suites(&mut out, suites);
    out
}

fn write_suites(out: &mut String, suites: &[Suite]) -> std::fmt::Result {
    let count = |s: &Suite| s.cases.len();
    let failed = |s: &Suite| s.cases.iter().filter(|c| c.failure.is_some()).count();
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="belier" tests="{}" failures="{}" time="{:.3}">"#,
        suites.iter().map(count).sum::<usize>(),
        suites.iter().map(failed).sum::<usize>(),
        suites.iter().map(|s| seconds(s.time)).sum::<f64>(),
    )?;
    for s in suites {
        write!(
            out,
            r#"  <testsuite name="{}" tests="{}" failures="{}" errors="0" skipped="0" time="{:.3}""#,
            xml(&s.name),
            count(s),
            failed(s),
            seconds(s.time),
        )?;
        if let Some(at) = &s.timestamp {
            write!(out, r#" timestamp="{}""#, xml(at))?;
        }
        writeln!(out, ">")?;
        if !s.properties.is_empty() {
            writeln!(out, "    <properties>")?;
            for (name, value) in &s.properties {
                writeln!(
                    out,
                    r#"      <property name="{}" value="{}"/>"#,
                    xml(name),
                    xml(value)
                )?;
            }
            writeln!(out, "    </properties>")?;
        }
        for c in &s.cases {
            write!(
                out,
                r#"    <testcase classname="{}" name="{}" time="0""#,
                c.classname,
                xml(&c.name)
            )?;
            match &c.failure {
                None => writeln!(out, "/>")?,
                Some(f) => writeln!(
                    out,
                    ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
                    xml(&f.message),
                    f.kind,
                    xml(&f.details)
                )?,
            }
        }
        writeln!(out, "  </testsuite>")?;
    }
    writeln!(out, "</testsuites>")
}

/// A duration for a `time` attribute: a non-negative, finite number of seconds (a results
/// file may say anything).
fn seconds(s: f64) -> f64 {
    if s.is_finite() && s > 0.0 {
        s
    } else {
        0.0
    }
}

/// `s` as XML text or an attribute value: the five markup characters as entities, line
/// breaks and tabs as character references (an attribute would fold them into spaces), and
/// the characters XML 1.0 cannot hold at all (other control characters) as U+FFFD.
pub(crate) fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::golden;
    use crate::seeded::{self, BASE, NEW};

    #[test]
    fn thresholds_are_test_cases_and_a_failed_one_says_actual_and_limit() {
        let run = seeded::with_steps();
        let report = run.report();
        let out = render_junit(&[NamedReport {
            name: "shop",
            report: &report,
        }]);
        golden::check("report-steps.junit.xml", &out);
        assert!(out.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"));
        assert!(out.contains(r#"<testsuites name="belier" tests="2" failures="1" time="1.500">"#));
        assert!(out.contains(
            r#"<testsuite name="shop" tests="2" failures="1" errors="0" skipped="0" time="1.500" timestamp="2026-11-22T10:00:00Z">"#
        ));
        assert!(out.contains(
            r#"<testcase classname="belier.thresholds" name="p99 &lt; 200ms" time="0"/>"#
        ));
        assert!(out.contains(
            r#"<failure message="actual 4.00 %, limit login: error_rate &lt; 1%" type="threshold">"#
        ));
        assert_eq!(out.matches("<failure ").count(), 1);
        // A threshold that stopped the run fails its case, even if the whole run met it.
        let mut stopped = seeded::with_steps();
        stopped.thresholds[0].stopped_run = Some(belier_results::ThresholdStop {
            at_ms: 1_000,
            actual: "p99 = 250.0 ms".into(),
        });
        let report = stopped.report();
        let out = render_junit(&[NamedReport {
            name: "shop",
            report: &report,
        }]);
        assert_eq!(out.matches("<failure ").count(), 2, "{out}");
        assert!(
            out.contains("threshold &apos;p99 &lt; 200ms&apos; failed at 1.0 s (p99 = 250.0 ms) and stopped the run; the run reached 3.7 ms"),
            "{out}"
        );
    }

    #[test]
    fn runs_without_thresholds_are_one_case_that_fails_only_when_untrustworthy() {
        let out = seeded::render_pair(render_junit);
        golden::check("report.junit.xml", &out);
        assert_eq!(out.matches("<testsuite ").count(), 2);
        assert_eq!(out.matches(r#"name="run""#).count(), 2);
        // The base run kept up; the new one dropped arrivals, which its failure quotes.
        let new_suite = &out[out.find(&xml(NEW)).unwrap()..];
        let base_suite = &out[out.find(&format!("name=\"{BASE}\"")).unwrap()..];
        assert!(!base_suite[..base_suite.find("</testsuite>").unwrap()].contains("<failure"));
        assert!(new_suite.contains(r#"<failure message="the target rate was not reached"#));
        // The run name's quotes and pipe stay inside the attribute.
        assert!(out.contains(r#"name="new | &quot;tuned&quot;, v2""#));

        let base = seeded::base();
        let interrupted = crate::Report {
            interrupted: true,
            ..base.report()
        };
        let out = render_junit(&[NamedReport {
            name: BASE,
            report: &interrupted,
        }]);
        assert!(out
            .contains(r#"<failure message="the run was interrupted before its end" type="run">"#));
    }

    #[test]
    fn a_run_of_streams_carries_its_messages_as_properties() {
        let run = seeded::streaming();
        let report = run.report();
        let out = render_junit(&[NamedReport {
            name: "streams",
            report: &report,
        }]);
        assert!(
            out.contains(
                "    <properties>\n      <property name=\"messages_received\" value=\"20000\"/>\n"
            ),
            "{out}"
        );
        assert!(
            out.contains(r#"<property name="gap_p50_us" value="250"/>"#),
            "{out}"
        );
        assert!(
            out.contains(r#"<property name="first_message_p99_us""#),
            "{out}"
        );
        // No round trips recorded: no properties for them.
        assert!(!out.contains("round_trip"), "{out}");
        // The properties come before the cases, as the schema orders them.
        assert!(out.find("</properties>") < out.find("<testcase "), "{out}");
    }

    #[test]
    fn markup_and_control_characters_are_escaped() {
        assert_eq!(
            xml("a & b < c > d \"e\" 'f'\n\t\u{1}"),
            "a &amp; b &lt; c &gt; d &quot;e&quot; &apos;f&apos;&#10;&#9;\u{fffd}"
        );
    }
}
