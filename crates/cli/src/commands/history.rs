//! `belier history`: the runs kept with `--history` listed, shown, imported, exported, and the
//! latest run of a name checked against earlier ones (exit 3 on a significant regression).

use std::io::Write;

use belier_history::{RunRecord, Store, StoredRun};
use belier_report::compare::{parse_fail_if, Condition, METRICS as COMPARE_METRICS};
use belier_report::gate::{judge, render_judged_text, Side};
use belier_report::{render_trend_html, render_trend_json, render_trend_text, Trend, TrendPoint};

use crate::args::{
    BaselineCommand, HistoryArgs, HistoryCheckArgs, HistoryCommand, HistoryImportArgs, ShowFormat,
    TrendArgs, TrendFormat,
};
use crate::history::{db_path, labels, read_record};
use crate::settings::InputError;

/// Exit code of `belier history check` when a condition held.
const EXIT_REGRESSION: u8 = 3;

/// `belier history …`.
pub fn run(args: HistoryArgs) -> anyhow::Result<u8> {
    let db = db_path(args.db.as_deref())?;
    let mut store = crate::history::open_store(&db)?;
    let out = match args.command {
        HistoryCommand::List(a) => list(&store.runs(a.name.as_deref())?),
        HistoryCommand::Show(a) => {
            let run = found(store.get(a.run)?, a.run)?;
            match a.output {
                ShowFormat::Text => show(&run),
                ShowFormat::Json => serde_json::to_string_pretty(&run.record)? + "\n",
            }
        }
        HistoryCommand::Import(a) => import(&mut store, a)?,
        HistoryCommand::Export(a) => {
            let mut out = String::new();
            for run in store.runs(a.name.as_deref())? {
                out += &serde_json::to_string(&run.record)?;
                out.push('\n');
            }
            out
        }
        HistoryCommand::Baseline(a) => match a.command {
            BaselineCommand::Set { run } => {
                let name = store.set_baseline(run)?;
                let name = found(name, run)?;
                format!("run {run} is the baseline of '{name}'\n")
            }
            BaselineCommand::Show { name } => match store.baseline(&name)? {
                Some(run) => list(&[run]),
                None => format!(
                    "'{name}' has no baseline: set one with 'belier history baseline set RUN'\n"
                ),
            },
        },
        HistoryCommand::Check(a) => return check(&store, a),
        HistoryCommand::Trend(a) => trend(&store, a)?,
    };
    print(&out);
    Ok(0)
}

fn print(out: &str) {
    let mut stdout = std::io::stdout().lock();
    // If standard output is gone (a closed pipe) there is nowhere left to write to.
    let _ = stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush());
}

fn found<T>(value: Option<T>, id: i64) -> Result<T, InputError> {
    value.ok_or_else(|| InputError::new("<RUN>", id, "no run of that id in the history"))
}

/// One line per run: id, name, start, requests, errors, p99, labels.
fn list(runs: &[StoredRun]) -> String {
    let mut out = String::from("id\tname\tstarted\trequests\terrors\tp99 ms\tlabels\n");
    for StoredRun { id, record: r } in runs {
        let labels: Vec<String> = r.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out += &format!(
            "{id}\t{}\t{}\t{}\t{}\t{:.3}\t{}\n",
            r.name,
            r.started_at,
            r.requests,
            r.errors,
            r.latency.p99_us as f64 / 1000.0,
            labels.join(",")
        );
    }
    out
}

/// A run as kept, in text.
fn show(run: &StoredRun) -> String {
    let r = &run.record;
    let ms = |us: u64| us as f64 / 1000.0;
    let mut out = format!("run {}: {}\n", run.id, r.name);
    out += &format!(
        "  started      {}\n  belier       {}\n",
        r.started_at, r.belier_version
    );
    if let Some(host) = &r.host {
        out += &format!("  host         {host}\n");
    }
    for (k, v) in &r.labels {
        out += &format!("  label        {k}={v}\n");
    }
    out += &format!(
        "  requests     {} ({} succeeded, {} errors) in {:.1}s, {} intervals\n",
        r.requests,
        r.succeeded,
        r.errors,
        r.elapsed_s,
        r.intervals.len()
    );
    for (what, p) in [("latency", &r.latency), ("uncorrected", &r.uncorrected)] {
        out += &format!(
            "  {what:<12} p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, p99.9 {:.3} ms, max {:.3} ms\n",
            ms(p.p50_us),
            ms(p.p90_us),
            ms(p.p99_us),
            ms(p.p999_us),
            ms(p.max_us)
        );
    }
    for row in &r.rows {
        out += &format!(
            "  {:<12} {}: {} requests, {} failed, p99 {:.3} ms\n",
            format!("{:?}", row.kind).to_lowercase(),
            row.name,
            row.requests,
            row.failures,
            ms(row.latency.p99_us)
        );
    }
    for t in &r.thresholds {
        let verdict = if t.passed { "passed" } else { "failed" };
        out += &format!(
            "  threshold    {}: {verdict} ({})\n",
            t.expression, t.actual
        );
    }
    if let Some(path) = &r.results_path {
        out += &format!("  results      {path}\n");
    }
    out
}

