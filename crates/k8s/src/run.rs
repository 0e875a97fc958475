//! One distributed run as the caller describes it, and the fixed names and places every pod
//! shares.

/// The environment variable that carries the workers' token in every pod (what `belier
/// worker` and a coordinator read).
pub const TOKEN_ENV: &str = "BELIER_WORKER_TOKEN";
/// Key of the token in its Secret.
pub const TOKEN_KEY: &str = "token";
/// Where the plan's ConfigMap is mounted.
pub const PLAN_DIR: &str = "/plan";
/// The port workers listen on by default.
pub const DEFAULT_PORT: u16 = 7979;
/// The image used unless the run names one: this build's own version, the image
/// `scripts/package` makes from the same checkout, so coordinator and workers agree on the
/// wire (`latest` would be whatever was pushed last).
pub const DEFAULT_IMAGE: &str = concat!("ghcr.io/belier/belier:", env!("CARGO_PKG_VERSION"));
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
