//! The messages coordinator and worker exchange: HTTP/2 requests under `/v1/`, JSON bodies.
//!
//! | request | body | answer |
//! | --- | --- | --- |
//! | `POST /v1/hello` | [`Hello`] | [`Hello`], or 409 [`Refusal`] when the protocols differ |
//! | `POST /v1/clock` | none | [`ClockReading`]: the worker's wall clock |
//! | `POST /v1/prepare` | [`Job`] (with the run's files, at most [`crate::files::MAX_BYTES`], and the environment variables its plan reads, at most [`crate::environment::MAX_VARIABLES`] in [`crate::environment::MAX_BYTES`]; the body at most [`MAX_PREPARE_BYTES`], else 413) | 200, or 422 [`Refusal`] (the worker's reason), 409 when a prepare is under way or a run is prepared or running |
//! | `POST /v1/start` | [`Start`] (at most [`MAX_START_AHEAD`] ahead, else 400) | a stream of lines: the run's results file, line by line, with [`Note`]s between; 409 unless this connection prepared the run |
//! | `POST /v1/steer` | [`Steering`] | 200 once the run holds the level, 400 [`Refusal`] when it cannot (a level above what the run accepts names the limit), 409 when no run is going |
//! | `POST /v1/abort` | none | 200: the run stops (its end line still comes down the stream) |
//!
//! A worker answers its coordinator only (see [`crate::worker::admit`]): HTTP/2 with prior
//! knowledge (anything else: 505), no `Origin` or `Sec-Fetch-*` header and a `Host` that is
//! the worker's (else 403), `Authorization: Bearer TOKEN` with the worker's token (else 401),
//! `Content-Type: application/json` (else 415), a body of at most [`MAX_MESSAGE_BYTES`]
//! (a prepare's: [`MAX_PREPARE_BYTES`]; else 413). The run a connection prepared is started on
//! that connection and dropped when it closes.

use serde::{Deserialize, Serialize};

// A job carries the run's files; their type lives with the code that gathers and writes them.
pub use crate::files::SentFile;

/// Version of this protocol; a worker of another version refuses the hello. 2: a job carries
/// the plan's environment ([`Job::env`]), which a worker of 1 would not heed (it would read its
/// own).
pub const PROTOCOL: u32 = 2;

/// Most bytes of a request's body but a prepare's.
pub const MAX_MESSAGE_BYTES: usize = 64 << 10;

/// Most bytes of a prepare's body: the run's files ([`crate::files::MAX_BYTES`]) in base64,
/// its environment ([`crate::environment::MAX_BYTES`], a byte at most 6 in JSON: `\u00XX`)
/// and a MiB for the rest of the job.
pub const MAX_PREPARE_BYTES: usize = (crate::files::MAX_BYTES as usize).div_ceil(3) * 4
    + crate::environment::MAX_BYTES * 6
    + (1 << 20);

/// Most time between a start order and the start: a coordinator gives half a second.
pub const MAX_START_AHEAD: std::time::Duration = std::time::Duration::from_secs(60);

/// Fewest characters of a listener's token off the loopback (the worker's, the console's, the
/// exporter's, the recording proxy's): 16 characters of a 64-letter alphabet are 96 bits,
/// beyond guessing over the network. On the loopback, only the machine's own users reach the
/// listener, and any token keeps another user's pages out.
pub const MIN_TOKEN_CHARS: usize = 16;

/// Paths of the requests.
pub mod path {
    /// Versions, both ways.
    pub const HELLO: &str = "/v1/hello";
    /// The worker's clock.
    pub const CLOCK: &str = "/v1/clock";
    /// The run to prepare.
    pub const PREPARE: &str = "/v1/prepare";
    /// Start at an instant; the answer streams the results.
    pub const START: &str = "/v1/start";
    /// Change the running run's level.
    pub const STEER: &str = "/v1/steer";
    /// Stop the run.
    pub const ABORT: &str = "/v1/abort";
}

/// Who speaks: the protocol version and belier's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// [`PROTOCOL`].
    pub protocol: u32,
    /// belier's version.
    pub belier: String,
}

/// A worker's wall clock when it answered, nanoseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockReading {
    /// Nanoseconds since the Unix epoch.
    pub wall_ns: i128,
}

/// Which part of the run a worker sends: shard `index` (from 1) of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// From 1 to `count`.
    pub index: u32,
    /// Shards in the run.
    pub count: u32,
}

/// A plan file sent with the job, for a worker that does not have it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanFile {
    /// The path the arguments name.
    pub path: String,
    /// Its text.
    pub text: String,
}

