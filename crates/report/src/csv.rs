//! Reports as CSV, for spreadsheets and plotting tools: the per-interval series
//! ([`render_csv`], Locust's stats history) and the per-step statistics ([`render_csv_stats`],
//! Locust's stats table).
//!
//! One row per run per interval (or per step), runs one after the other, in the order given. Fields are
//! quoted as RFC 4180 says (a run name may hold commas, quotes or line breaks); records end in
//! `\n` rather than RFC 4180's `\r\n`, which every CSV reader accepts and line tools (`awk`,
//! `cut`, `grep`) handle without a stray `\r` in the last column.

use std::fmt::Write as _;

use belier_stats::Point;

use crate::steps::{step_lines, StepLine};
use crate::summary::{MessageFigures, Summary};
use crate::NamedReport;

/// The header row of [`render_csv`].
const HEADER: &str = "run,offset_s,width_s,requests,succeeded,errors,rate_per_s,\
                      target_rate_per_s,p50_ms,p90_ms,p99_ms,max_ms,dropped,lag_p99_ms,\
                      in_flight,cpu_percent,messages_in,first_message_p99_ms,\
                      message_gap_p99_ms,reconnections";

/// Renders each run's per-interval series as CSV with a header row.
///
/// Latencies are milliseconds with three decimals, so microsecond resolution shows. The
/// open-loop columns (`target_rate_per_s`, `dropped`, `lag_p99_ms`) are empty for closed-loop
/// runs, where no arrival rate was set; the message columns (`messages_in`,
/// `first_message_p99_ms`, `message_gap_p99_ms`) for runs without streamed messages, and
/// `reconnections` (SSE streams sent as a reconnection, `--sse-reconnect`) for runs without any. Once a long run's series has coarsened (a point spans
/// several intervals, see `width_s`), its percentiles are the largest of the merged intervals'.
pub fn render_csv(runs: &[NamedReport]) -> String {
    let points: usize = runs.iter().map(|r| r.report.series.points().len()).sum();
    let mut out = String::with_capacity(HEADER.len() + 1 + points * 120);
    out.push_str(HEADER);
    out.push('\n');
    for run in runs {
        let name = field(run.name);
        let open = run.report.is_open_loop();
        let messages = run.report.totals.messages();
        let reconnecting = messages.is_some_and(|m| m.counts().reconnections > 0);
        for p in run.report.series.points() {
            // Writing into a String cannot fail.
            let _ = row(&mut out, &name, open, p);
            let _ = message_cells(&mut out, messages.is_some(), p);
            let _ = match reconnecting {
                true => writeln!(out, ",{}", p.reconnections),
                false => writeln!(out, ","),
            };
        }
    }
    out
}

/// The header row of [`render_csv_stats`].
const STATS_HEADER: &str = "run,name,requests,failures,failure_percent,rate_per_s,\
                            failures_per_s,min_ms,p50_ms,p90_ms,p99_ms,max_ms,bytes_in,bytes_out";

/// Name of the row that sums up a run, as Locust names it.
const AGGREGATED: &str = "Aggregated";

