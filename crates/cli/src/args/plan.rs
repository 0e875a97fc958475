//! The flags of `belier run PLAN` and `belier check PLAN`. A plan run takes the groups a flag
//! run has where they mean the same (length and rate, what every request carries, threads and
//! re-sends, shards, report and results, workers); its help says each one overrides the plan.

use std::path::PathBuf;

use clap::Args;

use super::NO_RESEND_BRIEF;
use super::{ClusterArgs, EveryRequestArgs, OutputArgs, PaceArgs, SendingArgs, ShardArgs};

/// Options of `belier run PLAN`: the plan says what to do; these flags override it.
#[derive(Debug, Args)]
#[command(
    mut_arg("duration", |a| a.help("Run length, instead of the plan's `load.duration`")),
    mut_arg("rate", |a| {
        a.help("Start R iterations per second (open loop), instead of the plan's load")
            .help_heading(None)
    }),
    mut_arg("headers", |a| {
        a.help(
            "Extra header on every request, 'Name: value' (repeatable); replaces the plan's own \
             header of that name",
        )
    }),
    mut_arg("insecure", |a| {
        a.help("https: do not verify the server's certificate, whatever the plan says")
            .help_heading(None)
    }),
    mut_arg("compressed", |a| {
        a.help("Ask for compressed answers and decode them, as the plan's `compressed: true` does")
    }),
    mut_arg("connect_to", |a| {
        a.help("Connect to ADDR instead of resolving the plan's host (Host header and TLS name stay)")
    }),
    mut_arg("no_resend", |a| a.help(NO_RESEND_BRIEF)),
    mut_arg("tls_resume", |a| {
        a.help(
            "https: let connections resume earlier TLS sessions; without it every connection pays \
             a full handshake",
        )
        .help_heading(None)
    }),
)]
pub struct RunArgs {
    /// The plan file (YAML; its format is in the book, docs/src/reference/plan-format.md).
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,

    /// Run length and rate, instead of the plan's load.
    #[command(flatten)]
    pub pace: PaceArgs,

    /// Total iterations across all users, instead of the plan's `load.iterations`.
    #[arg(short = 'i', long = "iterations", value_name = "N")]
    pub iterations: Option<u64>,

    /// Run N virtual users in a closed loop, instead of the plan's load (its pacing stays).
    #[arg(short = 'u', long = "vus", value_name = "N", conflicts_with = "rate")]
    pub vus: Option<u64>,

    /// Headers, TLS and connection overrides on every request.
    #[command(flatten)]
    pub every: EveryRequestArgs,

    /// The plan's variables.
    #[command(flatten)]
    pub vars: VarArgs,

    /// This process's shard.
    #[command(flatten)]
    pub shard: ShardArgs,

    /// Threads and re-sends.
    #[command(flatten)]
    pub sending: SendingArgs,

    /// Report and results.
    #[command(flatten)]
    pub results: OutputArgs,

    /// Over several workers.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// Options of `belier check PLAN`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The plan file.
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,

    /// The plan's variables.
    #[command(flatten)]
    pub vars: VarArgs,
}

/// A plan's variables set from the command line: `belier run`, `belier check`, and `belier
/// capacity` with a plan.
#[derive(Debug, Args)]
pub struct VarArgs {
    /// Set plan variable NAME to VALUE instead of the plan's `variables` value (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
}
