//! The human-readable report.

use std::fmt::Write as _;

use belier_stats::LatencySummary;

use crate::format::{
    bytes, column_width, cut, ms, ms_f, pass_percent, percentile_label, rate, thousands,
    EXPRESSION_COLUMN, NAME_COLUMN,
};
use crate::summary::Summary;
use crate::verdict::Verdict;
use crate::wording::{bound, load_line, plan_line, resent};
use crate::Report;

/// Renders `report` as plain text, one section per heading.
pub fn render_text(report: &Report) -> String {
    let mut out = String::with_capacity(2048);
    // Writing into a String cannot fail; the `let _` below discard that impossible error.
    let _ = write_text(&mut out, report);
    out
}

fn write_text(out: &mut String, r: &Report) -> std::fmt::Result {
    let s = Summary::of(r);
    write_heading(out, r)?;
    write_summary(out, &s)?;
    write_latency(out, &s)?;
    crate::exemplars::write_text(out, r)?;
    write_lag(out, &s)?;
    write_phases(out, &s)?;
    write_messages(out, &s, crate::messages::is_websocket(&r.info.url))?;
    write_status_codes(out, r)?;
    write_errors(out, &s)?;
    crate::routes::write_text(out, r)?;
    crate::held::write_text(out, r)?;
    crate::quic::write_text(out, r)?;
    crate::server_timing::write_text(out, r)?;
    write_steps(out, &s)?;
    crate::scenarios::write_text(out, r)?;
    write_thresholds(out, r)?;
    crate::changes::write_text(out, r)?;
    write_generator(out, r)?;
    write_verdict(out, &s.verdict)
}

/// What was run, how and where, and what the reader must know first (an interruption, a
/// threshold that stopped the run, warnings).
fn write_heading(out: &mut String, r: &Report) -> std::fmt::Result {
    let info = r.info;
    match &info.plan {
        // A plan's requests have many methods and paths: the header names the plan instead.
        Some(plan) => writeln!(
            out,
            "belier {}  plan {plan} → {}",
            info.belier_version, info.url
        )?,
        None => writeln!(
            out,
            "belier {}  {} {}",
            info.belier_version, info.method, info.url
        )?,
    }
    writeln!(
        out,
        "  {}, {}, keep-alive {}, timeout {} s, {}",
        load_line(info),
        info.protocol,
        if info.keepalive { "on" } else { "off" },
        info.timeout_s,
        bound(info).map_or("run until stopped".into(), |b| format!("stop after {b}")),
    )?;
    writeln!(
        out,
        "  started {} on {}, target address {}",
        info.started_at,
        crate::wording::hosts(info),
        info.address
    )?;
    if let Some(shard) = &info.shard {
        writeln!(out, "  {}", shard.describe())?;
    }
    for w in &info.workers {
        writeln!(out, "  {}", w.describe())?;
    }
    // A plan run already said all of it in the two lines above.
    if let Some(line) = plan_line(info).filter(|_| info.plan.is_none()) {
        writeln!(out, "  {line}")?;
    }
    if r.interrupted {
        writeln!(
            out,
            "  INTERRUPTED: stopped early by the user; the figures cover the run so far"
        )?;
    }
    for (t, stop) in r
        .thresholds
        .iter()
        .filter_map(|t| Some((t, t.stopped_run.as_ref()?)))
    {
        writeln!(
            out,
            "  STOPPED by threshold `{}` at {:.1} s ({}); the figures cover the run so far",
            t.expression,
            stop.at_ms as f64 / 1e3,
            stop.actual
        )?;
    }
    for w in &r.warnings {
        writeln!(out, "  WARNING: {w}")?;
    }
    Ok(())
}

