//! The run history through the real binary, against belier's test server on 127.0.0.1 with
//! a known delay per request (`?delay=`): runs kept with `--history` at their end, a gate that
//! passes an unchanged server every time and fails a slower one naming the metric, its change
//! interval and p-value, and many processes writing one database at once.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use belier_history::{Location, Store};
use belier_testserver::{Config, Server};
use belier_testsupport::postgres::{Postgres, PASSWORD};
use belier_testsupport::temp_dir;

belier_testsupport::binary!();

fn server() -> Server {
    Server::start(Config {
        threads: 2,
        ..Config::default()
    })
    .expect("test server starts")
}

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The history of a test: an SQLite file in `dir`, or the database of a PostgreSQL server
/// started for the test (`None` when PostgreSQL is missing outside CI: said and skipped).
/// Runs kept without `--save` keep their results files in `dir` either way.
struct History {
    db: String,
    dir: std::path::PathBuf,
    server: Option<Postgres>,
}

impl History {
    fn sqlite(test: &str) -> History {
        let dir = temp_dir(test);
        History {
            db: dir.join("history.db").display().to_string(),
            dir,
            server: None,
        }
    }

    fn postgres(test: &str) -> Option<History> {
        let server = Postgres::start(test)?;
        Some(History {
            db: server.url(),
            dir: temp_dir(test),
            server: Some(server),
        })
    }

    fn store(&self) -> Store {
        Store::open(Location::parse(&self.db)).unwrap()
    }

    /// On PostgreSQL: runs, labels of no run, and the schema's version, counted by psql.
    fn psql_counts(&self) -> String {
        let pg = self.server.as_ref().expect("a PostgreSQL history");
        pg.psql(
            "SELECT (SELECT count(*) FROM runs),
                    (SELECT count(*) FROM labels WHERE run_id NOT IN (SELECT id FROM runs)),
                    (SELECT MAX(version) FROM schema_version)",
        )
    }

    /// belier with the history's results files kept in the test's directory.
    fn belier(&self) -> std::process::Command {
        let mut c = belier();
        c.env("XDG_DATA_HOME", &self.dir);
        c
    }
}

/// A short run kept in `db` under `name`: 8 connections for 2 s, 20 intervals of 100 ms. The
/// server's delay (50 ms) dwarfs the scheduling hiccups of a loaded machine.
fn kept_run(s: &Server, h: &History, name: &str, delay: &str) -> Output {
    h.belier()
        .args([
            "-c",
            "4",
            "-t",
            "1",
            "-z",
            "2s",
            "--interval",
            "100ms",
            "--name",
            name,
        ])
        .arg(format!("--history={}", h.db))
        .arg(s.url(&format!("/?delay={delay}")))
        .output()
        .expect("belier runs")
}

