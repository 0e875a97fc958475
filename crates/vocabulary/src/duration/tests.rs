use proptest::prelude::*;

use super::*;

#[test]
fn reads_every_form_people_write() {
    let ms = Duration::from_millis;
    for (text, want) in [
        // Plans and the README.
        ("250ms", ms(250)),
        ("2s", ms(2000)),
        ("1m30s", ms(90_000)),
        ("1.5s", ms(1500)),
        ("2m30s", ms(150_000)),
        ("1h", ms(3_600_000)),
        ("2m", ms(120_000)),
        ("2 m 30 s", ms(150_000)),
        ("1min", ms(60_000)),
        (".5", ms(500)),
        (".5s", ms(500)),
        ("5.s", ms(5000)),
        // Bare seconds, as flags and plans take them.
        ("3", ms(3000)),
        ("0.25", ms(250)),
        ("1e3", ms(1_000_000)),
        ("+2", ms(2000)),
        ("0", Duration::ZERO),
        ("0s", Duration::ZERO),
        // Flags (humantime's units and spaces).
        ("30s", ms(30_000)),
        ("1h30m", ms(5_400_000)),
        ("1h 30m", ms(5_400_000)),
        ("2 hours 5 sec", ms(7_205_000)),
        ("1d", ms(86_400_000)),
        ("1w", ms(7 * 86_400_000)),
        ("1M", Duration::from_secs(2_630_016)),
        ("1y", Duration::from_secs(31_557_600)),
        ("1.5h", ms(5_400_000)),
        // --fail-if latencies.
        ("800us", Duration::from_micros(800)),
        ("800µs", Duration::from_micros(800)),
        ("7ns", Duration::from_nanos(7)),
        (" 1s ", ms(1000)),
    ] {
        assert_eq!(parse(text), Ok(want), "{text}");
    }
    // In integers: f64 seconds lost a nanosecond here; the fraction rounds to the nearest.
    assert_eq!(
        parse("5195727670432us"),
        Ok(Duration::from_micros(5_195_727_670_432))
    );
    assert_eq!(parse("1.0000000005s"), Ok(Duration::new(1, 1)));
}

#[test]
fn refuses_what_is_no_duration_naming_it() {
    for (text, problem) in [
        ("", "empty"),
        ("  ", "empty"),
        ("s", "expected a number at `s`"),
        ("-1s", "expected a number at `-1s`"),
        ("-1", "must be a finite, non-negative time"),
        ("NaN", "must be a finite, non-negative time"),
        ("1e400", "must be a finite, non-negative time"),
        ("abc", "expected a number at `abc`"),
        (
            "5 parsecs",
            "unknown unit `parsecs` (use us, ms, s, m or h)",
        ),
        (
            "1s5",
            "a unit (ms, s, m, h) is needed after a number in a sum",
        ),
        (
            "1 2s",
            "a unit (ms, s, m, h) is needed after a number in a sum",
        ),
        ("1.2.3s", "`1.2.3` is not a number"),
        (".s", "`.` is not a number"),
        (
            "1..2",
            "a unit (ms, s, m, h) is needed after a number in a sum",
        ),
        ("1..2s", "`1..2` is not a number"),
        ("1s,2s", "expected a number at `,2s`"),
    ] {
        let e = parse(text).unwrap_err();
        assert_eq!(e.problem, problem, "{text:?}");
        assert_eq!(e.to_string(), format!("`{text}`: {problem}"));
    }
    // Valid `Duration`s that overflowed a run's clock.
    for too_long in [
        "1e19",
        "10000000000000000000s",
        "5000000000000000000s",
        "876001h",
        "200y",
        "100y",
    ] {
        assert_eq!(parse(too_long).unwrap_err().problem, TOO_LONG, "{too_long}");
    }
    assert_eq!(parse("876000h"), Ok(LONGEST));
}

#[test]
fn rules_narrow_the_grammar() {
    let latency = Rules {
        bare_seconds: false,
        longest_unit: Unit::Second,
    };
    assert_eq!(parse_by("1.5s", latency), Ok(Duration::from_millis(1500)));
    assert_eq!(
        parse_by("1s500ms", latency),
        Ok(Duration::from_millis(1500))
    );
    for (text, problem) in [
        ("250", "a unit is needed, e.g. `200ms` or `1s`"),
        ("1m", "`m` is too long a unit here"),
        ("1h", "`h` is too long a unit here"),
    ] {
        assert_eq!(
            parse_by(text, latency).unwrap_err().problem,
            problem,
            "{text}"
        );
    }
}

#[test]
fn formats_as_a_plan_writes() {
    for (d, shown) in [
        (Duration::from_millis(90_000), "1m30s"),
        (Duration::from_millis(250), "250ms"),
        (Duration::from_micros(850), "850us"),
        (Duration::ZERO, "0s"),
        (Duration::from_secs(3600 + 1), "1h1s"),
    ] {
        assert_eq!(format(d), shown);
    }
}

proptest! {
    #[test]
    fn what_is_formatted_reads_back(us in 0..=LONGEST.as_micros() as u64) {
        let d = Duration::from_micros(us);
        prop_assert_eq!(parse(&format(d)), Ok(d));
    }

    /// Whatever humantime writes (the CLI shows durations with it) reads back.
    #[test]
    fn what_humantime_writes_reads_back(ns in 0..=LONGEST.as_nanos() as u64) {
        let d = Duration::from_nanos(ns);
        let shown = humantime::format_duration(d).to_string();
        prop_assert_eq!(parse(&shown), Ok(d), "{}", shown);
    }

    #[test]
    fn decimal_seconds_read_exactly(whole in 0u64..1_000_000, nanos in 0u32..1_000_000_000) {
        let text = format!("{whole}.{nanos:09}");
        prop_assert_eq!(parse(&text), Ok(Duration::new(whole, nanos)));
        prop_assert_eq!(parse(&format!("{text}s")), Ok(Duration::new(whole, nanos)));
    }

    #[test]
    fn noise_never_panics(text in "\\PC{0,24}") {
        let _ = parse(&text);
    }
}
