//! What `belier demo` printed: the report's request count next to the built-in target's own.

use std::process::Output;

/// `belier demo`'s two counts: the report's requests and the target's own.
fn counts(stdout: &str) -> (u64, u64) {
    let number = |s: &str| -> u64 {
        s.split_whitespace()
            .next()
            .unwrap()
            .replace(',', "")
            .parse()
            .unwrap()
    };
    let reported = stdout
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("Requests "))
        .map(number)
        .unwrap_or_else(|| panic!("no Requests line: {stdout}"));
    let counted = stdout
        .split_once("The target counted ")
        .map(|(_, rest)| number(rest))
        .unwrap_or_else(|| panic!("no target count: {stdout}"));
    (reported, counted)
}

/// Fails the test unless the demo sent requests and the report and the target count the same.
pub fn assert_counts_agree(out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (reported, counted) = counts(&stdout);
    assert!(reported > 0, "{stdout}");
    assert_eq!(
        reported, counted,
        "the report and the target disagree: {stdout}"
    );
}
