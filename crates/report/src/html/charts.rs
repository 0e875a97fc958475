//! The report's charts over time (latency, rates, lag), each a `<figure>` holding its legend
//! and an inline SVG; the distributions are in `distribution`.

use std::fmt::Write as _;

use belier_stats::Series;

use super::escape::esc;
use super::legend::{colour, legend, LineKey};
use super::run::HtmlRun;
use super::svg::{number, Axis, Chart, Stroke};

/// Most columns a time chart draws. Longer series are bucketed and each bucket shows the
/// largest value of the intervals it covers, so a one-second spike in an hour-long run stays
/// visible; hovering a bucket shows the same values.
const MAX_COLUMNS: usize = 300;

/// How one statistic is drawn, and its key in the legend.
pub(super) struct Style {
    key: LineKey,
    width: f64,
    dash: Option<&'static str>,
    opacity: f64,
}

impl Style {
    pub(super) fn stroke(&self, colour: &'static str) -> Stroke {
        Stroke {
            colour,
            width: self.width,
            dash: self.dash,
            opacity: self.opacity,
        }
    }
}

pub(super) const LATENCY_STYLES: [Style; 4] = [
    Style {
        key: LineKey::new("p50", "solid"),
        width: 2.2,
        dash: None,
        opacity: 1.0,
    },
    Style {
        key: LineKey::new("p90", "dash"),
        width: 1.6,
        dash: Some("7 4"),
        opacity: 1.0,
    },
    Style {
        key: LineKey::new("p99", "dot"),
        width: 1.8,
        dash: Some("2 3"),
        opacity: 1.0,
    },
    Style {
        key: LineKey::new("max", "thin"),
        width: 1.0,
        dash: None,
        opacity: 0.55,
    },
];

/// An open loop's target rate on the rates chart (scheduled arrivals per second).
const TARGET_STYLE: Style = Style {
    key: LineKey::new("target/s (open loop)", "dot"),
    width: 1.8,
    dash: Some("2 3"),
    opacity: 1.0,
};

const LAG_STYLE: Style = Style {
    key: LineKey::new("lag p99", "solid"),
    width: 2.0,
    dash: None,
    opacity: 1.0,
};

const RATE_STYLES: [Style; 2] = [
    Style {
        key: LineKey::new("requests/s", "solid"),
        width: 2.0,
        dash: None,
        opacity: 1.0,
    },
    Style {
        key: LineKey::new("errors/s", "dash"),
        width: 1.6,
        dash: Some("7 4"),
        opacity: 1.0,
    },
];

/// One drawn time bucket of one run.
#[derive(Clone, Copy, Default)]
struct Column {
    /// p50, p90, p99 and max in microseconds; `None` when no response finished in the bucket.
    latency_us: Option<[u64; 4]>,
    /// Requests and errors per second; `None` when no interval with a width fell in the bucket.
    rates: Option<[f64; 2]>,
    /// Open loop: arrivals due per second (the target rate); `None` for a closed loop.
    target: Option<f64>,
    /// Open loop: scheduling lag p99 in microseconds, of the intervals that sent requests.
    lag_p99_us: Option<u64>,
}

/// Every run's series on one shared time axis.
pub(super) struct Timeline {
    span_s: f64,
    column_s: f64,
    runs: Vec<Vec<Column>>,
    /// Some drawn columns merge several intervals.
    bucketed: bool,
}

impl Timeline {
    /// Buckets every run's points into shared columns at least as wide as the widest point, so
    /// every column between a run's first and last point holds a point and lines have no holes.
    pub(super) fn of(runs: &[HtmlRun]) -> Timeline {
        let points = || runs.iter().flat_map(|r| r.report.series.points());
        let span_s = points()
            .map(|p| (p.offset + p.width).as_secs_f64())
            .fold(0.0, f64::max);
        let widest_s = points().map(|p| p.width.as_secs_f64()).fold(0.0, f64::max);
        let column_s = (span_s / MAX_COLUMNS as f64).max(widest_s).max(1e-3);
        let columns = if points().next().is_none() {
            0
        } else {
            ((span_s / column_s).ceil() as usize).clamp(1, MAX_COLUMNS + 1)
        };
        let mut bucketed = false;
        let runs = runs
            .iter()
            .map(|r| {
                let open = r.report.is_open_loop();
                let load_end_s = r.report.schedule_span().as_secs_f64();
                let (cols, merged) = bin(r.report.series, column_s, columns, open, load_end_s);
                bucketed |= merged;
                cols
            })
            .collect();
        Timeline {
            span_s: span_s.max(column_s),
            column_s,
            runs,
            bucketed,
        }
    }

