//! The HTML page of a capacity search: the answer, how the search went, latency and goodput
//! against the level each step offered, and every step in a table.
//!
//! It is built from the run report's pieces (the head with its Content-Security-Policy and
//! CSS, the escaping, the SVG chart), so it is as self-contained and script-free as that page.
//! Every value drawn is checked finite first; the chart's own number formatting is the second
//! guard against `NaN` reaching the SVG.

use std::fmt::{self, Write as _};

use belier_capacity::{kind_name, number, LimitedBy, Outcome, Slos, Step, StepKind, DEFAULT_SLO};

use super::charts::figure;
use super::escape::esc;
use super::head::write_head;
use super::svg::{Axis, Chart, Mark, Scale, Stroke};

/// Renders a capacity search as one self-contained HTML page: the URL, the answer, the
/// behaviour past capacity, latency and goodput against the level offered (with the latency
/// SLO and the capacity marked) and a table of every step.
pub fn render_capacity_html(outcome: &Outcome) -> String {
    let mut out = String::with_capacity(32 * 1024);
    // Writing into a String cannot fail; `let _` discards that impossible error.
    let _ = write_page(&mut out, outcome);
    out
}

/// One statistic drawn as a line through the steps, with markers at each step.
struct Stat {
    label: &'static str,
    colour: &'static str,
    /// The legend's line style (a `.key i` class of the page's CSS).
    key: &'static str,
    dash: Option<&'static str>,
    width: f64,
    value: fn(&Step) -> Option<f64>,
    /// Milliseconds (a latency); otherwise a rate per second.
    ms: bool,
}

impl Stat {
    fn stroke(&self) -> Stroke {
        Stroke {
            colour: self.colour,
            width: self.width,
            dash: self.dash,
            opacity: 1.0,
        }
    }
}

// Okabe–Ito colours like the run report's, so that the lines stay distinct for colour-blind
// readers; the SLO is red and the capacity near-black so neither reads as data.
const LATENCIES: [Stat; 3] = [
    Stat {
        label: "p50",
        colour: "#009e73",
        key: "solid",
        dash: None,
        width: 1.8,
        value: |s| s.p50_ms,
        ms: true,
    },
    Stat {
        label: "p99",
        colour: "#0072b2",
        key: "solid",
        dash: None,
        width: 2.4,
        value: |s| s.p99_ms,
        ms: true,
    },
    Stat {
        label: "p99.9",
        colour: "#cc79a7",
        key: "dash",
        dash: Some("7 4"),
        width: 1.6,
        value: |s| s.p999_ms,
        ms: true,
    },
];

const GOODPUT: Stat = Stat {
    label: "goodput (successful responses/s)",
    colour: "#0072b2",
    key: "solid",
    dash: None,
    width: 2.4,
    value: |s| Some(s.goodput),
    ms: false,
};

/// What each step achieved; its label is the table's heading for it (`sent/s`, …).
const ACHIEVED: Stat = Stat {
    label: "",
    colour: "#e69f00",
    key: "dash",
    dash: Some("7 4"),
    width: 1.6,
    value: |s| Some(s.achieved_rate),
    ms: false,
};

/// What this page adds to the run report's CSS: the answer, marker keys, the step table's
/// text columns, and labels on the charts' guide lines.
const CSS: &str = include_str!("capacity.css");

const IDEAL_COLOUR: &str = "#8a949e";
const SLO_COLOUR: &str = "#c1121f";
const CAPACITY_COLOUR: &str = "#1d232a";

/// `v` when it can be drawn: finite and not negative.
fn drawable(v: f64) -> Option<f64> {
    (v.is_finite() && v >= 0.0).then_some(v)
}

fn write_page(out: &mut String, o: &Outcome) -> fmt::Result {
    write_head(out, "capacity", &o.url, CSS)?;
    writeln!(
        out,
        "<header><h1>belier capacity search</h1><p class=\"target\">{}</p>\
         <p class=\"sub\">each step holds one level (a rate, or a number of connections), warms \
         up, then is judged on the window that follows; latency is measured from the intended \
         send to the last response byte</p></header>",
        esc(&o.url)
    )?;
    // Found (even as a lower bound at --max-rate) reads as a pass; no answer as a warning.
    let class = if o.max_rate.is_some() { "ok" } else { "warn" };
    writeln!(
        out,
        "<p class=\"{class} answer\">{}</p>",
        esc(&o.answer_line())
    )?;
    out.push_str("<dl class=\"facts\">");
    for (name, value) in facts(o) {
        write!(out, "<dt>{name}</dt><dd>{}</dd>", esc(&value))?;
    }
    out.push_str("</dl>\n<h2>Charts</h2>\n");
    let slo = latency_slo(&o.slos);
    let curve = curve(&o.steps);
    out.push_str(&latency_chart(o, &curve, slo.as_ref()));
    out.push_str(&goodput_chart(o, &curve));
    write_steps(out, o)?;
    write_server_timing(out, o)?;
    out.push_str("</main>\n</body>\n</html>\n");
    Ok(())
}

