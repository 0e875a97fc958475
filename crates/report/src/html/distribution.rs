//! The report's distribution charts: the latency spectrum and the status codes.

use std::collections::{BTreeMap, BTreeSet};

use belier_stats::{Metric, Recorder};

use super::charts::{figure, ms, LATENCY_STYLES};
use super::legend::{colour, legend};
use super::run::HtmlRun;
use super::svg::{Axis, Chart, Scale, Tick};
use crate::format::thousands;

/// Spectrum samples per decade of 1/(1-p): enough for a smooth curve, few enough to keep the
/// page small (runs of equal values are thinned further).
const SPECTRUM_SAMPLES_PER_DECADE: usize = 80;

/// Percentiles marked (and hoverable) on the spectrum.
const SPECTRUM_MARKS: [(&str, f64); 6] = [
    ("p50", 0.5),
    ("p90", 0.9),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("p99.99", 0.9999),
    ("p99.999", 0.99999),
];

/// `0%`, `90%`, `99%`, `99.9%`, ... for decade `k` of 1/(1-p).
fn percentile_tick(k: usize) -> String {
    match k {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        _ => format!("99.{}%", "9".repeat(k - 2)),
    }
}

/// Position of quantile `q` on the spectrum's x axis: log10 of 1/(1-q).
fn spectrum_x(q: f64) -> f64 {
    -(1.0 - q).log10()
}

/// The spectrum of one run's latency, as (x, latency ms) points with runs of equal values
/// thinned to their ends (the curve is a staircase; its steps stay exact).
fn spectrum_points(r: &Recorder, decades: usize) -> Vec<Option<(f64, f64)>> {
    let h = r.latency_us();
    let xs: Vec<f64> = (0..SPECTRUM_SAMPLES_PER_DECADE * decades)
        .map(|i| i as f64 / SPECTRUM_SAMPLES_PER_DECADE as f64)
        .collect();
    // One pass over the histogram for all samples.
    let mut raw: Vec<(f64, u64)> = xs
        .iter()
        .copied()
        .zip(h.value_at_quantiles(xs.iter().map(|&x| 1.0 - 10f64.powf(-x))))
        .collect();
    let (min, max) = exact_range(r);
    for point in &mut raw {
        point.1 = point.1.clamp(min, max);
    }
    raw.push((decades as f64, max));
    let keep = |i: usize| {
        i == 0 || i + 1 == raw.len() || raw[i - 1].1 != raw[i].1 || raw[i + 1].1 != raw[i].1
    };
    (0..raw.len())
        .filter(|&i| keep(i))
        .map(|i| Some((raw[i].0, raw[i].1 as f64 / 1000.0)))
        .collect()
}

/// The latency's exact smallest and largest value (the histogram's bucket edges for results
/// that did not keep them), which bound the spectrum as they bound the summary's figures.
fn exact_range(r: &Recorder) -> (u64, u64) {
    let h = r.latency_us();
    r.range(Metric::Latency)
        .map_or((h.min(), h.max()), |range| (range.min, range.max))
}

/// The HdrHistogram percentile spectrum: latency against percentile on a log scale of 1/(1-p).
pub(super) fn latency_spectrum(runs: &[HtmlRun]) -> String {
    let count = runs
        .iter()
        .map(|r| r.report.totals.latency_us().len())
        .max()
        .unwrap_or(0);
    // The axis reaches the resolution of the largest run, 99.999 % at least.
    let decades = (count as f64).log10().ceil().clamp(5.0, 8.0) as usize;
    let x = Axis {
        scale: Scale::Linear {
            lo: 0.0,
            hi: decades as f64,
        },
        ticks: (0..=decades)
            .map(|k| Tick {
                at: k as f64,
                label: percentile_tick(k),
            })
            .collect(),
        title: "percentile (log scale of 1/(1−p))".into(),
        grid: true,
    };
    let filled = || {
        runs.iter()
            .map(|r| r.report.totals.latency_us())
            .filter(|h| !h.is_empty())
    };
    let lo = filled().map(|h| h.min()).min().unwrap_or(0);
    let hi = filled().map(|h| h.max()).max().unwrap_or(0);
    let y = if hi > 0 {
        Axis::log(
            lo.max(1) as f64 / 1000.0,
            hi as f64 / 1000.0,
            "latency (ms, log scale)",
        )
    } else {
        Axis::log(0.1, 10.0, "latency (ms, log scale)")
    };
    let mut chart = Chart::new("Latency by percentile", x, y);
    for (i, run) in runs.iter().enumerate() {
        let h = run.report.totals.latency_us();
        if h.is_empty() {
            continue;
        }
        let style = &LATENCY_STYLES[0];
        chart.line(
            &spectrum_points(run.report.totals, decades),
            style.stroke(colour(i)),
            &run.name,
        );
        let (min, max) = exact_range(run.report.totals);
        for (label, q) in SPECTRUM_MARKS {
            let v = h.value_at_quantile(q).clamp(min, max);
            let title = format!("{}: {label} {} ms", run.name, ms(v));
            chart.marker(spectrum_x(q), v as f64 / 1000.0, colour(i), &title);
        }
        let title = format!(
            "{}: max {} ms ({} responses)",
            run.name,
            ms(max),
            thousands(h.len())
        );
        chart.marker(decades as f64, max as f64 / 1000.0, colour(i), &title);
    }
    if hi == 0 {
        chart.notice("no responses: no latency to show");
    }
    figure(
        "Latency by percentile",
        &legend(runs, &[]),
        &chart.finish(),
        "The whole latency distribution of each run (HdrHistogram's percentile spectrum); \
         dots mark p50, p90, p99, p99.9, p99.99, p99.999 and the maximum at the right edge.",
    )
}

