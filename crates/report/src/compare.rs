//! Comparing two runs, and the conditions a CI regression gate fails on.
//!
//! [`compare`] gives the [`Delta`] of each headline metric from a base run to a new one;
//! [`parse_fail_if`] reads conditions such as `p99>+10%,errors>0.5%`, and [`failed`] says, with
//! figures, which of them hold. Conditions are strict (`>` is "above", never "at"), and a value
//! equal to its limit within float rounding does not fail a gate.

use std::fmt::{self, Write as _};

use belier_stats::LatencySummary;
use belier_vocabulary::condition::{self, Pick};
use belier_vocabulary::duration::{self, Rules, Unit};
use belier_vocabulary::message_metric::{self, MessageMetric, MessageTime};
use belier_vocabulary::percent::{self, PercentError};
use belier_vocabulary::{format as vocabulary, rate as rates, Comparison};
use serde::Serialize;
use serde_json::json;

use crate::format::rate;
use crate::summary::{MessageFigures, Summary};
use crate::Report;

/// The metrics [`compare`] reports and conditions may name, in report order.
pub const METRICS: [&str; 8] = [
    "rate",
    "throughput",
    "p50",
    "p90",
    "p99",
    "p99.9",
    "max",
    "errors",
];

/// One metric of the base and the new run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Delta {
    /// One of [`METRICS`].
    pub metric: &'static str,
    /// Value in the base run, in `unit`.
    pub base: f64,
    /// Value in the new run, in `unit`.
    pub new: f64,
    /// Relative change from base to new (`0.1` is +10 %); `None` when the base is 0.
    pub change: Option<f64>,
    /// `req/s` for rates, `ms` for latencies and message times, `%` for the error ratio,
    /// `msg` and `msg/s` for streaming calls' messages.
    pub unit: &'static str,
    /// Why the new run has no such figure (a message figure of a run without streamed
    /// messages, or without that time): a condition on it then fails, saying so.
    #[serde(skip)]
    pub absent: Option<&'static str>,
}

/// The deltas of every metric in [`METRICS`] from `base` to `new`.
///
/// `rate` counts every request issued, `throughput` only successes (status below 400);
/// latencies are from the intended start, responses only; `errors` is the share of requests
/// that did not succeed (errors and statuses from 400 on), as a percentage.
///
/// When either run made streaming gRPC calls, the deltas of their messages follow (see
/// [`MESSAGE_METRICS`]); a run without them counts 0 there.
pub fn compare(base: &Report, new: &Report) -> Vec<Delta> {
    let (b, n) = (Figures::of(base), Figures::of(new));
    let mut deltas: Vec<Delta> = METRICS
        .iter()
        .map(|&metric| delta(metric, unit(metric), b.get(metric), n.get(metric)))
        .collect();
    deltas.extend(message_deltas(b.messages.as_ref(), n.messages.as_ref()));
    deltas
}

fn delta(metric: &'static str, unit: &'static str, base: f64, new: f64) -> Delta {
    Delta {
        metric,
        base,
        new,
        change: (base != 0.0).then(|| (new - base) / base),
        unit,
        absent: None,
    }
}

/// The metrics of streaming calls' messages that [`compare`] adds when either run had them,
/// with their units, in report order: counts, rates per second of the run, then times (ms).
/// `round_trip_p99` only when either run's responses answered its messages one for one.
/// Conditions name them so, or by the vocabulary's names (`ttft p99`, `itl_p50`, `ws_rtt p99`:
/// [`belier_vocabulary::message_metric`]).
pub const MESSAGE_METRICS: [(&str, &str); 9] = [
    ("messages_received", "msg"),
    ("messages_sent", "msg"),
    ("received_per_s", "msg/s"),
    ("sent_per_s", "msg/s"),
    ("first_message_p50", "ms"),
    ("first_message_p99", "ms"),
    ("gap_p50", "ms"),
    ("gap_p99", "ms"),
    ("round_trip_p99", "ms"),
];

