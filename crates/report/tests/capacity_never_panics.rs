//! A capacity document `belier report` reads back renders as text and HTML without a panic,
//! whatever it holds once read: the same noise and near misses of a real document that
//! `crates/capacity/tests/slo_never_panics.rs` gives the reader (the rendering moved here with
//! the text report).
//!
//! `PROPTEST_CASES` sets the number of cases (256 by default); `bench/fuzz` runs many more.

#[path = "../../capacity/tests/document/mod.rs"]
mod document;

use belier_capacity::Outcome;
use belier_report::{render_capacity_html, render_capacity_text};
use belier_testsupport::near_miss;
use proptest::prelude::*;

use document::DOCUMENT;

fn render(text: &str) {
    if let Some(Ok(outcome)) = Outcome::from_json(text) {
        let _ = render_capacity_text(&outcome);
        let _ = render_capacity_html(&outcome);
    }
}

proptest! {
    #[test]
    fn document_noise_never_panics(text in "\\PC{0,200}") {
        render(&text);
    }

    #[test]
    fn document_near_misses_never_panic(text in document::near_misses()) {
        render(&text);
    }
}

#[test]
fn the_seed_renders() {
    let outcome = Outcome::from_json(DOCUMENT).unwrap().unwrap();
    assert!(render_capacity_text(&outcome).starts_with("Capacity search  "));
}
