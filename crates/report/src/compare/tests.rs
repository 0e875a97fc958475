use std::time::Duration;

use serde_json::Value;

use super::*;
use crate::seeded;

fn c(metric: &'static str, op: Op, limit: Limit) -> Condition {
    Condition { metric, op, limit }
}

#[test]
fn parses_valid_conditions() {
    use Limit::{ChangePercent as Change, Value as At};
    use Op::{Above, Below};
    let table: &[(&str, &[Condition])] = &[
        ("p99>+10%", &[c("p99", Above, Change(10.0))]),
        ("p50>+5%", &[c("p50", Above, Change(5.0))]),
        ("rate<-5%", &[c("rate", Below, Change(-5.0))]),
        ("errors>0.5%", &[c("errors", Above, At(0.5))]),
        ("errors>+50%", &[c("errors", Above, Change(50.0))]),
        ("p99>250ms", &[c("p99", Above, At(250.0))]),
        ("max>1s", &[c("max", Above, At(1000.0))]),
        ("p99.9>1.5s", &[c("p99.9", Above, At(1500.0))]),
        ("p90>800us", &[c("p90", Above, At(0.8))]),
        ("p90>800µs", &[c("p90", Above, At(0.8))]),
        ("throughput<900", &[c("throughput", Below, At(900.0))]),
        ("rate<1200.5/s", &[c("rate", Below, At(1200.5))]),
        ("p99>+2.5%", &[c("p99", Above, Change(2.5))]),
        ("p99>-0%", &[c("p99", Above, Change(-0.0))]),
        (
            " p99 > +10 % , errors > 0.5% ",
            &[c("p99", Above, Change(10.0)), c("errors", Above, At(0.5))],
        ),
        (
            "p99>+10%,p50>+5%,rate<-5%,errors>0.5%,p99>250ms,max>1s",
            &[
                c("p99", Above, Change(10.0)),
                c("p50", Above, Change(5.0)),
                c("rate", Below, Change(-5.0)),
                c("errors", Above, At(0.5)),
                c("p99", Above, At(250.0)),
                c("max", Above, At(1000.0)),
            ],
        ),
    ];
    for (expr, want) in table {
        assert_eq!(parse_fail_if(expr).as_deref(), Ok(*want), "{expr}");
    }
}

#[test]
fn rejects_invalid_conditions_naming_them() {
    let table = [
        ("", "no condition given"),
        ("  ", "no condition given"),
        ("p99>+10%,", "empty condition in 'p99>+10%,'"),
        ("p99>+10%,,p50>+5%", "empty condition"),
        ("p99", "'p99': expected METRIC>LIMIT or METRIC<LIMIT"),
        (
            "p95>+10%",
            "'p95>+10%': unknown metric 'p95', expected one of rate, throughput",
        ),
        (">+10%", "unknown metric ''"),
        ("P99>+10%", "unknown metric 'P99'"),
        ("p99>=+10%", "'p99>=+10%': only '>' (above) and '<' (below)"),
        ("p99<>1s", "only '>' (above) and '<' (below)"),
        ("p99>", "'p99>': missing limit after '>'"),
        ("rate<", "missing limit after '<'"),
        (
            "p99>+10",
            "'p99>+10': a signed limit is a relative change and ends in '%'",
        ),
        ("p99>+ten%", "'p99>+ten%': 'ten' is not a number"),
        ("p99>++10%", "'+10' is not a number"),
        ("p99>+inf%", "'inf' is not a number"),
        ("p99>250", "'p99>250': p99 takes a duration like '250ms'"),
        ("p99>10%", "p99 takes a duration"),
        ("max>1m", "max takes a duration"),
        ("p50>ms", "p50 takes a duration"),
        (
            "errors>0.5",
            "'errors>0.5': errors takes a percentage like '0.5%'",
        ),
        ("errors>150%", "an error percentage is between 0 and 100"),
        ("errors>nan%", "'nan' is not a number"),
        (
            "rate<5%",
            "'rate<5%': rate takes requests per second like '900'",
        ),
        ("throughput<fast", "'fast' is not a number"),
        ("rate<1e999", "is not a number"),
    ];
    for (expr, want) in table {
        let err = parse_fail_if(expr).expect_err(expr);
        assert!(err.contains(want), "{expr}: {err}");
    }
}

