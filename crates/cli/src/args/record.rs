//! Flags of `belier record`: the recording proxy and the plan it writes.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

/// Options of `belier record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Address the proxy listens on; off the loopback it needs --token.
    #[arg(long = "listen", value_name = "ADDR", default_value = "127.0.0.1:8888")]
    pub listen: SocketAddr,
    /// The plan file, written again after each recorded request.
    #[arg(long = "out", value_name = "FILE")]
    pub out: PathBuf,
    /// Stop after recording N requests (else Ctrl-C stops).
    #[arg(long = "max-requests", value_name = "N")]
    pub max_requests: Option<u64>,
    /// Record only this host (`host` or `host:port`; repeatable); others are forwarded but
    /// not recorded. Without it every host goes into the plan (steps on hosts other than its
    /// target with an absolute `url:`).
    #[arg(long = "include-host", value_name = "H")]
    pub include_hosts: Vec<String>,
    /// Clients must send this token in Proxy-Authorization (Bearer, or Basic with it as the
    /// password: curl --proxy-user u:TOKEN); needed off the loopback, at least 16 characters
    /// there ('generate' makes one). Without the flag, BELIER_RECORD_TOKEN is read.
    #[arg(long = "token", value_name = "TOKEN")]
    pub token: Option<String>,
    /// Directory of the recorder's CA for HTTPS (made on first use; trust its
    /// belier-recorder-ca.pem) [default: ~/.belier]
    #[arg(long = "ca-dir", value_name = "DIR")]
    pub ca_dir: Option<PathBuf>,
    /// PEM CA certificates to verify HTTPS origins with, instead of the system's roots.
    #[arg(long = "upstream-cacert", value_name = "FILE")]
    pub upstream_cacert: Option<PathBuf>,
}
