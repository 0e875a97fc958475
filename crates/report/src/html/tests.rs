use std::time::Duration;

use belier_stats::{ErrorKind, Point, Recorder, Series};

use super::*;
use crate::fixtures;

use crate::fixtures::report;

fn run<'a>(name: &str, report: &'a Report<'a>) -> HtmlRun<'a> {
    HtmlRun {
        name: name.into(),
        report,
    }
}

/// The `<svg>` elements of `html`.
fn svgs(html: &str) -> Vec<&str> {
    html.match_indices("<svg")
        .map(|(i, _)| &html[i..i + html[i..].find("</svg>").expect("closed svg") + 6])
        .collect()
}

/// Every numeric attribute and path in the charts parses as a finite number.
fn assert_finite_geometry(html: &str) {
    assert!(!html.contains("NaN"), "NaN in output");
    assert!(!html.contains("inf\""), "infinity in output");
    for svg in svgs(html) {
        for attr in [
            " x=\"",
            " y=\"",
            " cx=\"",
            " cy=\"",
            " r=\"",
            " width=\"",
            " height=\"",
            " x1=\"",
            " x2=\"",
            " y1=\"",
            " y2=\"",
        ] {
            for (i, _) in svg.match_indices(attr) {
                let rest = &svg[i + attr.len()..];
                let value = &rest[..rest.find('"').unwrap()];
                let v: f64 = value
                    .parse()
                    .unwrap_or_else(|_| panic!("{attr}{value}\" is not a number"));
                assert!(v.is_finite() && v > -1.0, "{attr}{value}");
            }
        }
        for (i, _) in svg.match_indices(" d=\"") {
            let rest = &svg[i + 4..];
            let d = &rest[..rest.find('"').unwrap()];
            assert!(
                d.chars()
                    .all(|c| c.is_ascii_digit() || " .-MLHV".contains(c)),
                "bad path {d}"
            );
        }
    }
}

/// A one-second point at second `i`. Built from a fixture point so that fields the HTML report
/// does not draw keep whatever values the stats crate gives them.
fn point(i: u64, requests: u64, errors: u64, p50_us: u64) -> Point {
    let mut p = fixtures::results().1.points()[0].clone();
    p.offset = Duration::from_secs(i);
    p.width = Duration::from_secs(1);
    p.requests = requests;
    p.succeeded = requests - errors;
    p.errors = errors;
    p.p50_us = p50_us;
    p.p90_us = p50_us * 2;
    p.p99_us = p50_us * 4;
    p.max_us = p50_us * 10;
    p.coarsened = false;
    p
}

#[test]
fn one_svg_per_chart_and_every_legend_names_every_run() {
    let info = fixtures::info();
    let (totals, series) = fixtures::results();
    let a = report(&info, &totals, &series);
    let html = render_html(&[run("baseline", &a), run("candidate", &a)]);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.ends_with("</html>\n"));
    let charts = svgs(&html);
    assert_eq!(charts.len(), 4);
    assert!(charts
        .iter()
        .all(|s| s.starts_with("<svg class=\"chart\"") && s.contains("width=\"960\"")));
    let legends: Vec<&str> = html
        .match_indices("<div class=\"legend\">")
        .map(|(i, _)| &html[i..i + html[i..].find("</div>").unwrap()])
        .collect();
    assert_eq!(legends.len(), 4);
    for legend in legends {
        assert!(legend.contains("baseline") && legend.contains("candidate"));
    }
    for (what, n) in [
        ("<th>Requests</th><td>1,000</td><td>1,000</td>", 1),
        ("connection reset by peer", 1),
        ("Connection reset by peer (os error 104)", 2),
        ("<text x=\"", 20),
    ] {
        assert!(html.matches(what).count() >= n, "{what}");
    }
    // Self-contained: nothing is fetched and nothing runs.
    for banned in [
        "<script", "<link", "src=", "http://", "https://", "@import", "url(",
    ] {
        let outside_data = html.replace("http://127.0.0.1:8080/", "");
        let outside_data = outside_data.replace("http://www.w3.org/2000/svg", "");
        assert!(!outside_data.contains(banned), "{banned}");
    }
    assert_finite_geometry(&html);
}

#[test]
fn golden_html_report() {
    let info = fixtures::info();
    let (totals, series) = fixtures::results();
    let a = report(&info, &totals, &series);
    crate::golden::check("report.html", &render_html(&[run("fixture", &a)]));
}

