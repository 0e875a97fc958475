//! belier's run session: a run's life written once, for every command that runs load.
//!
//! A [`Source`] starts and follows the load (the engine in this process, [`LocalRun`], or a
//! coordinator over workers, [`Coordinated`]); [`session::run`] follows it to its end, merges
//! what it sends into intervals and hands the run's start, each settled interval, each change
//! made to it, a tick at every poll and its end to [`Watcher`]s, one after the other. A
//! watcher may ask the run to stop at a tick; the session alone decides ([`Stopping`]).
//!
//! The engine knows nothing of watchers, and this crate prints nothing: the watchers that
//! draw or print are the CLI's.

#![deny(missing_docs)]

pub mod changes;
pub mod coordinated;
pub mod local;
pub mod session;
pub mod source;
pub mod watcher;
pub mod watchers;

pub use changes::Changes;
pub use coordinated::Coordinated;
pub use local::LocalRun;
pub use session::{run, Ran, Stopping};
pub use source::{Flow, Source};
pub use watcher::{Begin, Now, Seen, Stop, Watcher};
