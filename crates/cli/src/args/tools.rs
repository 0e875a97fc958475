//! Flags of the tool subcommands, apart from the load's: `belier probe` and `belier
//! completions`.

use clap::{Args, ValueEnum};

use super::RequestArgs;

/// `belier completions SHELL`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `belier probe`: the request, and how to show what it did. (`--stream` and
/// `--sse-reconnect` are hidden: a probe shows one exchange's phases, not a stream's
/// messages; `--llm` still shapes its request.)
#[derive(Debug, Args)]
#[command(mut_arg("stream", |a| a.hide(true)))]
#[command(mut_arg("sse_reconnect", |a| a.hide(true)))]
pub struct ProbeArgs {
    #[command(flatten)]
    pub request: RequestArgs,

    /// Send the request over HTTP/3 (QUIC: an https URL): the connect phase is QUIC's
    /// handshake, TLS 1.3 included.
    #[arg(long = "http3")]
    pub http3: bool,

    /// Output format.
    #[arg(long, value_enum, default_value_t = ProbeFormat::Text)]
    pub output: ProbeFormat,
}

/// Output formats of `belier probe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProbeFormat {
    /// Human-readable text.
    Text,
    /// JSON: each phase in milliseconds, the status, the head, the error and the phase a
    /// timeout ran out in.
    Json,
}
