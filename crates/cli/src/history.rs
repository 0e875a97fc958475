//! Keeping finished runs in the run history (`--history`, `--label`, `BELIER_HISTORY`): which
//! database, under which name and labels, and the run read back from its results file at the
//! end, so that keeping it costs nothing while the run goes.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use anyhow::Context;
use belier_history::{CapacitySearch, Location, PgTls, RunRecord, Store};
use belier_results::{read_run, Reader, RunInfo};

use crate::args::KeepArgs;
use crate::settings::InputError;

/// The variable naming the history database; set, it keeps every run there.
pub const DB_VARIABLE: &str = "BELIER_HISTORY";

/// Where and how a run is kept, validated before it starts.
#[derive(Debug, Clone)]
pub struct Keep {
    /// The history database.
    pub db: Location,
    /// Labels given with `--label`, before the git ones are added.
    pub labels: BTreeMap<String, String>,
    /// The run's name as given with `--name`.
    pub name: Option<String>,
}

/// The database named by `given` (`--history=DB`, `--db DB`; empty for none: a file, or a
/// `postgres://` URL), else by [`DB_VARIABLE`], else the user's data directory's file.
pub fn db_path(given: Option<&str>) -> Result<Location, InputError> {
    let from_env = std::env::var(DB_VARIABLE).ok();
    given
        .filter(|g| !g.is_empty())
        .or(from_env.as_deref().filter(|v| !v.is_empty()))
        .map(Location::parse)
        .or_else(|| belier_history::default_path().map(Location::File))
        .ok_or_else(|| {
            InputError::new(
                "--history <DB>",
                "",
                "has no default here: neither BELIER_HISTORY, XDG_DATA_HOME nor HOME is set",
            )
        })
}

/// What `args` ask: `None` when the run is not kept (no `--history`, no
/// [`DB_VARIABLE`]). `name` is `--name`, if given.
pub fn keep(args: &KeepArgs, name: Option<&str>) -> Result<Option<Keep>, InputError> {
    let by_env = std::env::var(DB_VARIABLE).is_ok_and(|v| !v.is_empty());
    if args.history.is_none() && !by_env {
        if let Some(label) = args.labels.first() {
            return Err(InputError::new(
                "--label <KEY=VALUE>",
                label,
                "labels a run kept in the history: give --history too",
            ));
        }
        return Ok(None);
    }
    let db = db_path(args.history.as_deref())?;
    // A URL's TLS settings are read now, so that a wrong one stops the run before it starts.
    db.postgres_tls()
        .map_err(|why| InputError::new("--history <DB>", db.shown(), why))?;
    Ok(Some(Keep {
        db,
        labels: labels(&args.labels, "--label <KEY=VALUE>")?,
        name: name.map(str::to_string),
    }))
}

/// `KEY=VALUE` pairs, each key non-empty and every part printable.
pub fn labels(
    given: &[String],
    flag: &'static str,
) -> Result<BTreeMap<String, String>, InputError> {
    let mut labels = BTreeMap::new();
    for raw in given {
        let (key, value) = raw
            .split_once('=')
            .filter(|(k, _)| !k.trim().is_empty())
            .ok_or_else(|| InputError::new(flag, raw, "expected KEY=VALUE, e.g. env=staging"))?;
        if raw.chars().any(char::is_control) {
            return Err(InputError::new(flag, raw, "must be printable"));
        }
        labels.insert(key.trim().to_string(), value.trim().to_string());
    }
    Ok(labels)
}

/// A new results file beside the database, for a run kept without `--save`: `runs/` next to
/// it (for a PostgreSQL database, in the user's data directory), named by the time and the
/// process.
pub fn results_path(keep: &Keep) -> Result<PathBuf, InputError> {
    let beside =
        keep.db.directory().map(Path::to_path_buf).or_else(|| {
            belier_history::default_path().and_then(|p| p.parent().map(Path::to_path_buf))
        });
    let dir = beside
        .ok_or_else(|| {
            InputError::new(
                "--history <DB>",
                keep.db.shown(),
                "has nowhere to keep the run's results file: give --save FILE",
            )
        })?
        .join("runs");
    std::fs::create_dir_all(&dir).map_err(|e| {
        InputError::new(
            "--history <DB>",
            dir.display(),
            format!("cannot make it: {e}"),
        )
    })?;
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let stamp = now.replace(':', "-");
    Ok(dir.join(format!("{stamp}-{}.jsonl", std::process::id())))
}

