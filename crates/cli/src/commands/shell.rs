//! What belier gives the shell, generated from its clap definition so it never falls behind
//! the flags: completion scripts (`belier completions SHELL`) and the man page (`belier man`).

use std::io::Write as _;

use clap::CommandFactory as _;
use clap_complete::Shell;

use crate::args::Cli;

/// Prints the completion script for `shell` on standard output.
pub fn completions(shell: Shell) -> anyhow::Result<u8> {
    let mut command = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "belier", &mut out);
    print(&out)
}

/// Prints the man page (roff, section 1) on standard output.
pub fn man() -> anyhow::Result<u8> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    print(&out)
}

fn print(bytes: &[u8]) -> anyhow::Result<u8> {
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`belier man | head`) is not a failure.
    let _ = stdout.write_all(bytes).and_then(|()| stdout.flush());
    Ok(0)
}
