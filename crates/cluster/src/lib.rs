//! Distributed runs: one test over several generators, one start, one merged result.
//!
//! A *worker* ([`worker::serve`], `belier worker --listen ADDR`) waits for work. A
//! *coordinator* ([`coordinator::Coordinator`], any run given `--workers` or `--spawn`)
//! connects to each worker over HTTP/2, checks their protocol version ([`protocol::PROTOCOL`]),
//! measures each one's clock against its own ([`clock`]), has each prepare the run's own
//! arguments with its shard (a worker that refuses fails the start for all, with its reason),
//! then gives all one start instant. Each worker streams its results file back as the run
//! writes it, record by record (lossless HdrHistogram V2 blobs and exact counters), and the
//! coordinator hands every record on as an [`coordinator::Event`], so the caller merges them
//! per interval as one run. A worker whose connection breaks, or that stays silent longer than
//! the caller allows, is reported lost with what it sent so far.
//!
//! The files a run reads travel with its job ([`files`]): workers need no shared filesystem.
//! So do the environment variables a plan reads ([`environment`]): a worker's own stay its own.
//!
//! What a run is stays the caller's: the worker runs a [`worker::Runner`], the coordinator
//! only moves jobs and results files.
#![deny(missing_docs)]

pub mod clock;
pub mod coordinator;
pub mod environment;
pub mod files;
pub mod protocol;
pub mod worker;
