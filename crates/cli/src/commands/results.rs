//! `belier report`: results files read back, shards merged, runs rendered side by side.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use belier_report::{render_html, render_json, render_text, HtmlRun, Report};
use belier_results::{read_run, Reader};

use crate::args::{CompareArgs, CompareFormat, ReportArgs, ReportType};
use crate::settings::InputError;

/// One run, read back: its results (shards merged) over the chosen window.
pub struct Run {
    /// Run name from the results files.
    pub name: String,
    /// Totals, series and run information.
    pub data: belier_results::Run,
    /// Warnings the report shows: the run's own and what the reader tolerated.
    pub warnings: Vec<String>,
}

impl Run {
    /// The report on this run.
    pub fn report(&self) -> Report<'_> {
        let end = self.data.end.as_ref();
        Report {
            scenarios: end.map(|e| e.scenarios.clone()).unwrap_or_default(),
            info: &self.data.header.run,
            totals: &self.data.totals,
            series: &self.data.series,
            elapsed: self.data.elapsed,
            interrupted: end.is_some_and(|e| e.interrupted),
            warnings: self.warnings.clone(),
            thresholds: end.map(|e| e.thresholds.clone()).unwrap_or_default(),
            changes: self.data.changes.clone(),
            host: end.and_then(|e| e.host),
        }
    }
}

/// Opens `files` (`-`: standard input), groups them by run name (files with one name are
/// shards of one run) and reads each run over `[from, to)`, streaming: memory does not grow
/// with the length of the runs. Runs keep the order their first file was given in.
pub fn load(
    files: &[PathBuf],
    from: Option<Duration>,
    to: Option<Duration>,
    keep_latency_log: bool,
) -> anyhow::Result<Vec<Run>> {
    let mut groups: Vec<(String, Vec<Reader>)> = Vec::new();
    for path in files {
        let reader = open(path)?;
        let name = reader.header().name.clone();
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, shards)) => shards.push(reader),
            None => groups.push((name, vec![reader])),
        }
    }
    groups
        .into_iter()
        .map(|(name, shards)| {
            // The reader's messages name the file and line (a merge error, the run).
            let data = read_run(shards, from, to, keep_latency_log)
                .map_err(|e| InputError::in_file(e.to_string()))?;
            let mut warnings = data
                .end
                .as_ref()
                .map(|e| e.warnings.clone())
                .unwrap_or_default();
            warnings.extend(data.notes.iter().cloned());
            if data.totals.requests() == 0 && (from.is_some() || to.is_some()) {
                warnings.push("no interval falls in the --from/--to window".into());
            }
            Ok(Run {
                name,
                data,
                warnings,
            })
        })
        .collect()
}

fn open(path: &Path) -> anyhow::Result<Reader> {
    let source = path.display().to_string();
    let input: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(BufReader::new(std::io::stdin()))
    } else {
        Box::new(BufReader::new(std::fs::File::open(path).map_err(|e| {
            InputError::new("<FILE>", &source, format!("cannot open it: {e}"))
        })?))
    };
    Reader::open(input, &source).map_err(|e| InputError::in_file(e.to_string()).into())
}

