//! The `belier` command as a library: [`args`] parses the command line, [`commands::run`] runs
//! it (flags → validated settings → run → report → exit code), so tests can call a command in
//! process. The binary (`main.rs`) only parses and dispatches. This is the only crate that
//! prints or exits.
#![allow(clippy::print_stdout, clippy::print_stderr)]
// The flags' doc comments are their help text, written for a terminal: `[::1]` there is an
// address, not a link.
#![allow(rustdoc::broken_intra_doc_links)]

pub mod args;
mod cluster;
pub mod commands;
mod executors;
mod exit;
mod grpc_call;
pub mod habits;
mod history;
mod limits;
mod load;
mod metrics;
mod outputs;
mod phase;
mod plan;
mod progress;
mod prometheus;
mod proxy;
mod resolve;
mod settings;
mod shard;
mod signals;
mod targets_file;
mod token;
mod tui;
mod web;

pub use exit::EXIT_USAGE;

#[cfg(test)]
mod parsers_never_panic;