#[test]
fn hostile_strings_are_escaped() {
    const EVIL: &str = "<script>alert(1)</script>\"onload=alert(2) '<img src=x onerror=alert(3)>&";
    let mut info = fixtures::info();
    info.url = format!("http://127.0.0.1/{EVIL}");
    info.method = EVIL.into();
    info.started_at = EVIL.into();
    let mut totals = Recorder::new();
    totals.record_errors(ErrorKind::MalformedResponse, 1);
    totals.note_error_example(ErrorKind::MalformedResponse, || EVIL.into());
    let mut series = Series::new();
    series.push(point(0, 3, 1, 100));
    let mut r = report(&info, &totals, &series);
    r.warnings.push(EVIL.into());
    let html = render_html(&[run(EVIL, &r)]);
    assert!(!html.contains("<script"), "unescaped script tag");
    assert!(!html.contains("<img"), "unescaped img tag");
    assert!(!html.contains("\"onload"), "attribute break-out");
    assert!(!html.contains("'<"), "single-quote break-out");
    let escaped = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;onload=alert(2) &#39;&lt;img src=x \
                   onerror=alert(3)&gt;&amp;";
    // Name (title, run card, summary, errors table, 4 legends, chart tooltips), method, URL,
    // start time, warning and error example all show, escaped.
    assert!(html.matches(escaped).count() >= 12, "{html}");
    assert_finite_geometry(&html);
}

#[test]
fn empty_and_degenerate_runs_render_without_nan() {
    let info = fixtures::info();
    let empty_totals = Recorder::new();
    let empty_series = Series::new();
    let mut empty = report(&info, &empty_totals, &empty_series);
    empty.elapsed = Duration::ZERO;
    empty.interrupted = true;

    // One point of zero width, no responses.
    let mut zero_width = Series::new();
    let mut p = point(0, 0, 0, 0);
    p.width = Duration::ZERO;
    zero_width.push(p);
    let zero = report(&info, &empty_totals, &zero_width);

    // Every request failed.
    let mut all_errors = Recorder::new();
    all_errors.record_errors(ErrorKind::ConnectRefused, 50);
    let mut error_series = Series::new();
    error_series.push(point(0, 50, 50, 0));
    let failed = report(&info, &all_errors, &error_series);

    // A single interval with responses.
    let (totals, _) = fixtures::results();
    let mut single = Series::new();
    single.push(point(0, 1000, 10, 700));
    let one = report(&info, &totals, &single);

    let cases: Vec<Vec<HtmlRun>> = vec![
        vec![],
        vec![run("empty", &empty)],
        vec![run("zero", &zero)],
        vec![run("failed", &failed)],
        vec![run("one", &one)],
        vec![
            run("empty", &empty),
            run("zero", &zero),
            run("failed", &failed),
            run("one", &one),
        ],
    ];
    for runs in &cases {
        let html = render_html(runs);
        assert_finite_geometry(&html);
        assert_eq!(svgs(&html).len(), if runs.is_empty() { 0 } else { 4 });
    }
    let html = render_html(&[run("empty", &empty)]);
    assert!(html.contains("<span class=\"badge\">interrupted</span>"));
    assert!(html.contains("no responses: no latency to show"));
    assert!(html.contains("no intervals recorded"));
    assert!(html.contains("No errors"));
    let html = render_html(&[run("failed", &failed)]);
    assert!(html.contains("<td>0.00 %</td>"), "success share");
    assert!(html.contains("connect_refused"));
    // The lone interval shows as dots rather than vanishing.
    let html = render_html(&[run("one", &one)]);
    assert!(svgs(&html)[0].matches("<circle").count() >= 4);
    assert!(render_html(&[]).contains("No runs to show."));
}

