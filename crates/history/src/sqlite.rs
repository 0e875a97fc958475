//! The history in an SQLite file: WAL mode and a busy timeout, so that many processes may
//! write at once.

use std::cell::RefCell;
use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::backend::{Backend, DbError, Row};
use crate::schema::SQLITE;

/// How long a writer waits for another's lock before it gives up. Writing a run takes
/// milliseconds; the wait covers many writers finishing at once (shards, parallel CI jobs).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// An open SQLite history.
pub(crate) struct Sqlite {
    // Borrowed mutably only for a transaction, within one call.
    conn: RefCell<Connection>,
}

impl Sqlite {
    /// Opens (creating it, and its directory, if need be) the database at `path` and brings
    /// its schema up to `version`; returns it and the version it was found at.
    pub(crate) fn open(path: &Path, version: usize) -> Result<(Sqlite, i64), DbError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // A directory that cannot be made shows as SQLite's "unable to open" below.
            let _ = std::fs::create_dir_all(dir);
        }
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // WAL: readers do not block the writer, and a writer's commit is one append.
        while_busy(|| conn.pragma_update(None, "journal_mode", "WAL"))?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let found = migrate(&mut conn, version)?;
        Ok((
            Sqlite {
                conn: RefCell::new(conn),
            },
            found,
        ))
    }
}

/// Runs `statement` again while SQLite answers that the database is locked, for at most
/// [`BUSY_TIMEOUT`]. Switching a new database to WAL needs its exclusive lock, and when
/// several connections open it at once SQLite answers some of them `SQLITE_BUSY` at once,
/// without waiting through the busy timeout (waiting could deadlock them): the switch is
/// tried again until the first connection has made it.
fn while_busy(mut statement: impl FnMut() -> rusqlite::Result<()>) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match statement() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// Brings the database up to `version`, in one transaction, and returns the version it was
/// at. `BEGIN IMMEDIATE` takes the write lock first, so two processes opening a new database
/// at once do not both migrate it: the second waits, then finds it done.
fn migrate(conn: &mut Connection, version: usize) -> rusqlite::Result<i64> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);")?;
    let found: Option<i64> =
        tx.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))?;
    let found = found.unwrap_or(0);
    for (i, statements) in SQLITE
        .iter()
        .enumerate()
        .take(version)
        .skip(found.max(0) as usize)
    {
        tx.execute_batch(statements)?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES (?1)",
            [i as i64 + 1],
        )?;
    }
    tx.commit()?;
    Ok(found)
}

impl Backend for Sqlite {
    fn schema_version(&self) -> Result<i64, DbError> {
        Ok(self
            .conn
            .borrow()
            .query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))?)
    }

    fn insert(&self, row: &Row<'_>) -> Result<i64, DbError> {
        let mut conn = self.conn.borrow_mut();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO runs (name, started_at, belier_version, host, requests, errors, p99_us,
                               record, results_path)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                row.name,
                row.started_at,
                row.belier_version,
                row.host,
                row.requests,
                row.errors,
                row.p99_us,
                row.record,
                row.results_path,
            ],
        )?;
        let id = tx.last_insert_rowid();
        for (key, value) in &row.labels {
            tx.execute(
                "INSERT INTO labels (run_id, key, value) VALUES (?1, ?2, ?3)",
                params![id, key, value],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    fn record(&self, id: i64) -> Result<Option<String>, DbError> {
        Ok(self
            .conn
            .borrow()
            .query_row("SELECT record FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()?)
    }

    fn records(&self, name: Option<&str>) -> Result<Vec<(i64, String)>, DbError> {
        let conn = self.conn.borrow();
        let mut query = conn.prepare(
            "SELECT id, record FROM runs WHERE ?1 IS NULL OR name = ?1
             ORDER BY started_at, id",
        )?;
        let rows = query.query_map([name], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn set_baseline(&self, name: &str, id: i64) -> Result<(), DbError> {
        self.conn.borrow().execute(
            "INSERT INTO baselines (name, run_id) VALUES (?1, ?2)
             ON CONFLICT(name) DO UPDATE SET run_id = excluded.run_id",
            params![name, id],
        )?;
        Ok(())
    }

    fn baseline(&self, name: &str) -> Result<Option<i64>, DbError> {
        Ok(self
            .conn
            .borrow()
            .query_row(
                "SELECT run_id FROM baselines WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()?)
    }

    fn integrity_check(&self) -> Result<String, DbError> {
        Ok(self
            .conn
            .borrow()
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}
