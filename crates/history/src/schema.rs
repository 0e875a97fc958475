//! The database's schema, version by version: each migration takes a database from the
//! version before it to its own, and `schema_version` says which one a database is at.

use rusqlite::{Connection, Transaction};

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Each version's statements, in order: `MIGRATIONS[0]` makes version 1 from an empty
/// database, `MIGRATIONS[v - 1]` makes version `v` from version `v - 1`. Never edit one that
/// was released: add the next.
pub(crate) const MIGRATIONS: &[&str] = &[
    // Version 1: one row per run, its whole record as JSON and the figures runs are listed by.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        started_at TEXT NOT NULL,
        belier_version TEXT NOT NULL,
        host TEXT,
        requests INTEGER NOT NULL,
        errors INTEGER NOT NULL,
        p99_us INTEGER NOT NULL,
        record TEXT NOT NULL
    );",
    // Version 2: labels in a table of their own (to select runs by label), the results file's
    // path, and an index for a name's runs in time order.
    "CREATE TABLE labels (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    ALTER TABLE runs ADD COLUMN results_path TEXT;
    CREATE INDEX runs_by_name ON runs(name, started_at);",
    // Version 3: each name's baseline run (what `check --against baseline` compares to).
    "CREATE TABLE baselines (
        name TEXT PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE
    );",
];

/// Brings the database up to [`SCHEMA_VERSION`], one transaction per version, and returns the
/// version it was at. `BEGIN IMMEDIATE` takes the write lock first, so two processes opening a
/// new database at once do not both migrate it: the second waits, then finds it done.
pub(crate) fn migrate(conn: &mut Connection) -> rusqlite::Result<i64> {
    let tx = Transaction::new(conn, rusqlite::TransactionBehavior::Immediate)?;
    tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);")?;
    let found: Option<i64> =
        tx.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))?;
    let found = found.unwrap_or(0);
    for (i, statements) in MIGRATIONS.iter().enumerate().skip(found.max(0) as usize) {
        tx.execute_batch(statements)?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES (?1)",
            [i as i64 + 1],
        )?;
    }
    tx.commit()?;
    Ok(found)
}
