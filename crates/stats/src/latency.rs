use hdrhistogram::Histogram;
use serde::Serialize;

/// Percentiles every report shows, in order.
pub const REPORTED_PERCENTILES: [f64; 8] = [50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0];

/// Summary statistics of a latency histogram, in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Number of values.
    pub count: u64,
    /// Smallest value (0 when empty).
    pub min_us: u64,
    /// Arithmetic mean.
    pub mean_us: f64,
    /// Standard deviation.
    pub stdev_us: f64,
    /// Largest value (0 when empty).
    pub max_us: u64,
    /// `(percentile, value)` for each of [`REPORTED_PERCENTILES`].
    pub percentiles_us: Vec<(f64, u64)>,
}

impl LatencySummary {
    /// Summarises `h`. An empty histogram gives all zeros rather than NaN.
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary {
                count: 0,
                min_us: 0,
                mean_us: 0.0,
                stdev_us: 0.0,
                max_us: 0,
                percentiles_us: REPORTED_PERCENTILES.iter().map(|&p| (p, 0)).collect(),
            };
        }
        LatencySummary {
            count: h.len(),
            min_us: h.min(),
            mean_us: h.mean(),
            stdev_us: h.stdev(),
            max_us: h.max(),
            percentiles_us: REPORTED_PERCENTILES
                .iter()
                .map(|&p| (p, value_at_percentile(h, p)))
                .collect(),
        }
    }

    /// The same summary with `range`'s exact min and max (a histogram's are the edges of their
    /// buckets, up to 0.1 % off) and every percentile kept within them.
    pub fn within(mut self, range: Option<crate::extremes::Range>) -> Self {
        if let Some(r) = range.filter(|_| self.count > 0) {
            self.min_us = r.min;
            self.max_us = r.max;
            for (_, v) in &mut self.percentiles_us {
                *v = (*v).clamp(r.min, r.max);
            }
        }
        self
    }

    /// The value at percentile `p`, if `p` is one of [`REPORTED_PERCENTILES`].
    pub fn at(&self, p: f64) -> Option<u64> {
        self.percentiles_us
            .iter()
            .find(|(q, _)| *q == p)
            .map(|&(_, v)| v)
    }
}

/// The value at percentile `p`, ranked as HdrHistogram's Java and Python implementations rank
/// it: `p` is lowered by one ulp first, so that `99.9 / 100`, which is a hair above 0.999 in
/// binary, does not round the rank up by one (p99.9 of 20,000 values is the 19,980th, not the
/// 19,981st).
pub fn value_at_percentile(h: &Histogram<u64>, p: f64) -> u64 {
    let lowered = if p > 0.0 {
        f64::from_bits(p.to_bits() - 1)
    } else {
        p
    };
    h.value_at_percentile(lowered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_values_give_expected_percentiles() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in 1..=10_000u64 {
            h.record(v).unwrap();
        }
        let s = LatencySummary::of(&h);
        assert_eq!(s.count, 10_000);
        assert_eq!(s.min_us, 1);
        // HDR reports the top of the value's bucket: within 0.1 % at 3 significant digits.
        assert!((10_000..=10_010).contains(&s.max_us), "max {}", s.max_us);
        // 3 significant digits: within 0.1 %.
        let p50 = s.at(50.0).unwrap() as f64;
        assert!((p50 - 5_000.0).abs() <= 5.0, "p50 {p50}");
        let p99 = s.at(99.0).unwrap() as f64;
        assert!((p99 - 9_900.0).abs() <= 10.0, "p99 {p99}");
        assert!((s.mean_us - 5_000.5).abs() < 5.0);
    }

    #[test]
    fn percentile_ranks_match_the_reference_implementations() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in 1..=20_000u64 {
            h.record(v).unwrap();
        }
        // Rank ⌈0.999 × 20,000⌉ = 19,980, as Java's and Python's HdrHistogram give.
        assert_eq!(value_at_percentile(&h, 99.9), h.highest_equivalent(19_980));
        assert_eq!(value_at_percentile(&h, 50.0), h.highest_equivalent(10_000));
        assert_eq!(value_at_percentile(&h, 100.0), h.max());
        assert_eq!(value_at_percentile(&h, 0.0), h.min().max(1));
    }

    #[test]
    fn empty_histogram_is_all_zero() {
        let h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        let s = LatencySummary::of(&h);
        assert_eq!(s.count, 0);
        assert_eq!(s.at(99.0), Some(0));
        assert_eq!(s.mean_us, 0.0);
    }
}
