//! Held connections: connections a run keeps open beside its load (`--hold`), idle after one
//! keep-alive exchange or trickling a request as a slow client does. They are counted apart
//! from the load's requests, whose figures they must not blur: what they show is whether the
//! server kept them, and what keeping them cost the load.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error_kind::ErrorKind;
use crate::restore::RestoreError;

/// What became of a run's held connections: how many opened, how many the server ended, and
/// the attempts that failed, by error kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    /// Held connections that opened: connected and, when idle, their one request answered.
    pub opened: u64,
    /// Held connections the server ended (closed, reset, or answered a trickled request and
    /// closed) while belier meant to keep them.
    pub closed: u64,
    /// Attempts to open a held connection (or to have its request answered) that failed, by
    /// error kind name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failed: BTreeMap<String, u64>,
}

impl Held {
    /// Attempts that failed, all kinds together.
    pub fn failures(&self) -> u64 {
        self.failed.values().sum()
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.opened == 0 && self.closed == 0 && self.failed.is_empty()
    }

    pub(crate) fn fail(&mut self, kind: ErrorKind) {
        *self.failed.entry(kind.name().to_string()).or_default() += 1;
    }

    pub(crate) fn add(&mut self, other: &Held) {
        self.opened += other.opened;
        self.closed += other.closed;
        for (kind, n) in &other.failed {
            *self.failed.entry(kind.clone()).or_default() += n;
        }
    }

    /// Refuses stored counts that name no error kind belier knows.
    pub(crate) fn check(&self) -> Result<(), RestoreError> {
        match self
            .failed
            .keys()
            .find(|k| ErrorKind::from_name(k).is_none())
        {
            Some(name) => Err(RestoreError(format!(
                "unknown error kind '{name}' among held connections' failures"
            ))),
            None => Ok(()),
        }
    }

    /// Every count, for bounding a stored record.
    pub(crate) fn counts(&self) -> impl Iterator<Item = u64> + '_ {
        [self.opened, self.closed]
            .into_iter()
            .chain(self.failed.values().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_add_up_by_kind() {
        let mut a = Held {
            opened: 3,
            ..Held::default()
        };
        a.fail(ErrorKind::Timeout);
        let mut b = Held {
            opened: 2,
            closed: 1,
            ..Held::default()
        };
        b.fail(ErrorKind::Timeout);
        b.fail(ErrorKind::ConnectRefused);
        a.add(&b);
        assert_eq!((a.opened, a.closed, a.failures()), (5, 1, 3));
        assert_eq!(a.failed["timeout"], 2);
        assert!(a.check().is_ok());
        a.failed.insert("bogus".into(), 1);
        assert!(a.check().is_err());
    }
}