/// The deltas of [`MESSAGE_METRICS`]; none when neither run had messages.
fn message_deltas(base: Option<&MessageFigures>, new: Option<&MessageFigures>) -> Vec<Delta> {
    if base.is_none() && new.is_none() {
        return Vec::new();
    }
    let trips = |m: Option<&MessageFigures>| m.is_some_and(|m| m.round_trips.count > 0);
    let round_trips = trips(base) || trips(new);
    MESSAGE_METRICS
        .iter()
        .filter(|(metric, _)| round_trips || *metric != "round_trip_p99")
        .map(|&(metric, unit)| {
            let get = |m: Option<&MessageFigures>| m.map_or(0.0, |m| message_figure(m, metric));
            Delta {
                absent: absent(metric, new),
                ..delta(metric, unit, get(base), get(new))
            }
        })
        .collect()
}

/// Why `metric` of [`MESSAGE_METRICS`] has no value in `m`, the new run's messages.
fn absent(metric: &str, m: Option<&MessageFigures>) -> Option<&'static str> {
    let Some(m) = m else {
        return Some(message_metric::NO_MESSAGES);
    };
    let Ok(Some(MessageMetric::Time { time, .. })) = MessageMetric::parse(metric) else {
        return None;
    };
    let times = match time {
        MessageTime::FirstMessage => &m.first,
        MessageTime::Gap => &m.gaps,
        MessageTime::RoundTrip => &m.round_trips,
    };
    (times.count == 0).then(|| time.missing())
}

/// `metric` of [`MESSAGE_METRICS`] in `m`.
fn message_figure(m: &MessageFigures, metric: &str) -> f64 {
    let ms = |l: &LatencySummary, p: f64| l.at(p).unwrap_or(0) as f64 / 1000.0;
    match metric {
        "messages_received" => m.counts.received as f64,
        "messages_sent" => m.counts.sent as f64,
        "received_per_s" => m.received_rate,
        "sent_per_s" => m.sent_rate,
        "first_message_p50" => ms(&m.first, 50.0),
        "first_message_p99" => ms(&m.first, 99.0),
        "gap_p50" => ms(&m.gaps, 50.0),
        "gap_p99" => ms(&m.gaps, 99.0),
        _ => ms(&m.round_trips, 99.0),
    }
}

struct Figures {
    rate: f64,
    throughput: f64,
    latency: LatencySummary,
    errors_percent: f64,
    messages: Option<MessageFigures>,
}

impl Figures {
    fn of(r: &Report) -> Figures {
        let (requests, succeeded) = (r.totals.requests(), r.totals.succeeded());
        let s = Summary::of(r);
        Figures {
            messages: s.messages,
            rate: s.attempted_rate,
            throughput: s.throughput,
            latency: s.latency,
            errors_percent: if requests == 0 {
                0.0
            } else {
                (requests - succeeded) as f64 * 100.0 / requests as f64
            },
        }
    }

    fn get(&self, metric: &str) -> f64 {
        let ms = |us: u64| us as f64 / 1000.0;
        let at = |p: f64| ms(self.latency.at(p).unwrap_or(0));
        match metric {
            "rate" => self.rate,
            "throughput" => self.throughput,
            "p50" => at(50.0),
            "p90" => at(90.0),
            "p99" => at(99.0),
            "p99.9" => at(99.9),
            "max" => ms(self.latency.max_us),
            _ => self.errors_percent,
        }
    }
}

fn unit(metric: &str) -> &'static str {
    if let Some(&(_, unit)) = MESSAGE_METRICS.iter().find(|(m, _)| *m == metric) {
        return unit;
    }
    match metric {
        "rate" | "throughput" => "req/s",
        "errors" => "%",
        _ => "ms",
    }
}

/// A value in its unit, as the reports print it: `12.000 ms`, `1,000.0/s`, `0.500 %`.
fn show(v: f64, unit: &str) -> String {
    match unit {
        "req/s" => format!("{}/s", rate(v)),
        "ms" => vocabulary::ms_of_ms(v),
        "msg" => vocabulary::thousands(v.round() as u64),
        "msg/s" => format!("{}/s", rate(v)),
        _ => format!("{v:.3} %"),
    }
}

