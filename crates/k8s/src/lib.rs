//! belier's Kubernetes manifests: one distributed run as the objects Kubernetes needs to place
//! it, rendered as multi-document YAML for `kubectl apply -f -`.
//!
//! A [`Run`] becomes ([`render`]):
//! - a `Secret` holding the workers' token (unless the run names an existing one), which
//!   every pod reads into `BELIER_WORKER_TOKEN`, so no token is written in a Job's spec;
//! - a `ConfigMap` with the plan and the data files it names (plan runs), mounted at `/plan`;
//! - a headless `Service` whose name is the workers' pod subdomain, so that worker `i` of the
//!   Indexed Job is `RUN-worker-i.RUN-workers:PORT` to the coordinator, which dials them;
//! - the workers' Indexed `Job` (completion index = shard), each `belier worker --listen`;
//! - the coordinator's `Job`: an init container that waits until every worker accepts
//!   connections (`belier k8s wait`), then the run itself with `--workers` listing them.
//!
//! Only core `v1` and `batch/v1` kinds, nothing to install in the cluster. The crate does no
//! I/O: the caller supplies the token and the files' contents.
#![deny(missing_docs)]

mod manifests;
mod yaml;

pub use manifests::render_documents;

/// The environment variable that carries the workers' token in every pod (what `belier
/// worker` and a coordinator read).
pub const TOKEN_ENV: &str = "BELIER_WORKER_TOKEN";
/// Key of the token in its Secret.
pub const TOKEN_KEY: &str = "token";
/// Where the plan's ConfigMap is mounted.
pub const PLAN_DIR: &str = "/plan";
/// The port workers listen on by default.
pub const DEFAULT_PORT: u16 = 7979;
/// The image used unless the run names one.
pub const DEFAULT_IMAGE: &str = "ghcr.io/belier/belier:latest";
/// The user the containers run as (distroless's `nonroot`).
pub const RUN_AS_USER: i64 = 65532;

/// What the coordinator runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Workload {
    /// A flag run: belier's arguments as given (`URL --rate 400 -z 1m …`), without
    /// `--workers`, which the manifests add.
    Flags(Vec<String>),
    /// A plan run (`belier run /plan/FILE …`).
    Plan {
        /// The plan's file name, under [`PLAN_DIR`].
        file: String,
        /// The plan's text.
        text: String,
        /// Files the plan names, by their path relative to the plan (data files), with
        /// their contents: mounted at the same relative paths under [`PLAN_DIR`].
        files: Vec<(String, String)>,
        /// Further arguments of `belier run` (`-z 5m`, `--var …`).
        args: Vec<String>,
    },
}

/// One distributed run to place on Kubernetes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// Name of the run, the prefix of every object's name (a DNS label).
    pub name: String,
    /// Namespace of every object; `None`: kubectl's current one.
    pub namespace: Option<String>,
    /// Container image, with belier as its entrypoint.
    pub image: String,
    /// Number of workers (shards).
    pub workers: u32,
    /// Port the workers listen on.
    pub port: u16,
    /// CPU of each worker (requests and limits alike), e.g. `2` or `500m`.
    pub cpu: Option<String>,
    /// Memory of each worker (requests and limits alike), e.g. `1Gi`.
    pub memory: Option<String>,
    /// The workers' token: `Token::Generated` renders a Secret holding it.
    pub token: Token,
    /// What the coordinator runs.
    pub workload: Workload,
}

/// Where the token comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum Token {
    /// A token the caller generated: rendered in a Secret of the run's own.
    Generated(String),
    /// An existing Secret with the token under [`TOKEN_KEY`]; nothing rendered for it.
    Secret(String),
}

// Written out so that a token never lands in a log through `{:?}`.
impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::Generated(_) => f.write_str("Generated(…)"),
            Token::Secret(name) => write!(f, "Secret({name:?})"),
        }
    }
}

/// Why a run cannot be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// A name Kubernetes would refuse.
    #[error("{what} `{value}`: {why}")]
    Name {
        /// Which name (`--run-name`, `--namespace`, `--token-secret`).
        what: &'static str,
        /// The name.
        value: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A resource quantity Kubernetes would refuse.
    #[error("{what} `{value}` is not a Kubernetes quantity (e.g. 2, 500m, 1Gi)")]
    Quantity {
        /// Which (`--cpu`, `--memory`).
        what: &'static str,
        /// The value.
        value: String,
    },
    /// No worker.
    #[error("a run needs at least one worker")]
    NoWorkers,
}

/// The run's manifests as multi-document YAML, in the order `kubectl apply` should create
/// them (Secret, ConfigMap, Service, workers, coordinator).
pub fn render(run: &Run) -> Result<String, RenderError> {
    let docs = render_documents(run)?;
    Ok(yaml::documents(&docs))
}

/// The names the coordinator dials, `RUN-worker-I.RUN-workers:PORT`, in shard order.
pub fn worker_addresses(run: &Run) -> Vec<String> {
    (0..run.workers)
        .map(|i| {
            format!(
                "{}-{i}.{}:{}",
                manifests::worker_job(&run.name),
                manifests::service(&run.name),
                run.port
            )
        })
        .collect()
}

/// The workers' Indexed Job (its workers serve until stopped).
pub fn worker_job(name: &str) -> String {
    manifests::worker_job(name)
}

/// The coordinator's Job, whose logs carry the run's report.
pub fn coordinator_job(name: &str) -> String {
    manifests::coordinator_job(name)
}