/// The "Summary" section: requests and their rates, outcomes, bytes, connections.
fn write_summary(out: &mut String, s: &Summary) -> std::fmt::Result {
    let (r, t) = (s.report, s.report.totals);
    let requests = t.requests();
    writeln!(out, "\nSummary")?;
    // An open loop's rates are per second of the schedule, as the verdict counts them (the
    // run's last moments, spent on the last answers, would dilute them). With scripted users
    // the schedule's arrivals are iterations: those started are set against it.
    match &s.open_loop {
        Some(o) if !r.has_users() => writeln!(
            out,
            "  Requests      {:>12}   {}/s sent, target {}/s",
            thousands(requests),
            rate(o.sent_rate),
            rate(o.target_rate)
        )?,
        _ => {
            writeln!(
                out,
                "  Requests      {:>12}   {}/s attempted",
                thousands(requests),
                rate(s.attempted_rate)
            )?;
            if let Some(o) = &s.open_loop {
                writeln!(
                    out,
                    "  Iterations    {:>12}   {}/s started, target {}/s",
                    thousands(o.sent),
                    rate(o.sent_rate),
                    rate(o.target_rate)
                )?;
            }
        }
    }
    writeln!(
        out,
        "  Succeeded     {:>12}   {}/s throughput, {:.2} % success",
        thousands(t.succeeded()),
        rate(s.throughput),
        s.success_ratio * 100.0
    )?;
    writeln!(
        out,
        "  Responses     {:>12}   (any status)",
        thousands(t.responses())
    )?;
    writeln!(
        out,
        "  Errors        {:>12}   (no complete response)",
        thousands(t.errors())
    )?;
    writeln!(out, "  Duration      {:>12.3} s", r.elapsed.as_secs_f64())?;
    write_transfer(out, s)
}

/// The "Summary" section's bytes and connections (TLS resumption and re-sent requests when
/// there were any).
fn write_transfer(out: &mut String, s: &Summary) -> std::fmt::Result {
    let t = s.report.totals;
    writeln!(
        out,
        "  Bytes in      {:>12}   {} per request",
        bytes(t.bytes_in() as f64),
        bytes(s.bytes_in_per_request)
    )?;
    if t.bytes_decoded() > 0 {
        writeln!(
            out,
            "  Decoded       {:>12}   of response bodies after their Content-Encoding (--compressed)",
            bytes(t.bytes_decoded() as f64)
        )?;
    }
    writeln!(
        out,
        "  Bytes out     {:>12}   {} per request",
        bytes(t.bytes_out() as f64),
        bytes(s.bytes_out_per_request)
    )?;
    let peak = format!(", at most {} open at once", thousands(s.connections_peak));
    writeln!(
        out,
        "  Connections   {:>12}   opened{peak}, {} ended by the server",
        thousands(t.connections_opened()),
        thousands(t.server_closes())
    )?;
    if let Some(session) = t.tls_session() {
        writeln!(
            out,
            "  TLS           {:>12}   handshakes resumed an earlier session, of {} connections; {session}",
            thousands(t.tls_resumed()),
            thousands(t.connections_opened()),
        )?;
    }
    if t.resent() > 0 {
        writeln!(
            out,
            "  Re-sent       {:>12}   of the requests, on a new connection: the server had closed \
             the one they went on without reading them",
            resent(s)
        )?;
    }
    Ok(())
}

/// The "Latency" section: an open loop's corrected and uncorrected columns side by side, a
/// closed loop's one column.
fn write_latency(out: &mut String, s: &Summary) -> std::fmt::Result {
    let t = s.report.totals;
    let l = &s.latency;
    // Which clock timed the responses: the kernel's receive stamps, or the reads.
    let stamped = match t.kernel_stamped() {
        0 => String::new(),
        n => format!(
            ", {} of them timed by the kernel's receive stamps",
            thousands(n)
        ),
    };
    writeln!(
        out,
        "\nLatency  (from intended start to last byte; {} responses{stamped})",
        thousands(l.count)
    )?;
    if l.count == 0 {
        // A table of zeros would read as instant answers.
        writeln!(
            out,
            "  none: no response arrived, so there is no latency to report"
        )?;
    } else if s.open_loop.is_some() {
        // Side by side: the uncorrected column is what a tool with coordinated omission
        // would have reported for the same requests.
        let u = &s.uncorrected;
        let row = |out: &mut String, label: &str, a: String, b: String| {
            writeln!(out, "  {label:<8}{a:>16}{b:>20}")
        };
        row(out, "", "corrected".into(), "uncorrected".into())?;
        row(out, "min", ms(l.min_us), ms(u.min_us))?;
        row(out, "mean", ms_f(l.mean_us), ms_f(u.mean_us))?;
        row(out, "stdev", ms_f(l.stdev_us), ms_f(u.stdev_us))?;
        for (&(p, v), &(_, w)) in l.percentiles_us.iter().zip(&u.percentiles_us) {
            row(out, &percentile_label(p), ms(v), ms(w))?;
        }
        writeln!(
            out,
            "  (uncorrected: from when a connection took the request up, as a tool with \
             coordinated omission would measure)"
        )?;
    } else {
        writeln!(out, "  {:<8}{:>16}", "min", ms(l.min_us))?;
        writeln!(out, "  {:<8}{:>16}", "mean", ms_f(l.mean_us))?;
        writeln!(out, "  {:<8}{:>16}", "stdev", ms_f(l.stdev_us))?;
        for &(p, v) in &l.percentiles_us {
            writeln!(out, "  {:<8}{:>16}", percentile_label(p), ms(v))?;
        }
    }
    Ok(())
}

