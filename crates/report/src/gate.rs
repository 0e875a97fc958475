//! A regression gate that knows noise: a `--fail-if` condition judged on two runs' figures
//! and on their per-interval values, so that a change counts only when it passes the limit
//! **and** is significant.
//!
//! The figures (the whole runs' p99, say) give the change; the per-interval values (each
//! interval's p99) give its interval and p-value: the Mann–Whitney U test asks whether the new
//! run's intervals sit apart from the base's more than their spread explains, and a bootstrap
//! gives the interval of the change of their medians. An absolute condition (`p99>250ms`)
//! bounds the new run's value and needs no test.

use std::fmt::Write as _;

use belier_stats::significance::{change_interval, mann_whitney_p};

use crate::compare::{Condition, Limit, Op};

/// The seed of the bootstrap ('belier' in ASCII): the same runs always give the same
/// interval.
const SEED: u64 = 0x6265_6c69_6572;

/// One side of a comparison: its figure of a metric and the metric's per-interval values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Side {
    /// The run's value (for a base of several runs, their median).
    pub figure: f64,
    /// The value in each interval (a base of several runs: all of theirs).
    pub intervals: Vec<f64>,
    /// For a base of several runs, the median of each run's per-interval values: how much
    /// runs of an unchanged target differ from one another (empty for a single run).
    pub runs: Vec<f64>,
}

/// A condition judged.
#[derive(Clone, Debug, PartialEq)]
pub struct Judged {
    /// The condition.
    pub condition: Condition,
    /// The base's figure.
    pub base: f64,
    /// The new run's figure.
    pub new: f64,
    /// The relative change from base to new (`0.1` is +10 %) of the median of the
    /// per-interval values (of the figures when either side has no intervals); `None` when the
    /// base is 0. Medians of intervals, not whole-run figures: one slow interval moves a
    /// run's p99 by more than any limit, and not the median of its intervals' p99s.
    pub change: Option<f64>,
    /// The interval of the change of the per-interval medians at the confidence
    /// `1 - significance`; `None` without intervals on either side.
    pub interval: Option<(f64, f64)>,
    /// The Mann–Whitney U test's two-sided p-value over the per-interval values.
    pub p_value: f64,
    /// How far the base's runs stray from their median (`0.03` is ±3 %), when the base has
    /// several: a change within it is the runs' own variation, never a regression.
    pub noise: Option<f64>,
    /// Whether the figure (or its change) passes the condition's limit, significant or not.
    pub beyond_limit: bool,
    /// Whether the condition holds: beyond its limit, and for a relative one, significant.
    pub regression: bool,
}

/// Judges `condition` from `base` to `new` at the `significance` level (e.g. 0.05).
///
/// A relative condition (`p99>+5%`) holds when the change of the per-interval medians passes
/// the limit, the p-value is below `significance`, the new intervals moved the way the
/// condition looks (up for `>`, down for `<`), and, for a base of several runs, the change is
/// larger than the base's runs differ among themselves: the intervals of one run share its
/// machine's state, so the test over them sees within-run noise only, and the base's runs
/// show the between-run noise. An absolute one (`p99>250ms`) holds when the new figure passes
/// the limit.
pub fn judge(condition: Condition, base: &Side, new: &Side, significance: f64) -> Judged {
    let (b, n) = match base.intervals.is_empty() || new.intervals.is_empty() {
        true => (base.figure, new.figure),
        false => (median(&base.intervals), median(&new.intervals)),
    };
    let change = (b != 0.0).then(|| (n - b) / b);
    let interval = change_interval(&base.intervals, &new.intervals, 1.0 - significance, SEED);
    let p_value = mann_whitney_p(&base.intervals, &new.intervals);
    let noise = spread(&base.runs);
    let beyond = |value: f64, limit: f64| match condition.op {
        Op::Above => value > limit + 1e-9,
        Op::Below => value < limit - 1e-9,
    };
    let (beyond_limit, regression) = match condition.limit {
        Limit::Value(limit) => (beyond(new.figure, limit), beyond(new.figure, limit)),
        Limit::ChangePercent(limit) => {
            let moved = median(&new.intervals) - median(&base.intervals);
            let way = match condition.op {
                Op::Above => moved > 0.0,
                Op::Below => moved < 0.0,
            };
            let beyond_limit = change.is_some_and(|c| beyond(c * 100.0, limit));
            let past_noise = change.is_some_and(|c| c.abs() > noise.unwrap_or(0.0));
            (
                beyond_limit,
                beyond_limit && p_value < significance && way && past_noise,
            )
        }
    };
    Judged {
        condition,
        base: base.figure,
        new: new.figure,
        change,
        interval,
        p_value,
        noise,
        beyond_limit,
        regression,
    }
}

/// The largest distance of `runs` from their median, relative to it; `None` for fewer than
/// two runs or a median of 0.
fn spread(runs: &[f64]) -> Option<f64> {
    if runs.len() < 2 {
        return None;
    }
    let m = median(runs);
    (m != 0.0).then(|| {
        runs.iter()
            .map(|r| (r - m).abs() / m.abs())
            .fold(0.0, f64::max)
    })
}

fn median(v: &[f64]) -> f64 {
    belier_stats::significance::median(v)
}

