//! The schema a `belier grpc` run names: its .proto files compiled with their import paths,
//! or its protoset; read by the command and, for the workers of a distributed run, by the
//! coordinator (`cluster::grpc`). A run that names neither asks the server
//! (`commands::grpc::reflect`).

use belier_grpc::Schema;

use crate::args::GrpcArgs;
use crate::settings::InputError;

/// The compiled schema: the .proto files with their import paths, or the protoset.
pub fn of(args: &GrpcArgs) -> Result<Schema, InputError> {
    match &args.protoset {
        Some(path) => Schema::from_protoset(path)
            .map_err(|e| InputError::new("--protoset <FILE>", path.display(), e.to_string())),
        // A bad file's error names it with its line and column already.
        None => Schema::from_proto_files(&args.proto, &args.import_paths)
            .map_err(|e| InputError::in_file(format!("--proto: {e}"))),
    }
}

/// [`of`], or `None` when the run names neither .proto files nor a protoset.
pub fn given(args: &GrpcArgs) -> Result<Option<Schema>, InputError> {
    match args.proto.is_empty() && args.protoset.is_none() {
        true => Ok(None),
        false => of(args).map(Some),
    }
}
