//! Each run's colour, and the legends that name the runs and the line styles of a chart.

use std::fmt::Write as _;

use super::escape::esc;
use super::run::HtmlRun;

/// Run colours, chosen to stay distinct for colour-blind readers (Okabe–Ito); cycled past eight.
const COLOURS: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#7a7a7a", "#8c564b",
];

pub(super) fn colour(run: usize) -> &'static str {
    COLOURS[run % COLOURS.len()]
}

/// A line style in a legend: `class` is one of the page's `.key i` styles.
#[derive(Clone, Copy)]
pub(super) struct LineKey {
    pub(super) label: &'static str,
    pub(super) class: &'static str,
}

impl LineKey {
    pub(super) const fn new(label: &'static str, class: &'static str) -> LineKey {
        LineKey { label, class }
    }
}

/// A legend: each run's colour and name, then the line styles used for each statistic.
pub(super) fn legend(runs: &[HtmlRun], keys: &[LineKey]) -> String {
    let mut s = String::from("<div class=\"legend\">");
    for (i, run) in runs.iter().enumerate() {
        let _ = write!(
            s,
            "<span class=\"key\"><i class=\"sq\" style=\"--c:{}\"></i>{}</span>",
            colour(i),
            esc(&run.name)
        );
    }
    if !keys.is_empty() {
        s.push_str("<span class=\"sep\"></span>");
    }
    for k in keys {
        let _ = write!(
            s,
            "<span class=\"key\"><i class=\"{}\"></i>{}</span>",
            k.class, k.label
        );
    }
    s.push_str("</div>");
    s
}
