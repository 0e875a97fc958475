use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use belier_results::{
    fixtures, read_run, End, Header, Reader, ResultsWriter, ThresholdOutcome, FORMAT, VERSION,
};
use belier_stats::{Gauges, Outcome, Recorder, Sample, Settled};
use rusqlite::Connection;

use super::*;
use crate::schema::SQLITE as MIGRATIONS;

/// A fresh directory for one test's database, removed by the test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("belier-history-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A run of `intervals` one-second intervals, each with a request of 1 ms, 2 ms … 10 ms and
/// one error, written to a results file and read back as `belier report` reads it.
fn recorded_run(intervals: u64) -> belier_results::Run {
    let header = Header {
        format: FORMAT.into(),
        version: VERSION,
        name: "t".into(),
        interval_s: 1.0,
        run: fixtures::info(),
    };
    let mut bytes = Vec::new();
    let mut w = ResultsWriter::new(&mut bytes, &header).unwrap();
    for index in 0..intervals {
        let mut recorder = Recorder::new();
        for ms in 1..=10 {
            let status = Outcome::Response { status: 200 };
            recorder.record(&Sample::simulated(Instant::now(), 0, ms * 1_000, status));
        }
        recorder.record_errors(belier_stats::ErrorKind::Timeout, 1);
        let gauges = Gauges {
            in_flight: 0,
            cpu: 0.1,
            connections_peak: 1,
            held: 0,
        };
        let offset = Duration::from_secs(index);
        w.interval(&Settled {
            index,
            offset,
            recorder,
            gauges,
        })
        .unwrap();
    }
    let end = End {
        elapsed_s: intervals as f64,
        thresholds: vec![ThresholdOutcome {
            expression: "p99 < 20ms".into(),
            passed: true,
            actual: "10.0 ms".into(),
            stopped_run: None,
        }],
        ..End::default()
    };
    w.end(&end).unwrap();
    let reader = Reader::open(Box::new(std::io::Cursor::new(bytes)), "mem").unwrap();
    read_run(vec![reader], None, None, false).unwrap()
}

fn record(name: &str) -> RunRecord {
    let labels = BTreeMap::from([("branch".to_string(), "main".to_string())]);
    let mut r = RunRecord::from_run(&recorded_run(3), name, labels);
    r.results_path = Some("run.jsonl".into());
    r
}

#[test]
fn a_record_holds_the_runs_figures() {
    let r = record("GET 127.0.0.1/");
    assert_eq!((r.requests, r.succeeded, r.errors), (33, 30, 3));
    assert_eq!(r.intervals.len(), 3);
    assert_eq!(r.intervals.requests, vec![11, 11, 11]);
    assert_eq!(r.intervals.errors, vec![1, 1, 1]);
    assert_eq!(r.intervals.succeeded, vec![10, 10, 10]);
    // Per interval: 11 requests a second, 1 in 11 an error.
    assert_eq!(r.interval_values("rate").unwrap(), vec![11.0; 3]);
    assert_eq!(r.interval_values("throughput").unwrap(), vec![10.0; 3]);
    let errors = 100.0 / 11.0;
    assert_eq!(r.interval_values("errors").unwrap(), vec![errors; 3]);
    assert_eq!(r.figure("errors"), Some(errors));
    assert_eq!(r.figure("rate"), Some(11.0));
    let p99 = r.interval_values("p99").unwrap();
    assert!(p99.iter().all(|v| (9.99..=10.01).contains(v)), "{p99:?}");
    assert_eq!(r.figure("p99.9"), None);
    // HdrHistogram keeps 3 significant digits: 10 ms reads back within 0.1 %.
    assert!(
        (9_990..=10_010).contains(&r.latency.p99_us),
        "{:?}",
        r.latency
    );
    assert!((9_990..=10_010).contains(&r.intervals.p99_us[0]));
    assert!(
        (4_990..=5_010).contains(&r.latency.p50_us),
        "{:?}",
        r.latency
    );
    assert_eq!(r.thresholds.len(), 1);
    assert_eq!(r.belier_version, fixtures::info().belier_version);
    assert_eq!(r.settings["url"], serde_json::json!(fixtures::info().url));
}