/// An open loop's "Scheduling lag" section.
fn write_lag(out: &mut String, s: &Summary) -> std::fmt::Result {
    if let Some(o) = &s.open_loop {
        let lag = &o.lag;
        writeln!(
            out,
            "\nScheduling lag  (actual − intended start of {} requests)",
            thousands(lag.count)
        )?;
        writeln!(out, "  {}", lag_figures(lag))?;
        if o.dispatch.count > 0 {
            writeln!(
                out,
                "  of which belier's own lateness: {}  (the rest waited for a free connection)",
                lag_figures(&o.dispatch)
            )?;
        }
    }
    Ok(())
}

/// The "Status codes" section.
fn write_status_codes(out: &mut String, r: &Report) -> std::fmt::Result {
    let t = r.totals;
    writeln!(out, "\nStatus codes")?;
    let mut any = false;
    for (code, n) in t.status_counts() {
        any = true;
        let code = if code == 0 {
            "other".to_string()
        } else {
            code.to_string()
        };
        writeln!(out, "  {code:<8}{:>12}", thousands(n))?;
    }
    // gRPC calls by their status code's name, in the same section: a run's calls are all
    // gRPC or all HTTP, so only one of the two lists is there.
    for (code, n) in t.grpc_counts() {
        any = true;
        let name = belier_stats::grpc_code_name(code);
        writeln!(out, "  {name:<20}{:>12}", thousands(n))?;
    }
    if !any {
        writeln!(out, "  (no responses)")?;
    }
    Ok(())
}

/// The "Errors" section: each kind that happened, with an example message.
fn write_errors(out: &mut String, s: &Summary) -> std::fmt::Result {
    writeln!(out, "\nErrors")?;
    if s.errors.is_empty() {
        writeln!(out, "  none")?;
    }
    for e in &s.errors {
        write!(
            out,
            "  {:<30}{:>12}",
            e.kind.description(),
            thousands(e.count)
        )?;
        match e.example {
            Some(example) => writeln!(out, "   e.g. {example}")?,
            None => writeln!(out)?,
        }
    }
    Ok(())
}

/// The "Generator" section: what belier cost and used of its machine, when it was measured.
fn write_generator(out: &mut String, r: &Report) -> std::fmt::Result {
    let t = r.totals;
    let requests = t.requests();
    if r.host.is_some() || t.wakeups() > 0 {
        writeln!(out, "\nGenerator")?;
    }
    if t.wakeups() > 0 {
        // Each sleep and wake of a worker costs more than the request it sends: at everyday
        // rates this, not the work per request, is the generator's cost.
        writeln!(
            out,
            "  wake-ups {:.2} per request ({} times its worker threads slept and were woken)",
            t.wakeups() as f64 / requests.max(1) as f64,
            thousands(t.wakeups())
        )?;
    }
    if let Some(h) = r.host {
        writeln!(
            out,
            "  open files peak {} of limit {}",
            thousands(h.open_fds_peak),
            thousands(h.fd_limit)
        )?;
        if let (Some(peak), Some(total)) = (h.ephemeral_ports_peak, h.ephemeral_ports_total) {
            writeln!(
                out,
                "  ephemeral ports in use on this host at most {} of {} (any process's, \
                 TIME_WAIT included)",
                thousands(peak),
                thousands(total)
            )?;
        }
    }
    Ok(())
}

