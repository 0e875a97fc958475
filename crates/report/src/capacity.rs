//! A capacity search's text report: the steps' table, the answer, the behaviour past it (the
//! HTML page is `html::capacity`; the JSON document is the capacity crate's own, which it also
//! reads back).

use std::fmt::Write as _;

use belier_capacity::{kind_name, number, Outcome, StepKind};

/// Renders what a capacity search found as plain text.
pub fn render_capacity_text(outcome: &Outcome) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_text(&mut out, outcome);
    out
}

fn write_text(out: &mut String, o: &Outcome) -> std::fmt::Result {
    writeln!(out, "Capacity search  {}", o.url)?;
    writeln!(
        out,
        "  {} under SLO {}; {} steps in {:.0} s",
        o.dimension.name(),
        o.slos.join(", "),
        o.steps.len(),
        o.elapsed_s
    )?;
    let (target, achieved) = o.columns();
    writeln!(
        out,
        "\n  {:>3}  {:<9} {:>13} {:>11} {:>11} {:>10} {:>10} {:>10} {:>8} {:>9}  result",
        "#", "step", target, achieved, "goodput/s", "p50", "p99", "p99.9", "failed", "cancelled"
    )?;
    let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2} ms"));
    for (i, s) in o.steps.iter().enumerate() {
        let result = match (s.pass, &s.why) {
            (Some(true), _) => "pass".to_string(),
            (Some(false), Some(why)) => format!("fail: {why}"),
            (None, Some(why)) => format!("generator: {why}"),
            _ => "fail".into(),
        } + s.notes().as_str();
        writeln!(
            out,
            "  {:>3}  {:<9} {:>13} {:>11} {:>11} {:>10} {:>10} {:>10} {:>7.2}% {:>9}  {result}",
            i + 1,
            kind_name(s.kind),
            number(s.target_rate),
            number(s.achieved_rate),
            number(s.goodput),
            ms(s.p50_ms),
            ms(s.p99_ms),
            ms(s.p999_ms),
            s.failed_share() * 100.0,
            s.cancelled,
        )?;
    }
    write_server_timing(out, o)?;
    writeln!(out, "\n{}", o.answer_line())?;
    let overloaded = o.steps.iter().any(|s| s.kind == StepKind::Overload);
    if o.overload.is_none() && overloaded {
        writeln!(
            out,
            "Past capacity: the overload steps met the SLOs too (no way of failing seen)"
        )?;
    }
    if let Some(o) = &o.overload {
        writeln!(
            out,
            "Past capacity: {} ({}); {}",
            o.behaviour.name(),
            o.behaviour.note(),
            o.recovery_line()
        )?;
    }
    Ok(())
}

/// The steps' server timing (`--server-timing`), when their responses gave it: how the
/// latency splits between the server's work and the wait in front of it, step by step.
fn write_server_timing(out: &mut String, o: &Outcome) -> std::fmt::Result {
    if o.steps.iter().all(|s| s.server_timing.is_none()) {
        return Ok(());
    }
    writeln!(
        out,
        "\n  Server timing by step (the server's time: its `total` metric, else its largest; \
         outside: latency minus it)"
    )?;
    writeln!(
        out,
        "  {:>3}  {:<9} {:>10} {:>13} {:>13} {:>14} {:>14}",
        "#", "step", "p99", "server p50", "server p99", "outside p50", "outside p99"
    )?;
    let ms = |v: f64| format!("{v:.2} ms");
    for (i, s) in o.steps.iter().enumerate() {
        let Some(t) = &s.server_timing else { continue };
        writeln!(
            out,
            "  {:>3}  {:<9} {:>10} {:>13} {:>13} {:>14} {:>14}",
            i + 1,
            kind_name(s.kind),
            s.p99_ms.map_or("-".into(), ms),
            ms(t.server_p50_ms),
            ms(t.server_p99_ms),
            ms(t.outside_p50_ms),
            ms(t.outside_p99_ms)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
