//! `belier import har FILE` and `belier import curl 'curl …'`: a recording or a command made
//! into a plan (the importers are `belier_import`'s; this module reads the input,
//! writes the plan and says what it did, naming variables and counts, never header values).

use std::path::Path;

use belier_import::{self as import, Draft, DraftStep, Extract, ImportError};
use belier_plan::files;

use crate::args::{CurlArgs, HarArgs, ImportArgs, ImportCommand};

/// `belier import …`.
pub fn run(args: ImportArgs) -> anyhow::Result<u8> {
    match args.what {
        ImportCommand::Har(a) => har(a),
        ImportCommand::Curl(a) => curl(a),
    }
}

fn curl(args: CurlArgs) -> anyhow::Result<u8> {
    let mut read = |path: &str| {
        let bytes = files::read(std::path::Path::new(path), files::MOST_BODY_BYTES);
        bytes.map_err(|e| match e {
            files::FileError::Io(e) => e,
            other => std::io::Error::other(other.to_string()),
        })
    };
    let mut imported = import::from_curl(&args.command, &mut read)?;
    let command = format!("belier {}", shell_words::join(&imported.flags));
    if let Some(out) = &args.out {
        // The plan reads its files (a body, a CA, a socket) from its own directory, curl from
        // the current one: name them from anywhere.
        let draft = &mut imported.draft;
        let files = draft.steps.iter_mut().filter_map(|step| match step {
            DraftStep::Request(r) => r.body_file.as_mut(),
            DraftStep::Pause(_) => None,
        });
        for file in files
            .chain(draft.cacert.as_mut())
            .chain(draft.unix_socket.as_mut())
        {
            *file = std::path::absolute(&*file)?;
        }
        let comment = format!(
            "Imported by `belier import curl`; the same request as flags (add -n/-z, -c or --rate):\n{command}"
        );
        write_plan(&imported.draft, &comment, Some(out))?;
    }
    for note in &imported.notes {
        eprintln!("note: {note}");
    }
    println!("{command}");
    Ok(0)
}

fn har(args: HarArgs) -> anyhow::Result<u8> {
    let name = args.file.display().to_string();
    let text = files::read_to_string(&args.file, files::MOST_DATA_BYTES)
        .map_err(|e| ImportError::new(&name, format!("cannot read the HAR file: {e}")))?;
    let options = import::HarOptions {
        include_hosts: args.include_hosts,
        exclude_static: args.exclude_static,
    };
    let imported = import::from_har(&text, &name, &options)?;
    let comment = format!(
        "Imported by `belier import har` from {name}.\nRun it: belier run PLAN (add -u N -z D for more users and time)."
    );
    write_plan(&imported.draft, &comment, args.out.as_deref())?;
    for c in &imported.correlations {
        let source = match &c.source {
            Extract::Json(path) => format!("json {path}"),
            Extract::Header(h) => format!("header {h}"),
        };
        let used: Vec<String> = c.used_by.iter().map(|i| (i + 1).to_string()).collect();
        eprintln!(
            "extracted `{}` from the response of request {} ({source}), used by request {}",
            c.var,
            c.from_step + 1,
            used.join(", ")
        );
    }
    for note in &imported.notes {
        eprintln!("note: {note}");
    }
    Ok(0)
}

/// Writes the plan's YAML to `out` (or standard output) after checking that belier reads it
/// back (an importer that wrote a plan `belier run` refuses would be a bug, reported as one).
fn write_plan(draft: &Draft, comment: &str, out: Option<&Path>) -> anyhow::Result<()> {
    let yaml = draft.to_yaml(comment);
    let as_path = out.unwrap_or(Path::new("imported.yaml"));
    if let Err(e) = belier_plan::parse(&yaml, as_path) {
        anyhow::bail!("the imported plan does not read back ({e}); please report this");
    }
    let requests = draft.requests().count();
    let pauses = draft.steps.len() - requests;
    match out {
        Some(path) => {
            // Its owner's only (0600), as a recorded plan: it may carry tokens and passwords.
            belier_recorder::write_plan(path, &yaml)
                .map_err(|e| anyhow::anyhow!("cannot write the plan to {}: {e}", path.display()))?;
            eprintln!(
                "plan written to {}: {requests} requests, {pauses} pauses",
                path.display()
            );
        }
        None => print!("{yaml}"),
    }
    Ok(())
}
