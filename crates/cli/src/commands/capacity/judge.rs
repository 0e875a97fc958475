//! Whether a capacity step says anything of the server: belier's own verdict on the judged
//! window (did it hold the level, with time, CPU, files and ports to spare), whether what it
//! found may have decided the step, and the Prometheus SLOs' values at the window's end.

use std::time::Duration;

use belier_capacity::{Slos, StepFigures, StepPlan, Verdict};

/// Whether belier held the step's rate in its judged window: the run's verdict (arrivals
/// sent, its own lateness, its threads' CPU, open files and ports) on the window alone, so that
/// connections opened in the warm-up do not count against it.
pub fn generator_verdict(
    finished: &crate::load::Finished,
    window: &belier_stats::Recorder,
    plan: &StepPlan,
) -> belier_report::Verdict {
    let mut info = finished.info.clone();
    info.schedule_s = Some(plan.window.as_secs_f64());
    let mut series = belier_stats::Series::new();
    for p in finished.series.points() {
        if p.offset >= plan.warmup {
            series.push(p.clone());
        }
    }
    belier_report::verdict(&belier_report::Report {
        scenarios: Vec::new(),
        info: &info,
        totals: window,
        series: &series,
        elapsed: plan.window,
        interrupted: false,
        warnings: Vec::new(),
        host: finished.host,
        thresholds: Vec::new(),
        changes: vec![],
    })
}

/// Waited after a step before querying Prometheus about it, so that the scrape that saw its
/// window's end is in (a scrape interval of up to a second, and the time to store it).
pub const SCRAPE_MARGIN: Duration = Duration::from_millis(1500);

/// The value of each Prometheus SLO's query at the end of the step's window (the run's end). A
/// query that fails is said on standard error and counts as no data, which fails the SLO.
pub fn query_prometheus(slos: &Slos, base: Option<&str>) -> Vec<Option<f64>> {
    let (Some(base), false) = (base, slos.prometheus().is_empty()) else {
        return Vec::new();
    };
    // The run has just ended: its window's end is now.
    let end = std::time::SystemTime::now();
    std::thread::sleep(SCRAPE_MARGIN);
    slos.prometheus()
        .iter()
        .map(|slo| {
            crate::prometheus::query(base, &slo.query, end).unwrap_or_else(|why| {
                eprintln!("capacity: {}: {why}", slo.expression);
                None
            })
        })
        .collect()
}

/// Whether what belier's verdict on a step found (it fell behind, its CPU, its machine's
/// limits) may have decided the step. A step that passed on arrivals belier did not all send
/// (more than 1 % dropped) claims nothing: that rate was never offered. A failed step is the
/// generator's doing when belier's own thread was near a full core, or when the failure may
/// be belier's and not the server's: its own lateness counts in the latency (measured from the
/// intended start), so the step is belier's when latencies shorter by its own lateness p99
/// would have passed, or when it dropped arrivals or ran near its open-file or port limits
/// while the server answered what it was sent within the SLO's latency. When even the
/// requests belier sent took longer than that from the moment they went out (half of them),
/// the server held every connection: the arrivals that waited for one, or were never sent,
/// waited for the server.
pub fn generator_to_blame(
    finished: &crate::load::Finished,
    window: &belier_stats::Recorder,
    plan: &StepPlan,
    slos: &Slos,
    figures: &StepFigures<'_>,
) -> bool {
    let dropped = window.dropped() * 100 > window.scheduled();
    if slos.judge(figures) == Verdict::Pass {
        return dropped;
    }
    let busy = finished
        .series
        .points()
        .iter()
        .filter(|p| p.offset >= plan.warmup)
        .any(|p| p.cpu >= belier_report::CPU_LIMIT);
    if busy {
        return true;
    }
    let sent = window.uncorrected_us();
    let served_slow = !sent.is_empty()
        && slos
            .latency_bound_us()
            .is_some_and(|bound| belier_stats::value_at_percentile(sent, 50.0) as f64 > bound);
    if served_slow {
        return false;
    }
    let own = window.histogram(belier_stats::Metric::Dispatch);
    let own = if own.is_empty() { window.lag_us() } else { own };
    let own_p99 = if own.is_empty() {
        0
    } else {
        own.value_at_quantile(0.99)
    };
    let near = |used: u64, limit: u64| limit > 0 && used * 10 >= limit * 9;
    let resources = finished.host.is_some_and(|h| {
        near(h.open_fds_peak, h.fd_limit)
            || h.ephemeral_ports_peak
                .zip(h.ephemeral_ports_total)
                .is_some_and(|(peak, total)| near(peak, total))
    });
    dropped || !slos.fails_without(figures, own_p99) || resources
}
