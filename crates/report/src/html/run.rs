//! One run as the HTML page takes it: its name and its results.

use crate::Report;

/// One run shown in an HTML report.
#[derive(Debug)]
pub struct HtmlRun<'a> {
    /// Name shown in the header, the tables and the chart legends (e.g. `baseline`).
    pub name: String,
    /// The run's results.
    pub report: &'a Report<'a>,
}
