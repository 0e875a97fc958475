//! Whether two sets of per-interval values differ by more than noise: a Mann–Whitney U test
//! (its p-value) and a bootstrap interval of the relative change of their medians.
//!
//! A run's per-interval values (each interval's p99, say) are its samples of how the system
//! behaved; a regression gate that compares two runs' whole-run figures alone raises false
//! alarms on a noisy machine. These tests ask whether the new run's intervals sit above (or
//! below) the base's more than their spread explains. Both are rank or resampling methods:
//! they assume nothing about the shape of latency distributions.

/// Resamples [`change_interval`] draws: enough for a stable 95 % interval, cheap for series of
/// hundreds of intervals.
pub const RESAMPLES: usize = 2_000;

/// The two-sided p-value of the Mann–Whitney U test of `a` against `b`: the chance of ranks
/// at least as far apart as these if both came from one distribution. Uses the normal
/// approximation with the tie correction and the continuity correction (as SciPy's
/// `mannwhitneyu(method="asymptotic")`); 1 when either side is empty or every value is tied.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() {
        return 1.0;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&v| (v, true))
        .chain(b.iter().map(|&v| (v, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut rank_sum_a, mut ties, mut i) = (0.0, 0.0, 0);
    while i < all.len() {
        let j = i + all[i..].iter().take_while(|v| v.0 == all[i].0).count();
        // Tied values share the mean of the ranks they span (ranks count from 1).
        let rank = (i + 1 + j) as f64 / 2.0;
        rank_sum_a += rank * all[i..j].iter().filter(|v| v.1).count() as f64;
        let t = (j - i) as f64;
        ties += t * t * t - t;
        i = j;
    }
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let n = n1 + n2;
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if variance <= 0.0 {
        return 1.0;
    }
    let z = ((u - n1 * n2 / 2.0).abs() - 0.5).max(0.0) / variance.sqrt();
    erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

/// The median of `values`; 0 when there are none.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    match v.len() % 2 {
        1 => v[mid],
        _ => (v[mid - 1] + v[mid]) / 2.0,
    }
}

/// The `confidence` (e.g. 0.95) percentile-bootstrap interval of the relative change of the
/// median from `base` to `new` (`0.1` is +10 %), from [`RESAMPLES`] resamples drawn with a
/// generator seeded by `seed`, so the same inputs always give the same interval. `None` when
/// either side is empty or the base's resampled median can be 0.
pub fn change_interval(
    base: &[f64],
    new: &[f64],
    confidence: f64,
    seed: u64,
) -> Option<(f64, f64)> {
    if base.is_empty() || new.is_empty() {
        return None;
    }
    let mut rng = SplitMix(seed);
    let mut changes = Vec::with_capacity(RESAMPLES);
    let (mut b, mut n) = (vec![0.0; base.len()], vec![0.0; new.len()]);
    for _ in 0..RESAMPLES {
        b.iter_mut().for_each(|x| *x = base[rng.below(base.len())]);
        n.iter_mut().for_each(|x| *x = new[rng.below(new.len())]);
        let m = median(&b);
        if m == 0.0 {
            return None;
        }
        changes.push(median(&n) / m - 1.0);
    }
    changes.sort_by(f64::total_cmp);
    let tail = (1.0 - confidence.clamp(0.0, 1.0)) / 2.0;
    let at = |q: f64| changes[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
    Some((at(tail), at(1.0 - tail)))
}

/// SplitMix64: a small, well-mixed generator for resampling (not for secrets).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (the modulo's bias is below 2⁻⁴⁰ for any series length here).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The complementary error function, by the rational approximation of Numerical Recipes
/// (`erfcc`, fractional error below 1.2e-7 everywhere).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mann_whitney_p_values_match_the_formula_with_ties_and_continuity() {
        // Expected values: the same test written independently in Python with math.erfc.
        let table: [(&[f64], &[f64], f64); 5] = [
            (
                &[1., 2., 3., 4., 5.],
                &[6., 7., 8., 9., 10.],
                0.012_185_780_355,
            ),
            (
                &[1., 2., 3., 4., 5., 6.],
                &[3., 4., 5., 6., 7., 8., 9.],
                0.072_556_959_803,
            ),
            (
                &[10., 10., 10., 11.],
                &[10., 11., 11., 12., 12.],
                0.116_143_442_878,
            ),
            (&[1., 2., 3.], &[1., 2., 3.], 1.0),
            (&[5., 5., 5.], &[5., 5.], 1.0),
        ];
        for (a, b, want) in table {
            let got = mann_whitney_p(a, b);
            assert!((got - want).abs() < 1e-6, "{a:?} vs {b:?}: {got} != {want}");
            // Symmetric: which side is the base does not matter.
            assert!((mann_whitney_p(b, a) - got).abs() < 1e-12);
        }
        assert_eq!(mann_whitney_p(&[], &[1.0]), 1.0);
    }

    #[test]
    fn medians_of_odd_even_and_empty_sets() {
        for (v, want) in [
            (&[3., 1., 2.][..], 2.0),
            (&[4., 1., 3., 2.], 2.5),
            (&[], 0.0),
        ] {
            assert_eq!(median(v), want, "{v:?}");
        }
    }

    #[test]
    fn the_bootstrap_interval_holds_a_clear_shift_and_repeats() {
        let base: Vec<f64> = (0..30).map(|i| 100.0 + (i % 5) as f64).collect();
        let new: Vec<f64> = base.iter().map(|v| v * 1.2).collect();
        let (low, high) = change_interval(&base, &new, 0.95, 7).unwrap();
        assert!(
            low > 0.1 && high < 0.3 && low <= 0.2 && 0.2 <= high,
            "{low} {high}"
        );
        assert_eq!(change_interval(&base, &new, 0.95, 7), Some((low, high)));
        // No change: the interval holds 0.
        let (low, high) = change_interval(&base, &base, 0.95, 7).unwrap();
        assert!(low <= 0.0 && 0.0 <= high, "{low} {high}");
        assert_eq!(change_interval(&[], &new, 0.95, 7), None);
        assert_eq!(change_interval(&[0.0, 0.0], &new, 0.95, 7), None);
    }

    #[test]
    fn erfc_matches_known_values() {
        for (x, want) in [
            (0.0, 1.0),
            (1.0, 0.157_299_207),
            (2.0, 0.004_677_735),
            (-1.0, 1.842_700_793),
        ] {
            assert!((erfc(x) - want).abs() < 1e-6, "erfc({x})");
        }
    }
}