#[test]
fn long_series_are_bucketed_keeping_spikes() {
    let info = fixtures::info();
    let (totals, _) = fixtures::results();
    let template = point(0, 0, 0, 0);
    let at = |i: u64, requests: u64, errors: u64, p50_us: u64| {
        let mut p = template.clone();
        p.offset = Duration::from_secs(i);
        (p.requests, p.succeeded, p.errors) = (requests, requests - errors, errors);
        (p.p50_us, p.p90_us, p.p99_us, p.max_us) = (p50_us, p50_us * 2, p50_us * 4, p50_us * 10);
        p
    };
    let series: Vec<Series> = (0..3u64)
        .map(|r| {
            let mut s = Series::new();
            for i in 0..3_600 {
                // A single one-second spike per run must survive bucketing.
                let p50 = if i == 1_234 + r {
                    900_000
                } else {
                    1_000 + (i * 7 + r) % 500
                };
                s.push(at(i, 1_000 + i % 50, i % 3, p50));
            }
            s
        })
        .collect();
    let reports: Vec<Report> = series.iter().map(|s| report(&info, &totals, s)).collect();
    let runs: Vec<HtmlRun> = reports
        .iter()
        .enumerate()
        .map(|(i, r)| run(&format!("run {i}"), r))
        .collect();
    let html = render_html(&runs);
    assert_finite_geometry(&html);
    let charts = svgs(&html);
    assert_eq!(charts.len(), 4);
    // At most 300 hover columns, and the spike's maximum (9,000 ms) is in one of them.
    let bands = charts[0].split("<g class=\"hover\">").nth(1).unwrap();
    let columns = bands.matches("<rect").count();
    assert!((100..=301).contains(&columns), "{columns} columns");
    assert!(bands.contains("max 9,000.000 ms"));
    assert!(html.contains("Each drawn point covers 12 s"));
    assert!(html.len() < 1_000_000, "{} bytes", html.len());
}

#[test]
fn a_run_with_steps_shows_its_step_table_escaped() {
    let mut run_with_steps = crate::seeded::with_steps();
    run_with_steps.info.steps[1] = "<b>browse</b>".into();
    let r = run_with_steps.report();
    let html = render_html(&[run("shop", &r)]);
    assert!(html.contains("<table class=\"steps\">"));
    assert!(html.contains("<th>login</th><td>200</td><td>8</td><td>4.00 %</td>"));
    assert!(html.contains("&lt;b&gt;browse&lt;/b&gt;"));
    assert!(!html.contains("<b>browse"));
    assert!(html.contains("✗ <code>login: error_rate &lt; 1%</code> actual 4.00 %</li>"));
    assert!(!html.contains("stopped the run"));
    assert_finite_geometry(&html);
    // The threshold that stopped the run says when, and its value then.
    run_with_steps.thresholds[1].stopped_run = Some(belier_results::ThresholdStop {
        at_ms: 1_000,
        actual: "error_rate = 5.00 %".into(),
    });
    let r = run_with_steps.report();
    let html = render_html(&[run("shop", &r)]);
    assert!(html.contains("✗ <code>login: error_rate &lt; 1%</code> actual 4.00 %; <strong>stopped the run at 1.0 s</strong> (error_rate = 5.00 %)</li>"), "{html}");
}

#[test]
fn an_open_loop_run_shows_its_schedule_lag_and_verdict_beside_a_closed_one() {
    let mut open_info = fixtures::info();
    open_info.model = belier_results::Model::Open;
    open_info.rate = Some(1000.0);
    open_info.schedule_s = Some(1.0);
    let (mut totals, series) = fixtures::results();
    for _ in 0..1000 {
        totals.record_scheduled();
    }
    let open = report(&open_info, &totals, &series);
    let closed_info = fixtures::info();
    let (closed_totals, closed_series) = fixtures::results();
    let closed = report(&closed_info, &closed_totals, &closed_series);
    let html = render_html(&[run("open", &open), run("closed", &closed)]);
    assert!(
        html.contains("<dt>load</dt><dd>open loop at 1000/s (even arrivals)"),
        "{html}"
    );
    // Per second of the 1 s schedule, not of the 1.5 s run; a dash for the closed loop.
    assert!(html.contains("<th>Target rate</th><td>1,000.0/s</td><td>–</td>"));
    assert!(html.contains("<th>Sent rate</th><td>1,000.0/s</td><td>–</td>"));
    assert!(html.contains("<th>Dropped</th><td>0</td><td>–</td>"));
    assert!(html.contains("<th>Uncorrected latency p99</th><td>"));
    assert!(html.contains("<th>Verdict</th><td>kept up</td><td>–</td>"));
    assert!(html.contains("<p class=\"ok\">Verdict: belier kept up (1,000.0/s of 1,000.0/s sent"));
    assert_eq!(
        html.matches("Verdict: ").count(),
        1,
        "no verdict for the closed loop"
    );
    // The open loop adds its target rate to the rates chart and a chart of its lag.
    assert!(html.contains("target/s (open loop)"));
    assert!(html.contains("<figcaption>Scheduling lag over time</figcaption>"));
    assert_finite_geometry(&html);
    let closed_only = render_html(&[run("closed", &closed)]);
    assert!(!closed_only.contains("Scheduling lag over time"));
    assert!(!closed_only.contains("target/s"));

    // A run at 2,000/s that sent half its arrivals (the other half dropped): the warning
    // names it.
    for _ in 0..1000 {
        totals.record_scheduled();
        totals.record_dropped();
    }
    open_info.rate = Some(2000.0);
    let late = report(&open_info, &totals, &series);
    let html = render_html(&[run("late", &late)]);
    assert!(html.contains("<th>Verdict</th><td>WARNING</td>"));
    assert!(html.contains("<div class=\"warn\">Verdict: the generator may have shaped"));
    assert!(html.contains("<li>the target rate was not reached: 1,000.0/s of 2,000.0/s"));
}