#[test]
fn conditions_print_as_written() {
    let parsed =
        parse_fail_if("p99>+10%,rate<-5%,errors>0.5%,p99>250ms,max>1.5s,rate<900/s").unwrap();
    let shown: Vec<String> = parsed.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "p99>+10%",
            "rate<-5%",
            "errors>0.5%",
            "p99>250ms",
            "max>1500ms",
            "rate<900"
        ]
    );
    for s in &shown {
        assert_eq!(parse_fail_if(s).unwrap().len(), 1, "{s}");
    }
    // Found by the property tests: -0 printed as `+-0%`, which does not parse.
    let zero = parse_fail_if("rate<-0%").unwrap()[0];
    assert_eq!(zero.to_string(), "rate<+0%");
    assert!(parse_fail_if(&zero.to_string()).is_ok());
}

fn seeded_deltas() -> Vec<Delta> {
    let (a, b) = (seeded::base(), seeded::new());
    compare(&a.report(), &b.report())
}

#[test]
fn deltas_on_seeded_runs() {
    let d = seeded_deltas();
    let names: Vec<&str> = d.iter().map(|d| d.metric).collect();
    assert_eq!(names, METRICS);
    let get = |m: &str| d.iter().find(|d| d.metric == m).unwrap().clone();

    // Base: 1,000 requests in 1.5 s, 980 succeeded; new: 1,036 in 1.5 s.
    let rate = get("rate");
    assert_eq!(rate.unit, "req/s");
    assert!((rate.base - 1000.0 / 1.5).abs() < 1e-9, "{rate:?}");
    assert!((rate.new - 1036.0 / 1.5).abs() < 1e-9, "{rate:?}");
    assert!((rate.change.unwrap() - 0.036).abs() < 1e-12, "{rate:?}");

    // Base errors: 10 resets and 10 503s of 1,000, so 2 %.
    let errors = get("errors");
    assert_eq!(errors.unit, "%");
    assert!((errors.base - 2.0).abs() < 1e-12, "{errors:?}");
    let b = seeded::new();
    let bad = (b.totals.requests() - b.totals.succeeded()) as f64;
    assert!(
        (errors.new - bad * 100.0 / 1036.0).abs() < 1e-12,
        "{errors:?}"
    );

    // Latency percentiles are the histogram's, in ms.
    let a = seeded::base();
    let p99 = get("p99");
    assert_eq!(p99.unit, "ms");
    assert_eq!(
        p99.base,
        a.totals.latency_us().value_at_percentile(99.0) as f64 / 1000.0
    );
    // The max is the exact value recorded (the histogram's is its bucket's upper edge).
    let max = b.totals.range(belier_stats::Metric::Latency).unwrap().max;
    assert_eq!(get("max").new, max as f64 / 1000.0);
    assert!(max <= b.totals.latency_us().max());
    for d in &d {
        assert_eq!(d.change, Some((d.new - d.base) / d.base), "{d:?}");
    }
}

#[test]
fn a_zero_base_has_no_relative_change() {
    let a = seeded::base();
    let empty = belier_stats::Recorder::new();
    let series = belier_stats::Series::new();
    let mut zero = a.report();
    zero.totals = &empty;
    zero.series = &series;
    zero.elapsed = Duration::ZERO;
    let d = compare(&zero, &a.report());
    assert!(
        d.iter().all(|d| d.base == 0.0 && d.change.is_none()),
        "{d:?}"
    );
    let same = compare(&zero, &zero);
    assert!(same.iter().all(|d| d.change.is_none() && d.new == 0.0));
    assert_eq!(change_cell(&same[0]), "+0.0 %");
    assert_eq!(change_cell(&d[0]), "n/a");
}

