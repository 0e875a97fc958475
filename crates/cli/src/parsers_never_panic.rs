//! The command line's parsers give a value or an error, never a panic: durations, headers,
//! and whole argument vectors of belier's real flags with values near valid ones, parsed by
//! clap and validated as `main` would before running anything (stages, URLs, shares, SLOs,
//! `--fail-if`). Nothing runs and nothing is written; `tests/suite/flags_never_panic.rs` runs the
//! binary itself on fewer vectors.
//!
//! `PROPTEST_CASES` sets the number of cases (256 by default); `bench/fuzz` runs many more.

use belier_testsupport::argv;
use clap::Parser;
use proptest::prelude::*;

use crate::args::{parse_duration, parse_duration_or_zero, Cli, Command, LONGEST};
use crate::settings::parse_header;
use argv::{Kind, BOUNDS, CAPACITY, COMPARE, LIVE, LOAD, REPORT, REQUEST, RUN};

fn check_duration(text: &str) -> Result<(), TestCaseError> {
    let any = parse_duration_or_zero(text);
    let positive = parse_duration(text);
    match (&any, &positive) {
        (Ok(d), Ok(p)) => prop_assert_eq!(d, p),
        (Ok(d), Err(_)) => prop_assert!(d.is_zero(), "{:?} refused as zero", text),
        (Err(_), Ok(_)) => prop_assert!(false, "{:?} positive but not a duration", text),
        (Err(a), Err(b)) => prop_assert!(!a.is_empty() && !b.is_empty()),
    }
    if let Ok(d) = any {
        prop_assert!(d <= LONGEST, "{:?} accepted as {:?}", text, d);
        // As the messages show a duration, it reads back as itself.
        let shown = humantime::format_duration(d).to_string();
        prop_assert_eq!(
            parse_duration_or_zero(&shown),
            Ok(d),
            "{:?} shown as {:?}",
            text,
            shown
        );
    }
    Ok(())
}

fn check_header(text: &str) -> Result<(), TestCaseError> {
    let Ok((name, value)) = parse_header(text) else {
        return Ok(());
    };
    prop_assert!(!name.is_empty() && !name.contains([':', ' ']), "{:?}", name);
    prop_assert!(!value.contains(['\r', '\n', '\0']), "{:?}", value);
    let written = format!("{name}: {value}");
    prop_assert_eq!(parse_header(&written), Ok((name, value)), "{:?}", written);
    Ok(())
}

/// Parses `argv` as clap would, then validates it as `main` would before running it.
fn check_argv(argv: &[String]) -> Result<(), TestCaseError> {
    let Ok(cli) = Cli::try_parse_from(argv) else {
        return Ok(());
    };
    match cli.command {
        None => {
            let _ = crate::settings::from_args(cli.load, 2);
        }
        Some(Command::Capacity(a)) => {
            let _ = belier_capacity::Slos::parse(&a.slo);
            let _ = crate::settings::request_config(&a.request);
        }
        Some(Command::Compare(a)) => {
            if let Some(expr) = &a.fail_if {
                let _ = belier_report::compare::parse_fail_if(expr);
            }
        }
        Some(Command::Run(a)) => {
            for h in &a.every.headers {
                let _ = parse_header(h);
            }
        }
        Some(Command::Probe(a)) => {
            let _ = crate::settings::request_config(&a.request);
        }
        _ => {}
    }
    Ok(())
}

fn command(
    words: &'static [&'static str],
    tables: &'static [&'static [(&'static str, Kind)]],
    url: bool,
) -> impl Strategy<Value = Vec<String>> {
    let flags: Vec<_> = tables.iter().map(|t| argv::flags(t, 3)).collect();
    (
        flags,
        prop::option::weighted(0.1, argv::misplaced()),
        prop::option::weighted(if url { 0.95 } else { 0.05 }, argv::url()),
    )
        .prop_map(move |(flags, misplaced, url)| {
            let mut all: Vec<String> = std::iter::once("belier")
                .chain(words.iter().copied())
                .map(str::to_string)
                .collect();
            all.extend(flags.into_iter().flatten());
            all.extend(misplaced.into_iter().flatten());
            all.extend(url);
            all
        })
}

fn any_command() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        4 => command(&[], &[REQUEST, BOUNDS, LOAD, LIVE], true),
        2 => command(&["capacity"], &[REQUEST, BOUNDS, CAPACITY], true),
        1 => command(&["probe"], &[REQUEST, BOUNDS], true),
        1 => command(&["report", "a.jsonl"], &[REPORT], false),
        1 => command(&["compare", "a.jsonl", "b.jsonl"], &[COMPARE], false),
        1 => command(&["run", "plan.yaml"], &[RUN], false),
    ]
}

proptest! {
    #[test]
    fn duration_noise_never_panics(text in "\\PC{0,24}") {
        check_duration(&text)?;
    }

    #[test]
    fn durations_near_valid_never_panic(text in argv::value(Kind::Duration)) {
        check_duration(&text)?;
    }

    #[test]
    fn durations_round_trip(us in 0..=LONGEST.as_micros() as u64) {
        let d = std::time::Duration::from_micros(us);
        let shown = humantime::format_duration(d).to_string();
        prop_assert_eq!(parse_duration_or_zero(&shown), Ok(d), "{}", shown);
    }

    #[test]
    fn header_noise_never_panics(text in "\\PC{0,24}") {
        check_header(&text)?;
    }

    #[test]
    fn headers_near_valid_never_panic(text in argv::value(Kind::Header)) {
        check_header(&text)?;
    }

    #[test]
    fn argument_vectors_never_panic(argv in any_command()) {
        check_argv(&argv)?;
    }

    #[test]
    fn argument_noise_never_panics(
        words in prop::collection::vec(
            prop_oneof![argv::value(Kind::Text).prop_map(|v| vec![v]), argv::misplaced()],
            0..6,
        ),
    ) {
        let argv: Vec<String> = std::iter::once("belier".to_string())
            .chain(words.into_iter().flatten())
            .collect();
        check_argv(&argv)?;
    }
}
