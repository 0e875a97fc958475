use super::*;

fn time(time: MessageTime, name: &'static str, statistic: Statistic) -> MessageMetric {
    MessageMetric::Time {
        time,
        name,
        statistic,
    }
}

#[test]
fn every_name_and_alias_reads_with_a_space_or_an_underscore() {
    use MessageTime::*;
    for (text, want) in [
        (
            "ttft p99",
            time(FirstMessage, "ttft", Statistic::Percentile(99.0)),
        ),
        (
            "ttft_p99",
            time(FirstMessage, "ttft", Statistic::Percentile(99.0)),
        ),
        (
            "first_message p50",
            time(FirstMessage, "first_message", Statistic::Percentile(50.0)),
        ),
        (
            "first_message_p99.9",
            time(FirstMessage, "first_message", Statistic::Percentile(99.9)),
        ),
        ("itl p99", time(Gap, "itl", Statistic::Percentile(99.0))),
        ("itl  median", time(Gap, "itl", Statistic::Percentile(50.0))),
        ("gap_mean", time(Gap, "gap", Statistic::Mean)),
        ("gap avg", time(Gap, "gap", Statistic::Mean)),
        (
            "ws_rtt p99",
            time(RoundTrip, "ws_rtt", Statistic::Percentile(99.0)),
        ),
        (
            "round_trip max",
            time(RoundTrip, "round_trip", Statistic::Max),
        ),
        (
            " round_trip_min ",
            time(RoundTrip, "round_trip", Statistic::Min),
        ),
        (
            "messages_received",
            MessageMetric::Count(Direction::Received),
        ),
        ("messages_sent", MessageMetric::Count(Direction::Sent)),
        ("received_per_s", MessageMetric::Rate(Direction::Received)),
        ("sent_per_s", MessageMetric::Rate(Direction::Sent)),
    ] {
        assert_eq!(MessageMetric::parse(text), Ok(Some(want)), "{text}");
    }
    // Every name of the tables reads.
    for (name, t) in TIME_NAMES {
        let m = MessageMetric::parse(&format!("{name} p99"))
            .unwrap()
            .unwrap();
        assert_eq!(
            m.canonical(),
            time(t, t.name(), Statistic::Percentile(99.0))
        );
        assert_eq!(m.to_string(), format!("{name} p99"));
    }
    for (name, m) in COUNT_NAMES {
        assert_eq!(MessageMetric::parse(name), Ok(Some(m)));
        assert_eq!(m.to_string(), name);
    }
}

#[test]
fn other_metrics_are_left_to_the_caller() {
    for text in [
        "p99", "mean", "errors", "rate", "requests", "ttfb", "gaps", "itlx p99", "",
    ] {
        assert_eq!(MessageMetric::parse(text), Ok(None), "{text}");
    }
}

#[test]
fn a_message_time_written_wrongly_is_refused_by_name() {
    for (text, words) in [
        ("ttft", "needs a statistic"),
        ("itl_", "needs a statistic"),
        ("ttft q99", "unknown statistic `q99`"),
        ("ws_rtt p101", "unknown statistic `p101`"),
        ("gap p99 p50", "unknown statistic `p99 p50`"),
        ("round_trip_", "needs a statistic"),
    ] {
        let e = MessageMetric::parse(text).unwrap_err();
        assert!(e.contains(words) && e.contains(text.trim()), "{text}: {e}");
    }
}

#[test]
fn each_time_says_why_it_is_missing() {
    for (_, t) in TIME_NAMES {
        assert!(!t.missing().is_empty());
    }
    assert!(NO_MESSAGES.contains("no streamed messages"));
}