/// The run a worker prepares: the run's own command-line arguments (without the program's
/// name and without the coordinator's flags), its shard, the plan file if the run has one,
/// and the other files the run reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// Arguments, as `belier` would take them.
    pub args: Vec<String>,
    /// The worker's share.
    pub shard: Shard,
    /// The plan, for `belier run PLAN`.
    pub plan: Option<PlanFile>,
    /// The files the run reads besides the plan.
    #[serde(default)]
    pub files: Vec<SentFile>,
    /// The environment variables the plan reads, with the coordinator's values (at most
    /// [`crate::environment::MAX_VARIABLES`] and [`crate::environment::MAX_BYTES`]): the
    /// worker loads the plan with these, not its own. Secrets, maybe: never shown.
    #[serde(default)]
    pub env: crate::environment::Sent,
}

/// When to start: one instant in the coordinator's wall clock, and this worker's offset from
/// it, so the worker converts it to its own clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Start {
    /// The start, nanoseconds since the Unix epoch, by the coordinator's clock.
    pub at_ns: i128,
    /// The worker's clock minus the coordinator's, nanoseconds, as measured.
    pub offset_ns: i128,
}

impl Start {
    /// The start by the worker's own clock, nanoseconds since the Unix epoch.
    pub fn local_ns(&self) -> i128 {
        self.at_ns.saturating_add(self.offset_ns)
    }

    /// Why the worker, whose clock reads `now_ns`, does not take this start: one more than
    /// [`MAX_START_AHEAD`] away would hold the worker for nothing.
    pub fn check(&self, now_ns: i128) -> Result<(), String> {
        let ahead = self.local_ns().saturating_sub(now_ns);
        let most = i128::try_from(MAX_START_AHEAD.as_nanos()).unwrap_or(i128::MAX);
        if ahead > most {
            return Err(format!(
                "the start is {:.0} s away; a worker starts at most {} s after the order",
                ahead as f64 / 1e9,
                MAX_START_AHEAD.as_secs()
            ));
        }
        Ok(())
    }
}

/// A change to the running run: the level of the whole run (each worker's engine takes its
/// shard's share of it, as it does of the run's own profile), 0 to pause; a level after a
/// pause resumes at it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Steering {
    /// Arrivals per second (open loop) or connections/users (closed loop), whole run; 0: pause.
    pub level: f64,
}

/// Why a worker refused a request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// The reason, as a person reads it.
    pub error: String,
}

/// A line of the start stream that is not a results-file line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Note {
    /// Nothing new, but the worker is alive (sent when a second passes without a line).
    Alive {},
    /// The run could not go on: why. The stream ends after it.
    Failed(String),
}

impl Note {
    /// The note on `line`, if it is one (results-file lines are not).
    pub fn parse(line: &[u8]) -> Option<Note> {
        let note = line.starts_with(br#"{"alive""#) || line.starts_with(br#"{"failed""#);
        note.then(|| serde_json::from_slice(line).ok()).flatten()
    }

    /// The note as one line, with its newline.
    pub fn line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).expect("a note serialises");
        line.push(b'\n');
        line
    }
}

/// The message of type `T` in `body`, or why it does not read (as a person reads it).
pub fn decode<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| format!("cannot read the message: {e}"))
}

/// What is wrong with `token` as a worker's token, if anything: it travels in a header, so it
/// is printable ASCII without spaces, and off the loopback (`remote`) it is at least
/// [`MIN_TOKEN_CHARS`] long, so it cannot be guessed.
pub fn token_problem(token: &str, remote: bool) -> Option<String> {
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Some("must be printable ASCII without spaces".into());
    }
    let chars = token.chars().count();
    (remote && chars < MIN_TOKEN_CHARS).then(|| {
        format!("off the loopback a token is at least {MIN_TOKEN_CHARS} characters (this one has {chars})")
    })
}

/// The header that carries the token.
pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Compares two secrets in time that does not depend on where they differ.
pub fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_told_from_results_lines() {
        for note in [Note::Alive {}, Note::Failed("no route".into())] {
            assert_eq!(Note::parse(&note.line()), Some(note));
        }
        assert_eq!(Note::parse(br#"{"interval":{"index":0}}"#), None);
        assert_eq!(Note::parse(br#"{"end":{"elapsed_s":1.0}}"#), None);
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"s3cret", b"s3cret"));
        assert!(!same_secret(b"s3cret", b"s3creT"));
        assert!(!same_secret(b"s3cret", b"s3cre"));
        assert!(!same_secret(b"", b"x"));
    }

    #[test]
    fn the_start_is_converted_by_the_offset() {
        let s = Start {
            at_ns: 1_000,
            offset_ns: -250,
        };
        assert_eq!(s.local_ns(), 750);
    }
}
