//! `belier compare --fail-if` conditions parse to conditions or to an error naming the fault,
//! never a panic; a condition as displayed parses back to itself (to the six decimals shown).
//!
//! `PROPTEST_CASES` sets the number of cases (256 by default); `bench/fuzz` runs many more.

use belier_report::compare::{parse_fail_if, Limit};
use belier_testsupport::near_miss;
use proptest::prelude::*;

const CONDITIONS: &[&str] = &[
    "p99>+10%",
    "rate<-5%",
    "errors>0.5%",
    "p99>250ms",
    "p50 > 1.5s",
    "p90<800us",
    "max>2µs",
    "throughput<900/s",
    "rate<900",
    "p99>+10%,rate<-5%,errors>0.5%",
];

const WORDS: &[&str] = &[
    "p99",
    "p50",
    "p99.9",
    "max",
    "rate",
    "errors",
    "throughput",
    ",",
    " ",
    ">",
    "<",
    "=",
    "+",
    "-",
    "10",
    "0.5",
    "1e300",
    "%",
    "ms",
    "s",
    "us",
    "/s",
    "NaN",
];

fn check(expr: &str) -> Result<(), TestCaseError> {
    let conditions = match parse_fail_if(expr) {
        Err(why) => {
            prop_assert!(!why.is_empty());
            return Ok(());
        }
        Ok(c) => c,
    };
    prop_assert_eq!(conditions.len(), expr.split(',').count());
    for c in conditions {
        let shown = c.to_string();
        let again = parse_fail_if(&shown);
        prop_assert!(
            again.is_ok(),
            "{:?} shown as {:?}: {:?}",
            expr,
            shown,
            again
        );
        let again = again.unwrap();
        prop_assert_eq!(again.len(), 1);
        let back = again[0];
        prop_assert_eq!((back.metric, back.op), (c.metric, c.op), "{:?}", shown);
        let close = |a: f64, b: f64| (a - b).abs() <= 5e-7 + 1e-12 * a.abs();
        let same = match (back.limit, c.limit) {
            (Limit::ChangePercent(a), Limit::ChangePercent(b)) => close(a, b),
            (Limit::Value(a), Limit::Value(b)) => close(a, b),
            _ => false,
        };
        prop_assert!(
            same,
            "{:?} shown as {:?}, read back as {:?}",
            c,
            shown,
            back
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn noise_never_panics(expr in "\\PC{0,40}") {
        check(&expr)?;
    }

    #[test]
    fn words_never_panic(words in prop::collection::vec(prop::sample::select(WORDS), 0..10)) {
        check(&words.concat())?;
    }

    #[test]
    fn near_misses_never_panic(expr in near_miss::near_miss(CONDITIONS)) {
        check(&expr)?;
    }
}

#[test]
fn the_seeds_are_valid() {
    for c in CONDITIONS {
        parse_fail_if(c).unwrap_or_else(|e| panic!("{c}: {e}"));
    }
}