/// The search's facts as a label and its value, in the text report's words.
fn facts(o: &Outcome) -> Vec<(&'static str, String)> {
    let slos = if o.slos.is_empty() {
        format!("{DEFAULT_SLO} (the default)")
    } else {
        o.slos.join(", ")
    };
    let ended = match o.limited_by {
        LimitedBy::Slo => "a level failed the SLOs",
        LimitedBy::Generator => "belier could not drive the next level",
        LimitedBy::MaxRate => "the highest level allowed (--max-rate) passed",
        LimitedBy::Time => "the time allowed (--max-time) ran out",
    };
    let mut facts = vec![
        ("dimension", o.dimension.name().to_string()),
        ("SLOs", slos),
        ("steps", o.steps.len().to_string()),
        (
            "elapsed",
            format!("{:.0} s", drawable(o.elapsed_s).unwrap_or(0.0)),
        ),
        ("ended by", ended.into()),
    ];
    if let Some(goodput) = o.capacity_goodput() {
        facts.push(("goodput at capacity", format!("{}/s", number(goodput))));
    }
    if let Some(ov) = &o.overload {
        facts.push((
            "past capacity",
            format!("{} ({})", ov.behaviour.name(), ov.behaviour.note()),
        ));
        facts.push(("recovery", ov.recovery_line()));
    } else if o.steps.iter().any(|s| s.kind == StepKind::Overload) {
        facts.push((
            "past capacity",
            "the overload steps met the SLOs too (no way of failing seen)".into(),
        ));
    }
    facts
}

/// The tightest latency SLO in ms and its label (`SLO p99<30ms`), if any SLO bounds latency.
fn latency_slo(written: &[String]) -> Option<(f64, String)> {
    let written = if written.is_empty() {
        vec![DEFAULT_SLO.to_string()]
    } else {
        written.to_vec()
    };
    let bound_us = Slos::parse(&written).ok()?.latency_bound_us()?;
    let ms = drawable(bound_us / 1000.0).filter(|ms| *ms > 0.0)?;
    // The bound alone does not say which SLO set it: the one that parses to it alone does.
    let label = written
        .iter()
        .find(|e| {
            Slos::parse(std::slice::from_ref(e))
                .ok()
                .and_then(|s| s.latency_bound_us())
                == Some(bound_us)
        })
        .map_or_else(|| format!("{} ms", number(ms)), Clone::clone);
    Some((ms, format!("SLO {label}")))
}

/// The steps the lines join, in order of level.
///
/// A line is the service's steady-state curve: one point per level. Where a level ran twice
/// (a bisection step, then the longer confirming step at the answer) the later step stands for
/// it, being the later and usually the longer measurement. The recovery step is left off the
/// line: it runs just after the overload, so it measures the way back, not the level; like
/// every step it still gets its own marker, so nothing measured is hidden.
fn curve(steps: &[Step]) -> Vec<&Step> {
    let mut on_line: Vec<&Step> = steps
        .iter()
        .filter(|s| s.kind != StepKind::Recovery && drawable(s.target_rate).is_some())
        .collect();
    // A stable sort keeps steps at one level in the order they ran: the last is the latest.
    on_line.sort_by(|a, b| a.target_rate.total_cmp(&b.target_rate));
    let mut curve: Vec<&Step> = Vec::with_capacity(on_line.len());
    for step in on_line {
        match curve.last_mut() {
            Some(last) if last.target_rate == step.target_rate => *last = step,
            _ => curve.push(step),
        }
    }
    curve
}

/// A step's marker: passed, failed, or not judged (belier could not drive it).
fn mark(s: &Step) -> Mark {
    match s.pass {
        Some(true) => Mark::Dot,
        Some(false) => Mark::Ring,
        None => Mark::Cross,
    }
}