#[test]
fn the_last_answers_after_the_load_are_no_fall_of_the_rate_and_the_card_shows_connections_used() {
    // A 3 s open loop at 2,000/s: three full seconds, then 11 ms in which the last 10 answers
    // came in and nothing was due. Drawn as a rate, that point fell to 909/s and the target
    // to 0.
    let mut info = fixtures::info();
    info.model = belier_results::Model::Open;
    info.rate = Some(2000.0);
    info.schedule_s = Some(3.0);
    info.duration_s = Some(3.0);
    info.max_connections = Some(10_000);
    let mut series = Series::new();
    for i in 0..3 {
        let mut p = point(i, 2000, 0, 1_000);
        p.scheduled = 2000;
        series.push(p);
    }
    let mut drain = point(3, 10, 0, 1_000);
    drain.width = Duration::from_millis(11);
    series.push(drain);
    let mut totals = Recorder::new();
    for _ in 0..20 {
        totals.record_connection();
    }
    let mut r = report(&info, &totals, &series);
    r.elapsed = Duration::from_millis(3_011);
    let html = render_html(&[run("open", &r)]);
    assert_finite_geometry(&html);
    assert_eq!(
        html.matches("open: 2,000 requests/s · 0.0 errors/s · target 2,000/s")
            .count(),
        3,
        "the full seconds are drawn"
    );
    assert!(
        !html.contains("open: 909"),
        "the last answers are not a rate"
    );
    assert!(
        !html.contains("· target 0"),
        "the target does not fall to 0"
    );
    // Its latencies are drawn: the latency chart has a column for it.
    assert!(html.contains("3–3.011 s"), "{html}");
    assert!(
        html.contains(
            "<dt>connections</dt><dd>20 opened, at most 0 open at once (limit 10,000)</dd>"
        ),
        "{html}"
    );
}

mod capacity {
    use belier_capacity::overload::Behaviour;
    use belier_capacity::{Dimension, LimitedBy, Outcome, Overload, Step, StepKind};

    use super::assert_finite_geometry;
    use crate::render_capacity_html;

    fn step(kind: StepKind, level: f64, p99_ms: f64, pass: bool) -> Step {
        Step {
            kind,
            target_rate: level,
            achieved_rate: level,
            goodput: if pass { level } else { level * 0.8 },
            requests: (level * 10.0) as u64,
            p50_ms: Some(p99_ms / 4.0),
            p99_ms: Some(p99_ms),
            p999_ms: Some(p99_ms * 2.0),
            error_share: if pass { 0.0 } else { 0.2 },
            errors: Default::default(),
            rejected: 0,
            cancelled: 0,
            host_cpu: None,
            drain_s: None,
            drained: None,
            server_timing: None,
            pass: Some(pass),
            why: (!pass).then(|| format!("p99 = {p99_ms:.1} ms (wanted p99<30ms)")),
        }
    }

    /// A search that found 150/s: it grew to a failure at 200/s, bisected, confirmed, then
    /// overloaded and recovered.
    fn outcome() -> Outcome {
        use StepKind::{Bisect, Confirm, Grow, Recovery};
        Outcome {
            url: "http://127.0.0.1:8080/search?q=<a>&b".into(),
            dimension: Dimension::Rate,
            slos: vec!["p99<30ms".into(), "errors<1%".into()],
            max_rate: Some(150.0),
            limited_by: LimitedBy::Slo,
            passed_rate: Some(150.0),
            failed_rate: Some(200.0),
            failed_why: Some("p99 = 45.0 ms (wanted p99<30ms)".into()),
            generator: None,
            steps: vec![
                step(Grow, 50.0, 4.0, true),
                step(Grow, 100.0, 6.0, true),
                step(Grow, 200.0, 45.0, false),
                step(Bisect, 150.0, 12.0, true),
                step(Confirm, 150.0, 14.0, true),
                step(StepKind::Overload, 180.0, 80.0, false),
                step(Recovery, 120.0, 9.0, true),
            ],
            overload: Some(Overload {
                behaviour: Behaviour::Slows,
                recovered: Some(true),
                drained_s: Some(3.0),
                drained: Some(true),
            }),
            elapsed_s: 96.0,
        }
    }

