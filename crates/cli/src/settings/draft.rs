//! The one way to [`Settings`]: whatever a run came from (flags, a plan, a capacity step), its
//! engine configuration is drafted there and finished here, where each decision they share is
//! made once: the HTTP/2 options checked, the default duration applied, the connections fitted
//! to the open-file limit (and the level steering may set bounded the same way), and the
//! threads matched to the connections.

use std::path::PathBuf;

use belier_engine::{Config, DEFAULT_DURATION, DEFAULT_MAX_STREAMS};

use belier_engine::Shard;

use super::{InputError, Output, Settings};
use crate::limits::{self, check_range, MAX_STREAMS};

/// A run's settings before the shared decisions: what its source said, validated as far as
/// the source alone can.
pub struct Draft {
    /// The engine's configuration: request, load, keep-alive and the stop condition as given
    /// (HTTP/2 and the threads are set by [`Draft::finish`]).
    pub engine: Config,
    /// The URL the report names.
    pub url: String,
    /// Where the report and the results go.
    pub output: Output,
    /// Raw per-request CSV file.
    pub raw: Option<PathBuf>,
    /// The plan file the run follows, as given.
    pub plan: Option<PathBuf>,
    /// Worker threads asked for (or one per core), before they are matched to the connections.
    pub threads: usize,
    /// HTTP/2, as asked for.
    pub http2: Http2,
    /// The open loop's connection cap was asked for: if it does not fit the open-file limit
    /// the run is refused, where a default cap would be lowered to fit.
    pub cap_given: bool,
    /// The part of the run's connections this process opens, which must fit its open files: a
    /// shard's (`--shard`, a worker's job), the first of `--spawn`'s or `--workers`' (the
    /// coordinator checks what one of them will open), or the whole run.
    pub part: Shard,
}

/// HTTP/2 and its streams per connection, as a source asked for them.
#[derive(Clone)]
pub struct Http2 {
    /// Speak HTTP/2.
    pub on: bool,
    /// Speak HTTP/3 (over QUIC) instead, its streams shared as HTTP/2's are.
    pub http3: bool,
    /// HTTP/3: send 0-RTT early data (`--quic-0rtt`).
    pub early: bool,
    /// `--http3=auto`: HTTP/2 until the server's Alt-Svc is read (see `load::http3_auto`),
    /// checked as HTTP/3 is, as the run may go over it.
    pub auto: bool,
    /// Concurrent streams per connection, if given.
    pub max_streams: Option<usize>,
    /// Where they were asked for, which errors name.
    pub origin: Origin,
}

/// Where a run's options were given.
#[derive(Clone)]
pub enum Origin {
    /// Command-line flags.
    Flags,
    /// A plan file, at this path.
    Plan(PathBuf),
}

impl Draft {
    /// Makes the decisions every run shares, each in one place, and returns the settings.
    pub fn finish(self) -> Result<Settings, InputError> {
        let Draft {
            mut engine,
            url,
            output,
            raw,
            plan,
            threads,
            http2,
            cap_given,
            part,
        } = self;
        http2.apply(&mut engine)?;
        let stop = &mut engine.stop;
        // Neither requests, a duration, iterations nor stages: the documented default length.
        if stop.requests.is_none()
            && stop.duration.is_none()
            && stop.iterations.is_none()
            && engine.load.end().is_none()
        {
            stop.duration = Some(DEFAULT_DURATION);
        }
        let fd_limit = limits::fit_connections(&mut engine, cap_given, part)?;
        engine.ceiling = Some(limits::ceiling(&engine, fd_limit));
        // Threads beyond the connections would sit idle (over HTTP/2, users share one
        // connection per `max_streams`); the engine lowers them too.
        engine.threads = threads.min(engine.max_connections().max(1));
        // The traced requests are handed over only when their spans go somewhere.
        engine.keep_traced = output.traces_out.is_some();
        Ok(Settings {
            engine,
            url,
            output,
            raw,
            plan,
            fd_limit,
            targets: None,
            protocol_note: None,
        })
    }
}

