//! The `belier` command: parses the command line and hands it to [`belier_cli::commands::run`].
#![allow(clippy::print_stderr)]

use std::process::ExitCode;

use belier_cli::args::Cli;
use belier_cli::{habits, EXIT_USAGE};
use clap::Parser;

fn main() -> ExitCode {
    match Cli::try_parse() {
        Ok(cli) => ExitCode::from(belier_cli::commands::run(cli)),
        Err(e) => match habits::several_urls(std::env::args())
            .or_else(|| habits::web_address_apart(std::env::args()))
        {
            Some(why) => {
                eprintln!("error: {why}");
                ExitCode::from(EXIT_USAGE)
            }
            None => ExitCode::from(clap_error(e)),
        },
    }
}

/// Prints a clap error as one line (help and version go to stdout in full) and returns the
/// exit code.
fn clap_error(e: clap::Error) -> u8 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            0
        }
        _ => {
            let rendered = e.render().to_string();
            eprintln!("{} (see 'belier --help')", one_line(&rendered));
            EXIT_USAGE
        }
    }
}

/// Clap's message on one line: its first paragraph, whose continuation lines name what it is
/// about (the arguments missing under "the following required arguments were not provided:").
fn one_line(rendered: &str) -> String {
    let parts: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty() && !l.starts_with("Usage:"))
        .collect();
    match parts.is_empty() {
        true => "error: invalid arguments".to_string(),
        false => parts.join(" "),
    }
}
