//! The files a distributed run reads go with its job ([`belier_cluster::files`]): a plan's,
//! as the plan itself names them ([`belier_plan::Plan::files`]), or those a flag run's
//! arguments name. A worker points the arguments at its copies ([`localise`]).

use std::path::PathBuf;

use belier_cluster::files::gather;
use belier_cluster::protocol::SentFile;
use belier_plan::{Copies, Plan};
use clap::Parser;

use crate::args::{Cli, Command, GrpcArgs, LoadArgs, WsArgs};
use crate::settings::InputError;

/// The files to send with the job of the run of `args` (the run's own arguments), `plan`'s
/// if it is a plan run; one that cannot be read or is too large is an input error naming it.
pub fn sent(plan: Option<&Plan>, args: &[String]) -> anyhow::Result<Vec<SentFile>> {
    let paths = match plan {
        Some(plan) => plan.files.clone(),
        None => {
            let argv = std::iter::once("belier".to_string()).chain(args.iter().cloned());
            match Cli::try_parse_from(argv) {
                Ok(mut cli) => named_by_run(&mut cli)
                    .into_iter()
                    .map(|p| p.clone())
                    .collect(),
                // This process parsed these arguments already: nothing else names files.
                Err(_) => Vec::new(),
            }
        }
    };
    gather(&paths).map_err(|e| InputError::in_file(e.to_string()).into())
}

/// The files the run `cli` parsed reads: a load test's, a gRPC run's or a WebSocket run's
/// (plans name theirs in the plan).
fn named_by_run(cli: &mut Cli) -> Vec<&mut PathBuf> {
    match &mut cli.command {
        None => named(&mut cli.load),
        Some(Command::Grpc(grpc)) => named_by_grpc(grpc),
        Some(Command::Ws(ws)) => named_by_ws(ws),
        Some(_) => Vec::new(),
    }
}

/// The files a flag run reads, as its arguments name them.
pub(crate) fn named(load: &mut LoadArgs) -> Vec<&mut PathBuf> {
    let r = &mut load.request;
    let targets = load
        .targets
        .targets
        .as_mut()
        .filter(|t| t.as_os_str() != "-");
    [
        r.body_file.as_mut(),
        r.cacert.as_mut(),
        r.cert.as_mut(),
        r.key.as_mut(),
        targets,
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The files a `belier grpc` run's workers read, as its job's arguments name them: its
/// protoset (the coordinator's schema, see `cluster::grpc`) and the request's files.
pub(crate) fn named_by_grpc(grpc: &mut GrpcArgs) -> Vec<&mut PathBuf> {
    let mut paths = named(&mut grpc.load);
    paths.extend(grpc.grpc.protoset.as_mut());
    paths
}

/// The files a `belier ws` run's workers read, as its job's arguments name them: its
/// --message-file and the upgrade request's files.
pub(crate) fn named_by_ws(ws: &mut WsArgs) -> Vec<&mut PathBuf> {
    let mut paths = named(&mut ws.load);
    paths.extend(ws.ws.message_file.as_mut());
    paths
}

/// A flag run's arguments reading the files they name from their `copies`.
pub fn localise(load: &mut LoadArgs, copies: &Copies) {
    to_copies(named(load), copies);
}

/// A `belier grpc` job's arguments reading the files they name from their `copies`.
pub fn localise_grpc(grpc: &mut GrpcArgs, copies: &Copies) {
    to_copies(named_by_grpc(grpc), copies);
}

/// A `belier ws` job's arguments reading the files they name from their `copies`.
pub fn localise_ws(ws: &mut WsArgs, copies: &Copies) {
    to_copies(named_by_ws(ws), copies);
}

fn to_copies(paths: Vec<&mut PathBuf>, copies: &Copies) {
    for path in paths {
        if let Some(local) = copies.get(path) {
            path.clone_from(local);
        }
    }
}
