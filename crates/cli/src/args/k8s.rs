//! Flags of `belier k8s`: `render` and `run` a distributed run's manifests, and `wait`,
//! the coordinator pod's init container.

use std::time::Duration;

use belier_k8s::{DEFAULT_IMAGE, DEFAULT_PORT};
use clap::{Args, Subcommand};

use super::parse_duration;

/// `belier k8s …`.
#[derive(Debug, Args)]
pub struct K8sArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: K8sCommand,
}

/// Subcommands of `belier k8s`.
#[derive(Debug, Subcommand)]
pub enum K8sCommand {
    /// Print the run's manifests (multi-document YAML for `kubectl apply -f -`): an Indexed
    /// Job of workers behind a headless Service, the coordinator's Job, the token's Secret,
    /// the plan in a ConfigMap.
    Render(PlaceArgs),
    /// Apply the manifests with kubectl (on PATH) and follow the coordinator's report; exits
    /// with the coordinator's code.
    Run(PlaceArgs),
    /// Wait until every HOST:PORT accepts a TCP connection (the coordinator pod's init
    /// container).
    Wait(WaitArgs),
}

/// The run and where it goes.
#[derive(Debug, Args)]
pub struct PlaceArgs {
    /// Number of workers (shards), one pod each.
    #[arg(long = "workers", value_name = "N")]
    pub workers: Option<u32>,
    /// Container image with belier as its entrypoint (see Containerfile).
    #[arg(long = "image", value_name = "IMAGE", default_value = DEFAULT_IMAGE)]
    pub image: String,
    /// Namespace of every object [default: kubectl's current one].
    #[arg(long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,
    /// CPU of each worker, requested and limited alike (e.g. 2, 500m).
    #[arg(long = "cpu", value_name = "Q")]
    pub cpu: Option<String>,
    /// Memory of each worker, requested and limited alike (e.g. 1Gi).
    #[arg(long = "memory", value_name = "Q")]
    pub memory: Option<String>,
    /// Use this existing Secret's `token` key as the workers' token instead of rendering a
    /// Secret with a token generated now.
    #[arg(long = "token-secret", value_name = "NAME")]
    pub token_secret: Option<String>,
    /// Prefix of every object's name.
    #[arg(long = "run-name", value_name = "NAME", default_value = "belier")]
    pub run_name: String,
    /// Port the workers listen on.
    #[arg(long = "port", value_name = "PORT", default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// The run: a URL and belier's flags, or a plan file and `belier run`'s flags. The
    /// options above may come before or after it.
    #[arg(
        value_name = "URL FLAGS… | PLAN FLAGS…",
        required = true,
        num_args = 1..,
        allow_hyphen_values = true,
        trailing_var_arg = true
    )]
    pub run: Vec<String>,
}

/// `belier k8s wait`.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// Give up after this long.
    #[arg(long = "timeout", value_name = "D", value_parser = parse_duration, default_value = "10m")]
    pub timeout: Duration,
    /// The addresses, HOST:PORT,…
    #[arg(value_name = "HOST:PORT,…", value_delimiter = ',', required = true)]
    pub addresses: Vec<String>,
}