/// A condition of a regression gate, such as `p99>+10%`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Condition {
    /// One of [`METRICS`].
    pub metric: &'static str,
    /// Whether the condition holds above or below the limit.
    pub op: Op,
    /// The limit.
    pub limit: Limit,
}

/// The comparison of a [`Condition`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `>`: holds when the figure is strictly above the limit.
    Above,
    /// `<`: holds when the figure is strictly below the limit.
    Below,
}

impl Op {
    /// The vocabulary's comparison: `>` or `<`.
    pub fn comparison(self) -> Comparison {
        match self {
            Op::Above => Comparison::Greater,
            Op::Below => Comparison::Less,
        }
    }
}

/// What a [`Condition`] compares.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// The change from base to new, in percent (`+10%` is `10.0`, `-5%` is `-5.0`).
    ChangePercent(f64),
    /// The new run's value, in the metric's unit (ms, req/s or %).
    Value(f64),
}

impl fmt::Display for Condition {
    /// The condition as it would be written: `p99>+10%`, `p99>250ms`, `rate<900`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.op == Op::Above { '>' } else { '<' };
        let limit = match (self.limit, unit(self.metric)) {
            (Limit::ChangePercent(p), _) => format!("{}%", signed(p)),
            (Limit::Value(v), "ms") => format!("{}ms", trim(v)),
            (Limit::Value(v), "%") => format!("{}%", trim(v)),
            (Limit::Value(v), _) => trim(v),
        };
        write!(f, "{}{op}{limit}", self.metric)
    }
}