/// Whether belier kept up, and if not, each finding.
fn write_verdict(out: &mut String, v: &Verdict) -> std::fmt::Result {
    if v.kept_up {
        writeln!(out, "\nVerdict: belier kept up ({})", v.summary)?;
    } else {
        writeln!(
            out,
            "\nVerdict: WARNING, the generator may have shaped these results ({})",
            v.summary
        )?;
        for f in &v.findings {
            writeln!(out, "  - {f}")?;
        }
    }
    Ok(())
}

/// ab's "Connection Times" table: one row per phase that happened, none when nothing did.
fn write_phases(out: &mut String, s: &Summary) -> std::fmt::Result {
    if s.latency.count == 0 && s.phases.iter().all(|(_, l)| l.count == 0) {
        return Ok(());
    }
    writeln!(out, "\nPhases  (ms)")?;
    write_times_heading(out)?;
    for (metric, l) in &s.phases {
        if l.count > 0 {
            write_times(out, metric.name(), l)?;
        }
    }
    if s.latency.count > 0 {
        write_times(out, "total", &s.latency)?;
    }
    Ok(())
}

/// The heading of a table of times (phases, messages).
fn write_times_heading(out: &mut String) -> std::fmt::Result {
    writeln!(
        out,
        "  {:<10}{:>10}{:>11}{:>11}{:>11}{:>11}{:>11}{:>12}{:>11}",
        "", "count", "min", "mean", "stdev", "p50", "p95", "p99", "max"
    )
}

/// One row of a table of times, in milliseconds.
fn write_times(out: &mut String, label: &str, l: &LatencySummary) -> std::fmt::Result {
    let at = |p: f64| ms_short(l.at(p).unwrap_or(0));
    writeln!(
        out,
        "  {label:<10}{:>10}{:>11}{:>11}{:>11}{:>11}{:>11}{:>12}{:>11}",
        thousands(l.count),
        ms_short(l.min_us),
        ms_short(l.mean_us.round() as u64),
        ms_short(l.stdev_us.round() as u64),
        at(50.0),
        at(95.0),
        at(99.0),
        ms_short(l.max_us)
    )
}

/// The "Messages" section of a run of streaming gRPC calls (or, `websocket`, of a
/// WebSocket run's sockets): messages each way, in all and per call, then the first
/// message's time and the gaps between messages.
fn write_messages(out: &mut String, s: &Summary, websocket: bool) -> std::fmt::Result {
    let Some(m) = &s.messages else {
        return Ok(());
    };
    if m.counts.unit.is_streamed_body() {
        return write_streamed(out, m);
    }
    // Results files written before sockets were recorded as such say so by their URL only.
    let websocket = websocket || m.counts.unit == belier_stats::MessageUnit::WebSocket;
    let c = m.counts;
    let per = match websocket {
        true => {
            writeln!(
                out,
                "\nWebSocket messages  ({} sockets)",
                thousands(c.calls)
            )?;
            "socket"
        }
        false => {
            writeln!(out, "\nMessages  ({} streaming calls)", thousands(c.calls))?;
            "call"
        }
    };
    writeln!(
        out,
        "  Received      {:>12}   {:.1} per {per}",
        thousands(c.received),
        m.received_per_call
    )?;
    writeln!(
        out,
        "  Sent          {:>12}   {:.1} per {per}",
        thousands(c.sent),
        m.sent_per_call
    )?;
    if websocket {
        if !m.closes.is_empty() {
            writeln!(
                out,
                "  Closes        {}",
                crate::messages::closes_line(&m.closes)
            )?;
        }
        if !m.extensions.is_empty() {
            writeln!(
                out,
                "  Compression   {}",
                crate::messages::extensions_line(&m.extensions)
            )?;
        }
        return write_websocket_times(out, m);
    }
    write_times_heading(out)?;
    let rows = [
        ("first", &m.first),
        ("gap", &m.gaps),
        ("round trip", &m.round_trips),
    ];
    for (label, times) in rows.iter().filter(|(_, t)| t.count > 0) {
        write_times(out, label, times)?;
    }
    writeln!(
        out,
        "  (ms; first: from the request sent to its first response message; gap: between a \
         call's response messages)"
    )?;
    if m.round_trips.count > 0 {
        writeln!(
            out,
            "  (round trip: from a request message to the response message that answered it, \
             in calls whose responses answered their messages one for one)"
        )?;
    }
    Ok(())
}