    fn charts(html: &str) -> Vec<&str> {
        super::svgs(html)
            .into_iter()
            .filter(|s| s.starts_with("<svg class=\"chart\""))
            .collect()
    }

    #[test]
    fn the_steps_server_timing_has_a_table_only_when_a_step_has_it() {
        let mut o = outcome();
        assert!(!render_capacity_html(&o).contains("Server timing by step"));
        o.steps[2].server_timing = Some(belier_capacity::StepTiming {
            timed: 1_990,
            server_p50_ms: 3.0,
            server_p99_ms: 5.5,
            outside_p50_ms: 20.0,
            outside_p99_ms: 39.5,
        });
        let html = render_capacity_html(&o);
        assert!(html.contains("<h2>Server timing by step</h2>"));
        assert!(html.contains(
            "<tr><th>3</th><td class=\"kind\">grow</td><td>45.00</td><td>3.00</td><td>5.50</td>\
             <td>20.00</td><td>39.50</td><td>1,990</td></tr>"
        ));
        // One row: the other steps gave none.
        assert_eq!(html.matches("<td>39.50</td>").count(), 1);
    }

    #[test]
    fn the_page_shows_the_answer_the_slo_the_capacity_and_every_step() {
        let o = outcome();
        let html = render_capacity_html(&o);
        assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
        // The answer, escaped, styled as a pass.
        let answer = super::esc(&o.answer_line()).to_string();
        assert!(answer.contains("p99&lt;30ms"), "{answer}");
        assert!(html.contains(&format!("<p class=\"ok answer\">{answer}</p>")));
        assert!(html.contains("<dd>slows (queues the excess: latency grows past the SLO)</dd>"));
        assert!(html.contains(
            "<dd>drained 3.0 s after the overload; recovered at 0.8× (its step met the SLOs)</dd>"
        ));
        let charts = charts(&html);
        assert_eq!(charts.len(), 2);
        let (latency, goodput) = (charts[0], charts[1]);
        // The tightest latency SLO, labelled with its expression, across the latency chart.
        assert!(latency.contains(">SLO p99&lt;30ms</text>"), "{latency}");
        for chart in [latency, goodput] {
            assert!(chart.contains(">capacity 150/s</text>"));
            assert!(chart.contains("offered load (req/s)"));
        }
        assert!(goodput.contains("ideal: all offered (y = x)"));
        // A marker per step and statistic, each with its step in its title; failed steps
        // are rings, passed ones dots.
        for (i, s) in o.steps.iter().enumerate() {
            let title = format!(
                "<title>step {} · {} · {} · p99 {:.2} ms · ",
                i + 1,
                belier_capacity::kind_name(s.kind),
                o.dimension.level(s.target_rate),
                s.p99_ms.unwrap()
            );
            assert_eq!(latency.matches(&title).count(), 1, "{title}");
            let goodput_title = format!("<title>step {} · ", i + 1);
            assert_eq!(
                goodput.matches(&goodput_title).count(),
                2,
                "{goodput_title}"
            );
        }
        assert_eq!(latency.matches("<circle").count(), 3 * o.steps.len());
        let rings = latency.matches("r=\"4.5\" fill=\"#fff\"").count();
        assert_eq!(rings, 3 * 2, "two failed steps, three percentiles each");
        assert!(latency.contains("· p99 45.00 ms · failed: p99 = 45.0 ms (wanted p99&lt;30ms)"));
        // The table: every step, the failed ones marked.
        assert_eq!(html.matches("<tr class=\"pass\">").count(), 5);
        assert_eq!(html.matches("<tr class=\"fail\">").count(), 2);
        assert!(html.contains("<th>offered/s</th><th>sent/s</th>"));
        assert_finite_geometry(&html);
    }