/// One line per judged condition: the figures, then the change of the per-interval medians,
/// its interval and p-value: `p99: 20.4 → 23.5 (intervals +15.2 %, 95 % interval +13.0 % …
/// +17.1 %, p = 0.0001): regression, p99>+5%`.
pub fn render_judged_text(judged: &[Judged], significance: f64) -> String {
    let mut out = String::new();
    let confidence = (1.0 - significance) * 100.0;
    for j in judged {
        let c = j.condition;
        let percent = |v: f64| format!("{:+.1} %", v * 100.0);
        let change = j.change.map_or_else(|| "base 0".into(), percent);
        let interval = j.interval.map_or_else(
            || "no interval".into(),
            |(low, high)| {
                format!(
                    "{confidence:.0} % interval {} … {}",
                    percent(low),
                    percent(high)
                )
            },
        );
        let within_noise = j
            .noise
            .is_some_and(|n| j.change.is_some_and(|c| c.abs() <= n));
        let verdict = match (j.regression, j.beyond_limit, within_noise) {
            (true, _, _) => "regression",
            (false, true, true) => "beyond the limit, within the runs' own variation",
            (false, true, false) => "beyond the limit, not significant",
            (false, false, _) => "ok",
        };
        let noise = j
            .noise
            .map(|n| format!(", runs vary ±{:.1} %", n * 100.0))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{}: {:.3} → {:.3} (intervals {change}, {interval}, p = {:.4}{noise}): {verdict}, {c}",
            c.metric, j.base, j.new, j.p_value
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::parse_fail_if;

    fn side(figure: f64, intervals: &[f64]) -> Side {
        Side {
            figure,
            intervals: intervals.to_vec(),
            runs: Vec::new(),
        }
    }

    #[test]
    fn a_change_counts_only_past_the_limit_and_significant() {
        let base: Vec<f64> = (0..30).map(|i| 20.0 + (i % 5) as f64 * 0.1).collect();
        let up15: Vec<f64> = base.iter().map(|v| v * 1.15).collect();
        let up3: Vec<f64> = base.iter().map(|v| v * 1.03).collect();
        // Noise: the same spread, a 6 % higher figure, intervals that do not move.
        let noisy: Vec<f64> = base.iter().rev().copied().collect();
        // A tail that jumped: the figure +12 %, the intervals +3 %, significant.
        let up3_figure = 22.4;
        let table = [
            ("p99>+5%", &up15, 23.0, true),
            ("p99>+10%", &up3, 20.6, false),
            ("p99>+10%", &up3, up3_figure, false),
            ("p99>+2%", &up3, 20.6, true),
            ("p99>+5%", &noisy, 21.2, false),
            ("p99<-5%", &up15, 23.0, false),
            ("p99>22ms", &up3, 23.0, true),
            ("p99>22ms", &up15, 21.0, false),
        ];
        for (expr, new, figure, want) in table {
            let c = parse_fail_if(expr).unwrap()[0];
            let j = judge(c, &side(20.0, &base), &side(figure, new), 0.05);
            assert_eq!(j.regression, want, "{expr}: {j:?}");
        }
        let c = parse_fail_if("p99>+5%").unwrap()[0];
        let j = judge(c, &side(20.0, &base), &side(23.0, &up15), 0.05);
        assert!(j.p_value < 1e-6, "{j:?}");
        let (low, high) = j.interval.unwrap();
        assert!(low <= 0.15 && 0.15 <= high, "{low} {high}");
        let text = render_judged_text(&[j], 0.05);
        assert!(
            text.starts_with("p99: 20.000 → 23.000 (intervals +15.0 %, 95 % interval +"),
            "{text}"
        );
        assert!(text.contains("p = 0.0000): regression, p99>+5%"), "{text}");
        // Three intervals a side, far apart: the medians +25 %, not significant.
        let (few, moved) = (
            side(20.0, &[10.0, 30.0, 20.0]),
            side(25.0, &[12.0, 33.0, 25.0]),
        );
        let j = judge(c, &few, &moved, 0.05);
        assert!(!j.regression && j.p_value > 0.05, "{j:?}");
        assert!(render_judged_text(&[j], 0.05)
            .contains("): beyond the limit, not significant, p99>+5%"));
    }

    #[test]
    fn a_change_within_the_base_runs_own_variation_is_no_regression() {
        let base: Vec<f64> = (0..30).map(|i| 20.0 + (i % 5) as f64 * 0.1).collect();
        let up7: Vec<f64> = base.iter().map(|v| v * 1.07).collect();
        let c = parse_fail_if("p99>+5%").unwrap()[0];
        // Five base runs whose medians stray up to 10 % from theirs: +7 % is within it.
        let noisy = Side {
            runs: vec![20.0, 22.0, 19.0, 20.5, 18.0],
            ..side(20.0, &base)
        };
        let j = judge(c, &noisy, &side(21.4, &up7), 0.05);
        assert!(j.p_value < 0.05 && j.beyond_limit && !j.regression, "{j:?}");
        assert_eq!(j.noise, Some(0.1));
        let text = render_judged_text(&[j], 0.05);
        assert!(
            text.contains(", runs vary ±10.0 %): beyond the limit, within the runs' own variation"),
            "{text}"
        );
        // Runs that agree within 2 %: the same +7 % is a regression.
        let steady = Side {
            runs: vec![20.0, 20.2, 19.8, 20.1, 20.0],
            ..side(20.0, &base)
        };
        assert!(judge(c, &steady, &side(21.4, &up7), 0.05).regression);
    }
}
