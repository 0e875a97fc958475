//! The SQLite store: opening (and migrating) a database, writing a run, reading runs back.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension};

use crate::record::RunRecord;
use crate::schema::migrate;

/// How long a writer waits for another's lock before it gives up. Writing a run takes
/// milliseconds; the wait covers many writers finishing at once (shards, parallel CI jobs).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the history could not be opened, written or read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The database refused or failed.
    #[error("history database {path}: {source}")]
    Database {
        /// The database's path.
        path: String,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// A stored record could not be read back.
    #[error("history database {path}: run {id}: {source}")]
    Record {
        /// The database's path.
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
        /// The database's path.
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
    conn: Connection,
    path: String,
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
    /// Opens the database at `path`, creating it (and its directory) if need be, and migrates
    /// it to this build's schema.
    pub fn open(path: &Path) -> Result<Store, HistoryError> {
        let shown = path.display().to_string();
        let db = |source| HistoryError::Database {
            path: shown.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // A directory that cannot be made shows as SQLite's "unable to open" below.
            let _ = std::fs::create_dir_all(dir);
        }
        let mut conn = Connection::open(path).map_err(db)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
        // WAL: readers do not block the writer, and a writer's commit is one append.
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(db)?;
        let found = migrate(&mut conn).map_err(db)?;
        if found > crate::SCHEMA_VERSION {
            return Err(HistoryError::Newer {
                path: shown,
                found,
                known: crate::SCHEMA_VERSION,
            });
        }
        Ok(Store { conn, path: shown })
    }

    /// The schema version the database is at.
    pub fn schema_version(&self) -> Result<i64, HistoryError> {
        self.conn
            .query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))
            .map_err(|source| self.error(source))
    }

    /// Stores `record` in one transaction, so a run is stored whole or not at all, and
    /// returns its id.
    pub fn insert(&mut self, record: &RunRecord) -> Result<i64, HistoryError> {
        let json = serde_json::to_string(record).map_err(|source| HistoryError::Record {
            path: self.path.clone(),
            id: 0,
            source,
        })?;
        let path = self.path.clone();
        let db = |source| HistoryError::Database {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(db)?;
        tx.execute(
            "INSERT INTO runs (name, started_at, belier_version, host, requests, errors, p99_us,
                               record, results_path)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                record.name,
                record.started_at,
                record.belier_version,
                record.host,
                record.requests as i64,
                record.errors as i64,
                record.latency.p99_us as i64,
                json,
                record.results_path,
            ],
        )
        .map_err(db)?;
        let id = tx.last_insert_rowid();
        for (key, value) in &record.labels {
            tx.execute(
                "INSERT INTO labels (run_id, key, value) VALUES (?1, ?2, ?3)",
                params![id, key, value],
            )
            .map_err(db)?;
        }
        tx.commit().map_err(db)?;
        Ok(id)
    }

    /// The run stored under `id`, if there is one.
    pub fn get(&self, id: i64) -> Result<Option<StoredRun>, HistoryError> {
        let json: Option<String> = self
            .conn
            .query_row("SELECT record FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|source| self.error(source))?;
        json.map(|j| self.parse(id, &j)).transpose()
    }

    /// The runs of `name` (every run when `None`), oldest first by start, then by id.
    pub fn runs(&self, name: Option<&str>) -> Result<Vec<StoredRun>, HistoryError> {
        let mut query = self
            .conn
            .prepare(
                "SELECT id, record FROM runs WHERE ?1 IS NULL OR name = ?1
                 ORDER BY started_at, id",
            )
            .map_err(|source| self.error(source))?;
        let rows = query
            .query_map([name], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|source| self.error(source))?;
        let mut runs = Vec::new();
        for row in rows {
            let (id, json) = row.map_err(|source| self.error(source))?;
            runs.push(self.parse(id, &json)?);
        }
        Ok(runs)
    }

    /// Makes the run `id` the baseline of its name, and returns the name; `None` when there
    /// is no such run.
    pub fn set_baseline(&mut self, id: i64) -> Result<Option<String>, HistoryError> {
        let Some(run) = self.get(id)? else {
            return Ok(None);
        };
        self.conn
            .execute(
                "INSERT INTO baselines (name, run_id) VALUES (?1, ?2)
                 ON CONFLICT(name) DO UPDATE SET run_id = excluded.run_id",
                params![run.record.name, id],
            )
            .map_err(|source| self.error(source))?;
        Ok(Some(run.record.name))
    }

    /// The baseline run of `name`, if one was set.
    pub fn baseline(&self, name: &str) -> Result<Option<StoredRun>, HistoryError> {
        let id: Option<i64> = self
            .conn
            .query_row(
                "SELECT run_id FROM baselines WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()
            .map_err(|source| self.error(source))?;
        match id {
            Some(id) => self.get(id),
            None => Ok(None),
        }
    }

    /// SQLite's own check of the database's structure: `ok`, or what is wrong.
    pub fn integrity_check(&self) -> Result<String, HistoryError> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|source| self.error(source))
    }

    fn parse(&self, id: i64, json: &str) -> Result<StoredRun, HistoryError> {
        let record = serde_json::from_str(json).map_err(|source| HistoryError::Record {
            path: self.path.clone(),
            id,
            source,
        })?;
        Ok(StoredRun { id, record })
    }

    fn error(&self, source: rusqlite::Error) -> HistoryError {
        HistoryError::Database {
            path: self.path.clone(),
            source,
        }
    }
}
