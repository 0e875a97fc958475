//! `belier grpc HOST:PORT --call package.Service/Method …`: a load test of one gRPC method,
//! with every flag of a load test (`-n`, `-c`, `-z`, `-r`, the open loop, the outputs)
//! flattened from [`LoadArgs`] and reworded where gRPC reads them differently.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{parse_duration_or_zero, LoadArgs};

/// Options of `belier grpc`.
#[derive(Debug, Args)]
#[command(
    mut_arg("url", |a| {
        a.value_name("HOST:PORT")
            .help("The gRPC server, e.g. 127.0.0.1:50051 (TLS unless --plaintext)")
    }),
    mut_arg("body", |a| {
        a.value_name("JSON").help(
            "The request message as JSON [default: {}]; for a method whose client streams, a \
             JSON array of messages too, sent in turn. A unary method's message may hold \
             templates in its strings, made anew for each call as a plan's values are: \
             {{ vu }}, {{ iteration }}, {{ uuid }}, {{ random_int(1, 9) }}, \
             {{ random_string(8) }}, {{ env.NAME }} (e.g. '{\"id\": \"{{ uuid }}\"}')",
        )
    }),
    mut_arg("body_file", |a| {
        a.value_name("FILE")
            .help("The request message as JSON, read from FILE (templated as -d is)")
    }),
    mut_arg("headers", |a| {
        a.value_name("'KEY: VALUE'").help("Metadata sent with every call (repeatable)")
    }),
    mut_arg("timeout", |a| {
        a.help(
            "Each call's deadline, connect included: sent as grpc-timeout, and a call not done \
             by then counts as DEADLINE_EXCEEDED",
        )
    }),
    mut_arg("cacert", |a| {
        a.help("TLS: trust the CA certificates in this PEM file instead of the system's")
    }),
    mut_args(super::hide_http_only),
    mut_arg("call", |a| a.required(true)),
)]
pub struct GrpcArgs {
    /// The load and its outputs, as for a load test.
    #[command(flatten)]
    pub load: LoadArgs,

    /// The method, its schema and how it is sent (last: its heading goes on to what follows).
    #[command(flatten)]
    pub grpc: GrpcCallArgs,
}

/// The gRPC call a run sends: `belier grpc`'s, and `belier capacity --call`'s.
#[derive(Debug, Args)]
#[command(next_help_heading = "gRPC")]
pub struct GrpcCallArgs {
    /// The method to call, package.Service/Method (package.Service.Method is read too).
    #[arg(long = "call", value_name = "METHOD")]
    pub call: Option<String>,

    /// A .proto file declaring the method (repeatable), compiled at start with its imports.
    /// Without --proto or --protoset the server is asked for the schema (server reflection).
    #[arg(long = "proto", value_name = "FILE", conflicts_with = "protoset")]
    pub proto: Vec<PathBuf>,

    /// Where the .proto files' imports are looked up (repeatable); each --proto file's own
    /// directory is looked in last.
    #[arg(
        short = 'I',
        long = "import-path",
        value_name = "DIR",
        requires = "proto"
    )]
    pub import_paths: Vec<PathBuf>,

    /// A protoset: the compiled FileDescriptorSet with its imports (protoc --descriptor_set_out
    /// FILE --include_imports, or buf build -o FILE).
    #[arg(long = "protoset", value_name = "FILE")]
    pub protoset: Option<PathBuf>,

    /// Send the request message gzip-compressed (grpc-encoding: gzip).
    #[arg(long = "gzip")]
    pub gzip: bool,

    /// Client and bidirectional streaming: messages each call sends, the request messages
    /// (-d) taken in turn [default: as many as -d gives]. The call's deadline (--timeout)
    /// covers them all.
    #[arg(
        long = "stream-call-count",
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub stream_call_count: Option<u32>,

    /// Client and bidirectional streaming: time between two messages a call sends, on a
    /// schedule from its first [default: 0].
    #[arg(
        long = "stream-interval",
        value_name = "D",
        value_parser = parse_duration_or_zero
    )]
    pub stream_interval: Option<Duration>,

    /// Plain HTTP/2 (h2c) instead of TLS.
    #[arg(long = "plaintext")]
    pub plaintext: bool,
}
