//! Open-file limit: every connection is a file descriptor.

use belier_engine::{Config, Load};

use crate::settings::InputError;

/// Descriptors belier needs besides its connections (stdio, epoll, eventfds, files).
const RESERVED_FDS: u64 = 64;

/// Raises the soft RLIMIT_NOFILE to the hard limit, then makes sure the connections the run
/// may open fit: an open-loop cap nobody asked for (`cap_given` false) is lowered to fit;
/// anything asked for that cannot fit is refused. Returns the soft limit in force.
pub fn fit_connections(engine: &mut Config, cap_given: bool) -> Result<u64, InputError> {
    // Failing to raise the limit is not fatal by itself: the check below decides.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let (soft, hard) = rlimit::Resource::NOFILE
        .get()
        .unwrap_or((u64::MAX, u64::MAX));
    let available = soft.saturating_sub(RESERVED_FDS);
    let wanted = engine.max_connections() as u64;
    if wanted <= available {
        return Ok(soft);
    }
    let flag = match &mut engine.load {
        Load::Open {
            max_connections, ..
        } if !cap_given => {
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
