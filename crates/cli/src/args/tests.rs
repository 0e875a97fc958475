use std::time::Duration;

use super::*;

#[test]
fn durations() {
    assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
    assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
    assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
    for bad in ["", "0", "0s", "-1", "abc", "10 parsecs", "NaN"] {
        assert!(parse_duration(bad).is_err(), "{bad:?}");
    }
    assert_eq!(parse_duration_or_zero("0"), Ok(Duration::ZERO));
    assert_eq!(parse_duration_or_zero("0s"), Ok(Duration::ZERO));
    assert!(parse_duration_or_zero("-1").is_err());
    // Found by the property tests: valid `Duration`s that overflowed the run's clock.
    for too_long in ["1e19", "10000000000000000000s", "876001h", "200y"] {
        assert_eq!(
            parse_duration(too_long),
            Err("too long: at most 100 years".into()),
            "{too_long}"
        );
    }
    assert_eq!(parse_duration("876000h"), Ok(LONGEST));
}

#[test]
fn clap_definition_is_consistent() {
    use clap::CommandFactory;
    Cli::command().debug_assert();
}
