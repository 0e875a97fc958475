//! Open-file limit: every connection is a file descriptor.

use belier_engine::Load;

use crate::settings::{InputError, Settings};

/// Descriptors belier needs besides its connections (stdio, epoll, eventfds, files).
const RESERVED_FDS: u64 = 64;

/// Raises the soft RLIMIT_NOFILE to the hard limit, then makes sure the connections the run
/// may open fit: an open-loop cap the user did not set is lowered to fit; anything the user
/// asked for that cannot fit is refused. Returns the soft limit in force.
pub fn fit_connections(settings: &mut Settings) -> Result<u64, InputError> {
    // Failing to raise the limit is not fatal by itself: the check below decides.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let (soft, hard) = rlimit::Resource::NOFILE
        .get()
        .unwrap_or((u64::MAX, u64::MAX));
    let available = soft.saturating_sub(RESERVED_FDS);
    let wanted = settings.engine.max_connections() as u64;
    if wanted <= available {
        return Ok(soft);
    }
    let flag = match &mut settings.engine.load {
        Load::Open {
            max_connections, ..
        } if !settings.max_connections_given => {
            *max_connections = available.max(1) as usize;
            return Ok(soft);
        }
        Load::Open { .. } => "--max-connections <N>",
        Load::Closed { connections } if connections.end().is_some() => "--stages <STAGES>",
        Load::Closed { .. } => "--connections <N>",
    };
    let needed = wanted + RESERVED_FDS;
    Err(InputError::new(
        flag,
        wanted,
        format!(
            "needs about {needed} open files but the limit is {soft} (hard limit {hard}); \
             raise it with 'ulimit -n {needed}' or use fewer connections"
        ),
    ))
}
