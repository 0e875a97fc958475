//! The environment variables a plan run reads travel with its job, as its files do: the
//! coordinator sends the values it loaded the plan with, and a worker loads the plan with
//! those alone, so that whoever may hand a worker jobs cannot make it send its own
//! environment (its cloud credentials, say) anywhere. The values may be secrets: nothing here
//! shows one.

use std::collections::BTreeMap;

/// The variables sent with a job, by name: a value, or `None` for one that is not set where
/// the run began (the plan's `default(…)` then applies, or its error).
pub type Sent = BTreeMap<String, Option<String>>;

/// Most variables one job carries.
pub const MAX_VARIABLES: usize = 256;

/// Most bytes of names and values one job carries (a variable on Linux holds at most 128 KiB).
pub const MAX_BYTES: usize = 256 << 10;

/// Why `sent` cannot go with a job, if it cannot: more than [`MAX_VARIABLES`] or
/// [`MAX_BYTES`]. The reason names variables, never a value.
pub fn problem(sent: &Sent) -> Option<String> {
    if sent.len() > MAX_VARIABLES {
        return Some(format!(
            "the run reads {} environment variables; a job carries at most {MAX_VARIABLES}",
            sent.len()
        ));
    }
    let mut total = 0;
    for (name, value) in sent {
        total += name.len() + value.as_ref().map_or(0, String::len);
        if total > MAX_BYTES {
            return Some(format!(
                "the environment variables the run reads pass {} KiB with `{name}`; a job \
                 carries at most {} KiB of them",
                MAX_BYTES >> 10,
                MAX_BYTES >> 10
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_hold_and_name_no_value() {
        let mut sent: Sent = (0..MAX_VARIABLES)
            .map(|i| (format!("V{i}"), Some("x".into())))
            .collect();
        assert_eq!(problem(&sent), None, "at the bound");
        sent.insert("ONE_MORE".into(), None);
        let e = problem(&sent).unwrap();
        assert!(e.contains("257 environment variables"), "{e}");

        let big = "s".repeat(MAX_BYTES / 2);
        let sent: Sent = [
            ("A".to_string(), Some(big.clone())),
            ("B".into(), Some(big)),
        ]
        .into();
        let e = problem(&sent).unwrap();
        assert!(e.contains("with `B`"), "{e}");
        assert!(!e.contains("sss"), "no value shown: {e}");
        let half: Sent = [("A".to_string(), Some("s".repeat(MAX_BYTES - 1)))].into();
        assert_eq!(problem(&half), None);
    }
}
