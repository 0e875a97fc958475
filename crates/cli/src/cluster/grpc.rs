//! A distributed `belier grpc` run: the workers get the coordinator's schema, not its .proto
//! files. The files a .proto names resolve through import paths (directories) on this
//! machine; the compiled schema holds all of them, so the coordinator writes it as one
//! protoset (a FileDescriptorSet with every import) and the job's arguments name that file
//! instead of `--proto` and `-I`. It goes with the job as any file a run reads does.

use std::path::PathBuf;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::settings::InputError;

/// The flags that name .proto files and their import paths, dropped from a job that gets the
/// protoset instead; each takes a value.
const SCHEMA_FLAGS: [&str; 3] = ["--proto", "--import-path", "-I"];

/// The coordinator's compiled schema, written for the workers; removed when dropped (its
/// contents go with the jobs, read before the run starts).
pub struct Protoset {
    path: PathBuf,
}

impl Drop for Protoset {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// `args` (the run's own arguments) as the workers take them: for `belier grpc` with .proto
/// files, the schema compiled here, written into a protoset file that the arguments then name
/// (keep it until the job's files are read); other runs' arguments as they are.
pub fn portable(args: Vec<String>) -> anyhow::Result<(Vec<String>, Option<Protoset>)> {
    let argv = std::iter::once("belier".to_string()).chain(args.iter().cloned());
    let grpc = match Cli::try_parse_from(argv) {
        Ok(Cli {
            command: Some(Command::Grpc(grpc)),
            ..
        }) if !grpc.grpc.proto.is_empty() => grpc,
        _ => return Ok((args, None)),
    };
    let schema = crate::grpc_call::schema(&grpc.grpc)?;
    let path = std::env::temp_dir().join(format!("belier-schema-{}.protoset", std::process::id()));
    std::fs::write(&path, schema.pool().encode_to_vec()).map_err(|e| {
        InputError::in_file(format!(
            "cannot write the schema for the workers to {}: {e}",
            path.display()
        ))
    })?;
    let mut job = without_schema_files(&args);
    job.push("--protoset".into());
    job.push(path.display().to_string());
    Ok((job, Some(Protoset { path })))
}

/// `args` without [`SCHEMA_FLAGS`] and their values, in each form clap takes (`--proto F`,
/// `--proto=F`, `-I D`, `-I=D`, `-ID`).
fn without_schema_files(args: &[String]) -> Vec<String> {
    let mut kept = Vec::new();
    let mut skip_value = false;
    for arg in args {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        let schema = SCHEMA_FLAGS.iter().find(|f| {
            arg == **f || arg.starts_with(&format!("{f}=")) || (**f == "-I" && arg.starts_with(*f))
        });
        match schema {
            Some(f) => skip_value = arg == *f,
            None => kept.push(arg.clone()),
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_the_schema_flags_goes_and_nothing_else() {
        let args: Vec<String> = [
            "grpc",
            "127.0.0.1:1",
            "--proto",
            "a.proto",
            "--proto=b.proto",
            "-I",
            "dir",
            "-Iother",
            "-I=third",
            "--import-path",
            "x",
            "--import-path=y",
            "--call",
            "p.S/M",
            "-d",
            "{\"proto\": 1}",
            "--plaintext",
        ]
        .map(String::from)
        .into();
        assert_eq!(
            without_schema_files(&args),
            [
                "grpc",
                "127.0.0.1:1",
                "--call",
                "p.S/M",
                "-d",
                "{\"proto\": 1}",
                "--plaintext"
            ]
        );
    }
}