/// `belier report`.
pub fn report(args: ReportArgs) -> anyhow::Result<u8> {
    if let Some(code) = capacity_report(&args)? {
        return Ok(code);
    }
    let mut runs = load(
        &args.files,
        args.from,
        args.to,
        args.kind == ReportType::Hdr,
    )?;
    let failed = match &args.thresholds_from {
        Some(plan) => judge(&mut runs, plan)?,
        None => false,
    };
    let reports: Vec<Report> = runs.iter().map(Run::report).collect();
    let named: Vec<belier_report::NamedReport> = runs
        .iter()
        .zip(&reports)
        .map(|(run, report)| belier_report::NamedReport {
            name: &run.name,
            report,
        })
        .collect();
    let out = match args.kind {
        ReportType::Text => reports
            .iter()
            .zip(&runs)
            .map(|(r, run)| {
                let text = render_text(r);
                if runs.len() > 1 {
                    format!("== {} ==\n{text}", run.name)
                } else {
                    text
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
        ReportType::Json if reports.len() == 1 => render_json(&reports[0]),
        ReportType::Json => {
            let docs: Vec<String> = reports.iter().map(render_json).collect();
            format!("[\n{}]\n", docs.join(",\n"))
        }
        ReportType::Csv => belier_report::render_csv(&named),
        ReportType::CsvStats => belier_report::render_csv_stats(&named),
        ReportType::Markdown => belier_report::render_markdown(&named),
        ReportType::Junit => belier_report::render_junit(&named),
        ReportType::Hdr => {
            let pairs: Vec<(&str, &belier_results::Run)> =
                runs.iter().map(|r| (r.name.as_str(), &r.data)).collect();
            belier_report::render_hdr_log(&pairs)
        }
        ReportType::Html => {
            let html_runs: Vec<HtmlRun> = runs
                .iter()
                .zip(&reports)
                .map(|(run, report)| HtmlRun {
                    name: run.name.clone(),
                    report,
                })
                .collect();
            render_html(&html_runs)
        }
    };
    match &args.out {
        Some(path) => {
            std::fs::write(path, out).with_context(|| format!("cannot write {}", path.display()))?
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout
                .write_all(out.as_bytes())
                .and_then(|()| stdout.flush());
        }
    }
    Ok(if failed {
        crate::plan::EXIT_THRESHOLDS
    } else {
        0
    })
}

/// `--thresholds-from PLAN`: judges the plan's thresholds on each run as read back (shards
/// merged, within --from/--to), in place of what the files say; whether one failed.
fn judge(runs: &mut [Run], plan: &Path) -> anyhow::Result<bool> {
    let plan = belier_plan::load(plan)?;
    let mut failed = false;
    for run in runs {
        // Thresholds scoped to a scenario of its own load: on its totals, shards' added up.
        let end = run.data.end.as_ref();
        let stored = end.map_or(&[][..], |e| &e.scenario_totals[..]);
        let totals: Vec<belier_stats::Recorder> = stored
            .iter()
            .map(|s| s.decode())
            .collect::<Result<_, _>>()
            .unwrap_or_default();
        let names = end.map_or(&[][..], |e| &e.scenarios[..]);
        let scenarios: Vec<(&str, &belier_stats::Recorder)> =
            names.iter().map(|s| s.name.as_str()).zip(&totals).collect();
        let mut outcomes =
            crate::plan::judge(&plan, &run.data.totals, run.data.elapsed, &scenarios);
        // A threshold that stopped the run while it went still did.
        let stops = run.data.end.iter().flat_map(|e| &e.thresholds);
        for stop in stops.filter(|t| t.stopped_run.is_some()) {
            if let Some(o) = outcomes
                .iter_mut()
                .find(|o| o.expression == stop.expression)
            {
                o.stopped_run.clone_from(&stop.stopped_run);
            }
        }
        failed |= outcomes
            .iter()
            .any(|t| !t.passed || t.stopped_run.is_some());
        run.data.end.get_or_insert_with(Default::default).thresholds = outcomes;
        // The reader's note that the files' own thresholds could not stand is answered now.
        run.warnings
            .retain(|w| !w.starts_with("the plan's thresholds were judged"));
    }
    Ok(failed)
}

/// Exit code of `belier compare` when a `--fail-if` condition held.
pub const EXIT_REGRESSION: u8 = 3;

/// `belier compare BASE NEW`.
pub fn compare(args: CompareArgs) -> anyhow::Result<u8> {
    use belier_report::compare;
    let conditions = match &args.fail_if {
        Some(expr) => compare::parse_fail_if(expr)
            .map_err(|e| InputError::new("--fail-if <EXPR>", expr, e))?,
        None => Vec::new(),
    };
    let mut runs = Vec::with_capacity(2);
    for path in [&args.base, &args.new] {
        let mut loaded = load(std::slice::from_ref(path), args.from, args.to, false)?;
        runs.push(loaded.remove(0));
    }
    let (base, new) = (runs[0].report(), runs[1].report());
    let deltas = compare::compare(&base, &new);
    if let Some(alpha) = args.significance {
        return compare_significant(&runs, &deltas, args.fail_if.as_deref(), alpha, args.output);
    }
    let failures = compare::failed(&deltas, &conditions);
    let out = match args.output {
        CompareFormat::Text => {
            compare::render_comparison_text(&runs[0].name, &runs[1].name, &deltas, &failures)
        }
        CompareFormat::Json => {
            compare::render_comparison_json(&runs[0].name, &runs[1].name, &deltas, &failures)
        }
        CompareFormat::Junit => compare::render_comparison_junit(
            &runs[0].name,
            &runs[1].name,
            &compare::verdicts(&deltas, &conditions),
        ),
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush());
    Ok(if failures.is_empty() {
        0
    } else {
        EXIT_REGRESSION
    })
}

/// `belier compare --significance ALPHA`: each `--fail-if` condition judged on the two runs'
/// figures and per-interval values; exit 3 when one holds.
fn compare_significant(
    runs: &[Run],
    deltas: &[belier_report::compare::Delta],
    fail_if: Option<&str>,
    alpha: f64,
    output: CompareFormat,
) -> anyhow::Result<u8> {
    use belier_report::gate::{judge, render_judged_text, Side};
    if output != CompareFormat::Text {
        return Err(
            InputError::new("--significance <ALPHA>", alpha, "gives text output only").into(),
        );
    }
    let conditions = super::history::gate_conditions(fail_if.unwrap_or_default(), alpha)?;
    let side = |run: &Run, metric: &str, figure: f64| Side {
        figure,
        runs: Vec::new(),
        intervals: belier_history::Intervals::of(&run.data.series)
            .values(metric)
            .unwrap_or_default(),
    };
    let judged: Vec<_> = conditions
        .iter()
        .map(|&c| {
            let d = deltas.iter().find(|d| d.metric == c.metric);
            let (b, n) = d.map_or((0.0, 0.0), |d| (d.base, d.new));
            judge(
                c,
                &side(&runs[0], c.metric, b),
                &side(&runs[1], c.metric, n),
                alpha,
            )
        })
        .collect();
    let table =
        belier_report::compare::render_comparison_text(&runs[0].name, &runs[1].name, deltas, &[]);
    print!("{table}\n{}", render_judged_text(&judged, alpha));
    Ok(match judged.iter().any(|j| j.regression) {
        true => EXIT_REGRESSION,
        false => 0,
    })
}

/// `belier report FILE` on a file `belier capacity --save` wrote: the search again, as text,
/// JSON or HTML. `None` when the files are results files.
fn capacity_report(args: &ReportArgs) -> anyhow::Result<Option<u8>> {
    let [path] = &args.files[..] else {
        return Ok(None);
    };
    if path.as_os_str() == "-" {
        return Ok(None);
    }
    // Only a regular file small enough to be a capacity document is read whole here: a
    // results file of any length (or a pipe, `<(...)`) is left to the streaming reader.
    use belier_plan::files;
    let Ok(text) = files::read_to_string(path, files::MOST_DOCUMENT_BYTES) else {
        return Ok(None);
    };
    let Some(outcome) = belier_capacity::Outcome::from_json(&text) else {
        return Ok(None);
    };
    let outcome = outcome.map_err(|why| InputError::new("<FILE>", path.display(), why))?;
    let out = match args.kind {
        ReportType::Text => belier_report::render_capacity_text(&outcome),
        ReportType::Json => outcome.to_json(),
        ReportType::Html => belier_report::render_capacity_html(&outcome),
        _ => {
            return Err(InputError::new(
                "--type <TYPE>",
                clap::ValueEnum::to_possible_value(&args.kind)
                    .map_or_else(String::new, |v| v.get_name().to_string()),
                "a capacity search reports as text, json or html",
            )
            .into())
        }
    };
    match &args.out {
        Some(file) => std::fs::write(file, out)?,
        None => print!("{out}"),
    }
    Ok(Some(0))
}
