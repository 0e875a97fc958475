//! Running plan scripts (compiled by `belier_plan::script`): the engine each worker thread
//! owns, with belier's helper functions ([`api`]), and one call on a user's variables ([`run`]).

mod api;
mod run;

pub(crate) use run::{run, Call, ScriptErrors};