/// `belier history check NAME --against median-of-5 --fail-if EXPR`: exit code and output.
fn check(h: &History, name: &str, fail_if: &str) -> (Option<i32>, String) {
    let out = h
        .belier()
        .args([
            "history",
            "check",
            name,
            "--against",
            "median-of-5",
            "--fail-if",
            fail_if,
        ])
        .args(["--db", &h.db])
        .output()
        .expect("belier runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

#[test]
fn an_unchanged_server_passes_every_check_and_a_slower_one_fails_naming_p99() {
    gate(&History::sqlite("gate"));
}

#[test]
fn the_gate_on_postgresql_passes_an_unchanged_server_and_fails_a_slower_one() {
    if let Some(h) = History::postgres("gate-pg") {
        gate(&h);
    }
}

/// Ten runs of an unchanged server pass; 3 % slower passes a 10 % limit; 15 % slower fails
/// naming p99 with its interval and p-value; the same gate on two results files.
fn gate(h: &History) {
    let s = server();
    let shown = Location::parse(&h.db).shown();
    for i in 1..=10 {
        let out = ok(kept_run(&s, h, "svc", "50ms"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("run {i} kept in the history {shown}\n")),
            "{err}"
        );
        assert!(!err.contains(PASSWORD), "{err}");
        let (code, text) = check(h, "svc", "p99>+5%");
        assert_eq!(code, Some(0), "run {i}, a false alarm: {text}");
        // median-of-5 judges from the sixth run on, against the five before it.
        let said = match i {
            1 => "no earlier run to compare with".to_string(),
            2..=5 => format!("not judged: {} earlier run", i - 1),
            _ => "against median-of-5 (5 runs):\np99: ".to_string(),
        };
        assert!(text.contains(&said), "run {i}: {text}");
    }
    let store = h.store();
    let runs = store.runs(Some("svc")).unwrap();
    assert_eq!(runs.len(), 10);
    let served: u64 = runs.iter().map(|r| r.record.requests).sum();
    assert_eq!(
        served,
        s.counts().requests,
        "every request the server saw is kept"
    );
    assert!(runs
        .iter()
        .all(|r| r.record.intervals.len() >= 20 && r.record.errors == 0));

    // 3 % slower under a 10 % limit: passes.
    ok(kept_run(&s, h, "svc", "51500us"));
    let (code, text) = check(h, "svc", "p99>+10%");
    assert_eq!(code, Some(0), "{text}");

    // 15 % slower: a regression, named with its change, interval and p-value.
    ok(kept_run(&s, h, "svc", "57500us"));
    let (code, text) = check(h, "svc", "p99>+5%");
    assert_eq!(code, Some(3), "{text}");
    assert!(
        text.contains("run 12 of 'svc' against median-of-5 (5 runs):"),
        "{text}"
    );
    let line = text.lines().find(|l| l.starts_with("p99: ")).expect(&text);
    assert!(
        line.contains("% interval +") && line.contains(", p = 0.0"),
        "{line}"
    );
    assert!(line.ends_with("): regression, p99>+5%"), "{line}");

    // The same gate on two results files: the first run's and the slower one's.
    let store = h.store();
    let file = |id| store.get(id).unwrap().unwrap().record.results_path.unwrap();
    let compare = |output: &str| {
        belier()
            .args(["compare", &file(1), &file(12), "--fail-if", "p99>+5%"])
            .args(["--significance", "0.05", "--output", output])
            .output()
            .unwrap()
    };
    let out = compare("text");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    let line = text.lines().find(|l| l.starts_with("p99: ")).expect(&text);
    assert!(line.ends_with("): regression, p99>+5%"), "{line}");
    let out = compare("json");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gives text output only"));
    std::fs::remove_dir_all(&h.dir).unwrap();
}

#[test]
fn four_shards_and_two_runs_finishing_at_once_are_all_kept_whole() {
    writers(&History::sqlite("writers"));
}

#[test]
fn four_shards_and_two_runs_finishing_at_once_on_postgresql_are_all_kept_whole() {
    if let Some(h) = History::postgres("writers-pg") {
        writers(&h);
        // Each run's labels once, and nothing else in the tables than the six runs.
        assert_eq!(h.psql_counts(), "6|0|3\n");
    }
}

fn writers(h: &History) {
    let s = server();
    let history = format!("--history={}", h.db);
    let url = s.url("/?delay=5ms");
    let mut children: Vec<_> = (1..=4)
        .map(|i| {
            h.belier()
                .args(["-c", "4", "-t", "1", "-n", "200", "--name", "split"])
                .args(["--shard", &format!("{i}/4"), &history, &url])
                .output_spawned()
        })
        .collect();
    children.extend((0..2).map(|_| {
        h.belier()
            .args([
                "-c", "2", "-t", "1", "-n", "100", "--name", "pair", &history, &url,
            ])
            .output_spawned()
    }));
    for child in children {
        ok(child.wait_with_output().unwrap());
    }
    let store = h.store();
    let split = store.runs(Some("split")).unwrap();
    let pair = store.runs(Some("pair")).unwrap();
    assert_eq!((split.len(), pair.len()), (4, 2));
    // -n 200 split four ways: 50 each; every request the server saw is kept once.
    assert!(split.iter().all(|r| r.record.requests == 50), "{split:?}");
    assert!(pair.iter().all(|r| r.record.requests == 100));
    assert_eq!(s.counts().requests, 400);
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

#[test]
fn labels_are_kept_and_bad_history_flags_are_refused_by_name() {
    let s = server();
    let dir = temp_dir("labels");
    let db = dir.join("history.db");
    ok(belier()
        .args([
            "-c", "1", "-n", "5", "--label", "env=ci", "--label", "pool=a",
        ])
        .arg(format!("--history={}", db.display()))
        .arg(s.url("/"))
        .output()
        .unwrap());
    let shown = ok(belier()
        .args(["history", "show", "1", "--db"])
        .arg(&db)
        .output()
        .unwrap());
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("run 1: GET 127.0.0.1:"), "{shown}");
    assert!(
        shown.contains("label        env=ci\n  label        pool=a\n"),
        "{shown}"
    );
    assert!(
        shown.contains("requests     5 (5 succeeded, 0 errors)"),
        "{shown}"
    );
    let bad = [
        (&["--label", "env=ci"][..], "--label <KEY=VALUE>"),
        (&["--history", "--label", "=x"], "expected KEY=VALUE"),
        (
            &["--history", "--save", "-"],
            "read back from its results file",
        ),
    ];
    for (args, want) in bad {
        let out = belier()
            .args(args)
            .arg(s.url("/"))
            .env("BELIER_HISTORY", "")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let out = belier()
        .args(["history", "check", "x", "--fail-if", "p99.9>+5%", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no per-interval values of p99.9"));
    assert_eq!(s.counts().requests, 5);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Starts a command with its output captured, for several to run at once.
trait Spawned {
    fn output_spawned(&mut self) -> std::process::Child;
}

impl Spawned for std::process::Command {
    fn output_spawned(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("belier starts")
    }
}

#[test]
fn a_postgresql_history_of_an_older_schema_migrates_and_its_password_never_shows() {
    let Some(h) = History::postgres("migrate-pg") else {
        return;
    };
    let s = server();
    // A database as the previous schema version left it, with a run in it.
    let older = belier_history::SCHEMA_VERSION as usize - 1;
    // Its run is one kept in an SQLite file first, copied over.
    let file = h.dir.join("first.db");
    ok(h.belier()
        .args(["-c", "1", "-n", "4", "--name", "older"])
        .arg(format!("--history={}", file.display()))
        .arg(s.url("/"))
        .output()
        .unwrap());
    let record = Store::open(&file).unwrap().get(1).unwrap().unwrap().record;
    let mut store = Store::open_at(Location::parse(&h.db), older).unwrap();
    assert_eq!(store.schema_version().unwrap(), older as i64);
    assert_eq!(store.insert(&record).unwrap(), 1);
    drop(store);

    // A run kept now migrates it; the older run reads back whole beside the new one.
    ok(h.belier()
        .args(["-c", "1", "-n", "5", "--name", "older"])
        .arg(format!("--history={}", h.db))
        .arg(s.url("/"))
        .output()
        .unwrap());
    let store = h.store();
    assert_eq!(
        store.schema_version().unwrap(),
        belier_history::SCHEMA_VERSION
    );
    let runs = store.runs(Some("older")).unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].record, record);
    assert_eq!((runs[0].record.requests, runs[1].record.requests), (4, 5));
    let set = ok(h
        .belier()
        .args(["history", "baseline", "set", "1", "--db", &h.db])
        .output()
        .unwrap());
    assert_eq!(
        String::from_utf8_lossy(&set.stdout),
        "run 1 is the baseline of 'older'\n"
    );

    // A server that is not there: the error names the database without its password, and
    // the run's report is still written.
    let port = belier_testsupport::free_port();
    let gone = format!("postgres://belier:{PASSWORD}@127.0.0.1:{port}/history");
    let out = h
        .belier()
        .args(["-c", "1", "-n", "3"])
        .arg(format!("--history={gone}"))
        .arg(s.url("/"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "history database postgres://belier@127.0.0.1:{port}/history"
        )),
        "{err}"
    );
    assert!(!err.contains(PASSWORD), "{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Requests"),
        "{err}"
    );
    assert_eq!(s.counts().requests, 12);
}

/// `belier history trend ARGS…` on `h`: exit code, stdout, stderr.
fn trend(h: &History, args: &[&str]) -> (Option<i32>, String, String) {
    let out = h
        .belier()
        .args(["history", "trend"])
        .args(args)
        .args(["--db", &h.db])
        .output()
        .expect("belier runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_trend_gives_one_point_per_run_in_text_json_and_in_a_browser() {
    let s = server();
    let h = History::sqlite("trend");
    for delay in ["5ms", "10ms", "20ms", "40ms"] {
        ok(h.belier()
            .args(["-c", "2", "-n", "40", "--name", "api"])
            .arg(format!("--history={}", h.db))
            .arg(s.url(&format!("/?delay={delay}")))
            .output()
            .unwrap());
    }
    let runs = h.store().runs(Some("api")).unwrap();
    let p99: Vec<f64> = runs
        .iter()
        .map(|r| r.record.latency.p99_us as f64 / 1000.0)
        .collect();

    let (code, text, err) = trend(&h, &["api"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(text.starts_with("p99 (ms) of 'api', 4 runs\n"), "{text}");
    // A sparkline of four runs, from the lowest p99 to the highest.
    let spark = text.lines().nth(1).unwrap();
    assert_eq!(
        spark
            .chars()
            .take_while(|c| "▁▂▃▄▅▆▇█".contains(*c))
            .count(),
        4
    );
    let (lo, hi) = (
        p99.iter().copied().fold(f64::MAX, f64::min),
        p99.iter().copied().fold(0.0, f64::max),
    );
    assert!(
        spark.contains(&format!("lowest {}", fig(lo)))
            && spark.contains(&format!("highest {}", fig(hi))),
        "{spark}"
    );
    for (run, want) in runs.iter().zip(&p99) {
        let line = format!("\n{}\t{}\t{}\t", run.id, run.record.started_at, fig(*want));
        assert!(text.contains(&line), "{line:?} in\n{text}");
    }

    let (code, json, err) = trend(&h, &["api", "--output", "json", "--last", "2"]);
    assert_eq!(code, Some(0), "{err}");
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let points = json["points"].as_array().unwrap();
    let got: Vec<(i64, f64)> = points
        .iter()
        .map(|p| (p["run"].as_i64().unwrap(), p["value"].as_f64().unwrap()))
        .collect();
    assert_eq!(got, vec![(3, p99[2]), (4, p99[3])]);

    let (code, _, err) = trend(&h, &["api", "--step", "login"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--step <STEP>") && err.contains("login"),
        "{err}"
    );
    let (code, _, err) = trend(&h, &["api", "--metric", "p42"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("rate, throughput, p50"), "{err}");

    let (code, html, err) = trend(&h, &["api", "--output", "html"]);
    assert_eq!(code, Some(0), "{err}");
    let page = h.dir.join("trend.html");
    std::fs::write(&page, html).unwrap();
    trend_in_a_browser(&page, &p99);
}

/// A value as a trend prints it: three decimals below 100, one above.
fn fig(v: f64) -> String {
    match v < 100.0 {
        true => format!("{v:.3}"),
        false => format!("{v:.1}"),
    }
}

/// The trend page as a person sees it: one point per run with its value, and a click on a
/// point showing its run's row.
fn trend_in_a_browser(page: &Path, p99: &[f64]) {
    let Some(browser) = belier_testsupport::webdriver::Browser::start("trend") else {
        return;
    };
    browser.goto(&format!("file://{}", page.display()));
    let titles = browser.script(
        "return Array.from(document.querySelectorAll('svg a circle')).map(c => c.textContent);",
        &[],
    );
    let titles: Vec<&str> = titles
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(titles.len(), 4, "{titles:?}");
    for (i, (title, want)) in titles.iter().zip(p99).enumerate() {
        assert!(
            title.starts_with(&format!("run {} · ", i + 1))
                && title.ends_with(&format!(" · p99 {} ms", fig(*want))),
            "{title}"
        );
    }
    browser.click("a[href='#run-3'] circle");
    browser.wait_until("run 3's row", Duration::from_secs(10), |b| {
        b.script("return location.hash;", &[]) == "#run-3"
    });
    assert_eq!(browser.text("#run-3 td.value"), fig(p99[2]));
    browser.screenshot(&page.with_extension("png"));
}

#[test]
fn a_capacity_search_is_kept_with_its_answer_and_followed_by_trend_not_check() {
    let s = server();
    let h = History::sqlite("capacity");
    let out = ok(h
        .belier()
        .args(["capacity", "--slo", "p99 < 1s", "--start-rate", "20"])
        .args(["--max-rate", "20", "--warmup", "500ms", "--window", "1s"])
        .args(["--confirm", "0", "--no-overload", "--name", "search"])
        .arg(format!("--history={}", h.db))
        .arg(s.url("/"))
        .output()
        .unwrap());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "capacity: search kept in the history {} as run 1",
            h.db
        )),
        "{err}"
    );
    let kept = h.store().get(1).unwrap().unwrap().record;
    assert_eq!(
        kept.capacity.as_ref().unwrap()["capacity"]["max_rate"],
        20.0
    );
    assert!(!kept.rows.is_empty() && kept.requests >= 15, "{kept:?}");
    assert_eq!(kept.rows[0].name, "step 1 grow 20/s");

    let (code, text, err) = trend(&h, &["search", "--metric", "capacity"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        text.starts_with("capacity (req/s) of 'search', 1 runs\n"),
        "{text}"
    );
    assert!(text.contains("\t20.000\t"), "{text}");
    let (code, _, err) = trend(
        &h,
        &["search", "--metric", "p99", "--step", "step 1 grow 20/s"],
    );
    assert_eq!(code, Some(0), "{err}");
    let (code, text) = check(&h, "search", "p99>+5%");
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("is a capacity search"), "{text}");
}

/// The dashboard's SQL as Grafana would send it: its macros and variables replaced.
fn grafana_sql(sql: &str, name: &str, step: &str) -> String {
    sql.replace(
        "$__timeFilter(runs.started_at)",
        "runs.started_at BETWEEN '2000-01-01T00:00:00Z' AND '2100-01-01T00:00:00Z'",
    )
    .replace(
        "$__timeFilter(started_at)",
        "started_at BETWEEN '2000-01-01T00:00:00Z' AND '2100-01-01T00:00:00Z'",
    )
    .replace("$name", name)
    .replace("$step", step)
}

/// psql's rows, each split into its columns.
fn rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect()
}

fn close(got: &str, want: f64) -> bool {
    got.parse::<f64>()
        .is_ok_and(|g| (g - want).abs() <= 1e-9 * want.abs().max(1.0))
}

#[test]
fn the_grafana_dashboards_sql_reads_the_runs_kept_in_postgresql() {
    let Some(h) = History::postgres("grafana") else {
        return;
    };
    let s = server();
    let plan = h.dir.join("shop.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {}\nload: {{ vus: 2, iterations: 10 }}\nscenarios:\n  - name: buyer\n    \
             steps:\n      - name: home\n        get: /?delay=2ms\n      - name: basket\n        \
             get: /?delay=8ms\n",
            s.url("").trim_end_matches('/')
        ),
    )
    .unwrap();
    for _ in 0..2 {
        ok(h.belier()
            .args(["run", plan.to_str().unwrap()])
            .arg(format!("--history={}", h.db))
            .output()
            .unwrap());
    }
    ok(h.belier()
        .args(["capacity", "--slo", "p99 < 1s", "--start-rate", "20"])
        .args(["--max-rate", "20", "--warmup", "500ms", "--window", "1s"])
        .args(["--confirm", "0", "--no-overload", "--name", "shop"])
        .arg(format!("--history={}", h.db))
        .arg(s.url("/"))
        .output()
        .unwrap());
    let runs = h.store().runs(Some("shop")).unwrap();
    assert_eq!(runs.len(), 3);
    let (plans, search) = (&runs[..2], &runs[2].record);

    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../dashboards/grafana-history.json"
    );
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let pg = h.server.as_ref().unwrap();
    let query = |sql: &str, step: &str| rows(&pg.psql(&grafana_sql(sql, "shop", step)));
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    assert_eq!(
        query(variables[0]["query"].as_str().unwrap(), ""),
        [["shop"]]
    );
    assert_eq!(
        query(variables[1]["query"].as_str().unwrap(), ""),
        [["basket"], ["home"]]
    );
    let sql = |id: u64| {
        let panel = dashboard["panels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id)
            .unwrap();
        panel["targets"][0]["rawSql"].as_str().unwrap().to_string()
    };
    let ms = |us: u64| us as f64 / 1000.0;
    let latency = query(&sql(1), "");
    assert_eq!(latency.len(), 2, "{latency:?}");
    for (row, run) in latency.iter().zip(plans) {
        let l = &run.record.latency;
        assert!(
            close(&row[1], ms(l.p50_us)) && close(&row[2], ms(l.p99_us)),
            "{row:?}"
        );
        assert!(close(&row[3], ms(l.p999_us)), "{row:?}");
    }
    for (row, run) in query(&sql(2), "").iter().zip(plans) {
        let r = &run.record;
        assert!(close(&row[1], r.figure("rate").unwrap()), "{row:?}");
        assert!(close(&row[2], r.figure("throughput").unwrap()), "{row:?}");
    }
    let errors = query(&sql(3), "");
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors.iter().all(|r| close(&r[1], 0.0)), "{errors:?}");
    let capacity = query(&sql(4), "");
    assert_eq!(capacity.len(), 1);
    assert!(close(&capacity[0][1], 20.0), "{capacity:?}");
    assert_eq!(search.trend_value("capacity", None), Some(20.0));
    for step in ["home", "basket"] {
        let per_step = query(&sql(5), step);
        assert_eq!(per_step.len(), 2, "{step}: {per_step:?}");
        for (row, run) in per_step.iter().zip(plans) {
            let want = run.record.trend_value("p99", Some(step)).unwrap();
            assert!(close(&row[1], want), "{step}: {row:?}");
        }
    }
    let table = query(&sql(6), "");
    let ids: Vec<&str> = table.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(ids, ["3", "2", "1"]);
    assert!(table.iter().all(|r| r[5].contains("commit=")), "{table:?}");
}

#[test]
fn a_postgresql_history_over_tls_connects_as_its_sslmode_says() {
    let Some(pg) = Postgres::start_tls("tls-pg") else {
        return;
    };
    let s = server();
    let dir = temp_dir("tls-pg");
    let cert = pg.certificate();
    let keep = |query: &str| {
        belier()
            .env("XDG_DATA_HOME", &dir)
            .args(["-c", "1", "-n", "3"])
            .arg(format!("--history={}{query}", pg.url()))
            .arg(s.url("/"))
            .output()
            .unwrap()
    };
    // The server takes TCP sessions over TLS only: a run kept is a run sent encrypted.
    for query in [
        "",
        "?sslmode=require",
        &format!("?sslmode=verify-full&sslrootcert={}", cert.display()),
    ] {
        let out = keep(query);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{query}: {err}");
        assert!(!err.contains(PASSWORD), "{err}");
    }
    let refused = [
        ("?sslmode=disable", "no encryption"),
        ("?sslmode=verify-full", "certificate"),
        ("?sslmode=sometimes", "sslmode=sometimes: expected disable"),
    ];
    for (query, why) in refused {
        let out = keep(query);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{query}: {err}");
        assert!(err.contains(why), "{query}: {err}");
        assert!(!err.contains(PASSWORD), "{err}");
    }
    assert_eq!(pg.psql("SELECT count(*) FROM runs"), "3\n");
    // The runs that could not be kept were sent all the same (their reports written); the
    // unknown sslmode stopped its run before it started.
    assert_eq!(s.counts().requests, 15);
}
