//! Open-file limit: every connection is a file descriptor.

use crate::settings::InputError;

/// Descriptors belier needs besides its connections (stdio, epoll, eventfds, files).
const RESERVED_FDS: u64 = 64;

/// Raises the soft RLIMIT_NOFILE to the hard limit, then checks that `connections` fit.
pub fn ensure_fds(connections: usize) -> Result<(), InputError> {
    let needed = connections as u64 + RESERVED_FDS;
    // Failing to raise the limit is not fatal by itself: the check below decides.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let (soft, hard) = rlimit::Resource::NOFILE
        .get()
        .unwrap_or((u64::MAX, u64::MAX));
    if needed <= soft {
        return Ok(());
    }
    Err(InputError::new(
        "--connections <N>",
        connections,
        format!(
            "needs about {needed} open files but the limit is {soft} (hard limit {hard}); \
             raise it with 'ulimit -n {needed}' or use fewer connections"
        ),
    ))
}
