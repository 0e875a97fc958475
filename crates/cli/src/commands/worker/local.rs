//! A job reads only the files sent with it: arguments and plan fields that name this
//! machine's files are refused unless the worker runs with `--allow-local-files`. Whoever
//! holds the token can have the worker send requests; without this, they could also have it
//! send `~/.ssh/id_ed25519` as a body to a host of their choosing.

use std::path::{Path, PathBuf};

use belier_plan::{Copies, Plan};
use belier_scenario::targets::Format;

use crate::args::FormatArg;
use crate::args::{GrpcArgs, LoadArgs, WsArgs};

/// What the refusal adds after naming the file.
const ONLY_SENT: &str = "a job reads only the files its coordinator sends with it \
                         (start the worker with --allow-local-files to let jobs read this machine's files)";

/// Refuses a flag run whose arguments name a file of this machine (one not among `copies`),
/// a Unix socket, or standard input.
pub fn refuse_unsent(load: &mut LoadArgs, copies: &Copies) -> Result<(), String> {
    if load.targets.targets.as_deref() == Some(Path::new("-")) {
        return Err(
            "--targets -: a worker reads no targets from its standard input; \
                    the coordinator sends a targets file with the job"
                .into(),
        );
    }
    if let Some(socket) = &load.request.unix_socket {
        return Err(format!(
            "--unix-socket {}: a socket of the worker's machine; {ONLY_SENT}",
            socket.display()
        ));
    }
    let format = load.targets.format;
    if let Some(copy) = load.targets.targets.as_ref().and_then(|t| copies.get(t)) {
        let named = load.targets.targets.as_deref().unwrap_or(copy);
        targets_bodies(named, copy, format)?;
    }
    for path in crate::cluster::files::named(load) {
        unsent(path, copies)?;
    }
    Ok(())
}

/// [`refuse_unsent`] for a `belier grpc` job: its request's files and its protoset (the
/// coordinator's schema) are read from the copies sent with it, never from this machine.
pub fn refuse_unsent_grpc(grpc: &mut GrpcArgs, copies: &Copies) -> Result<(), String> {
    refuse_unsent(&mut grpc.load, copies)?;
    if !grpc.grpc.proto.is_empty() {
        return Err(format!(
            "--proto: .proto files of the worker's machine; {ONLY_SENT}"
        ));
    }
    grpc.grpc
        .protoset
        .iter()
        .try_for_each(|path| unsent(path, copies))
}

/// [`refuse_unsent`] for a `belier ws` job: its --message-file too is read from the copy
/// sent with it.
pub fn refuse_unsent_ws(ws: &mut WsArgs, copies: &Copies) -> Result<(), String> {
    refuse_unsent(&mut ws.load, copies)?;
    ws.ws
        .message_file
        .iter()
        .try_for_each(|path| unsent(path, copies))
}

/// Refuses a targets file (its sent `copy`, known as `named`) whose targets read their body
/// from a file (`@file`, Siege's `<file`): those are never sent, so they are this machine's.
fn targets_bodies(named: &Path, copy: &Path, format: Option<FormatArg>) -> Result<(), String> {
    let text = std::fs::read(copy).map_err(|e| format!("cannot read {}: {e}", named.display()))?;
    let text = String::from_utf8_lossy(&text);
    let lines = || {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    };
    let format = match format {
        Some(FormatArg::Http) => Format::Http,
        Some(FormatArg::Json) => Format::Json,
        Some(FormatArg::Siege) => Format::Siege,
        None => lines()
            .next()
            .map_or(Format::Json, |(_, l)| Format::detect(l)),
    };
    match lines().find_map(|(i, l)| body_file(l, format).map(|b| (i + 1, b.trim()))) {
        Some((line, body)) => Err(format!(
            "{}:{line}: the body file {body} is a file of the worker's machine; {ONLY_SENT}",
            named.display()
        )),
        None => Ok(()),
    }
}

/// The body file a targets file's `line` names, if any.
fn body_file(line: &str, format: Format) -> Option<&str> {
    match format {
        Format::Http => line.strip_prefix('@'),
        // `URL METHOD <file`: the third field.
        Format::Siege => line
            .split_whitespace()
            .nth(2)
            .filter(|b| b.starts_with('<')),
        Format::Json => None,
    }
}

/// Refuses a plan that reads a file of this machine (one not among `copies`) or connects to
/// a Unix socket.
pub fn refuse_unsent_in_plan(plan: &Plan, copies: &Copies) -> Result<(), String> {
    if let Some(socket) = &plan.options.unix_socket {
        return Err(format!(
            "{}: unix_socket {}: a socket of the worker's machine; {ONLY_SENT}",
            plan.file.display(),
            socket.display()
        ));
    }
    plan.files.iter().try_for_each(|path| unsent(path, copies))
}

fn unsent(path: &PathBuf, copies: &Copies) -> Result<(), String> {
    if copies.contains_key(path) {
        return Ok(());
    }
    Err(format!(
        "{}: not a file the coordinator sent; {ONLY_SENT}",
        path.display()
    ))
}