/// Reads the finished run back from `results` and keeps it; returns its id.
pub fn keep_run(keep: &Keep, results: &Path) -> anyhow::Result<i64> {
    let record = read_record(results, keep.name.as_deref(), keep.labels.clone())?;
    keep_record(keep, record)
}

/// Keeps a finished capacity search (the history keeps its outcome, not a results file);
/// returns its id. Its name is `--name`, else `capacity` and what it searched.
pub fn keep_capacity(keep: &Keep, search: &CapacitySearch<'_>) -> anyhow::Result<i64> {
    let name = keep
        .name
        .clone()
        .unwrap_or_else(|| format!("capacity {}", search.outcome.url));
    let record = RunRecord::from_capacity(search, &name, keep.labels.clone());
    keep_record(keep, record)
}

/// Adds the git labels `record` was not given, and stores it.
fn keep_record(keep: &Keep, mut record: RunRecord) -> anyhow::Result<i64> {
    for (key, value) in git_labels() {
        record.labels.entry(key).or_insert(value);
    }
    let mut store = open_store(&keep.db)?;
    Ok(store.insert(&record)?)
}

/// Opens the history at `db`; a PostgreSQL connection encrypted as its URL's `sslmode` says:
/// `prefer` and `require` without verifying the server's certificate (as libpq does),
/// `verify-ca` and `verify-full` against `sslrootcert` (else the system's roots) and for the
/// host's name, with the TLS client the runs use.
pub fn open_store(db: &Location) -> anyhow::Result<Store> {
    let bad = |why: String| InputError::new("--history/--db <DB>", db.shown(), why);
    let options = match db.postgres_tls().map_err(bad)? {
        None | Some(PgTls::Disable) => None,
        Some(PgTls::Prefer | PgTls::Require) => Some(belier_engine::TlsOptions {
            insecure: true,
            ..belier_engine::TlsOptions::default()
        }),
        Some(PgTls::Verify { root }) => {
            let ca_pem = match root {
                Some(path) => Some(
                    std::fs::read(&path)
                        .map_err(|e| bad(format!("sslrootcert {}: {e}", path.display())))?,
                ),
                None => None,
            };
            Some(belier_engine::TlsOptions {
                ca_pem,
                ..belier_engine::TlsOptions::default()
            })
        }
    };
    let tls = options
        .map(|o| o.client_config())
        .transpose()
        .map_err(|e| bad(e.to_string()))?;
    Ok(Store::open_tls(db, tls)?)
}

/// The record of the run in `files` (the shards of one run), under `name` or the name
/// [`run_name`] gives it; its results path is the first file's, made absolute.
pub fn read_record(
    results: &Path,
    name: Option<&str>,
    labels: BTreeMap<String, String>,
) -> anyhow::Result<RunRecord> {
    let file = std::fs::File::open(results)
        .with_context(|| format!("cannot open the results file {}", results.display()))?;
    let source = results.display().to_string();
    let reader = Reader::open(Box::new(BufReader::new(file)), &source)
        .map_err(|e| InputError::in_file(e.to_string()))?;
    let run = read_run(vec![reader], None, None, false)
        .map_err(|e| InputError::in_file(e.to_string()))?;
    let name = name.map_or_else(|| run_name(&run.header.run), str::to_string);
    let mut record = RunRecord::from_run(&run, &name, labels);
    let absolute = std::path::absolute(results).unwrap_or_else(|_| results.to_path_buf());
    record.results_path = Some(absolute.display().to_string());
    Ok(record)
}

/// The name a run is kept under without `--name`: its plan file's name (`checkout` for
/// `plans/checkout.yaml`), else its request's method, host and path (`GET api.test/users`).
pub fn run_name(info: &RunInfo) -> String {
    if let Some(stem) = info.plan.as_deref().and_then(|p| Path::new(p).file_stem()) {
        return stem.to_string_lossy().into_owned();
    }
    match url::Url::parse(&info.url) {
        Ok(u) => format!(
            "{} {}{}{}",
            info.method,
            u.host_str().unwrap_or(""),
            u.port().map(|p| format!(":{p}")).unwrap_or_default(),
            u.path()
        ),
        Err(_) => format!("{} {}", info.method, info.url),
    }
}

/// `commit` and `branch` of the git repository the working directory is in; none outside one
/// (or without git).
fn git_labels() -> Vec<(String, String)> {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())?;
        let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (!text.is_empty()).then_some(text)
    };
    [
        ("commit", &["rev-parse", "HEAD"][..]),
        ("branch", &["rev-parse", "--abbrev-ref", "HEAD"]),
    ]
    .into_iter()
    .filter_map(|(key, args)| git(args).map(|v| (key.to_string(), v)))
    .collect()
}
