//! SVG drawing for the HTML report: scales, axes with ticks, and a chart frame that lines,
//! markers and bars are drawn into.
//!
//! Every number reaches the document through [`Num`], which writes non-finite values as 0, so a
//! degenerate input (no requests, a zero-length run) can never put `NaN` or `inf` into the SVG.
//! Every text reaches it through [`esc`].

use std::fmt::{self, Display, Write as _};

use super::escape::esc;
use crate::format::thousands;

/// Outer size of every chart, in SVG user units (CSS pixels at 100 % zoom).
pub(super) const WIDTH: f64 = 960.0;
/// Outer height of every chart.
pub(super) const HEIGHT: f64 = 340.0;
const LEFT: f64 = 74.0;
// Room for a centred last tick label such as `99.999%`.
const RIGHT: f64 = 36.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 50.0;

/// A coordinate or size for SVG: finite, at most one decimal.
#[derive(Clone, Copy)]
pub(super) struct Num(pub f64);

impl Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = if self.0.is_finite() {
            (self.0 * 10.0).round() / 10.0
        } else {
            0.0
        };
        if v.fract() == 0.0 {
            write!(f, "{}", v as i64)
        } else {
            write!(f, "{v:.1}")
        }
    }
}

/// Maps data values onto 0..=1 along an axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Scale {
    /// Evenly spaced values, `lo < hi`.
    Linear { lo: f64, hi: f64 },
    /// Evenly spaced decades, `0 < lo < hi`.
    Log { lo: f64, hi: f64 },
}