/// Renders each run's statistics as CSV with a header row: one row per step of a plan (its
/// requests, failures, rate over the run, latency percentiles of its complete responses), then
/// an `Aggregated` row for the whole run; a run of a single request has the `Aggregated` row
/// alone. The same figures as the per-step table of the other formats.
///
/// A failure is a request without a successful response (an error, or a status of 400 or
/// more). Latency cells are empty where no response arrived. The `Aggregated` rate is the
/// report's attempted rate (an open loop's, per second of its schedule); a step's, its requests
/// over the run's elapsed time. A run of streaming gRPC calls has rows of its messages after
/// its `Aggregated` row (see `message_rows`), and a run over several server or source
/// addresses a row for each (`backend 127.0.0.11:80`, `source 127.0.1.3`).
pub fn render_csv_stats(runs: &[NamedReport]) -> String {
    let mut out = String::from(STATS_HEADER);
    out.push('\n');
    for run in runs {
        let name = field(run.name);
        let r = run.report;
        let secs = r.elapsed.as_secs_f64();
        let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        for step in step_lines(r) {
            // Writing into a String cannot fail.
            let _ = stats_row(&mut out, &name, &step, per_s(step.failures));
        }
        let s = Summary::of(r);
        let requests = r.totals.requests();
        let failures = requests.saturating_sub(r.totals.succeeded());
        let l = &s.latency;
        let aggregated = StepLine {
            name: AGGREGATED.into(),
            requests,
            failures,
            failure_ratio: if requests == 0 {
                0.0
            } else {
                failures as f64 / requests as f64
            },
            rate: s.attempted_rate,
            responses: l.count,
            min_us: l.min_us,
            percentiles_us: crate::steps::STEP_PERCENTILES.map(|p| l.at(p).unwrap_or(0)),
            max_us: l.max_us,
            bytes_in: r.totals.bytes_in(),
            bytes_out: r.totals.bytes_out(),
        };
        let _ = stats_row(&mut out, &name, &aggregated, per_s(failures));
        if let Some(m) = &s.messages {
            let _ = message_rows(&mut out, &name, m, &per_s);
        }
        let _ = crate::routes::write_csv(&mut out, &name, r, &per_s);
    }
    out
}

/// A run of streaming gRPC calls' message rows, after its `Aggregated` row: `messages
/// received` and `messages sent` (their count in `requests`, and per second), then `first
/// message`, `message gap` and, when there were some, `message round trip` (how many were
/// timed, per second, and their times). Failure and byte cells are empty: they do not apply.
fn message_rows(
    out: &mut String,
    run: &str,
    m: &MessageFigures,
    per_s: &dyn Fn(u64) -> f64,
) -> std::fmt::Result {
    for (what, n) in [
        ("messages received", m.counts.received),
        ("messages sent", m.counts.sent),
    ] {
        writeln!(out, "{run},{what},{n},,,{:.3},,,,,,,,", per_s(n))?;
    }
    let times = [
        ("first message", &m.first),
        ("message gap", &m.gaps),
        ("message round trip", &m.round_trips),
    ];
    for (what, t) in times {
        if what == "message round trip" && t.count == 0 {
            continue;
        }
        let cells: Vec<String> = if t.count == 0 {
            vec![String::new(); 5]
        } else {
            let at = |p: f64| ms(t.at(p).unwrap_or(0));
            vec![ms(t.min_us), at(50.0), at(90.0), at(99.0), ms(t.max_us)]
        };
        writeln!(
            out,
            "{run},{what},{},,,{:.3},,{},,",
            t.count,
            per_s(t.count),
            cells.join(",")
        )?;
    }
    Ok(())
}

fn stats_row(out: &mut String, run: &str, s: &StepLine, failures_per_s: f64) -> std::fmt::Result {
    let [min, p50, p90, p99, max] = s.latency_cells(ms, "");
    writeln!(
        out,
        "{run},{},{},{},{:.2},{:.3},{:.3},{min},{p50},{p90},{p99},{max},{},{}",
        field(&s.name),
        s.requests,
        s.failures,
        s.failure_ratio * 100.0,
        s.rate,
        failures_per_s,
        s.bytes_in,
        s.bytes_out
    )
}

fn row(out: &mut String, name: &str, open: bool, p: &Point) -> std::fmt::Result {
    write!(
        out,
        "{name},{:.3},{:.3},{},{},{},{:.3},",
        p.offset.as_secs_f64(),
        p.width.as_secs_f64(),
        p.requests,
        p.succeeded,
        p.errors,
        p.rate(),
    )?;
    if open {
        write!(out, "{:.3}", p.target_rate())?;
    }
    write!(
        out,
        ",{},{},{},{},",
        ms(p.p50_us),
        ms(p.p90_us),
        ms(p.p99_us),
        ms(p.max_us)
    )?;
    if open {
        write!(out, "{},{}", p.dropped, ms(p.lag_p99_us))?;
    } else {
        out.push(',');
    }
    write!(out, ",{},{:.1}", p.in_flight, p.cpu * 100.0)
}