fn result(s: &Step) -> String {
    let verdict: String = match (s.pass, &s.why) {
        (Some(true), _) => "passed".into(),
        (Some(false), Some(why)) => format!("failed: {why}"),
        (Some(false), None) => "failed".into(),
        (None, Some(why)) => format!("not judged: {why}"),
        (None, None) => "not judged".into(),
    };
    verdict + s.notes().as_str()
}

/// The x axis every chart shares: from 0 to the highest level offered (or the capacity).
fn level_axis(o: &Outcome) -> Axis {
    let hi = o
        .steps
        .iter()
        .filter_map(|s| drawable(s.target_rate))
        .chain(o.max_rate.and_then(drawable))
        .fold(0.0, f64::max);
    Axis::linear(hi, &format!("offered load ({})", o.dimension.unit()))
}

/// Lines through the curve and a marker at every step for `stat`, named `name`; each
/// marker's tooltip says which step it is, its level and its value.
fn draw(chart: &mut Chart, o: &Outcome, curve: &[&Step], stat: &Stat, name: &str) {
    let points: Vec<Option<(f64, f64)>> = curve
        .iter()
        .map(|s| {
            (stat.value)(s)
                .and_then(drawable)
                .map(|v| (s.target_rate, v))
        })
        .collect();
    chart.line(&points, stat.stroke(), name);
    for (i, s) in o.steps.iter().enumerate() {
        let (Some(x), Some(y)) = (drawable(s.target_rate), (stat.value)(s).and_then(drawable))
        else {
            continue;
        };
        let value = if stat.ms {
            format!("{y:.2} ms")
        } else {
            format!("{}/s", number(y))
        };
        let title = format!(
            "step {} · {} · {} · {name} {value} · {}",
            i + 1,
            kind_name(s.kind),
            o.dimension.level(x),
            result(s)
        );
        chart.mark(x, y, mark(s), stat.colour, &title);
    }
}

/// The capacity as a vertical line, when the search found one.
fn mark_capacity(chart: &mut Chart, o: &Outcome) {
    let Some(c) = o.max_rate.and_then(drawable) else {
        return;
    };
    // At --max-rate the answer is a lower bound: the service may take more.
    let at_least = if o.limited_by == LimitedBy::MaxRate {
        "≥ "
    } else {
        ""
    };
    let label = format!("capacity {at_least}{}", o.dimension.level(c));
    chart.rule_x(c, CAPACITY_COLOUR, &label);
}

/// A legend: one key per line (`(css class, colour, label)`), then the step markers' shapes.
fn legend(lines: &[(&str, &str, &str)], steps: &[Step]) -> String {
    let mut s = String::from("<div class=\"legend\">");
    for (class, colour, label) in lines {
        let _ = write!(
            s,
            "<span class=\"key\"><i class=\"{class}\" style=\"border-top-color:{colour}\"></i>{}</span>",
            esc(label)
        );
    }
    s.push_str("<span class=\"sep\"></span>");
    let shapes = [
        (Some(true), "pt pass", "step passed"),
        (Some(false), "pt fail", "step failed"),
        (None, "pt unjudged", "step not judged"),
    ];
    for (pass, class, label) in shapes {
        // Only the shapes that appear, but always the passed and failed ones for reference.
        if pass.is_some() || steps.iter().any(|s| s.pass == pass) {
            let _ = write!(
                s,
                "<span class=\"key\"><i class=\"{class}\"></i>{label}</span>"
            );
        }
    }
    s.push_str("</div>");
    s
}

