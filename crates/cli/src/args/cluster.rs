//! Flags of distributed runs: a run's coordinator flags and `belier worker`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Environment variable holding the token shared by coordinator and workers.
pub const TOKEN_ENV: &str = "BELIER_WORKER_TOKEN";

/// Run over several workers (any flag run or plan run).
#[derive(Debug, Args, Clone, Default)]
pub struct ClusterArgs {
    /// Run over these workers ('belier worker --listen ADDR' on each), HOST:PORT,… each
    /// sending its share (shard) of the load; one report and one results file.
    #[arg(
        long = "workers",
        value_name = "HOST:PORT,…",
        value_delimiter = ',',
        conflicts_with = "spawn",
        help_heading = "Distributed runs"
    )]
    pub workers: Vec<String>,

    /// Run over N local worker processes (on 127.0.0.1), started for the run and stopped after.
    #[arg(long = "spawn", value_name = "N", help_heading = "Distributed runs")]
    pub spawn: Option<u32>,

    /// When a worker dies or goes silent: stop the others and exit 1 (stop), or go on and
    /// flag its missing share (continue).
    #[arg(long = "on-worker-loss", value_name = "WHAT", value_enum, default_value_t = Loss::Stop, help_heading = "Distributed runs")]
    pub on_worker_loss: Loss,

    /// Keep each worker's own results file in DIR (worker-1.jsonl, …), as it streamed them.
    #[arg(
        long = "worker-results",
        value_name = "DIR",
        help_heading = "Distributed runs"
    )]
    pub worker_results: Option<PathBuf>,

    /// The workers' token [default: $BELIER_WORKER_TOKEN].
    #[arg(
        long = "worker-token",
        value_name = "TOKEN",
        help_heading = "Distributed runs"
    )]
    pub worker_token: Option<String>,
}

impl ClusterArgs {
    /// Whether the run goes over workers.
    pub fn active(&self) -> bool {
        self.spawn.is_some() || !self.workers.is_empty()
    }
}

/// What a lost worker does to the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Loss {
    /// Stop the other workers; the run exits 1, its report marked incomplete.
    #[default]
    Stop,
    /// Go on without it; the report flags its missing share.
    Continue,
}

/// Options of `belier worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Address to wait for a coordinator on; any but the loopback needs a token.
    #[arg(long = "listen", value_name = "ADDR", default_value = "127.0.0.1:7979")]
    pub listen: String,

    /// The token a coordinator must send ('generate': make one) [default: $BELIER_WORKER_TOKEN;
    /// without either, one is made and printed]. Off the loopback at least 16 characters.
    #[arg(long = "token", value_name = "TOKEN")]
    pub token: Option<String>,

    /// Let jobs read this machine's files (body, targets, TLS, plan data files, Unix sockets)
    /// besides those their coordinator sends with them, and their plans' {{ env.NAME }} this
    /// machine's environment instead of the coordinator's values.
    #[arg(long = "allow-local-files")]
    pub allow_local_files: bool,

    /// Started by a coordinator's --spawn: stop when its standard input closes (the
    /// coordinator is gone) and remove --dir.
    #[arg(long = "spawned", hide = true)]
    pub spawned: bool,

    /// Directory for each run's results file [default: a directory under the system's
    /// temporary directory].
    #[arg(long = "dir", value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

impl ClusterArgs {
    /// The first part of a run spread over the spawned workers or the workers named (the
    /// largest share), or the whole run.
    pub fn first_part(&self) -> belier_engine::Shard {
        let parts = match (self.spawn, self.workers.len()) {
            (Some(n), _) => u64::from(n),
            (None, n) => n as u64,
        };
        belier_engine::Shard::new(0, parts).unwrap_or(belier_engine::Shard::WHOLE)
    }
}
