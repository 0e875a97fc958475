//! gRPC for belier, independent of its engine: what a call puts on the wire and what its
//! answer means, with nothing of connections, timing or recording.
//!
//! - [`frame`]: the length-prefixed messages of a gRPC body (5-byte prefix, compressed flag,
//!   gzip), encoded and read back incrementally with a bound on a message's length;
//! - [`status`]: the 17 status codes with their names, and a call's status read from its
//!   trailers (or from the headers of a trailers-only response, or from its HTTP status when
//!   the server sent none);
//! - [`schema`]: the services and messages a run may call, from `.proto` files compiled at
//!   start (protox: no `protoc`) or from a protoset (a serialized `FileDescriptorSet`);
//! - [`reflection`]: the schema asked of the server itself (server reflection), as questions
//!   and answers the caller carries over a connection of its own;
//! - [`call`]: a call built once before a run: its kind (unary, or which side streams, from
//!   the schema), its path, its headers (`te: trailers`, `grpc-timeout`, metadata) and its
//!   request messages (one, or a client stream's from a JSON array), read from JSON and
//!   framed once;
//! - [`method`]: a method as a plan's step calls it: a request message framed per call, the
//!   response message read back as JSON.
//!
//! Pure but for reading the schema files it is asked to read: no printing, no exit. Errors are
//! typed and name what they refuse (a bad `.proto` as `FILE:LINE:COL`); callers add which flag
//! it came from.
#![deny(missing_docs)]

pub mod call;
pub mod frame;
pub mod method;
pub mod reflection;
pub mod schema;
pub mod status;

pub use call::{Call, CallError, Kind};
pub use frame::{Compression, FrameError, Frames};
pub use method::Method;
pub use reflection::{Reflection, ReflectionError};
pub use schema::{Schema, SchemaError};
pub use status::{Code, Status};