/// `10.0` → `10`, `2.5` → `2.5`.
fn trim(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `10.0` → `+10`, `-5.0` → `-5`.
fn signed(v: f64) -> String {
    if v < 0.0 {
        trim(v)
    } else {
        // `abs`: -0.0 (from `-0%`) is not below zero, yet prints its sign: `+-0%`.
        format!("+{}", trim(v.abs()))
    }
}

/// Parses a comma-separated list of conditions, such as `p99>+10%,rate<-5%,errors>0.5%`.
///
/// Each condition is a metric of [`METRICS`], `>` or `<`, and a limit: either a signed
/// relative change from base to new (`+10%`, `-5%`), or a bound on the new run's value — a
/// duration for latencies (`250ms`, `1.5s`, `800us`), a percentage for `errors` (`0.5%`), a
/// number of requests per second for `rate` and `throughput` (`900`, `900/s`). Spaces are
/// ignored.
///
/// A figure of streamed messages is named as compare shows it (`first_message_p99`) or by
/// the vocabulary's names (`ttft p99`, `itl_p50`, `ws_rtt p99`); its limit is a duration, a
/// number of messages, or messages per second. The error names the offending condition and
/// what was expected.
pub fn parse_fail_if(expr: &str) -> Result<Vec<Condition>, String> {
    if expr.trim().is_empty() {
        return Err("no condition given: expected e.g. 'p99>+10%,errors>0.5%'".into());
    }
    expr.split(',')
        .map(|part| parse_condition(part, expr))
        .collect()
}

/// A latency limit is a duration with its unit, in seconds at most: `1m` is refused rather
/// than read as a minute.
const LATENCY: Rules = Rules {
    bare_seconds: false,
    longest_unit: Unit::Second,
};

fn parse_condition(part: &str, expr: &str) -> Result<Condition, String> {
    let s: String = part.chars().filter(|c| !c.is_whitespace()).collect();
    if s.is_empty() {
        return Err(format!(
            "empty condition in '{expr}': conditions are separated by single commas"
        ));
    }
    let parts = condition::split(&s, &Comparison::ALL, Pick::First)
        .ok_or_else(|| format!("'{s}': expected METRIC>LIMIT or METRIC<LIMIT, e.g. 'p99>+10%'"))?;
    let name = parts.metric;
    let metric = match message_row(part, &s)? {
        Some(row) => row,
        None => METRICS
            .iter()
            .copied()
            .find(|&m| m == name)
            .ok_or_else(|| {
                format!(
                    "'{s}': unknown metric '{name}', expected one of {}, or a figure of streamed \
                 messages (ttft p99, itl p99, ws_rtt p99, messages_received…)",
                    METRICS.join(", ")
                )
            })?,
    };
    let op = match parts.comparison {
        Comparison::Greater => Op::Above,
        Comparison::Less => Op::Below,
        _ => return Err(only_above_and_below(&s)),
    };
    let limit = parts.limit;
    if limit.starts_with(['=', '<', '>']) {
        return Err(only_above_and_below(&s));
    }
    if limit.is_empty() {
        return Err(format!("'{s}': missing limit after '{}'", parts.comparison));
    }
    let limit = match limit.strip_prefix(['+', '-']) {
        Some(magnitude) => change_limit(&s, limit, magnitude)?,
        None => value_limit(&s, metric, limit)?,
    };
    Ok(Condition { metric, op, limit })
}

/// The row of [`MESSAGE_METRICS`] the metric of `part` names (as written, before its spaces
/// go: `ttft p99`), `None` when it names no message figure; `Err` for one that compare does
/// not show (`ttft p90`) or one written wrongly. `s` is the condition as errors quote it.
fn message_row(part: &str, s: &str) -> Result<Option<&'static str>, String> {
    let Some(parts) = condition::split(part.trim(), &Comparison::ALL, Pick::First) else {
        return Ok(None);
    };
    let Some(wanted) = MessageMetric::parse(parts.metric).map_err(|e| format!("'{s}': {e}"))?
    else {
        return Ok(None);
    };
    let canonical = wanted.canonical();
    let row = MESSAGE_METRICS.iter().map(|&(row, _)| row).find(|row| {
        MessageMetric::parse(row).is_ok_and(|m| m.is_some_and(|m| m.canonical() == canonical))
    });
    row.map(Some).ok_or_else(|| {
        let rows: Vec<&str> = MESSAGE_METRICS.iter().map(|&(row, _)| row).collect();
        format!(
            "'{s}': compare shows no {wanted}; of streamed messages it shows {}",
            rows.join(", ")
        )
    })
}

fn only_above_and_below(s: &str) -> String {
    format!("'{s}': only '>' (above) and '<' (below) are supported")
}

/// `'{s}': 'TEXT' is not a number`.
fn not_a_number(s: &str, text: &str) -> String {
    format!("'{s}': '{text}' is not a number")
}

/// A signed relative change, `+10%` or `-5%` (`magnitude` without its sign).
fn change_limit(s: &str, limit: &str, magnitude: &str) -> Result<Limit, String> {
    let magnitude = magnitude.strip_suffix('%').ok_or_else(|| {
        format!("'{s}': a signed limit is a relative change and ends in '%', like '+10%'")
    })?;
    // Any size (a rise of 150 % is one), but no second sign.
    let v = match magnitude.parse::<f64>() {
        Ok(v) if v.is_finite() && !magnitude.starts_with(['+', '-']) => v,
        _ => return Err(not_a_number(s, magnitude)),
    };
    Ok(Limit::ChangePercent(if limit.starts_with('-') {
        -v
    } else {
        v
    }))
}

