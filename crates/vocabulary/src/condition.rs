//! The one grammar of "metric op limit" expressions: a plan's thresholds (`login: p99 <
//! 300ms`), capacity SLOs (`p99<50ms`, `prom:QUERY <= 0.8`) and `belier compare --fail-if`
//! conditions (`p99>+10%`).
//!
//! The grammar finds the parts and where they are; each caller names its own metrics, reads
//! its limits with the vocabulary's parsers ([`crate::duration`], [`crate::percent`],
//! [`crate::rate`]) and looks its figures up. The evaluator is [`Comparison::holds`], or
//! [`Comparison::beyond`] where a value at its limit within float rounding must not count.

use std::fmt;

/// A comparison between a measured value and a limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// `<`
    Less,
    /// `<=`
    LessOrEqual,
    /// `>`
    Greater,
    /// `>=`
    GreaterOrEqual,
    /// `==`
    Equal,
}

impl Comparison {
    /// Every comparison, two-character ones first (a text's `<=` is not a `<`).
    pub const ALL: [Comparison; 5] = [
        Comparison::Equal,
        Comparison::LessOrEqual,
        Comparison::GreaterOrEqual,
        Comparison::Less,
        Comparison::Greater,
    ];

    /// The bounds (every comparison but `==`).
    pub const BOUNDS: [Comparison; 4] = [
        Comparison::LessOrEqual,
        Comparison::GreaterOrEqual,
        Comparison::Less,
        Comparison::Greater,
    ];

    /// Whether `actual OP bound` holds.
    pub fn holds(self, actual: f64, bound: f64) -> bool {
        match self {
            Comparison::Less => actual < bound,
            Comparison::LessOrEqual => actual <= bound,
            Comparison::Greater => actual > bound,
            Comparison::GreaterOrEqual => actual >= bound,
            Comparison::Equal => actual == bound,
        }
    }

    /// Whether `actual` is strictly beyond `limit` in the direction of a strict comparison
    /// (`<` or `>`), ignoring float rounding: a p99 of exactly 250 ms is not beyond
    /// `>250ms`. The other comparisons are never beyond.
    pub fn beyond(self, actual: f64, limit: f64) -> bool {
        let scale = actual.abs().max(limit.abs()).max(1.0);
        let close = actual.is_finite() && (actual - limit).abs() <= 1e-9 * scale;
        !close
            && match self {
                Comparison::Greater => actual > limit,
                Comparison::Less => actual < limit,
                _ => false,
            }
    }

    /// As written: `<`, `<=`, `>`, `>=`, `==`.
    pub fn symbol(self) -> &'static str {
        match self {
            Comparison::Less => "<",
            Comparison::LessOrEqual => "<=",
            Comparison::Greater => ">",
            Comparison::GreaterOrEqual => ">=",
            Comparison::Equal => "==",
        }
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// Which operator of a text is the expression's, when it holds several.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The first: a metric name holds none, a limit may (`p99 < 1s`).
    First,
    /// The last: the metric is a query with operators of its own (`prom:sum(up > 0) < 3`).
    Last,
}

/// An expression cut into metric, comparison and limit; each part trimmed, with the byte
/// offset where it starts in the text given to [`split`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts<'a> {
    /// The metric, as written.
    pub metric: &'a str,
    /// Where the metric starts.
    pub metric_at: usize,
    /// The comparison.
    pub comparison: Comparison,
    /// Where the comparison starts.
    pub comparison_at: usize,
    /// The limit, as written.
    pub limit: &'a str,
    /// Where the limit starts.
    pub limit_at: usize,
}

/// Cuts `text` at one of `comparisons` (the one [`Pick`] says; at one place, the longer
/// operator); `None` when it holds none of them.
pub fn split<'a>(text: &'a str, comparisons: &[Comparison], pick: Pick) -> Option<Parts<'a>> {
    let found = comparisons.iter().filter_map(|&c| {
        let at = match pick {
            Pick::First => text.find(c.symbol()),
            Pick::Last => text.rfind(c.symbol()),
        };
        at.map(|i| (i, c))
    });
    let (at, comparison) = match pick {
        Pick::First => found.min_by_key(|(i, c)| (*i, std::cmp::Reverse(c.symbol().len()))),
        Pick::Last => found.max_by_key(|(i, c)| (*i + c.symbol().len(), c.symbol().len())),
    }?;
    let before = &text[..at];
    let after = &text[at + comparison.symbol().len()..];
    let metric = before.trim();
    let limit = after.trim();
    Some(Parts {
        metric,
        metric_at: before.len() - before.trim_start().len(),
        comparison,
        comparison_at: at,
        limit,
        limit_at: text.len() - after.trim_start().len(),
    })
}

/// An expression's scope, `NAME:` before it (a plan's step; the text after the last `:`, as
/// a name may hold `:` itself): the name, the rest, and where the rest starts. `Err` with the
/// offset when the name is empty.
pub fn scope(text: &str) -> Result<(Option<&str>, &str, usize), (usize, String)> {
    match text.rfind(':') {
        Some(i) => {
            let name = text[..i].trim();
            if name.is_empty() {
                return Err((0, "expected a step name before `:`".into()));
            }
            Ok((Some(name), &text[i + 1..], i + 1))
        }
        None => Ok((None, text, 0)),
    }
}

/// A percentile metric's rank: `p99` → 99, `p99.9` → 99.9, `median` → 50; `None` for
/// anything else, a rank above 100 included.
pub fn percentile(metric: &str) -> Option<f64> {
    if metric == "median" {
        return Some(50.0);
    }
    let p: f64 = metric.strip_prefix('p')?.parse().ok()?;
    (0.0..=100.0).contains(&p).then_some(p)
}

/// A latency limit, in µs: a duration with its unit (`200ms`, `1.5s`); the error says what
/// is wrong, quoting `limit`.
pub fn latency_limit_us(limit: &str) -> Result<f64, String> {
    if limit.parse::<f64>().is_ok() {
        return Err(format!(
            "`{limit}`: a latency needs a unit, e.g. `200ms` or `1s`"
        ));
    }
    crate::duration::parse(limit)
        .map(|d| d.as_secs_f64() * 1e6)
        .map_err(|e| {
            format!(
                "expected a latency such as `200ms`, found `{limit}`: {}",
                e.problem
            )
        })
}

/// A share limit written as a percentage (`1%`), as a fraction (`0.01`); the error says
/// what is wrong, quoting `limit`.
pub fn share_limit(limit: &str) -> Result<f64, String> {
    match crate::percent::parse(limit) {
        Ok(p) => Ok(p / 100.0),
        Err(crate::percent::PercentError::NoPercentSign(_)) => Err(format!(
            "expected a percentage such as `1%`, found `{limit}`"
        )),
        Err(_) => Err(format!(
            "expected a percentage from 0% to 100%, found `{limit}`"
        )),
    }
}

#[cfg(test)]
mod tests;
