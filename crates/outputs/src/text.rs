//! Prometheus' text exposition format (0.0.4): the pull exporter's page and the body pushed to
//! a Pushgateway.

use std::fmt::Write as _;

use crate::families::Family;

/// `families` in the text format, each series with `common` labels first.
pub fn render(families: &[Family], common: &[(String, String)]) -> String {
    let mut out = String::with_capacity(4096);
    for family in families {
        let kind = match family.kind {
            crate::Type::Counter => "counter",
            crate::Type::Gauge => "gauge",
            crate::Type::Histogram => "histogram",
        };
        let name = family.name;
        let _ = writeln!(out, "# HELP {name} {}\n# TYPE {name} {kind}", family.help);
        for point in &family.points {
            out.push_str(name);
            out.push_str(point.suffix);
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
            let _ = writeln!(out, " {}", point.value);
        }
    }
    out
}

/// Escapes a label value (backslash, double quote, newline).
pub fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
