//! The flags of a run over a targets file (`--targets FILE`, or `-` for standard input):
//! which file, its format, the order its targets go in, and what each request may do beyond
//! the one the file names (cookies, redirects).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// The flags of a targets run.
#[derive(Debug, Args)]
pub struct TargetsArgs {
    /// Send the requests of a targets file instead of one URL ('-': read them from standard
    /// input as they come, each sent once): vegeta's format, JSON lines or Siege's URL list.
    #[arg(
        long = "targets",
        value_name = "FILE",
        conflicts_with_all = ["url", "method", "body", "body_file", "headers", "proxy"],
        help_heading = "Targets"
    )]
    pub targets: Option<PathBuf>,

    /// Format of the targets [default: detected from the first line]
    #[arg(
        long = "targets-format",
        value_name = "FORMAT",
        value_enum,
        requires = "targets",
        help_heading = "Targets"
    )]
    pub format: Option<FormatArg>,

    /// Order the targets of a file are sent in: in turn (the file's order, over and over), or
    /// at random (seeded by --seed, or a fixed default so that a run repeats)
    #[arg(
        long = "order",
        value_name = "ORDER",
        value_enum,
        default_value = "in-turn",
        help_heading = "Targets"
    )]
    pub order: OrderArg,

    /// Keep cookies: each connection (user) stores the Set-Cookie headers it receives and sends
    /// them back in a Cookie header, as a browser would (with --targets, a jar per host)
    #[arg(long = "cookies", conflicts_with = "proxy")]
    pub cookies: bool,

    /// Follow up to N redirects of each request (to its host or another of the run's): each
    /// hop is a request of its own, counted and timed in its own row of the per-target table
    #[arg(long = "follow", value_name = "N", conflicts_with = "proxy")]
    pub follow: Option<usize>,
}

/// `--targets-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// vegeta's: 'METHOD URL', header lines, '@file' body, a blank line between targets.
    Http,
    /// One JSON object a line: method, url, header (a map of lists), body (base64).
    Json,
    /// Siege's URL list: 'URL' or 'URL POST body' a line.
    Siege,
}

/// `--order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OrderArg {
    /// In the file's order, in turn.
    InTurn,
    /// At random, seeded.
    Random,
}
