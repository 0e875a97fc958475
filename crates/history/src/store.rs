//! The store: opening (and migrating) a history database, SQLite or PostgreSQL, writing a run,
//! reading runs back.

use std::path::PathBuf;

use crate::backend::{Backend, DbError, Row};
use crate::location::Location;
use crate::postgres::Postgres;
use crate::record::RunRecord;
use crate::sqlite::Sqlite;

/// Why the history could not be opened, written or read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The database refused or failed.
    #[error("history database {path}: {source}")]
    Database {
        /// The database's location, without its password.
        path: String,
        /// What the database said.
        source: DbError,
    },
    /// A stored record could not be read back.
    #[error("history database {path}: run {id}: {source}")]
    Record {
        /// The database's location, without its password.
        path: String,
        /// The run's id.
        id: i64,
        /// What the JSON reader said.
        source: serde_json::Error,
    },
    /// The database was written by a newer belier, whose schema this one does not know.
    #[error(
        "history database {path} has schema version {found}, newer than this belier's {known}"
    )]
    Newer {
        /// The database's location, without its password.
        path: String,
        /// The version found.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
}

/// A run read back from the store, with the id it was stored under.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRun {
    /// The run's id in this store.
    pub id: i64,
    /// The run's record.
    pub record: RunRecord,
}

/// An open history database.
pub struct Store {
    db: Box<dyn Backend>,
    shown: String,
}

/// Where the history is kept when no path is given: `$XDG_DATA_HOME/belier/history.db`, else
/// `~/.local/share/belier/history.db`; `None` when neither variable is set.
pub fn default_path() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(data.join("belier").join("history.db"))
}

impl Store {
    /// Opens the database at `location` (a file is created, with its directory, if need be)
    /// and migrates it to this build's schema.
    pub fn open(location: impl Into<Location>) -> Result<Store, HistoryError> {
        Store::open_with(location.into(), None, crate::SCHEMA_VERSION as usize)
    }

    /// Opens the database at `location` as [`Store::open`] does, a PostgreSQL connection
    /// encrypted with `tls` when its URL's `sslmode` asks (see [`Location::postgres_tls`]: the
    /// caller builds the client configuration that verifies as the mode says).
    pub fn open_tls(
        location: impl Into<Location>,
        tls: Option<rustls::ClientConfig>,
    ) -> Result<Store, HistoryError> {
        Store::open_with(location.into(), tls, crate::SCHEMA_VERSION as usize)
    }

    /// Opens the database at `location`, migrating it no further than `version`: what an
    /// older belier would have made of it, for tests of the migrations.
    #[doc(hidden)]
    pub fn open_at(location: Location, version: usize) -> Result<Store, HistoryError> {
        Store::open_with(location, None, version)
    }

    fn open_with(
        location: Location,
        tls: Option<rustls::ClientConfig>,
        version: usize,
    ) -> Result<Store, HistoryError> {
        let shown = location.shown();
        let opened: Result<(Box<dyn Backend>, i64), DbError> = match &location {
            Location::File(path) => {
                Sqlite::open(path, version).map(|(db, found)| (Box::new(db) as _, found))
            }
            Location::Postgres(url) => {
                Postgres::open(url, tls, version).map(|(db, found)| (Box::new(db) as _, found))
            }
        };
        let (db, found) = opened.map_err(|source| HistoryError::Database {
            path: shown.clone(),
            source,
        })?;
        if found > crate::SCHEMA_VERSION {
            return Err(HistoryError::Newer {
                path: shown,
                found,
                known: crate::SCHEMA_VERSION,
            });
        }
        Ok(Store { db, shown })
    }

    /// The database's location as messages show it (without a password).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The schema version the database is at.
    pub fn schema_version(&self) -> Result<i64, HistoryError> {
        self.db.schema_version().map_err(|e| self.error(e))
    }

    /// Stores `record` in one transaction, so a run is stored whole or not at all, and
    /// returns its id.
    pub fn insert(&mut self, record: &RunRecord) -> Result<i64, HistoryError> {
        let json = serde_json::to_string(record).map_err(|source| HistoryError::Record {
            path: self.shown.clone(),
            id: 0,
            source,
        })?;
        let row = Row {
            name: &record.name,
            started_at: &record.started_at,
            belier_version: &record.belier_version,
            host: record.host.as_deref(),
            requests: record.requests as i64,
            errors: record.errors as i64,
            p99_us: record.latency.p99_us as i64,
            record: &json,
            results_path: record.results_path.as_deref(),
            labels: record
                .labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
        };
        self.db.insert(&row).map_err(|e| self.error(e))
    }

    /// The run stored under `id`, if there is one.
    pub fn get(&self, id: i64) -> Result<Option<StoredRun>, HistoryError> {
        let json = self.db.record(id).map_err(|e| self.error(e))?;
        json.map(|j| self.parse(id, &j)).transpose()
    }

    /// The runs of `name` (every run when `None`), oldest first by start, then by id.
    pub fn runs(&self, name: Option<&str>) -> Result<Vec<StoredRun>, HistoryError> {
        let records = self.db.records(name).map_err(|e| self.error(e))?;
        records
            .iter()
            .map(|(id, json)| self.parse(*id, json))
            .collect()
    }

    /// Makes the run `id` the baseline of its name, and returns the name; `None` when there
    /// is no such run.
    pub fn set_baseline(&mut self, id: i64) -> Result<Option<String>, HistoryError> {
        let Some(run) = self.get(id)? else {
            return Ok(None);
        };
        self.db
            .set_baseline(&run.record.name, id)
            .map_err(|e| self.error(e))?;
        Ok(Some(run.record.name))
    }

    /// The baseline run of `name`, if one was set.
    pub fn baseline(&self, name: &str) -> Result<Option<StoredRun>, HistoryError> {
        match self.db.baseline(name).map_err(|e| self.error(e))? {
            Some(id) => self.get(id),
            None => Ok(None),
        }
    }

    /// The database's own check of its structure (SQLite's `integrity_check`; on PostgreSQL,
    /// that every record belongs to its row): `ok`, or what is wrong.
    pub fn integrity_check(&self) -> Result<String, HistoryError> {
        self.db.integrity_check().map_err(|e| self.error(e))
    }

    fn parse(&self, id: i64, json: &str) -> Result<StoredRun, HistoryError> {
        let record = serde_json::from_str(json).map_err(|source| HistoryError::Record {
            path: self.shown.clone(),
            id,
            source,
        })?;
        Ok(StoredRun { id, record })
    }

    fn error(&self, source: DbError) -> HistoryError {
        HistoryError::Database {
            path: self.shown.clone(),
            source,
        }
    }
}
