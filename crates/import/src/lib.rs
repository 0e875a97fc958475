//! Importers: what other tools recorded or were told (a browser's HAR file, a curl command
//! line) turned into a plan.
//!
//! Each importer builds a [`Draft`], a plan as data (one scenario of request steps and pauses,
//! with the extractions that carry server-issued tokens from one response to later requests),
//! and [`Draft::to_yaml`] writes it in the format the book describes (`docs/src/reference/plan-format.md`), so the result is read,
//! checked and run like any hand-written plan. Importers do no I/O: the caller reads the files
//! and writes the plan (curl's `@file` bodies come through a reader the caller passes).
//!
//! `belier import` reads its input with these; `belier record` (the recorder) writes the plan
//! of the traffic it forwards with the same [`Draft`], [`plan`] and correlation.
#![deny(missing_docs)]

mod correlate;
mod curl;
mod draft;
mod error;
mod har;
mod headers;
mod recording;

pub use correlate::{Correlation, Exchange, Response};
pub use curl::{from_curl, CurlBody, CurlImport, CurlRequest};
pub use draft::{Draft, DraftRequest, DraftStep, Extract};
pub use error::ImportError;
pub use har::{from_har, HarImport, HarOptions};
pub use headers::{check_header, is_dropped_on_import, is_hop_by_hop, secret_variable};
pub use recording::{plan, Recorded, MIN_PAUSE};