    fn columns(&self) -> usize {
        self.runs.first().map_or(0, Vec::len)
    }

    fn mid(&self, k: usize) -> f64 {
        ((k as f64 + 0.5) * self.column_s).min(self.span_s)
    }

    fn x_axis(&self) -> Axis {
        Axis::linear(self.span_s, "time since start (s)")
    }

    /// Hover band title prefix: the time range a column covers.
    fn range(&self, k: usize) -> String {
        let start = k as f64 * self.column_s;
        let end = (start + self.column_s).min(self.span_s);
        format!("{}–{} s", secs(start), secs(end))
    }
}

/// The columns of one series, and whether any column merges several points.
///
/// A point that starts once the load ended (`load_end_s`: the end of the open loop's schedule
/// or of the run's duration) holds only the last answers coming in, over a few milliseconds
/// and with nothing due: its rates would draw a fall of the rate and of the target to 0 that
/// never happened, so it has no rates (its latencies are drawn). A last point cut short
/// inside the load is drawn at its rate over its real length, as every point is.
fn bin(
    series: &Series,
    column_s: f64,
    columns: usize,
    open: bool,
    load_end_s: f64,
) -> (Vec<Column>, bool) {
    let mut cols = vec![Column::default(); columns];
    let mut merged = false;
    let mut last = None;
    for p in series.points() {
        let mid = p.offset.as_secs_f64() + p.width.as_secs_f64() / 2.0;
        let k = ((mid / column_s) as usize).min(columns.saturating_sub(1));
        let Some(c) = cols.get_mut(k) else { continue };
        merged |= last == Some(k);
        last = Some(k);
        if p.requests > p.errors {
            let v = [p.p50_us, p.p90_us, p.p99_us, p.max_us];
            c.latency_us = Some(match c.latency_us {
                Some(old) => std::array::from_fn(|i| old[i].max(v[i])),
                None => v,
            });
        }
        let draining = p.offset.as_secs_f64() >= load_end_s;
        if !p.width.is_zero() && !draining {
            let w = p.width.as_secs_f64();
            let v = [p.requests as f64 / w, p.errors as f64 / w];
            c.rates = Some(match c.rates {
                Some(old) => [old[0].max(v[0]), old[1].max(v[1])],
                None => v,
            });
            if open {
                let target = p.scheduled as f64 / w;
                c.target = Some(c.target.map_or(target, |old| old.max(target)));
            }
        }
        if open && p.requests > 0 {
            c.lag_p99_us = Some(
                c.lag_p99_us
                    .map_or(p.lag_p99_us, |old| old.max(p.lag_p99_us)),
            );
        }
    }
    (cols, merged)
}