#[test]
fn a_run_stored_reads_back_whole() {
    let dir = temp_dir("round-trip");
    let path = dir.join("nested/history.db");
    let mut store = Store::open(&path).unwrap();
    let stored = record("a");
    let id = store.insert(&stored).unwrap();
    store.insert(&record("b")).unwrap();
    assert_eq!(store.get(id).unwrap().unwrap().record, stored);
    assert_eq!(store.get(id + 100).unwrap(), None);
    let a = store.runs(Some("a")).unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].record, stored);
    assert_eq!(store.runs(None).unwrap().len(), 2);
    drop(store);
    // Reopened: no migration runs twice, and WAL mode was kept.
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let conn = Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let versions: i64 = conn
        .query_row("SELECT COUNT(*) FROM schema_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(versions, SCHEMA_VERSION);
    let label: String = conn
        .query_row(
            "SELECT value FROM labels WHERE run_id = ?1 AND key = 'branch'",
            [id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(label, "main");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_version_1_database_opens_and_migrates() {
    let dir = temp_dir("migrate");
    let path = dir.join("history.db");
    let old = record("old");
    {
        // Written as version 1 wrote it: its DDL, its one version row, a run without labels'
        // table or results path.
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE schema_version (version INTEGER NOT NULL);")
            .unwrap();
        conn.execute_batch(MIGRATIONS[0]).unwrap();
        conn.execute("INSERT INTO schema_version (version) VALUES (1)", [])
            .unwrap();
        conn.execute(
            "INSERT INTO runs (name, started_at, belier_version, host, requests, errors,
                               p99_us, record) VALUES ('old', ?1, 'v', NULL, 33, 3, 10000, ?2)",
            rusqlite::params![old.started_at, serde_json::to_string(&old).unwrap()],
        )
        .unwrap();
    }
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(SCHEMA_VERSION, 3);
    let runs = store.runs(Some("old")).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].record, old);
    // The new version's table and column are there and take a run.
    let id = store.insert(&record("new")).unwrap();
    assert_eq!(
        store
            .get(id)
            .unwrap()
            .unwrap()
            .record
            .results_path
            .as_deref(),
        Some("run.jsonl")
    );
    // And so are version 3's: the old run can be a baseline.
    assert_eq!(
        store.set_baseline(runs[0].id).unwrap().as_deref(),
        Some("old")
    );
    assert_eq!(store.baseline("old").unwrap().unwrap().id, runs[0].id);
    assert_eq!(store.integrity_check().unwrap(), "ok");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_baseline_is_set_replaced_and_read_per_name() {
    let dir = temp_dir("baseline");
    let mut store = Store::open(&dir.join("history.db")).unwrap();
    let (a1, a2) = (
        store.insert(&record("a")).unwrap(),
        store.insert(&record("a")).unwrap(),
    );
    let b = store.insert(&record("b")).unwrap();
    assert_eq!(store.baseline("a").unwrap(), None);
    store.set_baseline(a1).unwrap();
    store.set_baseline(b).unwrap();
    store.set_baseline(a2).unwrap();
    assert_eq!(store.baseline("a").unwrap().unwrap().id, a2);
    assert_eq!(store.baseline("b").unwrap().unwrap().id, b);
    assert_eq!(store.set_baseline(999).unwrap(), None);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_database_of_a_newer_schema_is_refused_by_name() {
    let dir = temp_dir("newer");
    let path = dir.join("history.db");
    drop(Store::open(&path).unwrap());
    let conn = Connection::open(&path).unwrap();
    conn.execute("INSERT INTO schema_version (version) VALUES (99)", [])
        .unwrap();
    drop(conn);
    let err = Store::open(&path).err().unwrap().to_string();
    assert!(
        err.contains("history.db has schema version 99, newer than this belier's 3"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn many_writers_at_once_store_every_run_whole() {
    let dir = temp_dir("writers");
    let path = dir.join("history.db");
    const WRITERS: usize = 6;
    const RUNS_EACH: usize = 15;
    let rec = record("shared");
    // Each writer opens the new database itself, as separate processes do: the first
    // migrates it, the others wait on its lock and find it done.
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (path, rec) = (path.clone(), rec.clone());
            std::thread::spawn(move || {
                let mut store = Store::open(&path).unwrap();
                for i in 0..RUNS_EACH {
                    let mut r = rec.clone();
                    r.labels.insert("writer".into(), format!("{w}-{i}"));
                    store.insert(&r).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let store = Store::open(&path).unwrap();
    let runs = store.runs(Some("shared")).unwrap();
    assert_eq!(runs.len(), WRITERS * RUNS_EACH);
    let mut writers: Vec<String> = runs
        .iter()
        .map(|r| r.record.labels["writer"].clone())
        .collect();
    writers.sort();
    writers.dedup();
    assert_eq!(writers.len(), WRITERS * RUNS_EACH);
    assert!(runs
        .iter()
        .all(|r| r.record.intervals.len() == 3 && r.record.requests == 33));
    assert_eq!(store.integrity_check().unwrap(), "ok");
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_default_path_is_in_the_users_data_directory() {
    // Read only: the variables are the process's, shared by every test thread.
    let path = default_path();
    if let Some(data) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        assert_eq!(path, Some(PathBuf::from(data).join("belier/history.db")));
    } else if let Some(home) = std::env::var_os("HOME") {
        assert_eq!(
            path,
            Some(PathBuf::from(home).join(".local/share/belier/history.db"))
        );
    }
}
