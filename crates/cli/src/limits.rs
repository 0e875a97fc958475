//! Open-file limit: every connection is a file descriptor. And the highest level a run may be
//! steered to, which the same limits set; the bounds belier puts on connections, rates and
//! streams, and the cores of this machine.

use belier_engine::{Ceiling, Config, Load};

use crate::settings::InputError;

/// Most connections belier accepts; more is surely a typo.
pub const MAX_CONNECTIONS: usize = 1_000_000;
/// Highest request rate belier accepts, per second.
pub const MAX_RATE: f64 = 10_000_000.0;
/// Most streams per HTTP/2 connection belier accepts (the protocol's limit is 2^31 - 1).
pub const MAX_STREAMS: usize = 1 << 20;

/// Descriptors belier needs besides its connections (stdio, epoll, eventfds, files).
const RESERVED_FDS: u64 = 64;

/// Raises the soft RLIMIT_NOFILE to the hard limit, then makes sure the connections the run
/// may open fit: an open-loop cap nobody asked for (`cap_given` false) is lowered to fit;
/// anything asked for that cannot fit is refused. Returns the soft limit in force.
pub fn fit_connections(
    engine: &mut Config,
    cap_given: bool,
    part: belier_engine::Shard,
) -> Result<u64, InputError> {
    // Failing to raise the limit is not fatal by itself: the check below decides.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let (soft, hard) = rlimit::Resource::NOFILE
        .get()
        .unwrap_or((u64::MAX, u64::MAX));
    // Over several processes, each opens its part's share.
    let share = |n: u64| part.share(n);
    // Held connections come first: they are asked for by number, never lowered to fit.
    let held = share(engine.hold.map_or(0, |h| h.connections));
    let available = soft.saturating_sub(RESERVED_FDS);
    if held > available {
        let needed = held + RESERVED_FDS;
        return Err(InputError::new(
            "--hold <N>",
            held,
            format!(
                "needs about {needed} open files but the limit is {soft} (hard limit {hard}); \
                 raise it with 'ulimit -n {needed}', hold fewer, or spread them over workers (--spawn)"
            ),
        ));
    }
    let available = available - held;
    let wanted = share(engine.max_connections() as u64);
    if wanted <= available {
        return Ok(soft);
    }
    let flag = match &mut engine.load {
        Load::Open {
            max_connections, ..
        } if !cap_given => {
            *max_connections = available.max(1).saturating_mul(part.count()) as usize;
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

/// The highest level the run may be steered to while it goes (from the console, the terminal
/// view or a coordinator's `/v1/steer`): what the same flag accepts at start. An open loop's
/// rate is bounded as `--rate` is (its connections stay under the cap fitted at start); a
/// closed loop's connections or users as `--connections` is, and by the open-file limit
/// (`fd_limit`, the soft limit in force) as [`fit_connections`] checks them at start.
pub fn ceiling(engine: &Config, fd_limit: u64) -> Ceiling {
    if let Load::Open { .. } = engine.load {
        return Ceiling {
            level: MAX_RATE,
            what: "the highest rate --rate accepts".into(),
        };
    }
    // Over HTTP/2, users share a connection per `max_streams`.
    let per_connection = if engine.http2 {
        engine.max_streams.max(1) as u64
    } else {
        1
    };
    let fitting = fd_limit
        .saturating_sub(RESERVED_FDS)
        .saturating_mul(per_connection);
    if fitting < MAX_CONNECTIONS as u64 {
        let streams = if per_connection > 1 {
            format!(", {per_connection} users a connection")
        } else {
            String::new()
        };
        Ceiling {
            level: fitting as f64,
            what: format!(
                "the open-file limit ({fd_limit} files, {RESERVED_FDS} of them kept for belier's \
                 own{streams}); raise it with 'ulimit -n' before the run to steer higher"
            ),
        }
    } else {
        Ceiling {
            level: MAX_CONNECTIONS as f64,
            what: "the most connections or users --connections and --vus accept".into(),
        }
    }
}

/// Refuses `v` for `flag` outside `min..=max`, naming the bound.
pub fn check_range(flag: &'static str, v: u64, min: u64, max: u64) -> Result<(), InputError> {
    if v < min {
        Err(InputError::new(flag, v, format!("must be at least {min}")))
    } else if v > max {
        Err(InputError::new(flag, v, format!("must be at most {max}")))
    } else {
        Ok(())
    }
}

/// Logical cores of this machine.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use belier_engine::{Profile, RequestSpec, Spacing};

    use super::*;

    fn config(load: Load, http2: bool) -> Config {
        let mut c = Config::new(RequestSpec {
            method: "GET".into(),
            host: "127.0.0.1".into(),
            port: 1,
            path_and_query: "/".into(),
            headers: Vec::new(),
            body: Vec::new(),
        });
        c.load = load;
        c.http2 = http2;
        c.max_streams = 10;
        c
    }

    #[test]
    fn the_ceiling_is_what_the_flags_accept_at_start() {
        let open = Load::Open {
            rate: Profile::constant(5.0),
            spacing: Spacing::Even,
            max_connections: 10,
            max_in_flight: None,
        };
        let c = ceiling(&config(open, false), 1024);
        assert_eq!(c.level, MAX_RATE);
        assert!(c.what.contains("--rate"), "{}", c.what);
        let closed = || Load::Closed {
            connections: Profile::constant(5.0),
        };
        let c = ceiling(&config(closed(), false), 1024);
        assert_eq!(c.level, 960.0);
        assert!(c.what.contains("open-file limit (1024 files"), "{}", c.what);
        assert_eq!(ceiling(&config(closed(), true), 1024).level, 9600.0);
        let c = ceiling(&config(closed(), false), u64::MAX);
        assert_eq!(c.level, MAX_CONNECTIONS as f64);
        assert!(c.what.contains("--connections"), "{}", c.what);
    }
}