/// Latency percentiles against the level offered, with the latency SLO and the capacity.
fn latency_chart(o: &Outcome, curve: &[&Step], slo: Option<&(f64, String)>) -> String {
    let values: Vec<f64> = o
        .steps
        .iter()
        .flat_map(|s| LATENCIES.iter().filter_map(|l| (l.value)(s)))
        .filter_map(drawable)
        .collect();
    let positive = || {
        values
            .iter()
            .copied()
            .chain(slo.map(|(ms, _)| *ms))
            .filter(|v| *v > 0.0)
    };
    let lo = positive().fold(f64::INFINITY, f64::min);
    let hi = positive().fold(0.0, f64::max);
    // Latency past capacity is often 100× that below it: a log axis keeps both readable.
    // A narrow range reads better on a linear one from 0.
    let y = if hi > 0.0 && hi / lo > 20.0 {
        Axis::log(lo, hi, "latency (ms, log scale)")
    } else {
        Axis::linear(hi * 1.1, "latency (ms)")
    };
    let mut chart = Chart::new("Latency against the load offered", level_axis(o), y);
    if let Some((ms, label)) = slo {
        chart.rule_y(*ms, SLO_COLOUR, label);
    }
    mark_capacity(&mut chart, o);
    for stat in &LATENCIES {
        draw(&mut chart, o, curve, stat, stat.label);
    }
    if o.steps.is_empty() {
        chart.notice("no steps ran");
    } else if values.is_empty() {
        chart.notice("no responses: no latency to show");
    }
    let mut lines: Vec<(&str, &str, &str)> = LATENCIES
        .iter()
        .map(|l| (l.key, l.colour, l.label))
        .collect();
    if let Some((_, label)) = slo {
        lines.push(("dash", SLO_COLOUR, label));
    }
    if o.max_rate.and_then(drawable).is_some() {
        lines.push(("dash", CAPACITY_COLOUR, "capacity"));
    }
    figure(
        "Latency against the load offered",
        &legend(&lines, &o.steps),
        &chart.finish(),
        "Each step's judged window, at the level it offered. Lines join the steps in order of \
         level (where a level ran twice, the later step); the recovery step, run just after the \
         overload, has markers only. Hover a marker for its step.",
    )
}

/// Goodput and what each step achieved against the level offered, with the capacity.
fn goodput_chart(o: &Outcome, curve: &[&Step]) -> String {
    let x = level_axis(o);
    let ideal = o.dimension.is_rate();
    let hi = o
        .steps
        .iter()
        .flat_map(|s| {
            let level = if ideal { s.target_rate } else { 0.0 };
            [s.goodput, s.achieved_rate, level]
        })
        .filter_map(drawable)
        .fold(0.0, f64::max);
    let y = Axis::linear(hi * 1.05, "per second");
    let ends = (axis_end(&x), axis_end(&y));
    let mut chart = Chart::new("Goodput against the load offered", x, y);
    let (_, achieved) = o.columns();
    if ideal && !o.steps.is_empty() {
        // y = x, cut where it leaves the frame (a scale clamps, which would bend the line).
        let end = ends.0.min(ends.1);
        let stroke = Stroke {
            colour: IDEAL_COLOUR,
            width: 1.4,
            dash: Some("3 4"),
            opacity: 1.0,
        };
        chart.line(
            &[Some((0.0, 0.0)), Some((end, end))],
            stroke,
            "ideal: all offered (y = x)",
        );
    }
    mark_capacity(&mut chart, o);
    draw(&mut chart, o, curve, &ACHIEVED, achieved);
    draw(&mut chart, o, curve, &GOODPUT, "goodput");
    if o.steps.is_empty() {
        chart.notice("no steps ran");
    }
    let mut lines = vec![
        (GOODPUT.key, GOODPUT.colour, GOODPUT.label),
        (ACHIEVED.key, ACHIEVED.colour, achieved),
    ];
    if ideal {
        lines.push(("dot", IDEAL_COLOUR, "ideal (y = x)"));
    }
    if o.max_rate.and_then(drawable).is_some() {
        lines.push(("dash", CAPACITY_COLOUR, "capacity"));
    }
    figure(
        "Goodput against the load offered",
        &legend(&lines, &o.steps),
        &chart.finish(),
        "Successful responses (status below 400) per second of each step's judged window, and \
         what the step achieved. Past capacity, goodput that holds flat means the excess is \
         shed; goodput that falls means the service collapses.",
    )
}

/// The highest value an axis shows.
fn axis_end(a: &Axis) -> f64 {
    match a.scale {
        Scale::Linear { hi, .. } | Scale::Log { hi, .. } => hi,
    }
}

