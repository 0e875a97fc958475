//! The capacity search's parsers give a value or an error, never a panic: SLO expressions
//! (`--slo`, thresholds and `prom:` queries) and the capacity document `belier report` reads
//! back. Both round-trip: the SLOs as written parse to the same SLOs, and a document that was
//! read is written and read again unchanged.
//!
//! `PROPTEST_CASES` sets the number of cases (256 by default); `bench/fuzz` runs many more.

mod document;

use belier_capacity::{Outcome, SloError, Slos};
use belier_testsupport::near_miss;
use belier_vocabulary::Comparison;
use proptest::prelude::*;

use document::DOCUMENT;

const SLOS: &[&str] = &[
    "p99<50ms",
    "p99.9 < 200ms",
    "p50<=1s",
    "mean<20ms",
    "max<1s",
    "errors<0.1%",
    "error_rate <= 1%",
    "prom:rate(process_cpu_seconds_total[10s])<0.8",
    "prom: sum(up) >= 1",
    "prom:histogram_quantile(0.99, rate(x_bucket[1m])) <= 0.25",
    "prom:a > b < 3",
];

const SLO_WORDS: &[&str] = &[
    "prom:", "prom", "p99", "p99.9", "mean", "max", "min", "rate", "errors", "checks", "login:",
    "up", "(", ")", "[1m]", " ", "<", "<=", ">", ">=", "=", "50", "-1", "1e400", "NaN", "ms", "s",
    "%", "µs",
];

fn check_slos(expressions: &[String]) -> Result<(), TestCaseError> {
    match Slos::parse(expressions) {
        Err(SloError {
            expression,
            position,
            message,
        }) => {
            prop_assert!(expressions.contains(&expression));
            prop_assert!(
                position <= expression.len(),
                "{} past {:?}",
                position,
                expression
            );
            prop_assert!(!message.is_empty());
        }
        Ok(slos) => {
            let _ = slos.latency_bound_us();
            let written: Vec<String> = slos.expressions().iter().map(|e| e.to_string()).collect();
            let again = Slos::parse(&written);
            prop_assert_eq!(
                again.as_ref(),
                Ok(&slos),
                "{:?} → {:?}",
                expressions,
                written
            );
            for p in slos.prometheus() {
                // What was read is what was written: the query, the comparison, the bound.
                let squeezed = |s: &str| s.split_whitespace().collect::<String>();
                let op = match p.comparison {
                    Comparison::Less => "<",
                    Comparison::LessOrEqual => "<=",
                    Comparison::Greater => ">",
                    Comparison::GreaterOrEqual => ">=",
                    Comparison::Equal => "==",
                };
                let written = squeezed(&p.expression);
                let read = format!("prom:{}{op}", squeezed(&p.query));
                prop_assert!(
                    written.starts_with(&read)
                        && written[read.len()..].parse::<f64>().ok() == Some(p.bound),
                    "{:?} read as {:?} {} {}",
                    p.expression,
                    p.query,
                    op,
                    p.bound
                );
            }
        }
    }
    Ok(())
}

fn check_document(text: &str) -> Result<(), TestCaseError> {
    let Some(read) = Outcome::from_json(text) else {
        return Ok(());
    };
    let Ok(outcome) = read else {
        return Ok(());
    };
    let _ = outcome.answer_line();
    let _ = outcome.capacity_goodput();
    let written = outcome.to_json();
    let again = Outcome::from_json(&written);
    prop_assert!(
        matches!(again, Some(Ok(ref o)) if *o == outcome),
        "read {:?}, wrote {}, read back {:?}",
        text,
        written,
        again
    );
    Ok(())
}

proptest! {
    #[test]
    fn slo_noise_never_panics(expressions in prop::collection::vec("\\PC{0,30}", 0..3)) {
        check_slos(&expressions)?;
    }

    #[test]
    fn slo_words_never_panic(
        expressions in prop::collection::vec(
            prop::collection::vec(prop::sample::select(SLO_WORDS), 0..7).prop_map(|w| w.concat()),
            1..3,
        ),
    ) {
        check_slos(&expressions)?;
    }

    #[test]
    fn slo_near_misses_never_panic(
        expressions in prop::collection::vec(near_miss::near_miss(SLOS), 1..3),
    ) {
        check_slos(&expressions)?;
    }

    #[test]
    fn document_noise_never_panics(text in "\\PC{0,200}") {
        check_document(&text)?;
    }

    #[test]
    fn document_near_misses_never_panic(text in document::near_misses()) {
        check_document(&text)?;
    }
}

#[test]
fn the_seeds_are_valid() {
    for slo in SLOS {
        Slos::parse(&[slo.to_string()]).unwrap_or_else(|e| panic!("{e}"));
    }
    let read = Outcome::from_json(DOCUMENT).expect("a capacity document");
    let outcome = read.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.steps.len(), 2);
}
