//! A capacity document as `belier capacity --output json` writes it, and near misses of it:
//! what the property tests of its reader (`slo_never_panics`) and of its renderers
//! (belier-report's `capacity_never_panics`) are fed. Each includes this file and declares
//! `near_miss` beside it.

use proptest::prelude::*;
use proptest::sample::Index;

use crate::near_miss;

/// Two steps, an answer and an overload verdict (`tests/suite/flags_never_panic.rs` of the CLI
/// feeds it to `belier report`).
pub const DOCUMENT: &str = include_str!("../document.json");

/// [`DOCUMENT`] with a few values given another JSON type, and maybe a near-miss edit of its
/// text.
pub fn near_misses() -> impl Strategy<Value = String> {
    let seed: serde_json::Value = serde_json::from_str(DOCUMENT).unwrap();
    (
        prop::collection::vec((any::<Index>(), any::<Index>()), 1..=3),
        prop::collection::vec(near_miss::mutation(), 0..=1),
    )
        .prop_map(move |(retypes, mutations)| {
            let doc = retypes.iter().fold(seed.clone(), |doc, (node, with)| {
                near_miss::retype_json(&doc, *node, *with)
            });
            near_miss::mutate(&serde_json::to_string_pretty(&doc).unwrap(), &mutations)
        })
}
