//! What a history database does, whichever it is: the few statements the store needs, each
//! database's module writing them in its own SQL.

/// An error of the database, as its client library gave it.
pub(crate) type DbError = Box<dyn std::error::Error + Send + Sync>;

/// A run's row as written: the columns runs are listed and selected by, and the whole record
/// as JSON.
pub(crate) struct Row<'a> {
    pub name: &'a str,
    pub started_at: &'a str,
    pub belier_version: &'a str,
    pub host: Option<&'a str>,
    pub requests: i64,
    pub errors: i64,
    pub p99_us: i64,
    pub record: &'a str,
    pub results_path: Option<&'a str>,
    pub labels: Vec<(&'a str, &'a str)>,
}

/// One database holding a history, its schema brought up to date when it was opened.
pub(crate) trait Backend {
    /// The schema version the database is at.
    fn schema_version(&self) -> Result<i64, DbError>;
    /// Writes `row` and its labels in one transaction; returns the run's id.
    fn insert(&self, row: &Row<'_>) -> Result<i64, DbError>;
    /// The record (JSON) of the run `id`.
    fn record(&self, id: i64) -> Result<Option<String>, DbError>;
    /// The ids and records of `name`'s runs (every run for `None`), oldest first by start,
    /// then by id.
    fn records(&self, name: Option<&str>) -> Result<Vec<(i64, String)>, DbError>;
    /// Makes `id` the baseline of `name`.
    fn set_baseline(&self, name: &str, id: i64) -> Result<(), DbError>;
    /// The baseline run's id of `name`.
    fn baseline(&self, name: &str) -> Result<Option<i64>, DbError>;
    /// The database's check of itself: `ok`, or what is wrong.
    fn integrity_check(&self) -> Result<String, DbError>;
}