/// A bound on the new run's value, in the metric's unit.
fn value_limit(s: &str, metric: &str, limit: &str) -> Result<Limit, String> {
    let v = match unit(metric) {
        "ms" => duration::parse_by(limit, LATENCY)
            .map(|d| d.as_nanos() as f64 / 1e6)
            .map_err(|_| {
                format!(
                    "'{s}': {metric} takes a duration like '250ms', '1.5s' or '800us', \
                     or a signed change like '+10%'"
                )
            })?,
        "%" => percent::parse(limit).map_err(|e| match e {
            PercentError::NoPercentSign(_) => format!(
                "'{s}': errors takes a percentage like '0.5%', or a signed change like '+10%'"
            ),
            PercentError::NotANumber(text) => not_a_number(s, &text),
            PercentError::OutOfRange(_) => {
                format!("'{s}': an error percentage is between 0 and 100")
            }
        })?,
        "msg" => match limit.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => v,
            _ => {
                return Err(format!(
                    "'{s}': {metric} takes a number of messages like '1000', or a signed \
                     change like '-5%'"
                ))
            }
        },
        unit => {
            if limit.ends_with('%') {
                let what = if unit == "msg/s" {
                    "messages"
                } else {
                    "requests"
                };
                return Err(format!(
                    "'{s}': {metric} takes {what} per second like '900', or a signed \
                     change like '-5%'"
                ));
            }
            rates::parse(limit).map_err(|e| not_a_number(s, &e.number))?
        }
    };
    Ok(Limit::Value(v))
}

/// One sentence, with figures, for each condition that holds; empty when the gate passes.
///
/// A relative condition on a metric whose base is 0 treats any rise as unbounded: errors going
/// from none to some fail `errors>+50%`, rather than passing because the change is undefined.
pub fn failed(deltas: &[Delta], conditions: &[Condition]) -> Vec<String> {
    verdicts(deltas, conditions)
        .into_iter()
        .filter_map(|(_, failure)| failure)
        .collect()
}

/// Each condition with its failure sentence (as in [`failed`]), or `None` when it did not
/// hold. A condition on a figure of streamed messages that the new run did not record (or
/// neither run: then compare shows no such row) fails, saying so: a gate must not pass on a
/// figure it could not read. A condition on another metric missing from `deltas` does not
/// hold.
pub fn verdicts(deltas: &[Delta], conditions: &[Condition]) -> Vec<(Condition, Option<String>)> {
    conditions
        .iter()
        .map(|c| {
            let failure = match deltas.iter().find(|d| d.metric == c.metric) {
                Some(d) => failure(d, c),
                None if is_message_row(c.metric) => {
                    // Without a row: neither run streamed, or (the one row shown on condition)
                    // neither had round trips.
                    let streamed = deltas.iter().any(|d| is_message_row(d.metric));
                    let why = if streamed {
                        MessageTime::RoundTrip.missing()
                    } else {
                        "no streamed messages"
                    };
                    Some(format!(
                        "{}: nothing to judge in either run ({why})",
                        c.metric
                    ))
                }
                None => None,
            };
            (*c, failure)
        })
        .collect()
}

fn is_message_row(metric: &str) -> bool {
    MESSAGE_METRICS.iter().any(|(m, _)| *m == metric)
}

/// The sentence saying how `d` meets `c`, or `None` when the condition does not hold.
fn failure(d: &Delta, c: &Condition) -> Option<String> {
    if let Some(why) = d.absent {
        return Some(format!(
            "{}: nothing to judge in the new run ({why})",
            c.metric
        ));
    }
    let from_to = format!("{} → {}", show(d.base, d.unit), show(d.new, d.unit));
    match c.limit {
        Limit::ChangePercent(limit) => {
            let change = match d.change {
                Some(x) => x * 100.0,
                None if d.new > d.base => f64::INFINITY,
                None if d.new < d.base => f64::NEG_INFINITY,
                None => 0.0,
            };
            if !c.op.comparison().beyond(change, limit) {
                return None;
            }
            let moved = match d.change {
                None => "rose from zero".to_string(),
                Some(x) if x > 0.0 => format!("rose {:.1} %", x * 100.0),
                Some(x) if x < 0.0 => format!("fell {:.1} %", -x * 100.0),
                Some(_) => "did not change".to_string(),
            };
            Some(format!(
                "{} {moved} ({from_to}), limit {} %",
                c.metric,
                signed(limit)
            ))
        }
        Limit::Value(limit) => {
            if !c.op.comparison().beyond(d.new, limit) {
                return None;
            }
            let side = if c.op == Op::Above { "above" } else { "below" };
            Some(format!(
                "{} is {}, {side} the limit {} (base {})",
                c.metric,
                show(d.new, d.unit),
                show(limit, d.unit),
                show(d.base, d.unit)
            ))
        }
    }
}

