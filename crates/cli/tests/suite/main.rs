//! The CLI's integration tests, one module per area, linked into one test binary: one link
//! instead of 43 (each linked the whole workspace again), and the tests of every area share
//! the test threads (three in scripts/test: most wait on runs), so a module whose tests wait
//! on a run no longer leaves a core idle while the next module waits its turn. `cargo test -p
//! belier-cli --test suite MODULE::` runs one area. Five stay binaries of their own, run
//! before or after this one and never beside it: the capacity searches
//! (tests/capacity*.rs), which measure where a server saturates; tests/install.rs and
//! tests/packages.rs, which only build and count and so run beside the searches
//! (scripts/test); and tests/cluster.rs, whose spawned workers (ten processes, 50,000 users)
//! load both cores and whose spawn test measures how close together the workers start.

mod addressing;
mod cli;
mod cluster_files;
mod cluster_guard;
mod cluster_scenarios;
mod compressed;
mod credentials;
mod dns;
mod files;
mod flags_never_panic;
mod grpc;
mod grpc_cluster;
mod grpc_options;
mod grpc_outputs;
mod grpc_target;
mod hdr_java;
mod history;
mod hold;
mod hosts;
mod http3;
mod http3_auto;
mod http3_body;
mod http3_reach;
mod import;
mod k8s;
mod kernel_stamps;
mod metrics;
mod nginx;
mod nginx_compressed;
mod nginx_h2;
mod nginx_idle;
mod nginx_tls;
mod nginx_unix;
mod outputs;
mod outputs_otlp_statsd;
mod plan_abort;
mod plan_conditions;
mod plan_executors;
mod plan_grpc;
mod plan_inputs;
mod plan_parallel;
mod plan_phases;
mod plan_scripts;
mod plan_ws;
mod plans;
mod proxy;
mod record;
mod results;
mod server_timing;
mod shard;
mod shell;
mod sources;
mod sse_reconnect;
mod streams;
mod target_h2;
mod target_tls;
mod target_unix;
mod targets;
mod traces;
mod tui;
mod wakeups;
mod web;
mod websocket;
mod websocket_deflate;