/// The row's message cells: its streamed messages in, and the p99 of their first message and
/// gaps (an empty cell where the interval timed none); all empty for a run without messages.
fn message_cells(out: &mut String, messages: bool, p: &Point) -> std::fmt::Result {
    if !messages {
        return write!(out, ",,,");
    }
    let time = |us: u64| if us == 0 { String::new() } else { ms(us) };
    write!(
        out,
        ",{},{},{}",
        p.messages_in,
        time(p.first_message_p99_us),
        time(p.gap_p99_us)
    )
}

// Microseconds as milliseconds with three decimals and no separators: `1234567` → `1234.567`.
use belier_vocabulary::format::ms_plain as ms;

/// `s` as one CSV field: quoted when it holds a comma, a quote or a line break, with inner
/// quotes doubled (RFC 4180, section 2, rules 6 and 7).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded;

    #[test]
    fn golden_csv() {
        crate::golden::check("series.csv", &seeded::render_pair(render_csv));
    }

    #[test]
    fn golden_csv_stats() {
        let (a, b) = (seeded::base(), seeded::new());
        let steps = seeded::with_steps();
        let reports = [a.report(), b.report(), steps.report()];
        let named: Vec<NamedReport> = ["base", "new", "shop"]
            .iter()
            .zip(&reports)
            .map(|(name, report)| NamedReport { name, report })
            .collect();
        let got = render_csv_stats(&named);
        crate::golden::check("stats.csv", &got);
        let rows = parse(&got);
        assert_eq!(rows[0].len(), 14);
        assert!(rows.iter().all(|r| r.len() == 14), "{got}");
        // A run of one request: the Aggregated row alone; a plan: a row per step, then it.
        let names: Vec<&str> = rows[1..].iter().map(|r| r[1].as_str()).collect();
        assert_eq!(
            names,
            [AGGREGATED, AGGREGATED, "login", "browse", "checkout", AGGREGATED]
        );
        // The steps add up to the run.
        let sum = |col: usize| -> u64 {
            rows[3..6]
                .iter()
                .map(|r| r[col].parse::<u64>().unwrap())
                .sum()
        };
        assert_eq!(sum(2), rows[6][2].parse::<u64>().unwrap());
        assert_eq!(rows[6][2], steps.totals.requests().to_string());
        // A step without responses has no latency, not a latency of zero.
        assert_eq!(rows[5][2], "0");
        assert!(rows[5][7..12].iter().all(String::is_empty), "{:?}", rows[5]);
    }

    #[test]
    fn a_run_of_streaming_calls_has_message_rows_after_its_aggregated_row() {
        let got = seeded::render_with_messages(render_csv_stats);
        let rows = parse(&got);
        assert!(rows.iter().all(|r| r.len() == 14), "{got}");
        let names: Vec<&str> = rows[1..].iter().map(|r| r[1].as_str()).collect();
        assert_eq!(
            names,
            [
                AGGREGATED,
                AGGREGATED,
                "messages received",
                "messages sent",
                "first message",
                "message gap",
                "message round trip"
            ]
        );
        let run = field(seeded::NEW);
        let want = [
            ("messages received", ",20001,,,13334.000,,,,,,,,"),
            ("messages sent", ",201,,,134.000,,,,,,,,"),
            (
                "message gap",
                ",19800,,,13200.000,,0.250,0.250,0.250,0.250,0.250,,",
            ),
            (
                "message round trip",
                ",1,,,0.667,,1.500,1.500,1.500,1.500,1.500,,",
            ),
        ];
        for (name, cells) in want {
            assert!(got.contains(&format!("{run},{name}{cells}\n")), "{got}");
        }
    }

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field(""), "");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field("cr\r"), "\"cr\r\"");
        assert_eq!(ms(0), "0.000");
        assert_eq!(ms(1), "0.001");
        assert_eq!(ms(1_234_567), "1234.567");
    }

    /// A minimal RFC 4180 reader, to check that what we write parses back to what we meant.
    fn parse(text: &str) -> Vec<Vec<String>> {
        let mut rows = vec![];
        let mut row = vec![];
        let mut cell = String::new();
        let mut chars = text.chars().peekable();
        let mut quoted = false;
        while let Some(c) = chars.next() {
            match (quoted, c) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    chars.next();
                    cell.push('"');
                }
                (true, '"') => quoted = false,
                (true, c) => cell.push(c),
                (false, '"') => quoted = true,
                (false, ',') => row.push(std::mem::take(&mut cell)),
                (false, '\n') => {
                    row.push(std::mem::take(&mut cell));
                    rows.push(std::mem::take(&mut row));
                }
                (false, c) => cell.push(c),
            }
        }
        assert!(!quoted && cell.is_empty() && row.is_empty(), "unterminated");
        rows
    }

    #[test]
    fn every_row_parses_back_with_the_run_name_intact() {
        let (a, b) = (seeded::base(), seeded::new());
        let reports = [a.report(), b.report()];
        let mut runs = seeded::named(&reports);
        let awkward = "multi\nline, \"quoted\"";
        runs[0].name = awkward;
        let rows = parse(&render_csv(&runs));
        let columns = HEADER.split(',').count();
        assert_eq!(columns, 20);
        assert!(rows.iter().all(|r| r.len() == columns), "{rows:?}");
        assert_eq!(rows[0].join(","), HEADER);
        let names: Vec<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
        assert_eq!(names, [awkward, awkward, seeded::NEW, seeded::NEW]);
        // Counts are exact: the rows add up to the totals.
        for (run, name) in [(&a, awkward), (&b, seeded::NEW)] {
            let sum = |col: usize| -> u64 {
                rows[1..]
                    .iter()
                    .filter(|r| r[0] == name)
                    .map(|r| r[col].parse::<u64>().unwrap())
                    .sum()
            };
            assert_eq!(sum(3), run.totals.requests());
            assert_eq!(sum(4), run.totals.succeeded());
            assert_eq!(sum(5), run.totals.errors());
        }
        // Closed loop: the open-loop columns are empty; open loop: filled.
        assert_eq!(
            (&rows[1][7], &rows[1][12], &rows[1][13]),
            (&"".into(), &"".into(), &"".into())
        );
        assert_eq!(rows[3][7], "700.000");
        assert_eq!(rows[3][12], "10");
    }

    #[test]
    fn no_runs_is_just_the_header() {
        assert_eq!(render_csv(&[]), format!("{HEADER}\n"));
    }
}

