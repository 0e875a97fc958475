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

mod error;
mod manifests;
mod run;
mod yaml;

pub use error::RenderError;
pub use manifests::{render_documents, worker_addresses};
pub use run::{
    Run, Token, Workload, DEFAULT_IMAGE, DEFAULT_PORT, PLAN_DIR, RUN_AS_USER, TOKEN_ENV, TOKEN_KEY,
};

/// The run's manifests as multi-document YAML, in the order `kubectl apply` should create
/// them (Secret, ConfigMap, Service, workers, coordinator).
pub fn render(run: &Run) -> Result<String, RenderError> {
    let docs = render_documents(run)?;
    Ok(yaml::documents(&docs))
}

/// The workers' Indexed Job (its workers serve until stopped).
pub fn worker_job(name: &str) -> String {
    manifests::worker_job(name)
}

/// The coordinator's Job, whose logs carry the run's report.
pub fn coordinator_job(name: &str) -> String {
    manifests::coordinator_job(name)
}