/// The section of a run of streamed bodies (`--stream`): their events, chunks or tokens, in
/// all and per stream; then the first one's time and the gaps, named for what they are.
fn write_streamed(out: &mut String, m: &crate::summary::MessageFigures) -> std::fmt::Result {
    let c = m.counts;
    let unit = c.unit.singular();
    let tokens = c.unit == belier_stats::MessageUnit::Tokens;
    let title = match tokens {
        true => "Tokens",
        false => "Streams",
    };
    writeln!(out, "\n{title}  ({} streams)", thousands(c.calls))?;
    let received = format!("{unit}s");
    let received = match tokens {
        true => "chunks",
        false => received.as_str(),
    };
    writeln!(
        out,
        "  {received:<14}{:>12}   {:.1} per stream, {}/s",
        thousands(c.received),
        m.received_per_call,
        crate::format::rate(m.received_rate)
    )?;
    write_reconnections(out, m)?;
    if tokens {
        writeln!(
            out,
            "  {:<14}{:>12}   {:.1} per stream",
            "output tokens",
            thousands(c.tokens),
            crate::ratio(c.tokens, c.calls).unwrap_or(0.0)
        )?;
        writeln!(
            out,
            "  {:<14}{:>12}   {:.1} per stream after its first token",
            "tokens/s",
            crate::format::rate(m.token_rate),
            m.tokens_per_stream_rate
        )?;
    }
    write_times_heading(out)?;
    let (first, gap) = match tokens {
        true => ("ttft", "itl"),
        false => ("first", "gap"),
    };
    write_times(out, first, &m.first)?;
    if m.gaps.count > 0 {
        write_times(out, gap, &m.gaps)?;
    }
    match tokens {
        true => writeln!(
            out,
            "  (ms; ttft: time to first token, from when the request was due; itl: inter-token \
             latency, between a stream's chunks with content)"
        ),
        false => writeln!(
            out,
            "  (ms; first: from when the request was due to its first {unit}; gap: between a \
             stream's {unit}s)"
        ),
    }
}

/// SSE reconnections (`--sse-reconnect`), when there were any or a response stopped them.
fn write_reconnections(out: &mut String, m: &crate::summary::MessageFigures) -> std::fmt::Result {
    let c = m.counts;
    if c.reconnections == 0 && c.reconnection_stops == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "  {:<14}{:>12}   {} with Last-Event-ID, each after {} on average",
        "reconnections",
        thousands(c.reconnections),
        thousands(c.reconnections_with_id),
        crate::format::ms_f(m.reconnection_wait_mean_us)
    )?;
    if c.reconnection_stops > 0 {
        writeln!(
            out,
            "  {:<14}{:>12}   responses not a 200 event stream (a 204): a new stream next",
            "stopped",
            thousands(c.reconnection_stops)
        )?;
    }
    Ok(())
}

/// A WebSocket run's message times, worded for its sockets.
fn write_websocket_times(out: &mut String, m: &crate::summary::MessageFigures) -> std::fmt::Result {
    write_times_heading(out)?;
    let rows = [
        ("first", &m.first),
        ("gap", &m.gaps),
        ("round trip", &m.round_trips),
        ("  from send", &m.round_trips_sent),
    ];
    for (label, times) in rows.iter().filter(|(_, t)| t.count > 0) {
        write_times(out, label, times)?;
    }
    writeln!(
        out,
        "  (ms; first: from the upgrade request to the socket's first message in; gap: \
         between a socket's messages in)"
    )?;
    writeln!(
        out,
        "  (round trip: WebSocket message round trips, from each message's intended send to \
         the reply that answered it; from send: the same from its actual send, as a generator \
         that lets a late send hide the wait would show)"
    )
}

// Microseconds as milliseconds with three decimals, without the unit.
use belier_vocabulary::format::ms_bare as ms_short;

/// Widths of the per-step table's columns after the name.
const STEP_WIDTHS: [usize; 9] = [10, 10, 9, 10, 10, 10, 10, 10, 10];

