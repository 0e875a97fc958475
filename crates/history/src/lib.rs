//! Run history: finished runs stored in a database and read back, so that runs of one name can
//! be listed, shown and compared over time.
//!
//! A [`RunRecord`] is what the history keeps of a run: its settings, labels, host, belier
//! version, totals, corrected and uncorrected latency percentiles, per-step, per-target and
//! per-scenario rows, the per-interval series (in columns, compactly), threshold outcomes,
//! capacity answers when there are some, and where its results file is. It is made from a run
//! read back from its results files ([`RunRecord::from_run`]), the same record `belier report`
//! reads, so writing the history costs nothing while the run goes.
//!
//! A [`Store`] is an SQLite database (built in, through rusqlite's `bundled` SQLite), by default
//! at [`default_path`], or a PostgreSQL database named by a `postgres://` URL, a team's shared
//! store. Its schema is versioned ([`SCHEMA_VERSION`]): opening a database written by an older
//! version migrates it. SQLite is opened in WAL mode with a busy timeout, so several processes
//! (shards, parallel CI jobs) may write at once; PostgreSQL orders its clients itself.

#![deny(missing_docs)]

mod backend;
mod location;
mod postgres;
mod record;
mod schema;
mod sqlite;
mod store;

pub use location::{Location, PgTls};
pub use record::{
    trend_unit, CapacitySearch, Intervals, Percentiles, RowKind, RunRecord, TableRow, METRICS,
    TREND_METRICS,
};
pub use schema::SCHEMA_VERSION;
pub use sqlite::BUSY_TIMEOUT;
pub use store::{default_path, HistoryError, Store, StoredRun};

#[cfg(test)]
mod tests;
