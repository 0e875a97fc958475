//! Plan scripts, in Rhai: `script:` steps and the `before_request` / `after_response` hooks of
//! request steps, for the logic YAML cannot say (sign a request, branch on a response, count a
//! custom metric, end the iteration).
//!
//! Rhai was measured against Lua 5.4 (mlua, vendored) with `bench/script-lang.sh`: Lua ran the
//! same signing hook about 1.45 times as fast (1 µs a call less), but Rhai is pure Rust (no C build, no FFI), has
//! operation, depth and size limits built in, reaches nothing outside what belier registers
//! (no files, network, processes or module imports), and its compiled scripts (`AST`) are
//! `Send + Sync`, so one compilation is shared by every worker thread while each thread owns
//! its engine (the runtime's, built on [`engine`]) and each call its own scope: no lock on the hot path.
//!
//! A script sees the user's variables it names (`vars.token`), and, in a hook, the request
//! (`request.headers`, `request.body`, ...) or the response (`response.status`,
//! `response.body`, `json(response.body)`); it counts custom metrics (`counter("name", n)`,
//! `trend("name", ms)`) and may end the iteration (`end_iteration()`). Which variables it
//! reads and sets and which metrics it counts are read from its text when the plan loads, so
//! templates after it are checked as after an extraction and metrics have names for reports
//! and thresholds.

mod compile;
mod compiled;
mod language;

pub(crate) use compile::compile;
pub use compiled::{Hook, Script};
pub use language::{engine, MAX_OPERATIONS};

use belier_engine::user::{CustomMetric, MetricKind};

use crate::threshold::{Metric, Threshold};

/// Whether threshold `t` measures something custom metric `m` has: a counter its `count`
/// and `rate`; a trend those and its values' `pN`, `mean`, `min`, `max`.
pub(crate) fn threshold_fits(m: &CustomMetric, t: &Threshold) -> Result<(), String> {
    let fits = match t.metric {
        Metric::Count | Metric::Rate | Metric::Requests => true,
        Metric::Percentile(_) | Metric::Mean | Metric::Min | Metric::Max => {
            m.kind == MetricKind::Trend
        }
        Metric::ErrorRate | Metric::Checks | Metric::Message(_) => false,
    };
    if fits {
        return Ok(());
    }
    Err(format!(
        "`{}` is a custom {}: its thresholds measure {}",
        m.name,
        m.kind.name(),
        match m.kind {
            MetricKind::Counter => "`count` or `rate`",
            MetricKind::Trend => "`count`, `rate`, `pN`, `mean`, `min` or `max`",
        }
    ))
}