fn delta(metric: &'static str, base: f64, new: f64) -> Delta {
    Delta {
        metric,
        base,
        new,
        change: (base != 0.0).then(|| (new - base) / base),
        unit: unit(metric),
        absent: None,
    }
}

#[test]
fn failures_name_the_figures() {
    let deltas = [
        delta("rate", 1000.0, 928.0),
        delta("p50", 4.0, 4.1),
        delta("p99", 12.0, 14.808),
        delta("max", 250.0, 250.0),
        delta("errors", 0.0, 1.2),
    ];
    let table: &[(&str, &[&str])] = &[
        (
            "p99>+10%",
            &["p99 rose 23.4 % (12.000 ms → 14.808 ms), limit +10 %"],
        ),
        ("p50>+5%", &[]),
        // 4.1 / 4.0 − 1 is +2.5 % to float rounding: at the limit, so not above it.
        ("p50>+2.5%", &[]),
        (
            "p50>+2%",
            &["p50 rose 2.5 % (4.000 ms → 4.100 ms), limit +2 %"],
        ),
        (
            "rate<-5%",
            &["rate fell 7.2 % (1,000.0/s → 928.0/s), limit -5 %"],
        ),
        ("rate<-10%", &[]),
        (
            "rate<950",
            &["rate is 928.0/s, below the limit 950.0/s (base 1,000.0/s)"],
        ),
        (
            "p99>14ms",
            &["p99 is 14.808 ms, above the limit 14.000 ms (base 12.000 ms)"],
        ),
        // Equal to the limit is not above it, nor is an unchanged value a rise.
        ("max>250ms,max>+0%", &[]),
        (
            "errors>0.5%",
            &["errors is 1.200 %, above the limit 0.500 % (base 0.000 %)"],
        ),
        // From no errors to some: an unbounded rise, so any relative limit fails.
        (
            "errors>+1000%",
            &["errors rose from zero (0.000 % → 1.200 %), limit +1000 %"],
        ),
        ("errors<-10%", &[]),
        (
            "p99<+30%",
            &["p99 rose 23.4 % (12.000 ms → 14.808 ms), limit +30 %"],
        ),
    ];
    for (expr, want) in table {
        let got = failed(&deltas, &parse_fail_if(expr).unwrap());
        assert_eq!(got, *want, "{expr}");
    }
}

#[test]
fn float_rounding_does_not_fail_a_gate_at_its_limit() {
    // 11 / 10 − 1 is 0.10000000000000009 in binary: still exactly +10 %.
    let d = [delta("p99", 10.0, 11.0)];
    assert!(failed(&d, &parse_fail_if("p99>+10%").unwrap()).is_empty());
    assert_eq!(failed(&d, &parse_fail_if("p99>+9.99%").unwrap()).len(), 1);
}

#[test]
fn golden_comparison_text() {
    let deltas = seeded_deltas();
    let conditions = parse_fail_if("p99>+10%,rate<-5%,errors>0.5%,max>1s").unwrap();
    let failures = failed(&deltas, &conditions);
    let got = render_comparison_text(seeded::BASE, seeded::NEW, &deltas, &failures);
    crate::golden::check("compare.txt", &got);
}

#[test]
fn text_without_failures_is_just_the_table() {
    let deltas = seeded_deltas();
    let got = render_comparison_text("a\u{1b}[2J", "b", &deltas, &[]);
    assert!(!got.contains("FAILED"), "{got}");
    assert!(got.contains("'a\\u{1b}[2J'"), "{got}");
    assert_eq!(got.lines().count(), 2 + 1 + METRICS.len());
    // Columns line up: every table line has the same width.
    let widths: Vec<usize> = got.lines().skip(2).map(|l| l.chars().count()).collect();
    assert!(widths.windows(2).all(|w| w[0] == w[1]), "{got}");
}

