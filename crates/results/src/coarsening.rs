//! How many intervals each record of a results file spans, so that a file stays small at any
//! rate while its totals stay exact.
//!
//! A record holds lossless histograms, and their encoded size grows with the number of
//! distinct latency buckets a second of traffic touches: an hour of one-second records takes
//! about 6 MB at 1,000 requests a second but 18 MB at 20,000/s. Merging neighbouring seconds
//! into one record costs far less than the seconds apart, because their histograms share most
//! buckets. So the writer watches what each record costs and doubles the record width when
//! both the record and the whole file so far cost more than [`BUDGET_BYTES_PER_HOUR`] allows
//! for the time they cover, and so on until records fit the budget. The file's pace keeps
//! noise from coarsening a run that fits (a costly record in a cheap file, a slow patch) and
//! lets a run spend, at full resolution, what a cheaper start saved; the record's own cost
//! keeps a costly start from pushing widths further than the current traffic needs. A file
//! thus stays near the budget: over an hour, the budget plus the first minute and the few
//! records written while widening. Rules that keep files readable and mergeable:
//!
//! - The first [`FULL_RESOLUTION`] of a run is always written at the full interval (short runs
//!   and warm-ups keep their detail, and a run killed early still has every interval).
//! - Widths are powers of two times the interval and only grow.
//! - A record of width `w` intervals starts at a multiple of `w` from the start of the run:
//!   the same grid the live series uses when it halves its points. Shards that widened at
//!   different moments therefore have records that either nest or do not overlap, and merged
//!   they give points on that grid.
//!
//! Only the time resolution of the series gets coarser: totals and whole-run percentiles
//! come from merging every record, and each record is exact for its span.

use std::time::Duration;

use belier_stats::Gauges;

/// Bytes the interval records of a results file may take per hour of run, at any request
/// rate; the first [`FULL_RESOLUTION`] and the records written while widening come on top
/// (a few hundred kilobytes at 100,000 requests a second). Chosen so that an hour stays well
/// under 10 MB.
pub const BUDGET_BYTES_PER_HOUR: u64 = 7_000_000;

/// Start of a run that is always written one interval per record, whatever it costs.
pub const FULL_RESOLUTION: Duration = Duration::from_secs(60);

/// The width rule of one results file, fed with what each record cost.
#[derive(Clone, Debug)]
pub struct Coarsening {
    interval: Duration,
    budget_bytes_per_hour: u64,
    full_resolution: Duration,
    /// Intervals per record now, a power of two.
    width: u64,
    /// Bytes of the records written so far.
    bytes: u64,
    /// A record cost more than the budget: widen at the next boundary of the wider grid.
    widen: bool,
}

impl Coarsening {
    /// The rule for a file of `interval`-long intervals: one interval per record to begin with.
    pub fn new(interval: Duration) -> Self {
        Coarsening::with_budget(interval, BUDGET_BYTES_PER_HOUR, FULL_RESOLUTION)
    }

    /// The rule with another budget and full-resolution start than the defaults (tests use it
    /// to coarsen small files).
    pub fn with_budget(
        interval: Duration,
        budget_bytes_per_hour: u64,
        full_resolution: Duration,
    ) -> Self {
        Coarsening {
            interval,
            budget_bytes_per_hour,
            full_resolution,
            width: 1,
            bytes: 0,
            widen: false,
        }
    }

    /// Intervals a record spans now.
    pub fn width(&self) -> u64 {
        self.width
    }

    /// Where the record holding interval `index` starts, and how many intervals it spans;
    /// called when `index` is the first interval past the previous record, in order.
    pub fn record_for(&mut self, index: u64) -> (u64, u64) {
        let start = index - index % self.width;
        if self.widen && start.is_multiple_of(self.width * 2) {
            // On the wider grid's boundary: the wider record holds `index` and starts at
            // `start` too, since `start` is a multiple of the new width.
            self.width *= 2;
            self.widen = false;
        }
        (start, self.width)
    }

    /// Notes that the record ending at interval `end` (exclusive) spanned `intervals`
    /// intervals and took `bytes`; decides whether the next ones are wider.
    pub fn recorded(&mut self, end: u64, intervals: u64, bytes: usize) {
        self.bytes += bytes as u64;
        let end_s = self.interval.as_secs_f64() * end as f64;
        if end_s <= self.full_resolution.as_secs_f64() || intervals < self.width {
            // The full-resolution start, or a record cut short (a gap, the end of a run):
            // its cost says nothing about a full record's.
            return;
        }
        let per_s = self.budget_bytes_per_hour as f64 / 3_600.0;
        let record_s = self.interval.as_secs_f64() * intervals as f64;
        if bytes as f64 > per_s * record_s && self.bytes as f64 > per_s * end_s {
            self.widen = true;
        }
    }
}