/// A count in at most four characters and a unit: `987`, `12.3k`, `4.56M`.
fn compact(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.2}M", n as f64 / 1e6),
    }
}

/// What a bar of the status chart counts: an HTTP status, or a gRPC call's status code.
/// HTTP statuses come first, by code, then gRPC codes, by number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Answer {
    Http(u16),
    Grpc(u8),
}

impl Answer {
    /// The status as the reports write it: `200`, `other` for a code outside 100..=999,
    /// `RESOURCE_EXHAUSTED`.
    fn label(self) -> String {
        match self {
            Answer::Http(0) => "other".into(),
            Answer::Http(code) => code.to_string(),
            Answer::Grpc(code) => belier_stats::grpc_code_name(code).into(),
        }
    }

    /// A run's responses by status, gRPC calls by code.
    fn counts(run: &HtmlRun) -> BTreeMap<Answer, u64> {
        let totals = run.report.totals;
        let http = totals.status_counts().map(|(c, n)| (Answer::Http(c), n));
        let grpc = totals.grpc_counts().map(|(c, n)| (Answer::Grpc(c), n));
        http.chain(grpc).collect()
    }
}

/// Responses per status code, grouped by code, one bar per run.
pub(super) fn status_codes(runs: &[HtmlRun]) -> String {
    let counts: Vec<BTreeMap<Answer, u64>> = runs.iter().map(Answer::counts).collect();
    let codes: Vec<Answer> = counts
        .iter()
        .flat_map(|c| c.keys().copied())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let max = counts
        .iter()
        .flat_map(|c| c.values().copied())
        .max()
        .unwrap_or(0);
    let x = Axis {
        scale: Scale::Linear {
            lo: 0.0,
            hi: codes.len().max(1) as f64,
        },
        ticks: codes
            .iter()
            .enumerate()
            .map(|(i, &code)| Tick {
                at: i as f64 + 0.5,
                label: code.label(),
            })
            .collect(),
        title: match codes.iter().any(|c| matches!(c, Answer::Grpc(_))) {
            true => "gRPC status".into(),
            false => "HTTP status".into(),
        },
        grid: false,
    };
    // Headroom above the tallest bar for its label.
    let y = Axis::linear(max as f64 * 1.12, "responses");
    let mut chart = Chart::new("Responses by status code", x, y);
    let width = 0.7 / runs.len().max(1) as f64;
    for (i, &code) in codes.iter().enumerate() {
        for (j, (run, c)) in runs.iter().zip(&counts).enumerate() {
            let n = c.get(&code).copied().unwrap_or(0);
            if n == 0 {
                continue;
            }
            let share = n as f64 / run.report.totals.requests().max(1) as f64 * 100.0;
            let x0 = i as f64 + 0.15 + j as f64 * width;
            let title = format!(
                "{}: status {} — {} responses ({share:.2} % of requests)",
                run.name,
                code.label(),
                thousands(n)
            );
            chart.bar(x0, x0 + width, n as f64, colour(j), &compact(n), &title);
        }
    }
    if codes.is_empty() {
        chart.notice("no responses");
    }
    figure(
        "Responses by status code",
        &legend(runs, &[]),
        &chart.finish(),
        "Complete responses of any status; requests without one are counted under errors below.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spectrum_labels_and_positions() {
        let labels: Vec<_> = (0..=6).map(percentile_tick).collect();
        assert_eq!(
            labels,
            ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"]
        );
        assert!((spectrum_x(0.999) - 3.0).abs() < 1e-9);
        assert_eq!(spectrum_x(0.0), 0.0);
    }

    #[test]
    fn compact_counts() {
        assert_eq!(compact(987), "987");
        assert_eq!(compact(12_345), "12.3k");
        assert_eq!(compact(4_560_000), "4.56M");
    }

    #[test]
    fn spectrum_is_a_thinned_staircase_ending_at_max() {
        // The fixture records responses of 100 µs + 7 µs × n, n in 0..1000 (n % 100 == 0 failed).
        let (r, _) = crate::fixtures::results();
        let pts = spectrum_points(&r, 5);
        let (first, last) = (pts[0].unwrap(), pts.last().unwrap().unwrap());
        assert_eq!(first, (0.0, 0.107));
        assert_eq!(last.0, 5.0);
        assert!((last.1 - 7.093).abs() < 0.01, "{last:?}");
        assert!(pts.len() < 5 * SPECTRUM_SAMPLES_PER_DECADE);
        let ys: Vec<f64> = pts.iter().map(|p| p.unwrap().1).collect();
        assert!(ys.windows(2).all(|w| w[0] <= w[1]));
    }
}
