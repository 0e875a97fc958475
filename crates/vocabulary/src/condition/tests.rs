use super::*;

#[test]
fn splits_at_the_first_or_the_last_comparison() {
    let p = split("p99 < 200ms", &Comparison::ALL, Pick::First).unwrap();
    assert_eq!(
        p,
        Parts {
            metric: "p99",
            metric_at: 0,
            comparison: Comparison::Less,
            comparison_at: 4,
            limit: "200ms",
            limit_at: 6,
        }
    );
    for (text, metric, comparison, limit) in [
        ("p99<=1s", "p99", Comparison::LessOrEqual, "1s"),
        ("  mean >= 5ms ", "mean", Comparison::GreaterOrEqual, "5ms"),
        ("count == 10", "count", Comparison::Equal, "10"),
        ("rate > 900/s", "rate", Comparison::Greater, "900/s"),
        ("p99<>1s", "p99", Comparison::Less, ">1s"),
    ] {
        let p = split(text, &Comparison::ALL, Pick::First).unwrap();
        assert_eq!(
            (p.metric, p.comparison, p.limit),
            (metric, comparison, limit),
            "{text}"
        );
        assert_eq!(&text[p.metric_at..p.metric_at + metric.len()], metric);
        assert_eq!(&text[p.limit_at..p.limit_at + limit.len()], limit);
    }
    let q = split("sum(up > 0) < 3", &Comparison::BOUNDS, Pick::Last).unwrap();
    assert_eq!(
        (q.metric, q.comparison, q.limit, q.limit_at),
        ("sum(up > 0)", Comparison::Less, "3", 14)
    );
    let q = split("a <= 0.8", &Comparison::BOUNDS, Pick::Last).unwrap();
    assert_eq!(
        (q.comparison, q.comparison_at),
        (Comparison::LessOrEqual, 2)
    );
    assert_eq!(split("p99 = 1s", &Comparison::ALL, Pick::First), None);
    assert_eq!(split("", &Comparison::ALL, Pick::Last), None);
}

#[test]
fn scopes() {
    assert_eq!(scope("p99 < 1s"), Ok((None, "p99 < 1s", 0)));
    assert_eq!(
        scope("login: p99 < 1s"),
        Ok((Some("login"), " p99 < 1s", 6))
    );
    assert_eq!(scope("GET /a:b: mean < 5ms").unwrap().0, Some("GET /a:b"));
    assert_eq!(scope(" : p99 < 1s").unwrap_err().0, 0);
}

#[test]
fn percentiles() {
    for (text, want) in [
        ("p99", Some(99.0)),
        ("p99.9", Some(99.9)),
        ("p0", Some(0.0)),
        ("p100", Some(100.0)),
        ("median", Some(50.0)),
        ("p101", None),
        ("pNaN", None),
        ("q99", None),
        ("p", None),
        ("mean", None),
    ] {
        assert_eq!(percentile(text), want, "{text}");
    }
}

#[test]
fn comparisons_hold_and_go_beyond() {
    use Comparison::*;
    for (c, actual, bound, holds) in [
        (Less, 1.0, 2.0, true),
        (Less, 2.0, 2.0, false),
        (LessOrEqual, 2.0, 2.0, true),
        (Greater, 3.0, 2.0, true),
        (GreaterOrEqual, 2.0, 2.0, true),
        (Equal, 2.0, 2.0, true),
        (Equal, 2.0, 2.5, false),
    ] {
        assert_eq!(c.holds(actual, bound), holds, "{actual} {c} {bound}");
    }
    // Within float rounding of the limit is not beyond it.
    assert!(!Greater.beyond(250.00000000001, 250.0));
    assert!(Greater.beyond(250.1, 250.0));
    assert!(Less.beyond(f64::NEG_INFINITY, -5.0));
    assert!(Greater.beyond(f64::INFINITY, 50.0));
    assert!(!GreaterOrEqual.beyond(300.0, 250.0));
    for c in Comparison::ALL {
        assert_eq!(c.to_string(), c.symbol());
    }
}

#[test]
fn limits() {
    assert_eq!(latency_limit_us("200ms"), Ok(200_000.0));
    assert_eq!(latency_limit_us("1.5s"), Ok(1_500_000.0));
    assert_eq!(
        latency_limit_us("200"),
        Err("`200`: a latency needs a unit, e.g. `200ms` or `1s`".into())
    );
    assert_eq!(
        latency_limit_us("1x"),
        Err("expected a latency such as `200ms`, found `1x`: unknown unit `x` (use us, ms, s, m or h)".into())
    );
    assert_eq!(share_limit("1%"), Ok(0.01));
    assert_eq!(share_limit("0.5 %"), Ok(0.005));
    assert_eq!(
        share_limit("1"),
        Err("expected a percentage such as `1%`, found `1`".into())
    );
    for bad in ["101%", "x%", "inf%"] {
        assert_eq!(
            share_limit(bad),
            Err(format!(
                "expected a percentage from 0% to 100%, found `{bad}`"
            ))
        );
    }
}
