//! Flags of `belier import`: a HAR recording or a curl command made into a plan.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// Options of `belier import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// What to import.
    #[command(subcommand)]
    pub what: ImportCommand,
}

/// What `belier import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// A HAR 1.2 file (browser developer tools: "Save all as HAR") → a plan: the requests in
    /// order, pauses from the recorded gaps, tokens from earlier responses extracted.
    Har(HarArgs),
    /// A curl command (`belier import curl 'curl -X POST -H … URL'`, as "Copy as cURL" writes
    /// it) → the equivalent belier flags on standard output, and with --out a plan.
    Curl(CurlArgs),
}

/// Options of `belier import curl`.
#[derive(Debug, Args)]
pub struct CurlArgs {
    /// The whole curl command, quoted as one argument.
    #[arg(value_name = "'curl …'")]
    pub command: String,
    /// Also write a plan of the request to this file.
    #[arg(long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Options of `belier import har`.
#[derive(Debug, Args)]
pub struct HarArgs {
    /// The HAR file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Keep only the entries on this host (`host` or `host:port`; repeatable). Without it every
    /// http/https host is kept: the plan's target is the first HTML document's origin, steps on
    /// other hosts get an absolute `url:`.
    #[arg(long = "include-host", value_name = "H")]
    pub include_hosts: Vec<String>,
    /// Leave out stylesheets, scripts, images, fonts and media.
    #[arg(long = "exclude-static")]
    pub exclude_static: bool,
    /// Write the plan to this file instead of standard output.
    #[arg(long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
}