/// A relative change as a percentage with one decimal and a sign: `+23.4 %`; `n/a` when the
/// base was 0 and the new value is not.
fn change_cell(d: &Delta) -> String {
    match d.change {
        // Rounded first so a tiny fall does not print as "-0.0 %".
        Some(x) => format!("{:+.1} %", ((x * 1000.0).round() / 10.0) + 0.0),
        None if d.new == d.base => "+0.0 %".into(),
        None => "n/a".into(),
    }
}

/// `s` with control characters escaped, so a name cannot move the terminal's cursor.
fn printable(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// The comparison as an aligned table (metric, base, new, change), followed by the failed
/// conditions, if any.
pub fn render_comparison_text(
    base_name: &str,
    new_name: &str,
    deltas: &[Delta],
    failures: &[String],
) -> String {
    let mut rows = vec![[
        "metric".to_string(),
        "base".to_string(),
        "new".to_string(),
        "change".to_string(),
    ]];
    rows.extend(deltas.iter().map(|d| {
        [
            d.metric.to_string(),
            show(d.base, d.unit),
            show(d.new, d.unit),
            change_cell(d),
        ]
    }));
    let width = |col: usize| rows.iter().map(|r| r[col].chars().count()).max();
    let widths: Vec<usize> = (0..4).map(|c| width(c).unwrap_or(0)).collect();

    let mut out = String::with_capacity(1024);
    // Writing into a String cannot fail; the `let _` discard that impossible error.
    let _ = writeln!(
        out,
        "Comparing new '{}' with base '{}'\n",
        printable(new_name),
        printable(base_name)
    );
    for r in &rows {
        let _ = writeln!(
            out,
            "  {:<w0$}  {:>w1$}  {:>w2$}  {:>w3$}",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        );
    }
    if !failures.is_empty() {
        let n = failures.len();
        let _ = writeln!(
            out,
            "\nFAILED: {n} condition{} held",
            if n == 1 { "" } else { "s" }
        );
        for f in failures {
            let _ = writeln!(out, "  - {f}");
        }
    }
    out
}

/// The comparison as JSON: `base` and `new` names, `metrics` (the deltas; `change` is
/// relative, `0.1` for +10 %, `null` when the base is 0), `failures` and `failed`.
pub fn render_comparison_json(
    base_name: &str,
    new_name: &str,
    deltas: &[Delta],
    failures: &[String],
) -> String {
    let doc = json!({
        "base": base_name,
        "new": new_name,
        "metrics": deltas,
        "failures": failures,
        "failed": !failures.is_empty(),
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("JSON values always serialise");
    s.push('\n');
    s
}

/// The comparison as JUnit XML: one test suite, `NEW vs BASE`, with a test case per
/// `--fail-if` condition (class `belier.compare`, named as written); a condition that held is
/// a failure whose message gives the measured change or value against the limit. The
/// document follows `schema/junit.xsd`.
pub fn render_comparison_junit(
    base_name: &str,
    new_name: &str,
    verdicts: &[(Condition, Option<String>)],
) -> String {
    use crate::junit::{render_suites, Case, Failure, Suite};
    let cases = verdicts
        .iter()
        .map(|(c, failure)| Case {
            classname: "belier.compare",
            name: c.to_string(),
            failure: failure.as_ref().map(|why| Failure {
                message: why.clone(),
                kind: "compare",
                details: format!(
                    "'{c}' held comparing new '{new_name}' with base '{base_name}': {why}"
                ),
            }),
        })
        .collect();
    render_suites(&[Suite {
        name: format!("{new_name} vs {base_name}"),
        time: 0.0,
        timestamp: None,
        properties: Vec::new(),
        cases,
    }])
}

#[cfg(test)]
mod tests;