/// Every step in a table, in the order they ran.
fn write_steps(out: &mut String, o: &Outcome) -> fmt::Result {
    let (level, achieved) = o.columns();
    write!(
        out,
        "<h2>Steps</h2>\n<table class=\"steps\"><thead><tr><th>#</th><th class=\"kind\">step</th>\
         <th>{level}</th><th>{achieved}</th><th>goodput/s</th><th>p50 ms</th><th>p99 ms</th>\
         <th>p99.9 ms</th><th>failed</th><th>cancelled</th><th class=\"result\">result</th></tr>\
         </thead><tbody>\n"
    )?;
    let ms = |v: Option<f64>| {
        v.and_then(drawable)
            .map_or("–".into(), |v| format!("{v:.2}"))
    };
    let rate = |v: f64| drawable(v).map_or("–".into(), number);
    for (i, s) in o.steps.iter().enumerate() {
        let class = match s.pass {
            Some(true) => "pass",
            Some(false) => "fail",
            None => "unjudged",
        };
        writeln!(
            out,
            "<tr class=\"{class}\"><th>{}</th><td class=\"kind\">{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2} %</td><td>{}</td>\
             <td class=\"result\">{}</td></tr>",
            i + 1,
            kind_name(s.kind),
            rate(s.target_rate),
            rate(s.achieved_rate),
            rate(s.goodput),
            ms(s.p50_ms),
            ms(s.p99_ms),
            ms(s.p999_ms),
            drawable(s.failed_share()).unwrap_or(0.0) * 100.0,
            s.cancelled,
            esc(&result(s))
        )?;
    }
    out.push_str("</tbody></table>\n");
    if o.steps.is_empty() {
        out.push_str("<p>No steps ran.</p>\n");
    }
    Ok(())
}

/// The steps' server timing (`--server-timing`), when their responses gave it: the latency's
/// p99 beside the server's time and the time outside it.
fn write_server_timing(out: &mut String, o: &Outcome) -> fmt::Result {
    if o.steps.iter().all(|s| s.server_timing.is_none()) {
        return Ok(());
    }
    out.push_str(
        "<h2>Server timing by step</h2>\n<p>The server's time is its <code>total</code> metric, \
         else its largest; outside is the latency minus it: a p99 that grows with the outside \
         figures waited in front of the server, one that grows with the server's, in it.</p>\n\
         <table class=\"steps\"><thead><tr><th>#</th><th class=\"kind\">step</th><th>p99 ms</th>\
         <th>server p50 ms</th><th>server p99 ms</th><th>outside p50 ms</th>\
         <th>outside p99 ms</th><th>timed</th></tr></thead><tbody>\n",
    );
    let ms = |v: f64| drawable(v).map_or("–".into(), |v| format!("{v:.2}"));
    for (i, s) in o.steps.iter().enumerate() {
        let Some(t) = &s.server_timing else { continue };
        writeln!(
            out,
            "<tr><th>{}</th><td class=\"kind\">{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            kind_name(s.kind),
            s.p99_ms.map_or("–".into(), ms),
            ms(t.server_p50_ms),
            ms(t.server_p99_ms),
            ms(t.outside_p50_ms),
            ms(t.outside_p99_ms),
            number(t.timed as f64)
        )?;
    }
    out.push_str("</tbody></table>\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(kind: StepKind, level: f64) -> Step {
        Step {
            kind,
            target_rate: level,
            achieved_rate: level,
            goodput: level,
            requests: 100,
            p50_ms: Some(1.0),
            p99_ms: Some(2.0),
            p999_ms: Some(3.0),
            error_share: 0.0,
            errors: Default::default(),
            rejected: 0,
            pass: Some(true),
            why: None,
            cancelled: 0,
            host_cpu: None,
            drain_s: None,
            drained: None,
            server_timing: None,
        }
    }

    #[test]
    fn the_curve_takes_the_latest_step_at_each_level_and_leaves_recovery_off() {
        use StepKind::{Bisect, Confirm, Grow, Overload, Recovery};
        let steps = [
            at(Grow, 100.0),
            at(Grow, 200.0),
            at(Bisect, 150.0),
            at(Confirm, 150.0),
            at(Overload, 180.0),
            at(Recovery, 120.0),
            at(Grow, f64::NAN),
        ];
        let drawn: Vec<(StepKind, f64)> = curve(&steps)
            .iter()
            .map(|s| (s.kind, s.target_rate))
            .collect();
        assert_eq!(
            drawn,
            [
                (Grow, 100.0),
                (Confirm, 150.0),
                (Overload, 180.0),
                (Grow, 200.0)
            ]
        );
    }

    #[test]
    fn the_latency_slo_is_labelled_with_the_tightest_expression() {
        let slos = |s: &[&str]| s.iter().map(|e| e.to_string()).collect::<Vec<_>>();
        assert_eq!(
            latency_slo(&slos(&["errors<1%", "p99<80ms", "p50<20ms"])),
            Some((20.0, "SLO p50<20ms".into()))
        );
        assert_eq!(latency_slo(&slos(&["errors<1%"])), None);
        assert_eq!(latency_slo(&[]), None);
    }
}