    #[test]
    fn the_url_and_the_slos_are_escaped() {
        let mut o = outcome();
        o.url = "http://x/<script>alert(1)</script>?a=1&b=\"2\"".into();
        o.slos = vec!["p99<30ms".into(), "<img src=x>".into()];
        let html = render_capacity_html(&o);
        assert!(!html.contains("<script>") && !html.contains("<img"));
        assert!(
            html.contains("http://x/&lt;script&gt;alert(1)&lt;/script&gt;?a=1&amp;b=&quot;2&quot;")
        );
        assert!(html.contains("&lt;img src=x&gt;"));
    }

    #[test]
    fn degenerate_searches_render_without_nan() {
        let mut none = outcome();
        none.steps.clear();
        none.max_rate = None;
        none.passed_rate = None;
        none.overload = None;
        let html = render_capacity_html(&none);
        assert_eq!(html.matches(">no steps ran</text>").count(), 2);
        assert!(html.contains("<p class=\"warn answer\">No rate met"));
        assert!(!html.contains(">capacity "));
        assert_finite_geometry(&html);

        let mut silent = outcome();
        for s in &mut silent.steps {
            (s.p50_ms, s.p99_ms, s.p999_ms) = (None, None, None);
        }
        let html = render_capacity_html(&silent);
        assert!(html.contains(">no responses: no latency to show</text>"));
        assert_finite_geometry(&html);

        let mut one = outcome();
        one.steps.truncate(1);
        one.slos.clear();
        let html = render_capacity_html(&one);
        // The default SLO bounds errors only: no latency line to draw.
        assert!(html.contains(&format!(
            "<dd>{} (the default)</dd>",
            super::esc(belier_capacity::DEFAULT_SLO)
        )));
        assert!(!html.contains(">SLO "));
        assert_finite_geometry(&html);

        let mut failed = outcome();
        for s in &mut failed.steps {
            s.pass = Some(false);
            s.goodput = 0.0;
        }
        failed.steps[0].p99_ms = Some(0.0);
        failed.max_rate = None;
        let html = render_capacity_html(&failed);
        assert_finite_geometry(&html);
        assert!(!html.contains("<p class=\"ok"));

        let mut broken = outcome();
        broken.steps[1].goodput = f64::NAN;
        broken.steps[2].p99_ms = Some(f64::INFINITY);
        broken.steps[3].target_rate = f64::NAN;
        broken.steps[4].pass = None;
        broken.elapsed_s = f64::NAN;
        broken.dimension = Dimension::Connections;
        let html = render_capacity_html(&broken);
        assert_finite_geometry(&html);
        assert!(!html.contains("ideal"), "no y = x for connections");
        assert!(html.contains("step not judged"));
    }
}

#[test]
fn decoded_bytes_show_only_when_a_run_decoded_bodies() {
    let info = fixtures::info();
    let (totals, series) = fixtures::results();
    let plain = report(&info, &totals, &series);
    let html = render_html(&[run("plain", &plain)]);
    assert!(!html.contains("Bytes decoded"), "no run decoded anything");
    let mut decoding = totals.clone();
    decoding.record_decoded(40_000);
    let compressed = report(&info, &decoding, &series);
    let html = render_html(&[run("plain", &plain), run("compressed", &compressed)]);
    assert!(
        html.contains(
            "<tr><th>Bytes decoded (--compressed)</th><td>0 B</td><td>39.1 KiB</td></tr>"
        ),
        "{html}"
    );
}

#[test]
fn a_run_of_streaming_calls_has_message_rows_and_a_run_without_a_dash() {
    let (plain, mut streaming) = (crate::seeded::base(), crate::seeded::streaming());
    crate::seeded::add_round_trip(&mut streaming);
    let (a, b) = (plain.report(), streaming.report());
    let html = render_html(&[run("http", &a), run("stream", &b)]);
    for row in [
        "<tr class=\"group\"><th>Streaming calls</th><td>–</td><td>201</td></tr>",
        "<tr><th>Messages received</th><td>–</td><td>20,001</td></tr>",
        "<tr><th>Messages sent</th><td>–</td><td>201</td></tr>",
        "<tr><th>Message gap p50</th><td>–</td><td>0.250 ms</td></tr>",
        "<tr><th>Round trip p99</th><td>–</td><td>1.500 ms</td></tr>",
    ] {
        assert!(html.contains(row), "{row:?} missing");
    }
    assert!(html.contains("Message times: first"));
    // Without streaming calls, no message rows.
    let only_http = render_html(&[run("http", &a)]);
    assert!(!only_http.contains("Streaming calls") && !only_http.contains("Message times"));
}