/// Seconds with at most three decimals and no trailing zeros.
fn secs(s: f64) -> String {
    let t = format!("{s:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Microseconds as milliseconds with three decimals, without the unit.
pub(super) use belier_vocabulary::format::ms_bare as ms;

pub(super) fn figure(title: &str, legend: &str, svg: &str, note: &str) -> String {
    format!(
        "<figure><figcaption>{}</figcaption>{legend}{svg}<p class=\"note\">{}</p></figure>\n",
        esc(title),
        esc(note)
    )
}

fn bucket_note(t: &Timeline) -> String {
    if t.bucketed {
        format!(
            " Each drawn point covers {} s and shows the largest value of the intervals in it.",
            secs(t.column_s)
        )
    } else {
        String::new()
    }
}

/// p50, p90, p99 and max latency per interval, one colour per run, on a log axis.
pub(super) fn latency_over_time(runs: &[HtmlRun], t: &Timeline) -> String {
    let all = || t.runs.iter().flatten().filter_map(|c| c.latency_us);
    let lo = all().map(|v| v[0]).min().unwrap_or(0);
    let hi = all().map(|v| v[3]).max().unwrap_or(0);
    let y = if hi > 0 {
        Axis::log(
            lo.max(1) as f64 / 1000.0,
            hi as f64 / 1000.0,
            "latency (ms, log scale)",
        )
    } else {
        Axis::log(0.1, 10.0, "latency (ms, log scale)")
    };
    let mut chart = Chart::new("Latency over time", t.x_axis(), y);
    for (i, (run, cols)) in runs.iter().zip(&t.runs).enumerate() {
        for (s, style) in LATENCY_STYLES.iter().enumerate() {
            let points: Vec<_> = cols
                .iter()
                .enumerate()
                .map(|(k, c)| c.latency_us.map(|v| (t.mid(k), v[s] as f64 / 1000.0)))
                .collect();
            chart.line(
                &points,
                style.stroke(colour(i)),
                &format!("{}: {}", run.name, style.key.label),
            );
        }
    }
    for k in 0..t.columns() {
        let mut title = t.range(k);
        let mut any = false;
        for (run, cols) in runs.iter().zip(&t.runs) {
            match cols[k].latency_us {
                Some([p50, p90, p99, max]) => {
                    any = true;
                    let _ = write!(
                        title,
                        "\n{}: p50 {} · p90 {} · p99 {} · max {} ms",
                        run.name,
                        ms(p50),
                        ms(p90),
                        ms(p99),
                        ms(max)
                    );
                }
                None => {
                    let _ = write!(title, "\n{}: no responses", run.name);
                }
            }
        }
        if any {
            let x0 = k as f64 * t.column_s;
            chart.hover_band(x0, x0 + t.column_s, &title);
        }
    }
    if hi == 0 {
        chart.notice("no responses: no latency to show");
    }
    let keys: Vec<LineKey> = LATENCY_STYLES.iter().map(|s| s.key).collect();
    figure(
        "Latency over time",
        &legend(runs, &keys),
        &chart.finish(),
        &format!(
            "Per interval, from intended send to last byte; intervals without a response are gaps.{}",
            bucket_note(t)
        ),
    )
}

/// Requests and errors per second per interval.
pub(super) fn rates_over_time(runs: &[HtmlRun], t: &Timeline) -> String {
    let hi = t
        .runs
        .iter()
        .flatten()
        .filter_map(|c| c.rates.map(|r| r[0].max(r[1]).max(c.target.unwrap_or(0.0))))
        .fold(0.0, f64::max);
    let y = Axis::linear(hi * 1.05, "requests per second");
    let open = runs.iter().any(|r| r.report.is_open_loop());
    let mut chart = Chart::new("Requests and errors per second", t.x_axis(), y);
    draw_rates(&mut chart, runs, t);
    rate_bands(&mut chart, runs, t);
    mark_changes(&mut chart, runs);
    if t.columns() == 0 {
        chart.notice("no intervals recorded");
    }
    let mut keys: Vec<LineKey> = RATE_STYLES.iter().map(|s| s.key).collect();
    if open {
        keys.push(TARGET_STYLE.key);
    }
    figure(
        "Requests and errors per second",
        &legend(runs, &keys),
        &chart.finish(),
        &format!(
            "Requests finished per second of each interval (responses of any status and errors){}; \
             the last answers coming in after the load ended are not drawn as a rate.{}",
            if open {
                "; for an open loop, the arrivals due per second as well"
            } else {
                ""
            },
            bucket_note(t)
        ),
    )
}

/// Each run's requests and errors per second as lines, and an open loop's target rate.
fn draw_rates(chart: &mut Chart, runs: &[HtmlRun], t: &Timeline) {
    for (i, (run, cols)) in runs.iter().zip(&t.runs).enumerate() {
        for (s, style) in RATE_STYLES.iter().enumerate() {
            let points: Vec<_> = cols
                .iter()
                .enumerate()
                .map(|(k, c)| c.rates.map(|r| (t.mid(k), r[s])))
                .collect();
            chart.line(
                &points,
                style.stroke(colour(i)),
                &format!("{}: {}", run.name, style.key.label),
            );
        }
        if run.report.is_open_loop() {
            let points: Vec<_> = cols
                .iter()
                .enumerate()
                .map(|(k, c)| c.target.map(|v| (t.mid(k), v)))
                .collect();
            chart.line(
                &points,
                TARGET_STYLE.stroke(colour(i)),
                &format!("{}: {}", run.name, TARGET_STYLE.key.label),
            );
        }
    }
}

/// A hover band per column naming each run's rates (and target) in it.
fn rate_bands(chart: &mut Chart, runs: &[HtmlRun], t: &Timeline) {
    for k in 0..t.columns() {
        let mut title = t.range(k);
        let mut any = false;
        for (run, cols) in runs.iter().zip(&t.runs) {
            if let Some([requests, errors]) = cols[k].rates {
                any = true;
                let _ = write!(
                    title,
                    "\n{}: {} requests/s · {} errors/s",
                    run.name,
                    number(requests, 1),
                    number(errors, 1)
                );
                if let Some(target) = cols[k].target {
                    let _ = write!(title, " · target {}/s", number(target, 1));
                }
            }
        }
        if any {
            let x0 = k as f64 * t.column_s;
            chart.hover_band(x0, x0 + t.column_s, &title);
        }
    }
}

/// Each change made while a run ran, as a rule where it was made, in the run's colour.
fn mark_changes(chart: &mut Chart, runs: &[HtmlRun]) {
    for (i, run) in runs.iter().enumerate() {
        for c in &run.report.changes {
            let label = crate::changes::describe(run.report.info, c);
            chart.rule_x(c.at_s, colour(i), &label);
        }
    }
}

/// Open loop: the scheduling lag's p99 per interval (actual − intended start), one colour per
/// run, on a log axis. `None` when no run is an open loop.
pub(super) fn lag_over_time(runs: &[HtmlRun], t: &Timeline) -> Option<String> {
    if !runs.iter().any(|r| r.report.is_open_loop()) {
        return None;
    }
    let all = || t.runs.iter().flatten().filter_map(|c| c.lag_p99_us);
    // A lag of 0 µs (sent at its instant) sits at the axis' floor of 1 µs.
    let lo = all().min().unwrap_or(1).max(1);
    let hi = all().max().unwrap_or(0).max(lo * 10);
    let y = Axis::log(
        lo as f64 / 1000.0,
        hi as f64 / 1000.0,
        "lag p99 (ms, log scale)",
    );
    let mut chart = Chart::new("Scheduling lag over time", t.x_axis(), y);
    for (i, (run, cols)) in runs.iter().zip(&t.runs).enumerate() {
        let points: Vec<_> = cols
            .iter()
            .enumerate()
            .map(|(k, c)| c.lag_p99_us.map(|v| (t.mid(k), v.max(1) as f64 / 1000.0)))
            .collect();
        chart.line(
            &points,
            LAG_STYLE.stroke(colour(i)),
            &format!("{}: {}", run.name, LAG_STYLE.key.label),
        );
    }
    for k in 0..t.columns() {
        let mut title = t.range(k);
        let mut any = false;
        for (run, cols) in runs.iter().zip(&t.runs) {
            if let Some(lag) = cols[k].lag_p99_us {
                any = true;
                let _ = write!(title, "\n{}: lag p99 {} ms", run.name, ms(lag));
            }
        }
        if any {
            let x0 = k as f64 * t.column_s;
            chart.hover_band(x0, x0 + t.column_s, &title);
        }
    }
    if all().next().is_none() {
        chart.notice("no requests sent: no lag to show");
    }
    Some(figure(
        "Scheduling lag over time",
        &legend(runs, &[LAG_STYLE.key]),
        &chart.finish(),
        &format!(
            "Open loop: per interval, how late requests left after their intended start \
             (belier's own lateness plus any wait for a free connection); it counts in the \
             latency.{}",
            bucket_note(t)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels() {
        assert_eq!(secs(12.0), "12");
        assert_eq!(secs(0.25), "0.25");
        assert_eq!(ms(1_234_567), "1,234.567");
    }
}
