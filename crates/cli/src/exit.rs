//! The exit codes every subcommand shares (the others belong to the subcommand that gives
//! them: thresholds, capacity, Ctrl-C). `belier --help` lists them all.

/// Exit code when belier could not do what was asked.
pub const EXIT_FAILURE: u8 = 1;
/// Exit code for invalid input.
pub const EXIT_USAGE: u8 = 2;
