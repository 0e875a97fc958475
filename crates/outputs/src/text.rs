//! Prometheus' text exposition format (0.0.4): the pull exporter's page and the body pushed to
//! a Pushgateway; and OpenMetrics 1.0, the same series with the latency histogram's exemplars,
//! for scrapers that ask for it.

use std::fmt::Write as _;

use crate::families::Family;

/// The media type of [`render_openmetrics`]'s page.
pub const OPENMETRICS_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `families` in the text format, each series with `common` labels first.
pub fn render(families: &[Family], common: &[(String, String)]) -> String {
    let mut out = String::with_capacity(4096);
    for family in families {
        let name = family.name;
        let _ = writeln!(
            out,
            "# HELP {name} {}\n# TYPE {name} {}",
            family.help,
            kind(family)
        );
        for point in &family.points {
            out.push_str(name);
            out.push_str(point.suffix);
            write_labels(&mut out, common, point);
            let _ = writeln!(out, " {}", point.value);
        }
    }
    out
}

/// `families` in OpenMetrics 1.0 text, without its `# EOF` (the caller may add series of its
/// own before it): a counter's family is named without its `_total`, which its series keep,
/// and the latency histogram's buckets carry their exemplars (`# {trace_id="…",span_id="…"}
/// VALUE TIMESTAMP`).
pub fn render_openmetrics(families: &[Family], common: &[(String, String)]) -> String {
    let mut out = String::with_capacity(4096);
    for family in families {
        let (name, series) = match family.kind {
            crate::Type::Counter => {
                let base = family.name.strip_suffix("_total").unwrap_or(family.name);
                (base, format!("{base}_total"))
            }
            _ => (family.name, family.name.to_string()),
        };
        let _ = writeln!(
            out,
            "# HELP {name} {}\n# TYPE {name} {}",
            // OpenMetrics' HELP is an escaped string: no bare backslash, quote or newline.
            escape(family.help),
            kind(family)
        );
        for point in &family.points {
            out.push_str(&series);
            out.push_str(point.suffix);
            write_labels(&mut out, common, point);
            let _ = write!(out, " {}", point.value);
            if let Some(e) = &point.exemplar {
                let _ = write!(
                    out,
                    " # {{trace_id=\"{}\",span_id=\"{}\"}} {} {:.6}",
                    escape(&e.trace_id),
                    escape(&e.span_id),
                    e.value,
                    e.timestamp
                );
            }
            out.push('\n');
        }
    }
    out
}

fn kind(family: &Family) -> &'static str {
    match family.kind {
        crate::Type::Counter => "counter",
        crate::Type::Gauge => "gauge",
        crate::Type::Histogram => "histogram",
    }
}

/// `{common…,point's…}`, or nothing without labels.
fn write_labels(out: &mut String, common: &[(String, String)], point: &crate::Point) {
    let labels = common
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .chain(point.labels.iter().map(|(k, v)| (*k, v.as_str())));
    let mut first = true;
    for (key, value) in labels {
        out.push(if first { '{' } else { ',' });
        first = false;
        let _ = write!(out, "{key}=\"{}\"", escape(value));
    }
    if !first {
        out.push('}');
    }
}

/// Escapes a label value (backslash, double quote, newline).
pub fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Point, PointExemplar, Type};

    fn families() -> Vec<Family> {
        let point = |suffix, labels: Vec<(&'static str, String)>, value, exemplar| Point {
            suffix,
            labels,
            value,
            exemplar,
        };
        vec![
            Family {
                name: "belier_requests_total",
                help: "Requests that ended: status=\"CODE\".",
                kind: Type::Counter,
                points: vec![point("", vec![("status", "200".into())], 7.0, None)],
            },
            Family {
                name: "belier_request_duration_seconds",
                help: "Latency.",
                kind: Type::Histogram,
                points: vec![
                    point(
                        "_bucket",
                        vec![("le", "0.25".into())],
                        7.0,
                        Some(PointExemplar {
                            trace_id: "4bf92f3577b34da6a3ce929d0e0e4736".into(),
                            span_id: "00f067aa0ba902b7".into(),
                            value: 0.2015,
                            timestamp: 1_795_341_600.25,
                        }),
                    ),
                    point("_bucket", vec![("le", "+Inf".into())], 7.0, None),
                    point("_sum", vec![], 1.2, None),
                    point("_count", vec![], 7.0, None),
                ],
            },
        ]
    }

    #[test]
    fn openmetrics_names_counters_without_total_and_carries_exemplars() {
        let common = [("run".to_string(), "a".to_string())];
        let page = render_openmetrics(&families(), &common);
        assert_eq!(
            page,
            "# HELP belier_requests Requests that ended: status=\\\"CODE\\\".\n\
             # TYPE belier_requests counter\n\
             belier_requests_total{run=\"a\",status=\"200\"} 7\n\
             # HELP belier_request_duration_seconds Latency.\n\
             # TYPE belier_request_duration_seconds histogram\n\
             belier_request_duration_seconds_bucket{run=\"a\",le=\"0.25\"} 7 \
             # {trace_id=\"4bf92f3577b34da6a3ce929d0e0e4736\",span_id=\"00f067aa0ba902b7\"} \
             0.2015 1795341600.250000\n\
             belier_request_duration_seconds_bucket{run=\"a\",le=\"+Inf\"} 7\n\
             belier_request_duration_seconds_sum{run=\"a\"} 1.2\n\
             belier_request_duration_seconds_count{run=\"a\"} 7\n"
        );
        // The 0.0.4 text has no exemplars and keeps the counter's family name whole.
        let text = render(&families(), &common);
        assert!(
            text.contains("# TYPE belier_requests_total counter\n"),
            "{text}"
        );
        assert!(!text.contains("trace_id"), "{text}");
    }
}