/// `belier history import FILE…`: each file one run.
fn import(store: &mut Store, args: HistoryImportArgs) -> anyhow::Result<String> {
    let labels = labels(&args.labels, "--label <KEY=VALUE>")?;
    let mut out = String::new();
    for path in &args.files {
        let record = read_record(path, args.name.as_deref(), labels.clone())?;
        let id = store.insert(&record)?;
        out += &format!("run {id} kept: {} ({})\n", record.name, path.display());
    }
    Ok(out)
}

/// `belier history trend NAME`: one metric of NAME's last runs.
fn trend(store: &Store, args: TrendArgs) -> anyhow::Result<String> {
    if !belier_history::TREND_METRICS.contains(&args.metric.as_str()) {
        let known = belier_history::TREND_METRICS.join(", ");
        let why = format!("is not a metric the history keeps: use one of {known}");
        return Err(InputError::new("--metric <METRIC>", &args.metric, why).into());
    }
    let runs = store.runs(Some(&args.name))?;
    if runs.is_empty() {
        let why = "no run of that name in the history ('history list' names them)";
        return Err(InputError::new("<NAME>", &args.name, why).into());
    }
    if let Some(step) = &args.step {
        if !runs
            .iter()
            .any(|r| r.record.rows.iter().any(|row| &row.name == step))
        {
            let why = format!("no run of '{}' has a step of that name", args.name);
            return Err(InputError::new("--step <STEP>", step, why).into());
        }
    }
    let skip = runs.len().saturating_sub(args.last as usize);
    let points = runs[skip..]
        .iter()
        .map(|StoredRun { id, record: r }| TrendPoint {
            run: *id,
            started_at: r.started_at.clone(),
            value: r.trend_value(&args.metric, args.step.as_deref()),
            requests: r.requests,
            errors: r.errors,
            p50_ms: r.latency.p50_us as f64 / 1000.0,
            p99_ms: r.latency.p99_us as f64 / 1000.0,
            labels: r.labels.clone(),
            results_path: r.results_path.clone(),
        })
        .collect();
    let unit = match args.metric.as_str() {
        "capacity" => runs.iter().rev().find_map(|r| r.record.capacity_unit()),
        metric => Some(belier_history::trend_unit(metric)),
    };
    let trend = Trend {
        name: args.name,
        unit: unit.unwrap_or("level").to_string(),
        metric: args.metric,
        step: args.step,
        points,
    };
    Ok(match args.output {
        TrendFormat::Text => render_trend_text(&trend),
        TrendFormat::Json => render_trend_json(&trend),
        TrendFormat::Html => render_trend_html(&trend),
    })
}

/// What `check --against` names.
enum Against {
    Baseline,
    Last,
    MedianOf(usize),
}

fn against(raw: &str) -> Result<Against, InputError> {
    let bad = || {
        InputError::new(
            "--against <WHAT>",
            raw,
            "expected baseline, last or median-of-N (N from 1 to 1000)",
        )
    };
    match raw {
        "baseline" => Ok(Against::Baseline),
        "last" => Ok(Against::Last),
        _ => match raw.strip_prefix("median-of-").map(str::parse::<usize>) {
            Some(Ok(n)) if (1..=1000).contains(&n) => Ok(Against::MedianOf(n)),
            _ => Err(bad()),
        },
    }
}