#[test]
fn json_carries_every_delta_and_the_failures() {
    let deltas = seeded_deltas();
    let failures = failed(&deltas, &parse_fail_if("p99>+1%").unwrap());
    let doc: Value =
        serde_json::from_str(&render_comparison_json("base", "new", &deltas, &failures)).unwrap();
    assert_eq!(doc["base"], "base");
    assert_eq!(doc["new"], "new");
    assert_eq!(doc["failed"], true);
    assert_eq!(doc["failures"].as_array().unwrap().len(), 1);
    let metrics = doc["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), METRICS.len());
    let p99 = &metrics[4];
    assert_eq!(p99["metric"], "p99");
    assert_eq!(p99["unit"], "ms");
    assert_eq!(p99["base"].as_f64(), Some(deltas[4].base));
    assert_eq!(p99["change"].as_f64(), deltas[4].change);

    let zero = [delta("errors", 0.0, 0.0)];
    let doc: Value = serde_json::from_str(&render_comparison_json("a", "b", &zero, &[])).unwrap();
    assert_eq!(doc["metrics"][0]["change"], Value::Null);
    assert_eq!(doc["failed"], false);
}

#[test]
fn junit_has_a_case_per_condition_failing_with_the_change_against_the_limit() {
    let deltas = seeded_deltas();
    let conditions = parse_fail_if("p99>+10%,rate<-5%,errors>0.5%,max>1s").unwrap();
    let verdicts = verdicts(&deltas, &conditions);
    let failures = failed(&deltas, &conditions);
    let got = render_comparison_junit(seeded::BASE, seeded::NEW, &verdicts);
    crate::golden::check("compare.junit.xml", &got);
    assert_eq!(got.matches("<testcase ").count(), conditions.len());
    assert_eq!(got.matches("<failure ").count(), failures.len());
    assert!(
        got.contains(r#"classname="belier.compare" name="p99&gt;+10%""#),
        "{got}"
    );
    for f in &failures {
        let message = format!("message=\"{}\"", crate::junit::xml(f));
        assert!(got.contains(&message), "{message} in {got}");
    }
}

#[test]
fn runs_of_streaming_calls_compare_their_messages_and_other_runs_do_not() {
    let (base, mut new) = (seeded::streaming(), seeded::streaming());
    seeded::add_round_trip(&mut new);
    let deltas = compare(&base.report(), &new.report());
    let names: Vec<&str> = deltas.iter().map(|d| d.metric).collect();
    let mut want = METRICS.to_vec();
    want.extend(MESSAGE_METRICS.iter().map(|(m, _)| *m));
    assert_eq!(names, want);
    let get = |metric: &str| deltas.iter().find(|d| d.metric == metric).unwrap();
    let received = get("messages_received");
    assert_eq!((received.base, received.new), (20_000.0, 20_001.0));
    assert_eq!(
        (get("messages_sent").base, get("messages_sent").new),
        (200.0, 201.0)
    );
    assert_eq!(get("gap_p50").new, 0.25);
    // The base had no round trips: 0, and no relative change.
    let trips = get("round_trip_p99");
    assert_eq!((trips.base, trips.new, trips.change), (0.0, 1.5, None));
    let text = render_comparison_text("a", "b", &deltas, &[]);
    for line in [
        "  messages_received      20,000      20,001  +0.0 %\n",
        "  sent_per_s            133.3/s     134.0/s  +0.5 %\n",
        "  round_trip_p99       0.000 ms    1.500 ms     n/a\n",
    ] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    // Without round trips on either side, no row for them; without messages, no rows at all.
    let streaming = seeded::streaming();
    let one_way = compare(&base.report(), &streaming.report());
    assert_eq!(one_way.len(), METRICS.len() + MESSAGE_METRICS.len() - 1);
    let plain = seeded::base();
    let http = compare(&plain.report(), &plain.report());
    assert_eq!(http.len(), METRICS.len());
}

#[test]
fn conditions_name_message_figures_by_the_vocabulary_s_names() {
    use Limit::{ChangePercent as Change, Value as At};
    use Op::{Above, Below};
    for (expr, want) in [
        ("ttft p99>500ms", c("first_message_p99", Above, At(500.0))),
        (
            "ttft_p50 > +10%",
            c("first_message_p50", Above, Change(10.0)),
        ),
        (
            "first_message_p99>1s",
            c("first_message_p99", Above, At(1000.0)),
        ),
        ("itl p99 > 50ms", c("gap_p99", Above, At(50.0))),
        ("gap median>5ms", c("gap_p50", Above, At(5.0))),
        ("ws_rtt p99>20ms", c("round_trip_p99", Above, At(20.0))),
        (
            "messages_received<20000",
            c("messages_received", Below, At(20_000.0)),
        ),
        (
            "received_per_s<100/s",
            c("received_per_s", Below, At(100.0)),
        ),
        ("sent_per_s<-5%", c("sent_per_s", Below, Change(-5.0))),
    ] {
        assert_eq!(parse_fail_if(expr), Ok(vec![want]), "{expr}");
    }
    assert_eq!(
        parse_fail_if("ttft p99>500ms").unwrap()[0].to_string(),
        "first_message_p99>500ms"
    );
    for (expr, words) in [
        ("ttft>5ms", "needs a statistic"),
        ("itl q99>5ms", "unknown statistic `q99`"),
        ("ttft p90>5ms", "compare shows no ttft p90"),
        ("ws_rtt p50>5ms", "compare shows no ws_rtt p50"),
        ("ttft p99>500", "takes a duration"),
        ("messages_received<many", "number of messages"),
        ("received_per_s<5%", "messages per second"),
    ] {
        let e = parse_fail_if(expr).unwrap_err();
        assert!(e.contains(words), "{expr}: {e}");
        assert!(e.contains(&expr.replace(' ', "")), "{expr}: {e}");
    }
}

#[test]
fn message_conditions_judge_the_new_run_and_fail_without_its_figures() {
    let (streaming, plain) = (seeded::streaming(), seeded::base());
    let judge = |base: &seeded::Run, new: &seeded::Run, expr: &str| {
        failed(
            &compare(&base.report(), &new.report()),
            &parse_fail_if(expr).unwrap(),
        )
    };
    assert!(judge(&streaming, &streaming, "itl p50>1s").is_empty());
    let held = judge(&streaming, &streaming, "itl p50>0.1ms");
    assert_eq!(held.len(), 1);
    assert!(
        held[0].starts_with("gap_p50 is 0.250 ms, above the limit"),
        "{held:?}"
    );
    // A new run without streamed messages: nothing to judge, which fails the gate.
    let none = judge(&streaming, &plain, "ttft p99>10s");
    assert_eq!(
        none,
        ["first_message_p99: nothing to judge in the new run (the run recorded no streamed messages)"]
    );
    let neither = judge(&plain, &plain, "messages_received<10");
    assert_eq!(
        neither,
        ["messages_received: nothing to judge in either run (no streamed messages)"]
    );
    // Streams without replies to their messages: no round trips in either run.
    let trips = judge(&streaming, &streaming, "ws_rtt p99>1s");
    assert_eq!(
        trips,
        ["round_trip_p99: nothing to judge in either run (no reply answered a message one for one)"]
    );
    // Only in the base: the new run has none.
    let mut with_trips = seeded::streaming();
    seeded::add_round_trip(&mut with_trips);
    let gone = judge(&with_trips, &streaming, "ws_rtt p99>1s");
    assert_eq!(
        gone,
        ["round_trip_p99: nothing to judge in the new run (no reply answered a message one for one)"]
    );
}
