//! Why a run cannot be rendered.

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