#[cfg(test)]
mod message_tests {
    use std::time::Duration;

    use belier_stats::{Gauges, Point, Series};

    use super::*;
    use crate::seeded;

    #[test]
    fn a_run_with_messages_has_their_cells_per_interval_and_others_empty_ones() {
        let mut run = seeded::streaming();
        let mut series = Series::new();
        let second = Duration::from_secs(1);
        series.push(Point::of(
            &run.totals,
            Gauges::default(),
            Duration::ZERO,
            second,
        ));
        run.series = series;
        let plain = seeded::base();
        let csv = render_csv(&[
            NamedReport {
                name: "streams",
                report: &run.report(),
            },
            NamedReport {
                name: "plain",
                report: &plain.report(),
            },
        ]);
        let mut lines = csv.lines();
        assert!(lines
            .next()
            .unwrap()
            .ends_with(",messages_in,first_message_p99_ms,message_gap_p99_ms,reconnections"));
        // 200 calls of 100 messages, the first after 1.000–1.199 ms, the others 0.250 ms apart.
        let streams = lines.next().unwrap();
        assert!(streams.ends_with(",20000,1.197,0.250,"), "{streams}");
        assert!(lines.all(|l| l.ends_with(",,,,")), "{csv}");
    }

    #[test]
    fn a_run_that_reconnected_counts_its_reconnections_per_interval() {
        let mut run = seeded::sse_reconnections();
        let mut series = Series::new();
        let second = Duration::from_secs(1);
        let point = Point::of(&run.totals, Gauges::default(), Duration::ZERO, second);
        series.push(point);
        run.series = series;
        let csv = render_csv(&[NamedReport {
            name: "sse",
            report: &run.report(),
        }]);
        let row = csv.lines().nth(1).unwrap();
        assert!(row.ends_with(",600,100.095,20.015,40"), "{row}");
    }
}
