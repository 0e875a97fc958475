//! Figures and run descriptions in words, shared by the text, Markdown and HTML reports: the
//! load line, the bound, the plan line, the sent and re-sent figures.

use std::fmt::Write as _;

use belier_results::{Model, RunInfo};

use crate::format::{ms, rate, thousands};
use crate::summary::Summary;

/// The plan and its users, for runs of scripted users.
pub(crate) fn plan_line(info: &RunInfo) -> Option<String> {
    if info.plan.is_none() && info.virtual_users.is_none() {
        return None;
    }
    let mut line = match &info.plan {
        Some(plan) => format!("plan {plan}"),
        None => "scripted users".to_string(),
    };
    if let Some(users) = info.virtual_users {
        line.push_str(&format!(": up to {} virtual users", thousands(users)));
    }
    if let Some(pacing) = info.pacing_s {
        line.push_str(&format!(
            ", one iteration per user every {} s",
            trim(pacing)
        ));
    }
    Some(line)
}

/// Open loop: the sent rate, "1,000.0/s"; with scripted users "144.6 iterations/s", since
/// their arrivals are iterations (see [`crate::Report::sent`]). Empty for a closed loop.
pub(crate) fn sent_rate(s: &Summary) -> String {
    let Some(o) = &s.open_loop else {
        return String::new();
    };
    if s.report.has_users() {
        format!("{} iterations/s", rate(o.sent_rate))
    } else {
        format!("{}/s", rate(o.sent_rate))
    }
}

/// Requests re-sent after the server closed their connection unread, and their share of all
/// requests: "3 (0.15 %)".
pub(crate) fn resent(s: &Summary) -> String {
    format!(
        "{} ({:.2} %)",
        thousands(s.report.totals.resent()),
        s.resent_share * 100.0
    )
}

/// What bounded the run: "1,000 requests or 30 s, whichever first", "4 s, the end of the
/// stages"; `None` when it ran until stopped.
pub(crate) fn bound(info: &RunInfo) -> Option<String> {
    // Stages end the run when they end (both load models), before any longer duration bound.
    let stages_end: f64 = info.stages.iter().map(|s| s.duration_s).sum();
    let time = match info.duration_s {
        _ if !info.stages.is_empty() && info.duration_s.is_none_or(|d| stages_end < d) => {
            Some(format!("{} s, the end of the stages", trim(stages_end)))
        }
        Some(d) => Some(format!("{} s", trim(d))),
        None => None,
    };
    match (info.requests, time) {
        (Some(n), Some(t)) => Some(format!("{} requests or {t}, whichever first", thousands(n))),
        (Some(n), None) => Some(format!("{} requests", thousands(n))),
        (None, time) => time,
    }
}

/// A latency figure of a run, or "–" when no response arrived (a zero would read as an
/// instant answer).
pub(crate) fn latency_cell(
    s: &Summary,
    figure: fn(&belier_stats::LatencySummary) -> String,
) -> String {
    if s.latency.count == 0 {
        "–".into()
    } else {
        figure(&s.latency)
    }
}

/// Where the run ran: `a 2-core host`, or each merged shard's host.
pub(crate) fn hosts(info: &RunInfo) -> String {
    if info.shard_hosts.is_empty() {
        return format!("a {}-core host", info.host_cores);
    }
    let each: Vec<String> = info.shard_hosts.iter().map(|h| h.describe()).collect();
    format!(
        "{} shards' hosts: {}",
        info.shard_hosts.len(),
        each.join(", ")
    )
}

/// `n` threads, in words: "1 thread", "2 threads".
pub(crate) fn threads(n: usize) -> String {
    if n == 1 {
        "1 thread".into()
    } else {
        format!("{n} threads")
    }
}

/// The load in one line: model, connections or rate and its stages, arrivals, threads.
pub(crate) fn load_line(info: &RunInfo) -> String {
    if info.plan.is_some() {
        return plan_load_line(info);
    }
    let stages = |unit: &str| {
        info.stages
            .iter()
            .map(|s| format!(" → {}{unit} over {} s", trim(s.target), trim(s.duration_s)))
            .collect::<String>()
    };
    match info.model {
        Model::Closed if !info.stages.is_empty() => format!(
            "closed loop, connections 0{} (peak {}), on {}",
            stages(""),
            info.connections,
            threads(info.threads)
        ),
        Model::Closed => match info.ramp_up_s {
            Some(d) => format!(
                "{} connections started over {} s, on {}",
                info.connections,
                trim(d),
                threads(info.threads)
            ),
            None => format!(
                "{} connections on {}",
                info.connections,
                threads(info.threads)
            ),
        },
        Model::Open => {
            let start = info.rate.unwrap_or(0.0);
            let shape = if info.stages.is_empty() {
                format!("{}/s", trim(start))
            } else {
                format!("{}/s{}", trim(start), stages("/s"))
            };
            let arrivals = match (info.arrivals.as_deref(), info.seed) {
                (Some("poisson"), Some(seed)) => format!("Poisson arrivals, seed {seed}"),
                (Some(a), _) => format!("{a} arrivals"),
                (None, _) => "even arrivals".into(),
            };
            let mut cap = info
                .max_in_flight
                .map(|c| format!(", at most {c} in flight"))
                .unwrap_or_default();
            if let Some(slack) = info.timer_slack_us {
                let _ = write!(cap, ", timer slack {}", ms(slack));
            }
            format!(
                "open loop at {shape} ({arrivals}), up to {} connections{cap}, on {}",
                info.max_connections.unwrap_or(info.connections),
                threads(info.threads)
            )
        }
    }
}

/// The load of a plan run, in virtual users and iterations rather than connections.
fn plan_load_line(info: &RunInfo) -> String {
    let users = thousands(info.virtual_users.unwrap_or(info.connections as u64));
    let stages = |unit: &str| {
        info.stages
            .iter()
            .map(|s| format!(" → {}{unit} over {} s", trim(s.target), trim(s.duration_s)))
            .collect::<String>()
    };
    match info.model {
        Model::Closed => {
            let mut line = if info.stages.is_empty() {
                format!("{users} virtual users on {}", threads(info.threads))
            } else {
                format!(
                    "closed loop, virtual users 0{} (peak {users}), on {}",
                    stages(""),
                    threads(info.threads)
                )
            };
            if let Some(pacing) = info.pacing_s {
                let _ = write!(line, ", one iteration per user every {} s", trim(pacing));
            }
            line
        }
        Model::Open => {
            let start = trim(info.rate.unwrap_or(0.0));
            let arrivals = match (info.arrivals.as_deref(), info.seed) {
                (Some("poisson"), Some(seed)) => format!("Poisson arrivals, seed {seed}"),
                (Some(a), _) => format!("{a} arrivals"),
                (None, _) => "even arrivals".into(),
            };
            format!(
                "iterations at {start}/s{} ({arrivals}), up to {users} virtual users, on {}",
                stages("/s"),
                threads(info.threads)
            )
        }
    }
}

/// `2000.0` → `2000`, `2.5` → `2.5`.
fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