/// Gauges of consecutive intervals of one writer as one record: the peaks, as the live
/// series keeps them when it merges points.
pub(crate) fn over_time(a: Gauges, b: Gauges) -> Gauges {
    Gauges {
        in_flight: a.in_flight.max(b.in_flight),
        cpu: a.cpu.max(b.cpu),
        connections_peak: a.connections_peak.max(b.connections_peak),
        // The fewest held: a hold that broke in one of the intervals stays seen.
        held: a.held.min(b.held),
    }
}

/// `n` intervals, exactly (no floating point, so shards agree on every boundary).
pub(crate) fn intervals_to_time(interval: Duration, n: u64) -> Duration {
    let nanos = interval.as_nanos().saturating_mul(u128::from(n));
    let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX);
    Duration::new(secs, (nanos % 1_000_000_000) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives the rule over `n` one-second intervals, each record costing `cost(width)`;
    /// returns the records (start, width).
    fn drive(n: u64, mut cost: impl FnMut(u64) -> usize) -> Vec<(u64, u64)> {
        let mut c = Coarsening::new(Duration::from_secs(1));
        let mut records = Vec::new();
        let mut index = 0;
        while index < n {
            let (start, width) = c.record_for(index);
            assert_eq!(start, index, "records follow each other");
            let end = (start + width).min(n);
            c.recorded(end, end - start, cost(width));
            records.push((start, width));
            index = end;
        }
        records
    }

    #[test]
    fn cheap_records_never_widen() {
        let records = drive(3_600, |_| 1_000);
        assert_eq!(records.len(), 3_600);
        assert!(records.iter().all(|&(_, w)| w == 1));
    }

    #[test]
    fn costly_records_widen_after_the_first_minute_on_the_grid() {
        // Each doubling of the width adds 40 % to a record's bytes: 5,000 bytes a
        // second is over the budget (1,944 bytes a second) until records span 8 s.
        let cost = |w: u64| (5_000.0 * 1.4f64.powf((w as f64).log2())) as usize;
        let records = drive(3_600, cost);
        let first_wide = records.iter().position(|&(_, w)| w > 1).unwrap();
        assert_eq!(
            records[first_wide],
            (62, 2),
            "widens on a boundary of 2 after 60 s"
        );
        for &(start, width) in &records {
            assert!(width.is_power_of_two());
            assert_eq!(
                start % width,
                0,
                "record at {start} off its grid of {width}"
            );
        }
        let widths: Vec<u64> = records.iter().map(|&(_, w)| w).collect();
        assert!(widths.windows(2).all(|p| p[0] <= p[1]), "widths only grow");
        assert_eq!(widths.last(), Some(&8));
        let bytes: usize = records.iter().map(|&(_, w)| cost(w)).sum();
        assert!(bytes < 7_000_000, "{bytes}");
    }

    #[test]
    fn costly_records_in_a_file_within_its_pace_do_not_widen() {
        // One record in ten costs twice the budget (a slow patch): the file as a whole fits.
        let records = drive(3_600, {
            let mut n = 0;
            move |_| {
                n += 1;
                if n % 10 == 0 {
                    4_000
                } else {
                    1_500
                }
            }
        });
        assert!(records.iter().all(|&(_, w)| w == 1));
    }

    #[test]
    fn a_cheap_start_is_spent_before_widening() {
        // Ten minutes at 500 bytes a second, then 5,000: one-second records go on until the
        // file has spent what the start saved (about 4 ¾ minutes more), then widen.
        let mut c = Coarsening::new(Duration::from_secs(1));
        for i in 0..600 {
            c.recorded(i + 1, 1, 500);
        }
        let mut i = 600;
        while c.record_for(i).1 == 1 {
            c.recorded(i + 1, 1, 5_000);
            i += 1;
        }
        assert!((880..890).contains(&i), "widened at {i} s");
    }

    #[test]
    fn a_short_record_does_not_decide() {
        let mut c = Coarsening::new(Duration::from_secs(1));
        // Past the first minute, but one interval of a two-interval grid: ignored.
        c.width = 2;
        c.recorded(101, 1, 1_000_000);
        assert_eq!(c.record_for(102), (102, 2));
        c.recorded(104, 2, 1_000_000);
        assert_eq!(c.record_for(104), (104, 4));
        assert_eq!(c.width(), 4);
    }
}