/// Locust's statistics table, the checks and the iterations, for runs of scripted users.
fn write_steps(out: &mut String, s: &Summary) -> std::fmt::Result {
    if !s.has_steps {
        return Ok(());
    }
    let lines = &s.steps;
    let (title, column) = crate::steps::table_names(s.has_targets);
    let width = column_width(
        lines.iter().map(|l| l.name.as_str()),
        NAME_COLUMN,
        column.len(),
    );
    writeln!(
        out,
        "\n{title}  (latency in ms from intended start to last byte, responses only)"
    )?;
    writeln!(
        out,
        "  {:<width$}{:>10}{:>10}{:>9}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
        column, "requests", "failures", "fail %", "rate/s", "min", "p50", "p90", "p99", "max"
    )?;
    for l in lines {
        write!(out, "  {:<width$}", cut(&l.name, NAME_COLUMN))?;
        for (cell, w) in l.cells(ms_short, "-").iter().zip(STEP_WIDTHS) {
            write!(out, "{cell:>w$}")?;
        }
        writeln!(out)?;
    }
    let checks = &s.checks;
    if !checks.is_empty() {
        let width = column_width(checks.iter().map(|c| c.name.as_str()), NAME_COLUMN, 4);
        writeln!(out, "\nChecks")?;
        writeln!(
            out,
            "  {:<width$}{:>10}{:>10}{:>9}",
            "name", "passed", "failed", "pass %"
        )?;
        for c in checks {
            writeln!(
                out,
                "  {:<width$}{:>10}{:>10}{:>9}",
                cut(&c.name, NAME_COLUMN),
                thousands(c.passed),
                thousands(c.failed),
                pass_percent(c.pass_ratio)
            )?;
        }
    }
    if !s.metrics.is_empty() {
        let width = column_width(s.metrics.iter().map(|m| m.name.as_str()), NAME_COLUMN, 4);
        writeln!(out, "\nCustom metrics  (trends in ms)")?;
        writeln!(
            out,
            "  {:<width$}{:>9}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
            "name", "kind", "count", "rate/s", "min", "p50", "p90", "p99", "max"
        )?;
        for m in &s.metrics {
            write!(out, "  {:<width$}", cut(&m.name, NAME_COLUMN))?;
            for (cell, w) in m
                .cells(ms_short, "-")
                .iter()
                .zip([9, 10, 10, 10, 10, 10, 10, 10])
            {
                write!(out, "{cell:>w$}")?;
            }
            writeln!(out)?;
        }
    }
    writeln!(
        out,
        "\nIterations    {:>12}   {}/s completed",
        thousands(s.report.totals.iterations()),
        rate(s.iteration_rate)
    )
}

/// The plan's thresholds, each with ✓ or ✗ and the value reached.
fn write_thresholds(out: &mut String, r: &Report) -> std::fmt::Result {
    if r.thresholds.is_empty() {
        return Ok(());
    }
    let failed = r.thresholds.iter().filter(|t| !t.passed).count();
    writeln!(
        out,
        "\nThresholds  ({} of {} met)",
        r.thresholds.len() - failed,
        r.thresholds.len()
    )?;
    let expressions = r.thresholds.iter().map(|t| t.expression.as_str());
    let width = column_width(expressions, EXPRESSION_COLUMN, 0);
    for t in &r.thresholds {
        writeln!(
            out,
            "  {} {:<width$}   actual {}",
            if t.passed { "✓" } else { "✗" },
            cut(&t.expression, EXPRESSION_COLUMN),
            t.actual
        )?;
        if let Some(stop) = &t.stopped_run {
            writeln!(
                out,
                "    stopped the run at {:.1} s: {} then",
                stop.at_ms as f64 / 1e3,
                stop.actual
            )?;
        }
    }
    Ok(())
}

/// "p50 …   p99 …   max …" of a lag summary.
fn lag_figures(lag: &LatencySummary) -> String {
    let at = |p: f64| ms(lag.at(p).unwrap_or(0));
    format!(
        "p50 {}   p99 {}   max {}",
        at(50.0),
        at(99.0),
        ms(lag.max_us)
    )
}

#[cfg(test)]
mod tests;
