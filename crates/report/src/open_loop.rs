//! An open loop's schedule and how closely it was kept: the figures the summary shows and the
//! verdict judges, worked out once so that both quote the same lag.

use belier_stats::{LatencySummary, Metric};

use crate::Report;

/// An open loop's schedule and how closely it was kept.
#[derive(Debug)]
pub(crate) struct OpenLoop {
    /// Arrivals that went out (see [`Report::sent`]).
    pub sent: u64,
    /// The configured rate over the span covered (see [`Report::target_rate`]).
    pub target_rate: f64,
    /// Arrivals sent per second of the schedule.
    pub sent_rate: f64,
    /// Scheduling lag of every dispatched request.
    pub lag: LatencySummary,
    /// Of the lag, belier's own lateness (a count of 0 where it was not recorded).
    pub dispatch: LatencySummary,
}

impl OpenLoop {
    /// The figures of `report`'s schedule; `None` for a closed loop.
    pub(crate) fn of(report: &Report) -> Option<OpenLoop> {
        let t = report.totals;
        report.is_open_loop().then(|| OpenLoop {
            sent: report.sent(),
            target_rate: report.target_rate(),
            sent_rate: report.sent_rate(),
            lag: t.summary(Metric::Lag),
            dispatch: t.summary(Metric::Dispatch),
        })
    }
}
