//! Recording for belier.
//!
//! Workers record every finished request into a [`Recorder`]: an HDR latency histogram with
//! microsecond resolution plus counters for status codes, error kinds and wire bytes. Recorders
//! merge with `+=`, so each worker keeps its own and nothing is shared per request. A
//! [`Collector`] receives per-worker interval recorders (one per second by default), merges the
//! ones that cover the same interval into a [`Series`] point and into the run's total.
//!
//! Memory is bounded for any run length: histograms have a fixed size, and the series coarsens
//! itself once it holds [`series::MAX_POINTS`] points.
//!
//! This crate is synchronous and does no I/O.
#![deny(missing_docs)]

mod collector;
mod custom;
mod error_kind;
mod exemplars;
mod extremes;
mod held;
mod histogram;
mod latency;
mod messages;
mod quic;
mod recorder;
mod restore;
mod routes;
mod row;
mod sample;
pub mod series;
mod server_timing;
pub mod significance;
mod step;
mod trace;

pub use collector::{Collector, Settled};
pub use custom::{CustomMetric, MetricKind, MetricRow};
pub use error_kind::ErrorKind;
pub use exemplars::{unix_us, wall_clock, Exemplar, Exemplars, EXEMPLARS_KEPT};
pub use extremes::Range;
pub use held::Held;
pub use histogram::{Metric, DIAGNOSTIC_SIGFIG, HISTOGRAM_MAX_US, HISTOGRAM_SIGFIG};
pub use latency::{value_at_percentile, LatencySummary, REPORTED_PERCENTILES};
pub use messages::{
    CallMessages, MessageCounts, MessageTimes, MessageUnit, Messages, Reconnection, StreamedBody,
    KEPT_TIMES,
};
pub use quic::{Quic, MOST_ENDS, OTHER_END};
pub use recorder::{Counters, Recorder};
pub use restore::{check_rows, RestoreError, MOST_ROWS};
pub use routes::{AddressCounts, AddressRow, Route, Routes};
pub use row::{Row, RowCounts};
pub use sample::{grpc_code_name, Outcome, Sample, GRPC_CODES};
pub use series::{Gauges, Point, Series};
pub use server_timing::{
    FigureCounts, FigureRow, ServerTimes, StoredTiming, TimingCounts, TimingHeader,
    TimingHistogram, LONGEST_METRIC_NAME, MOST_SERVER_METRICS, TOTAL_METRIC,
};
pub use step::{CheckCounts, StepCounts, StepRow};
pub use trace::{SpanId, Trace, TraceId, TRACEPARENT_LEN};