impl Http2 {
    /// Sets HTTP/2 on `engine`, checked: its streams share their connections, so it keeps
    /// them alive, and `max_streams` means nothing without it.
    fn apply(self, engine: &mut Config) -> Result<(), InputError> {
        let (http2, streams, streams_value, no_keepalive) = match self.origin {
            Origin::Flags => (
                "--http2",
                "--max-streams",
                "--max-streams <N>",
                "--no-keepalive",
            ),
            Origin::Plan(_) => (
                "`http2: true`",
                "max_streams",
                "max_streams",
                "`keepalive: false`",
            ),
        };
        let on = self.on || self.http3 || self.auto;
        let http2 = match (self.http3 || self.auto, &self.origin) {
            (false, _) => http2,
            (true, Origin::Flags) => "--http3",
            (true, Origin::Plan(_)) => "`http3: true`",
        };
        if self.early {
            check_early(engine, self.http3, self.auto)?;
        }
        if !on && self.max_streams.is_some() {
            return Err(self
                .origin
                .refuse(streams, format!("only applies to HTTP/2: add {http2}")));
        }
        if !on {
            return Ok(());
        }
        let max_streams = self.max_streams.unwrap_or(DEFAULT_MAX_STREAMS);
        check_range(streams_value, max_streams as u64, 1, MAX_STREAMS as u64)
            .map_err(|e| self.origin.name(e, streams))?;
        if !engine.keepalive {
            return Err(self.origin.refuse(
                no_keepalive,
                format!("does not apply to {http2}: streams share their connections"),
            ));
        }
        if self.http3 || self.auto {
            refuse_for_http3(engine, &self.origin)?;
        }
        engine.http2 = !self.http3;
        engine.http3 = self.http3;
        engine.quic_0rtt = self.early;
        engine.max_streams = max_streams;
        Ok(())
    }
}

/// `--quic-0rtt`: over HTTP/3, for requests a replay cannot harm (RFC 8470 §4, RFC 9114
/// §10.9: early data can be replayed by anyone who saw it).
fn check_early(engine: &Config, http3: bool, auto: bool) -> Result<(), InputError> {
    let why = match engine.request.method.as_str() {
        _ if auto => "goes with --http3, not --http3=auto, which may go over HTTP/2".to_string(),
        _ if !http3 => "needs --http3: 0-RTT is QUIC's".to_string(),
        "GET" | "HEAD" | "OPTIONS" => return Ok(()),
        method => format!(
            "sends requests as early data, which can be replayed: only GET, HEAD and OPTIONS \
             may go as it, not {method}"
        ),
    };
    Err(InputError::new("--quic-0rtt", "", why))
}

/// What `--http3` cannot go with (yet), each refused by its own flag.
fn refuse_for_http3(engine: &Config, origin: &Origin) -> Result<(), InputError> {
    if engine.tls.is_none() {
        let reason = "needs an https:// target: QUIC is always TLS 1.3".to_string();
        return Err(origin.refuse("--http3", reason));
    }
    let refused = [
        (
            engine.unix_socket.is_some(),
            "--unix-socket",
            "HTTP/3 goes over UDP",
        ),
        (
            engine.tunnel.is_some(),
            "--proxy",
            "HTTP/3 does not go through an HTTP proxy",
        ),
        (!engine.origins.is_empty(), "--http3", "goes to one host"),
    ];
    match refused.into_iter().find(|(refused, _, _)| *refused) {
        Some((_, flag, why)) => Err(origin.refuse(flag, format!("{why} (with HTTP/3)"))),
        None => Ok(()),
    }
}

impl Origin {
    /// `option` cannot apply, for `reason`: a flag is named by itself, a plan's option with
    /// the plan.
    fn refuse(&self, option: &'static str, reason: String) -> InputError {
        match self {
            Origin::Flags => InputError::new(option, "", reason),
            Origin::Plan(path) => {
                InputError::new(PLAN, path.display(), format!("{option} {reason}"))
            }
        }
    }

    /// An error in a flag's value, or the same about the plan's `option`.
    fn name(&self, e: InputError, option: &str) -> InputError {
        match self {
            Origin::Flags => e,
            Origin::Plan(path) => {
                InputError::new(PLAN, path.display(), format!("{option}: {}", e.reason))
            }
        }
    }
}

/// How errors name a plan file.
const PLAN: &str = "<PLAN>";
