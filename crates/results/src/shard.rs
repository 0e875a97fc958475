//! Which shards of a run split with `--shard I/N` a report holds: recorded in each shard's
//! results file, gathered when the files are merged, and said in the report (with a warning
//! for any shard missing or given twice).

use serde::{Deserialize, Serialize};

/// The shards of one split run that a results file (or a merge of several) holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// How many shards the run was split into (the `N` of `--shard I/N`).
    pub count: u64,
    /// The shards held, numbered from 1 as `--shard` numbers them, in the order the files
    /// were given: one for a shard's own file.
    pub numbers: Vec<u64>,
}

impl ShardInfo {
    /// Shard `number` (from 1) of `count`.
    pub fn one(number: u64, count: u64) -> ShardInfo {
        ShardInfo {
            count,
            numbers: vec![number],
        }
    }

    /// The shards of `other` merged in: `None` (and a warning) when the two were split
    /// differently, since their shards then do not make one run.
    pub fn merge(
        a: Option<ShardInfo>,
        b: &Option<ShardInfo>,
        warnings: &mut Vec<String>,
    ) -> Option<ShardInfo> {
        match (a, b) {
            (Some(mut a), Some(b)) if a.count == b.count => {
                a.numbers.extend(&b.numbers);
                Some(a)
            }
            (None, None) => None,
            (a, b) => {
                let say = |s: Option<&ShardInfo>| {
                    s.map_or("a whole run".to_string(), |s| {
                        format!("a run split in {}", s.count)
                    })
                };
                warnings.push(format!(
                    "files of {} and of {} were merged: they are not shards of one split run",
                    say(a.as_ref()),
                    say(b.as_ref())
                ));
                None
            }
        }
    }

    /// Shards of the run that no file held, from 1.
    pub fn missing(&self) -> Vec<u64> {
        (1..=self.count)
            .filter(|n| !self.numbers.contains(n))
            .collect()
    }

    /// Warnings about the shards held: missing ones (the report then holds only part of the
    /// run's load) and ones given twice (their load counts twice).
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let missing = self.missing();
        if !missing.is_empty() {
            let names: Vec<String> = missing
                .iter()
                .map(|n| format!("{n}/{}", self.count))
                .collect();
            out.push(format!(
                "shard{} {} missing: this report holds {} of the run's {} shards, not its whole load",
                if missing.len() == 1 { "" } else { "s" },
                names.join(", "),
                self.count as usize - missing.len(),
                self.count
            ));
        }
        let mut seen = Vec::new();
        for n in &self.numbers {
            if seen.contains(n) {
                out.push(format!(
                    "shard {n}/{} was given more than once: its load counts more than once",
                    self.count
                ));
            }
            seen.push(*n);
        }
        out
    }

    /// `shard 2/4 of a run split in 4`, or `4 of 4 shards merged`.
    pub fn describe(&self) -> String {
        match self.numbers.as_slice() {
            [n] => format!("shard {n}/{} of a run split in {}", self.count, self.count),
            numbers => {
                let mut distinct = numbers.to_vec();
                distinct.sort_unstable();
                distinct.dedup();
                format!("{} of {} shards merged", distinct.len(), self.count)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_shards_are_counted_and_gaps_named() {
        let mut w = Vec::new();
        let mut all = Some(ShardInfo::one(1, 4));
        for n in [2, 4, 3] {
            all = ShardInfo::merge(all, &Some(ShardInfo::one(n, 4)), &mut w);
        }
        let all = all.unwrap();
        assert_eq!(all.describe(), "4 of 4 shards merged");
        assert!(all.warnings().is_empty() && w.is_empty());

        let three = ShardInfo {
            count: 4,
            numbers: vec![1, 2, 4],
        };
        assert_eq!(three.describe(), "3 of 4 shards merged");
        assert_eq!(
            three.warnings(),
            ["shard 3/4 missing: this report holds 3 of the run's 4 shards, not its whole load"]
        );
        let twice = ShardInfo {
            count: 2,
            numbers: vec![1, 1],
        };
        assert_eq!(twice.warnings().len(), 2, "{:?}", twice.warnings());
        assert_eq!(
            ShardInfo::one(2, 4).describe(),
            "shard 2/4 of a run split in 4"
        );

        assert_eq!(
            ShardInfo::merge(
                Some(ShardInfo::one(1, 2)),
                &Some(ShardInfo::one(1, 3)),
                &mut w
            ),
            None
        );
        assert_eq!(w.len(), 1);
    }
}
