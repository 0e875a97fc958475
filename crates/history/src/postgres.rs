//! The history in a PostgreSQL database, a team's shared store: every writer a client of the
//! server, which orders them. Records are kept as `jsonb`, so that dashboards (the Grafana
//! dashboard in contrib/grafana) select their figures in SQL.

use std::cell::RefCell;

use postgres::config::SslMode;
use postgres::{Client, Config, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::backend::{Backend, DbError, Row};
use crate::location::{split_tls, PgTls};
use crate::schema::POSTGRES;

/// The key of the advisory lock held while the schema is migrated ("belier" in ASCII), so
/// that two processes opening a new database at once do not both migrate it.
const MIGRATION_LOCK: i64 = 0x62_65_6c_69_65_72;

/// An open PostgreSQL history.
pub(crate) struct Postgres {
    // Borrowed mutably within one call: the client's every query needs it.
    client: RefCell<Client>,
}

impl Postgres {
    /// Connects to the database `url` names, encrypted as its `sslmode` says with `tls` (a
    /// client configuration that verifies as that mode asks; without one, only `disable` and
    /// `prefer` connect, in the clear), and brings its schema up to `version`; returns it and
    /// the version it was found at.
    pub(crate) fn open(
        url: &str,
        tls: Option<rustls::ClientConfig>,
        version: usize,
    ) -> Result<(Postgres, i64), DbError> {
        let mut client = connect(url, tls)?;
        // Quiet the server's notices ("relation already exists, skipping") on a shared store.
        client.batch_execute("SET client_min_messages = warning")?;
        let found = migrate(&mut client, version)?;
        Ok((
            Postgres {
                client: RefCell::new(client),
            },
            found,
        ))
    }
}

/// The client of `url`, through TLS when its `sslmode` asks.
fn connect(url: &str, tls: Option<rustls::ClientConfig>) -> Result<Client, DbError> {
    let (url, mode) = split_tls(url)?;
    let mut config: Config = url.parse()?;
    let ssl_mode = match mode {
        PgTls::Disable => SslMode::Disable,
        PgTls::Prefer => SslMode::Prefer,
        PgTls::Require | PgTls::Verify { .. } => SslMode::Require,
    };
    config.ssl_mode(ssl_mode);
    Ok(match (ssl_mode, tls) {
        (SslMode::Disable, _) | (SslMode::Prefer, None) => config.connect(NoTls)?,
        (_, Some(tls)) => config.connect(MakeRustlsConnect::new(tls))?,
        (_, None) => return Err("this sslmode needs a TLS client configuration".into()),
    })
}

/// Brings the database up to `version` in one transaction holding [`MIGRATION_LOCK`]; returns
/// the version it was at.
fn migrate(client: &mut Client, version: usize) -> Result<i64, postgres::Error> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL);")?;
    let found: Option<i64> = tx
        .query_one("SELECT MAX(version) FROM schema_version", &[])?
        .get(0);
    let found = found.unwrap_or(0);
    for (i, statements) in POSTGRES
        .iter()
        .enumerate()
        .take(version)
        .skip(found.max(0) as usize)
    {
        tx.batch_execute(statements)?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES ($1)",
            &[&(i as i64 + 1)],
        )?;
    }
    tx.commit()?;
    Ok(found)
}

impl Backend for Postgres {
    fn schema_version(&self) -> Result<i64, DbError> {
        let row = self
            .client
            .borrow_mut()
            .query_one("SELECT MAX(version) FROM schema_version", &[])?;
        Ok(row.get::<_, Option<i64>>(0).unwrap_or(0))
    }

    fn insert(&self, row: &Row<'_>) -> Result<i64, DbError> {
        let mut client = self.client.borrow_mut();
        let mut tx = client.transaction()?;
        // A record without a start time (never written by belier, but imported files may
        // lack one) is kept as started when it was stored.
        let id: i64 = tx
            .query_one(
                "INSERT INTO runs (name, started_at, belier_version, host, requests, errors,
                                   p99_us, record, results_path)
                 VALUES ($1, COALESCE(CAST(NULLIF($2::text, '') AS timestamptz), now()), $3,
                         $4, $5, $6, $7, CAST($8::text AS jsonb), $9)
                 RETURNING id",
                &[
                    &row.name,
                    &row.started_at,
                    &row.belier_version,
                    &row.host,
                    &row.requests,
                    &row.errors,
                    &row.p99_us,
                    &row.record,
                    &row.results_path,
                ],
            )?
            .get(0);
        for (key, value) in &row.labels {
            tx.execute(
                "INSERT INTO labels (run_id, key, value) VALUES ($1, $2, $3)",
                &[&id, key, value],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    fn record(&self, id: i64) -> Result<Option<String>, DbError> {
        let row = self
            .client
            .borrow_mut()
            .query_opt("SELECT record::text FROM runs WHERE id = $1", &[&id])?;
        Ok(row.map(|r| r.get(0)))
    }

    fn records(&self, name: Option<&str>) -> Result<Vec<(i64, String)>, DbError> {
        let rows = self.client.borrow_mut().query(
            "SELECT id, record::text FROM runs WHERE $1::text IS NULL OR name = $1
             ORDER BY started_at, id",
            &[&name],
        )?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn set_baseline(&self, name: &str, id: i64) -> Result<(), DbError> {
        self.client.borrow_mut().execute(
            "INSERT INTO baselines (name, run_id) VALUES ($1, $2)
             ON CONFLICT (name) DO UPDATE SET run_id = excluded.run_id",
            &[&name, &id],
        )?;
        Ok(())
    }

    fn baseline(&self, name: &str) -> Result<Option<i64>, DbError> {
        let row = self
            .client
            .borrow_mut()
            .query_opt("SELECT run_id FROM baselines WHERE name = $1", &[&name])?;
        Ok(row.map(|r| r.get(0)))
    }

    /// What the server's constraints cannot see: runs whose record names another run, and
    /// records that are not a run's (no name or no series).
    fn integrity_check(&self) -> Result<String, DbError> {
        let row = self.client.borrow_mut().query_one(
            "SELECT
                 count(*) FILTER (WHERE record->>'name' IS DISTINCT FROM name),
                 count(*) FILTER (WHERE jsonb_typeof(record->'intervals') IS DISTINCT FROM 'object')
             FROM runs",
            &[],
        )?;
        let (misnamed, unseried): (i64, i64) = (row.get(0), row.get(1));
        Ok(match (misnamed, unseried) {
            (0, 0) => "ok".into(),
            _ => format!(
                "{misnamed} runs whose record has another name, {unseried} records without a series"
            ),
        })
    }
}