/// `belier history check NAME`: the run judged (the latest of NAME, or `--run`) against
/// what `--against` names, each condition at `--significance`.
fn check(store: &Store, args: HistoryCheckArgs) -> anyhow::Result<u8> {
    let conditions = gate_conditions(&args.fail_if, args.significance)?;
    let against = against(&args.against)?;
    let runs = store.runs(Some(&args.name))?;
    let judged_at = match args.run {
        Some(id) => runs.iter().position(|r| r.id == id).ok_or_else(|| {
            InputError::new(
                "--run <RUN>",
                id,
                format!("no run of that id named '{}'", args.name),
            )
        })?,
        None => match runs.len() {
            0 => {
                return Err(InputError::new(
                    "<NAME>",
                    &args.name,
                    "no run of that name in the history",
                )
                .into())
            }
            n => n - 1,
        },
    };
    let new = &runs[judged_at].record;
    if new.is_capacity() {
        let why = format!(
            "run {} is a capacity search, which has no per-interval values to test: follow it \
             with 'belier history trend {} --metric capacity'",
            runs[judged_at].id, args.name
        );
        return Err(InputError::new("<NAME>", &args.name, why).into());
    }
    let earlier = runs[..judged_at].iter().map(|r| r.record.clone());
    let base: Vec<RunRecord> = match against {
        Against::Baseline => match store.baseline(&args.name)? {
            Some(b) => vec![b.record],
            None => {
                let why = format!(
                    "'{}' has no baseline: set one with 'belier history baseline set RUN'",
                    args.name
                );
                return Err(InputError::new("--against <WHAT>", "baseline", why).into());
            }
        },
        Against::Last => earlier.rev().take(1).collect(),
        Against::MedianOf(n) => earlier.rev().take(n).collect(),
    };
    let head = format!("run {} of '{}'", runs[judged_at].id, args.name);
    if let Against::MedianOf(n) = against {
        if (1..n).contains(&base.len()) {
            let had = base.len();
            print(&format!(
                "{head}: not judged: {had} earlier run{}, {} needs {n}\n",
                if had == 1 { "" } else { "s" },
                args.against
            ));
            return Ok(0);
        }
    }
    if base.is_empty() {
        print(&format!("{head}: no earlier run to compare with\n"));
        return Ok(0);
    }
    let judged: Vec<_> = conditions
        .iter()
        .map(|&c| {
            let (b, n) = (base_side(&base, c.metric), side(new, c.metric));
            judge(c, &b, &n, args.significance)
        })
        .collect();
    let plural = if base.len() == 1 { "" } else { "s" };
    let mut out = format!(
        "{head} against {} ({} run{plural}):\n",
        args.against,
        base.len()
    );
    out += &render_judged_text(&judged, args.significance);
    print(&out);
    Ok(match judged.iter().any(|j| j.regression) {
        true => EXIT_REGRESSION,
        false => 0,
    })
}

/// `--fail-if` read with `belier compare`'s grammar, on the metrics the history keeps per
/// interval, and the significance level checked.
pub(super) fn gate_conditions(expr: &str, alpha: f64) -> Result<Vec<Condition>, InputError> {
    if !(alpha > 0.0 && alpha < 1.0) {
        let why = "must be between 0 and 1, e.g. 0.05";
        return Err(InputError::new("--significance <ALPHA>", alpha, why));
    }
    let conditions =
        parse_fail_if(expr).map_err(|e| InputError::new("--fail-if <EXPR>", expr, e))?;
    if let Some(c) = conditions
        .iter()
        .find(|c| !belier_history::METRICS.contains(&c.metric))
    {
        let known = belier_history::METRICS.join(", ");
        let why = match COMPARE_METRICS.contains(&c.metric) {
            true => format!(
                "the history keeps no per-interval values of {}: use one of {known}",
                c.metric
            ),
            false => format!(
                "{} is not kept in the history: use one of {known}",
                c.metric
            ),
        };
        return Err(InputError::new("--fail-if <EXPR>", expr, why));
    }
    Ok(conditions)
}

fn side(run: &RunRecord, metric: &str) -> Side {
    Side {
        runs: Vec::new(),
        figure: run.figure(metric).unwrap_or(0.0),
        intervals: run.interval_values(metric).unwrap_or_default(),
    }
}

/// The base of several runs: the median of their figures, all their intervals.
fn base_side(runs: &[RunRecord], metric: &str) -> Side {
    let figures: Vec<f64> = runs
        .iter()
        .map(|r| r.figure(metric).unwrap_or(0.0))
        .collect();
    let per_run: Vec<Vec<f64>> = runs
        .iter()
        .map(|r| r.interval_values(metric).unwrap_or_default())
        .collect();
    Side {
        figure: belier_stats::significance::median(&figures),
        runs: per_run
            .iter()
            .filter(|v| !v.is_empty())
            .map(|v| belier_stats::significance::median(v))
            .collect(),
        intervals: per_run.concat(),
    }
}
