//! belier's shared vocabulary, at the bottom of the crate graph: what a flag, a plan, an SLO
//! and a report all say the same way.
//!
//! - [`duration`]: `250ms`, `1.5s`, `2m30s`, `800µs`, bare seconds — one parser, one
//!   formatter;
//! - [`rate`] (`900/s`) and [`percent`] (`1%`, shares such as `0.05`);
//! - [`condition`]: the one "metric op limit" grammar of plan thresholds, capacity SLOs and
//!   `--fail-if`, each caller naming its own metrics;
//! - [`message_metric`]: the figures of streamed messages those conditions share (`ttft p99`,
//!   `itl p99`, `ws_rtt p99`, `messages_received`), one table of names and aliases;
//! - [`format`](mod@format): milliseconds, latencies, rates and counts as every report shows them;
//! - [`server_timing`]: the server's own account of its time, from `Server-Timing` or a
//!   single-figure header such as `X-Response-Time`.
//!
//! Pure: no I/O, no printing. Errors are typed and name the text they refuse; callers add
//! where it was (a plan's line and column, a flag's name).
#![deny(missing_docs)]

pub mod condition;
pub mod duration;
pub mod format;
pub mod message_metric;
pub mod percent;
pub mod rate;
pub mod server_timing;

pub use condition::Comparison;
