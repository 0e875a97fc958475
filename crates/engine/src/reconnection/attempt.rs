//! One request of a connection slot that reconnects its SSE streams (see
//! [`crate::reconnection`]): how it went out, and what its response said.

use belier_stats::Reconnection;

/// One request of a slot that reconnects: how it went out, and what its response said.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Attempt {
    /// It went as a reconnection (`None`: a new stream).
    pub sent_as: Option<Reconnection>,
    /// Its response head was a 200 with an event stream (`None`: no head came).
    pub accepted: Option<bool>,
}

impl Attempt {
    /// Its response stopped reconnection.
    pub(crate) fn stopped(&self) -> bool {
        self.accepted == Some(false)
    }
}