impl Scale {
    /// Where `v` sits between the ends of the scale, clamped to 0..=1 (0 for non-finite input).
    pub(super) fn unit(self, v: f64) -> f64 {
        let t = match self {
            Scale::Linear { lo, hi } => (v - lo) / (hi - lo),
            Scale::Log { lo, hi } => (v.max(lo).log10() - lo.log10()) / (hi.log10() - lo.log10()),
        };
        if t.is_finite() {
            t.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// A labelled tick on an axis.
pub(super) struct Tick {
    pub at: f64,
    pub label: String,
}

/// A scale with its ticks and title.
pub(super) struct Axis {
    pub scale: Scale,
    pub ticks: Vec<Tick>,
    pub title: String,
    /// Draw a grid line at each tick.
    pub grid: bool,
}

impl Axis {
    /// From 0 to a round value at or above `max` (1 when `max` is not positive), ~6 ticks.
    pub(super) fn linear(max: f64, title: &str) -> Axis {
        let max = if max.is_finite() && max > 0.0 {
            max
        } else {
            1.0
        };
        let step = nice_step(max / 5.0);
        let steps = (max / step).ceil().max(1.0);
        let decimals = decimals_for(step);
        let ticks = (0..=steps as usize)
            .map(|i| {
                let at = i as f64 * step;
                Tick {
                    at,
                    label: number(at, decimals),
                }
            })
            .collect();
        Axis {
            scale: Scale::Linear {
                lo: 0.0,
                hi: steps * step,
            },
            ticks,
            title: title.into(),
            grid: true,
        }
    }

    /// A log scale a little wider than `min..=max` (both positive), so lines clear the frame,
    /// with ticks at 1, 2 and 5 times powers of ten (only powers of ten past three decades).
    pub(super) fn log(min: f64, max: f64, title: &str) -> Axis {
        let min = if min.is_finite() && min > 0.0 {
            min
        } else {
            1.0
        };
        let max = if max.is_finite() && max >= min {
            max
        } else {
            min
        };
        // At least one decade, centred on the data when it is narrower; then a margin of 6 % of
        // the span (at least a factor 1.25) at each end.
        let widen = (10.0 * min / max).max(1.0).sqrt();
        let (min, max) = (min / widen, max * widen);
        let pad = (max / min).powf(0.06).max(1.25);
        let (lo, hi) = (min / pad, max * pad);
        let mut ticks = Vec::new();
        let multiples: &[f64] = if hi / lo > 2_000.0 {
            &[1.0]
        } else {
            &[1.0, 2.0, 5.0]
        };
        // At most 40 decades of ticks: a value near f64::MAX (a capacity file's `p999_ms:
        // 1e308`) made this loop run to i32::MAX and allocate 2 GiB of ticks.
        let first = lo.log10().floor() as i32;
        let last = (hi.log10().ceil() as i32).min(first.saturating_add(40));
        for e in first..=last {
            let decade = 10f64.powi(e);
            for m in multiples {
                let at = m * decade;
                if (lo..=hi).contains(&at) {
                    ticks.push(Tick {
                        at,
                        label: number(at, decimals_for(decade)),
                    });
                }
            }
        }
        Axis {
            scale: Scale::Log { lo, hi },
            ticks,
            title: title.into(),
            grid: true,
        }
    }
}

/// 1, 2 or 5 times a power of ten, at or above `raw`.
fn nice_step(raw: f64) -> f64 {
    let magnitude = 10f64.powf(raw.log10().floor());
    let m = match raw / magnitude {
        f if f <= 1.0 => 1.0,
        f if f <= 2.0 => 2.0,
        f if f <= 5.0 => 5.0,
        _ => 10.0,
    };
    m * magnitude
}

/// Decimals needed to show multiples of `step` exactly (0.001 → 3, 5 → 0).
fn decimals_for(step: f64) -> usize {
    (-step.log10().floor()).clamp(0.0, 6.0) as usize
}

/// A tick label: thousands separators above 1,000, otherwise `decimals` places.
pub(super) fn number(v: f64, decimals: usize) -> String {
    if decimals == 0 || v >= 1000.0 {
        thousands(v.round().max(0.0) as u64)
    } else {
        format!("{v:.decimals$}")
    }
}

/// How a line is stroked; colours are the report's own constants, never user input.
#[derive(Clone, Copy)]
pub(super) struct Stroke {
    pub colour: &'static str,
    pub width: f64,
    pub dash: Option<&'static str>,
    pub opacity: f64,
}

/// How a single data point is marked, so that points which differ in kind (a step that passed,
/// failed, or was not judged) tell apart without relying on colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mark {
    /// A filled dot.
    Dot,
    /// A hollow ring.
    Ring,
    /// A diagonal cross.
    Cross,
}

/// One chart: axes and grid drawn at [`Chart::finish`], data drawn in between.
pub(super) struct Chart {
    label: String,
    x: Axis,
    y: Axis,
    data: String,
    hover: String,
}

impl Chart {
    /// A chart described by `label` (for screen readers) with the given axes.
    pub(super) fn new(label: &str, x: Axis, y: Axis) -> Chart {
        Chart {
            label: label.into(),
            x,
            y,
            data: String::new(),
            hover: String::new(),
        }
    }

    /// Horizontal pixel position of data value `v`.
    pub(super) fn px(&self, v: f64) -> f64 {
        LEFT + self.x.scale.unit(v) * (WIDTH - LEFT - RIGHT)
    }

    /// Vertical pixel position of data value `v`.
    pub(super) fn py(&self, v: f64) -> f64 {
        TOP + (1.0 - self.y.scale.unit(v)) * (HEIGHT - TOP - BOTTOM)
    }

    /// Draws a polyline through `points`; `None` breaks the line. Points with no neighbour on
    /// either side get a dot, so a one-interval run still shows.
    pub(super) fn line(&mut self, points: &[Option<(f64, f64)>], stroke: Stroke, title: &str) {
        let mut d = String::new();
        let mut dots = Vec::new();
        for (i, p) in points.iter().enumerate() {
            let Some((x, y)) = *p else { continue };
            let (x, y) = (self.px(x), self.py(y));
            let joined_before = i > 0 && points[i - 1].is_some();
            let joined_after = points.get(i + 1).is_some_and(Option::is_some);
            let _ = write!(
                d,
                "{}{} {}",
                if joined_before { 'L' } else { 'M' },
                Num(x),
                Num(y)
            );
            if !joined_before && !joined_after {
                dots.push((x, y));
            }
        }
        let dash = stroke
            .dash
            .map(|s| format!(" stroke-dasharray=\"{s}\""))
            .unwrap_or_default();
        if !d.is_empty() {
            let _ = write!(
                self.data,
                "<path d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" \
                 stroke-opacity=\"{}\" stroke-linejoin=\"round\"{dash}><title>{}</title></path>",
                stroke.colour,
                stroke.width,
                stroke.opacity,
                esc(title)
            );
        }
        for (x, y) in dots {
            let _ = write!(
                self.data,
                "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" fill-opacity=\"{}\"><title>{}</title></circle>",
                Num(x),
                Num(y),
                Num(stroke.width + 1.5),
                stroke.colour,
                stroke.opacity,
                esc(title)
            );
        }
    }

    /// A dot at a data point, with its value as a tooltip.
    pub(super) fn marker(&mut self, x: f64, y: f64, colour: &str, title: &str) {
        self.mark(x, y, Mark::Dot, colour, title);
    }

    /// A point marked with `mark`, with its value as a tooltip.
    pub(super) fn mark(&mut self, x: f64, y: f64, mark: Mark, colour: &str, title: &str) {
        let (x, y) = (Num(self.px(x)), Num(self.py(y)));
        let _ = match mark {
            Mark::Dot => write!(
                self.data,
                "<circle cx=\"{x}\" cy=\"{y}\" r=\"3.5\" fill=\"{colour}\" stroke=\"#fff\"><title>{}</title></circle>",
                esc(title)
            ),
            // White inside, so a ring reads as hollow over a line or grid behind it.
            Mark::Ring => write!(
                self.data,
                "<circle cx=\"{x}\" cy=\"{y}\" r=\"4.5\" fill=\"#fff\" stroke=\"{colour}\" stroke-width=\"2\"><title>{}</title></circle>",
                esc(title)
            ),
            Mark::Cross => write!(
                self.data,
                "<path d=\"M{l} {t}L{r} {b}M{l} {b}L{r} {t}\" stroke=\"{colour}\" stroke-width=\"2.2\" fill=\"none\"><title>{}</title></path>",
                esc(title),
                l = Num(x.0 - 4.0),
                r = Num(x.0 + 4.0),
                t = Num(y.0 - 4.0),
                b = Num(y.0 + 4.0),
            ),
        };
    }

    /// A dot at a data point that links to `href` (a place in the page, `#…`), with its value
    /// as a tooltip.
    pub(super) fn linked_marker(&mut self, x: f64, y: f64, colour: &str, title: &str, href: &str) {
        let _ = write!(self.data, "<a href=\"{}\">", esc(href));
        self.mark(x, y, Mark::Dot, colour, title);
        self.data.push_str("</a>");
    }

    /// A dashed line across the plot at `x` (a data value), labelled at its top.
    pub(super) fn rule_x(&mut self, x: f64, colour: &str, label: &str) {
        let px = self.px(x);
        // Near the right edge the label goes on the line's left, inside the frame.
        let (lx, anchor) = if px > WIDTH - RIGHT - 160.0 {
            (px - 5.0, "end")
        } else {
            (px + 5.0, "start")
        };
        self.rule(
            (px, TOP),
            (px, HEIGHT - BOTTOM),
            colour,
            (lx, TOP + 13.0, anchor),
            label,
        );
    }

    /// A dashed line across the plot at `y` (a data value), labelled at its right end.
    pub(super) fn rule_y(&mut self, y: f64, colour: &str, label: &str) {
        let py = self.py(y);
        // Close to the top the label goes under the line, so it stays inside the frame.
        let ly = if py < TOP + 16.0 { py + 14.0 } else { py - 5.0 };
        self.rule(
            (LEFT, py),
            (WIDTH - RIGHT, py),
            colour,
            (WIDTH - RIGHT - 5.0, ly, "end"),
            label,
        );
    }

    fn rule(
        &mut self,
        from: (f64, f64),
        to: (f64, f64),
        colour: &str,
        (lx, ly, anchor): (f64, f64, &str),
        label: &str,
    ) {
        let _ = write!(
            self.data,
            "<line class=\"rule\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{colour}\" \
             stroke-width=\"1.5\" stroke-dasharray=\"6 4\"><title>{}</title></line>\
             <text class=\"guide\" x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\" fill=\"{colour}\">{}</text>",
            Num(from.0),
            Num(from.1),
            Num(to.0),
            Num(to.1),
            esc(label),
            Num(lx),
            Num(ly),
            esc(label)
        );
    }

    /// A bar from the x axis up to `y`, between data positions `x0` and `x1`, with an optional
    /// label above it.
    pub(super) fn bar(&mut self, x0: f64, x1: f64, y: f64, colour: &str, text: &str, title: &str) {
        let (left, right) = (self.px(x0), self.px(x1));
        let bottom = HEIGHT - BOTTOM;
        // A non-zero count stays visible as at least a hairline next to a tall bar.
        let top = self.py(y).min(bottom - 1.0);
        let _ = write!(
            self.data,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{colour}\"><title>{}</title></rect>",
            Num(left),
            Num(top),
            Num(right - left),
            Num(bottom - top),
            esc(title)
        );
        if !text.is_empty() && right - left >= 24.0 {
            let _ = write!(
                self.data,
                "<text class=\"value\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                Num((left + right) / 2.0),
                Num(top - 4.0),
                esc(text)
            );
        }
    }

    /// An invisible full-height band between data positions `x0` and `x1` whose tooltip is
    /// `title`: hovering anywhere above a time shows every value drawn there.
    pub(super) fn hover_band(&mut self, x0: f64, x1: f64, title: &str) {
        let (left, right) = (self.px(x0), self.px(x1));
        let _ = write!(
            self.hover,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect>",
            Num(left),
            Num(TOP),
            Num((right - left).max(1.0)),
            Num(HEIGHT - TOP - BOTTOM),
            esc(title)
        );
    }

    /// A message in the middle of the plot area, for charts with nothing to draw.
    pub(super) fn notice(&mut self, text: &str) {
        let _ = write!(
            self.data,
            "<text class=\"notice\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            Num((LEFT + WIDTH - RIGHT) / 2.0),
            Num((TOP + HEIGHT - BOTTOM) / 2.0),
            esc(text)
        );
    }

    /// The finished `<svg>` element.
    pub(super) fn finish(self) -> String {
        let mut s = String::with_capacity(self.data.len() + self.hover.len() + 4096);
        let (x0, x1, y0, y1) = (LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM);
        let _ = write!(
            s,
            "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" \
             width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{}\"><g class=\"grid\">",
            esc(&self.label),
            w = Num(WIDTH),
            h = Num(HEIGHT),
        );
        for t in self.y.ticks.iter().filter(|_| self.y.grid) {
            let y = Num(self.py(t.at));
            let _ = write!(
                s,
                "<line x1=\"{}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\"/>",
                Num(x0),
                Num(x1)
            );
        }
        for t in self.x.ticks.iter().filter(|_| self.x.grid) {
            let x = Num(self.px(t.at));
            let _ = write!(
                s,
                "<line x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\"/>",
                Num(y0),
                Num(y1)
            );
        }
        let _ = write!(
            s,
            "</g><path class=\"axis\" d=\"M{} {}V{}H{}\" fill=\"none\"/><g class=\"tick\">",
            Num(x0),
            Num(y0),
            Num(y1),
            Num(x1)
        );
        for t in &self.y.ticks {
            let _ = write!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>",
                Num(x0 - 6.0),
                Num(self.py(t.at)),
                esc(&t.label)
            );
        }
        for t in &self.x.ticks {
            let _ = write!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                Num(self.px(t.at)),
                Num(y1 + 17.0),
                esc(&t.label)
            );
        }
        let _ = write!(
            s,
            "</g><text class=\"title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
             <text class=\"title\" transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\
             <g class=\"data\">{}</g><g class=\"hover\">{}</g></svg>",
            Num((x0 + x1) / 2.0),
            Num(HEIGHT - 10.0),
            esc(&self.x.title),
            Num((y0 + y1) / 2.0),
            esc(&self.y.title),
            self.data,
            self.hover
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_always_finite_in_output() {
        assert_eq!(Num(f64::NAN).to_string(), "0");
        assert_eq!(Num(f64::INFINITY).to_string(), "0");
        assert_eq!(Num(-0.01).to_string(), "0");
        assert_eq!(Num(12.345).to_string(), "12.3");
        assert_eq!(Num(7.0).to_string(), "7");
    }

    /// Issue #28's fuzzing find: a capacity file's `p999_ms: 1e308` made this axis allocate
    /// 2 GiB of ticks.
    #[test]
    fn a_log_axis_to_near_f64_max_has_few_ticks() {
        for max in [1e308, f64::MAX, 1e300] {
            let a = Axis::log(0.5, max, "ms");
            assert!(a.ticks.len() <= 42, "{}", a.ticks.len());
        }
    }

    #[test]
    fn linear_axis_is_round_and_covers_max() {
        let a = Axis::linear(873.0, "t");
        assert_eq!(
            a.scale,
            Scale::Linear {
                lo: 0.0,
                hi: 1000.0
            }
        );
        let labels: Vec<_> = a.ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["0", "200", "400", "600", "800", "1,000"]);
        let small = Axis::linear(0.7, "t");
        assert_eq!(small.ticks[1].label, "0.2");
        for degenerate in [0.0, -3.0, f64::NAN, f64::INFINITY] {
            let a = Axis::linear(degenerate, "t");
            assert_eq!(a.scale, Scale::Linear { lo: 0.0, hi: 1.0 });
        }
    }

    #[test]
    fn log_axis_pads_the_data_and_ticks_round_values() {
        let a = Axis::log(0.0042, 37.0, "ms");
        let Scale::Log { lo, hi } = a.scale else {
            panic!("{:?}", a.scale)
        };
        assert!(
            lo < 0.0042 && lo > 0.002 && hi > 37.0 && hi < 80.0,
            "{lo} {hi}"
        );
        let labels: Vec<_> = a.ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["0.01", "0.1", "1", "10"]);
        let narrow = Axis::log(1.2, 3.0, "ms");
        let labels: Vec<_> = narrow.ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["0.5", "1", "2", "5"]);
        // A single value still gets a decade around it.
        let one = Axis::log(5.0, 5.0, "ms");
        let Scale::Log { lo, hi } = one.scale else {
            panic!()
        };
        assert!(hi / lo >= 10.0 && lo < 5.0 && hi > 5.0);
        for (min, max) in [(0.0, f64::NAN), (-1.0, -2.0), (f64::INFINITY, 1.0)] {
            let bad = Axis::log(min, max, "ms");
            assert!(!bad.ticks.is_empty());
            assert!(bad.ticks.iter().all(|t| t.at.is_finite()));
        }
    }

    #[test]
    fn scales_clamp() {
        let s = Scale::Log { lo: 1.0, hi: 100.0 };
        assert_eq!(s.unit(10.0), 0.5);
        assert_eq!(s.unit(0.0), 0.0);
        assert_eq!(s.unit(1e9), 1.0);
        assert_eq!(Scale::Linear { lo: 0.0, hi: 0.0 }.unit(1.0), 0.0);
    }

    #[test]
    fn lines_break_on_gaps_and_dot_lone_points() {
        let mut c = Chart::new("c", Axis::linear(10.0, "x"), Axis::linear(10.0, "y"));
        let stroke = Stroke {
            colour: "#000",
            width: 1.0,
            dash: None,
            opacity: 1.0,
        };
        c.line(
            &[Some((0.0, 1.0)), Some((1.0, 2.0)), None, Some((5.0, 5.0))],
            stroke,
            "a<b",
        );
        let svg = c.finish();
        assert_eq!(svg.matches("<path d=\"M").count(), 1);
        assert_eq!(svg.matches("<circle").count(), 1);
        assert!(svg.contains("a&lt;b"));
    }
}
