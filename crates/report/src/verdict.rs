//! Whether the generator kept up, judged from recorded results only.
//!
//! A load test measures the server only while the generator is not itself the limit. The
//! verdict checks what would make the numbers describe belier instead: an open-loop rate that
//! was not reached, requests leaving late, a saturated worker thread, or a machine running out
//! of file descriptors or ephemeral ports.

use serde::Serialize;

use belier_results::HostUsage;

use crate::format::{ms, rate};
use crate::open_loop::OpenLoop;
use crate::Report;

/// Share of the target rate that must have been sent (open loop).
pub const RATE_TOLERANCE: f64 = 0.01;
/// Scheduling lag p99 beyond which requests are considered to have left late, µs, with the
/// default timer slack.
pub const LAG_LIMIT_US: u64 = 1_000;
/// The engine's default open-loop timer slack (`belier_engine::DEFAULT_TIMER_SLACK`), µs: the
/// lag it allows is already inside [`LAG_LIMIT_US`].
pub const DEFAULT_TIMER_SLACK_US: u64 = 250;

/// The lag limit of a run: [`LAG_LIMIT_US`], plus whatever timer slack the run asked for beyond
/// the default. Arrivals that leave up to the slack late were sent as asked; the verdict looks
/// for lateness beyond that.
pub fn lag_limit_us(timer_slack_us: Option<u64>) -> u64 {
    // Saturating: a results file may claim any slack (u64::MAX overflowed here).
    LAG_LIMIT_US
        .saturating_add(timer_slack_us.map_or(0, |s| s.saturating_sub(DEFAULT_TIMER_SLACK_US)))
}
/// Share of a core above which a worker thread counts as saturated.
pub const CPU_LIMIT: f64 = 0.90;
/// Below this CPU share a worker had time to spare, so lateness was not its own doing.
const IDLE_WORKER: f64 = 0.5;
/// Share of open files or ephemeral ports above which the machine is close to running out.
const RESOURCE_LIMIT: f64 = 0.90;

/// The verdict: kept up, or what went wrong and by how much.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    /// True when nothing below was found.
    pub kept_up: bool,
    /// One sentence per problem, with figures.
    pub findings: Vec<String>,
    /// One sentence with the figures that were checked.
    pub summary: String,
}

/// Judges `report`.
pub fn verdict(report: &Report) -> Verdict {
    judge(report, OpenLoop::of(report).as_ref())
}

/// Judges `report`, an open loop on the figures of its schedule already worked out (the
/// summary's, so that the verdict and the reports quote the same lag).
pub(crate) fn judge(report: &Report, open_loop: Option<&OpenLoop>) -> Verdict {
    let mut j = Judgement::default();
    j.executors(report);
    if let Some(o) = open_loop {
        j.rate(report, o);
        j.lag(report, o);
    }
    j.cpu(report);
    if let Some(host) = report.host {
        j.host(host);
    }
    Verdict {
        kept_up: j.findings.is_empty(),
        findings: j.findings,
        summary: j.checked.join(", "),
    }
}

/// What the verdict checked (figures, for its summary) and found wrong, sentence by sentence.
#[derive(Default)]
struct Judgement {
    checked: Vec<String>,
    findings: Vec<String>,
}

impl Judgement {
    /// A plan whose scenarios have loads of their own: each open-loop executor is judged on
    /// its own arrivals (the run's totals mix executors, and its information is the first's).
    fn executors(&mut self, report: &Report) {
        for sc in &report.scenarios {
            let (Some(due), Some(dropped)) = (sc.arrivals, sc.dropped) else {
                continue;
            };
            let started = due.saturating_sub(dropped);
            self.checked.push(format!(
                "{}: {started} of {due} iterations started",
                sc.name
            ));
            if due > 0 && (started as f64) < due as f64 * (1.0 - RATE_TOLERANCE) {
                self.findings.push(format!(
                    "scenario `{}` did not reach its rate: {started} of {due} iterations started \
                     ({dropped} dropped)",
                    sc.name
                ));
            }
        }
    }

    /// An open loop: whether its arrivals went out at the target rate (the run's; with
    /// executors of their own, each was judged on its own).
    fn rate(&mut self, report: &Report, o: &OpenLoop) {
        let t = report.totals;
        let executors = !report.scenarios.is_empty();
        let (scheduled, sent) = (t.scheduled(), o.sent);
        // With scripted users an arrival is an iteration, which a user starts.
        let (arrivals, went) = if report.has_users() {
            ("iterations", "started")
        } else {
            ("arrivals", "sent")
        };
        if !executors {
            self.checked.push(format!(
                "{}/s of {}/s {went}",
                rate(o.sent_rate),
                rate(o.target_rate)
            ));
        }
        if !executors && scheduled > 0 && (sent as f64) < scheduled as f64 * (1.0 - RATE_TOLERANCE)
        {
            self.findings.push(format!(
                "the target rate was not reached: {}/s of {}/s ({} of {} {arrivals} {went}, {} \
                 dropped)",
                rate(o.sent_rate),
                rate(o.target_rate),
                sent,
                scheduled,
                t.dropped()
            ));
        }
    }

    /// An open loop: whether requests left late, and belier's share of the lateness.
    fn lag(&mut self, report: &Report, o: &OpenLoop) {
        let lag_p99 = o.lag.at(99.0).unwrap_or(0);
        let lag_limit = lag_limit_us(report.info.timer_slack_us);
        // Where recorded, the lag splits into belier's own lateness and the wait for a
        // connection when every one belier may open was busy. That wait is the server's: each
        // connection still held a request it had not answered. It counts in the latency, and
        // the verdict judges belier on its own lateness.
        let own_p99 = (o.dispatch.count > 0).then(|| o.dispatch.at(99.0).unwrap_or(0));
        self.checked.push(match own_p99 {
            Some(own) if own != lag_p99 => format!(
                "lag p99 {} (belier's own {}, the rest waiting for a free connection)",
                ms(lag_p99),
                ms(own)
            ),
            _ => format!("lag p99 {}", ms(lag_p99)),
        });
        if let Some(own) = own_p99.filter(|&own| own >= lag_limit) {
            self.findings.push(format!(
                "belier sent late: its own scheduling lag p99 {} (limit {}): the generator \
                 was busy, or this machine's timers and scheduler woke it late (common on \
                 virtual machines)",
                ms(own),
                ms(lag_limit)
            ));
        } else if own_p99.is_none() && lag_p99 >= lag_limit {
            let cpu_max = report
                .series
                .points()
                .iter()
                .map(|p| p.cpu)
                .fold(0.0, f64::max);
            let cause = if cpu_max < IDLE_WORKER {
                format!(
                    "the busiest worker used only {:.0} % of a core, so the delay came from \
                     waiting for a free connection (see --max-connections) or from wake-up \
                     jitter of this machine's timers and scheduler (common on virtual machines)",
                    cpu_max * 100.0
                )
            } else {
                "the generator was busy or requests waited for a free connection".to_string()
            };
            self.findings.push(format!(
                "requests left late: scheduling lag p99 {} (limit {}); {cause}",
                ms(lag_p99),
                ms(lag_limit)
            ));
        }
    }

    /// Whether a worker thread was saturated.
    fn cpu(&mut self, report: &Report) {
        let points = report.series.points();
        let busy: Vec<_> = points.iter().filter(|p| p.cpu >= CPU_LIMIT).collect();
        let cpu_max = points.iter().map(|p| p.cpu).fold(0.0, f64::max);
        self.checked
            .push(format!("busiest worker CPU max {:.0} %", cpu_max * 100.0));
        if !busy.is_empty() {
            let secs: f64 = busy.iter().map(|p| p.width.as_secs_f64()).sum();
            self.findings.push(format!(
                "belier used over {:.0} % of a core (busiest worker thread, max {:.0} %) for {:.0} s: \
                 the generator may have limited the results; add threads (-t) or machines",
                CPU_LIMIT * 100.0,
                cpu_max * 100.0,
                secs
            ));
        }
    }

    /// Whether the machine came close to running out of file descriptors or ephemeral ports.
    fn host(&mut self, host: HostUsage) {
        if host.fd_limit > 0 && host.open_fds_peak as f64 >= host.fd_limit as f64 * RESOURCE_LIMIT {
            self.findings.push(format!(
                "open files peaked at {} of the limit {}: raise 'ulimit -n'",
                host.open_fds_peak, host.fd_limit
            ));
        }
        if let (Some(peak), Some(total)) = (host.ephemeral_ports_peak, host.ephemeral_ports_total) {
            if total > 0 && peak as f64 >= total as f64 * RESOURCE_LIMIT {
                self.findings.push(format!(
                    "ephemeral ports peaked at {peak} of {total}: connections will start failing; \
                     use keep-alive or widen net.ipv4.ip_local_port_range"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use belier_results::{HostUsage, Model, RunInfo};
    use belier_stats::{Collector, Gauges, Outcome, Recorder, Sample};

    use super::*;
    use crate::fixtures;

    fn open_report(
        sent: u64,
        scheduled: u64,
        lag_us: u64,
        cpu: f64,
        host: Option<HostUsage>,
    ) -> Verdict {
        open_report_with_slack(sent, scheduled, lag_us, cpu, host, None)
    }

    fn open_report_with_slack(
        sent: u64,
        scheduled: u64,
        lag_us: u64,
        cpu: f64,
        host: Option<HostUsage>,
        timer_slack_us: Option<u64>,
    ) -> Verdict {
        open_report_split(sent, scheduled, lag_us, None, cpu, host, timer_slack_us)
    }

    /// `own_us`: belier's own part of the lag, when recorded (the rest waited for a
    /// connection).
    fn open_report_split(
        sent: u64,
        scheduled: u64,
        lag_us: u64,
        own_us: Option<u64>,
        cpu: f64,
        host: Option<HostUsage>,
        timer_slack_us: Option<u64>,
    ) -> Verdict {
        let mut info = fixtures::info();
        info.model = Model::Open;
        info.timer_slack_us = timer_slack_us;
        let arrivals = Arrivals {
            scheduled,
            dropped: scheduled - sent,
            requests: sent,
        };
        judge(&info, arrivals, lag_us, own_us, cpu, host)
    }

    /// What an open-loop run recorded: arrivals due, dropped, and requests finished.
    struct Arrivals {
        scheduled: u64,
        dropped: u64,
        requests: u64,
    }

    /// The verdict on a one-second run of `info` that recorded `arrivals`, each request
    /// `lag_us` late (`own_us` of it belier's own) with its worker at `cpu`.
    fn judge(
        info: &RunInfo,
        arrivals: Arrivals,
        lag_us: u64,
        own_us: Option<u64>,
        cpu: f64,
        host: Option<HostUsage>,
    ) -> Verdict {
        let mut r = Recorder::new();
        let t = Instant::now();
        for _ in 0..arrivals.scheduled {
            r.record_scheduled();
        }
        for _ in 0..arrivals.dropped {
            r.record_dropped();
        }
        for _ in 0..arrivals.requests {
            r.record(&Sample {
                ready: own_us.map(|own| t + Duration::from_micros(own)),
                bytes_in: 1,
                bytes_out: 1,
                ..Sample::simulated(t, lag_us, lag_us + 500, Outcome::Response { status: 200 })
            });
        }
        let mut c = Collector::new(1, Duration::from_secs(1));
        c.add(
            0,
            0,
            &r,
            Gauges {
                in_flight: 0,
                cpu,
                connections_peak: 0,
                held: 0,
            },
        );
        c.finish_worker(0, Duration::from_secs(1));
        let (totals, series) = c.finish();
        verdict(&Report {
            scenarios: Vec::new(),
            info,
            totals: &totals,
            series: &series,
            elapsed: Duration::from_secs(1),
            interrupted: false,
            warnings: vec![],
            thresholds: vec![],
            changes: vec![],
            host,
        })
    }

    #[test]
    fn kept_up() {
        let v = open_report(1000, 1000, 50, 0.3, None);
        assert!(v.kept_up, "{v:?}");
        assert!(
            v.summary.contains("1,000.0/s of 1,000.0/s"),
            "{}",
            v.summary
        );
    }

    #[test]
    fn names_each_problem_with_figures() {
        let v = open_report(891, 1000, 37_000, 0.99, None);
        assert!(!v.kept_up);
        let all = v.findings.join("\n");
        assert!(all.contains("891.0/s of 1,000.0/s"), "{all}");
        assert!(all.contains("109 dropped"), "{all}");
        assert!(all.contains("lag p99 37."), "{all}");
        assert!(all.contains("the generator was busy"), "{all}");
        assert!(all.contains("max 99 %"), "{all}");
        assert_eq!(v.findings.len(), 3);
    }

    #[test]
    fn scripted_users_are_judged_on_the_iterations_they_started() {
        let mut info = fixtures::info();
        info.model = Model::Open;
        info.virtual_users = Some(50);
        // Half the 1,000 iterations due found no free user; those started made two requests
        // each, as many requests as iterations were due.
        let half = Arrivals {
            scheduled: 1000,
            dropped: 500,
            requests: 1000,
        };
        let v = judge(&info, half, 50, None, 0.3, None);
        assert!(!v.kept_up, "{v:?}");
        assert!(v.summary.contains("500.0/s of 1,000.0/s started"), "{v:?}");
        assert!(
            v.findings[0].contains("(500 of 1000 iterations started, 500 dropped)"),
            "{v:?}"
        );
        let all = Arrivals {
            scheduled: 1000,
            dropped: 0,
            requests: 2000,
        };
        let v = judge(&info, all, 50, None, 0.3, None);
        assert!(v.kept_up, "{v:?}");
        assert!(
            v.summary.contains("1,000.0/s of 1,000.0/s started"),
            "{v:?}"
        );
    }

    #[test]
    fn late_requests_with_an_idle_worker_point_at_the_machine() {
        let v = open_report(1000, 1000, 3_000, 0.2, None);
        assert_eq!(v.findings.len(), 1);
        assert!(v.findings[0].contains("used only 20 %"), "{v:?}");
        assert!(v.findings[0].contains("jitter"), "{v:?}");
    }

    #[test]
    fn a_larger_timer_slack_raises_the_lag_limit_by_the_difference() {
        assert_eq!(lag_limit_us(None), LAG_LIMIT_US);
        assert_eq!(lag_limit_us(Some(0)), LAG_LIMIT_US);
        assert_eq!(lag_limit_us(Some(250)), LAG_LIMIT_US);
        assert_eq!(lag_limit_us(Some(1_000)), 1_750);
        // Found by bench/fuzz: a results file's slack of u64::MAX overflowed.
        assert_eq!(lag_limit_us(Some(u64::MAX)), u64::MAX);
        // 1.2 ms of lag: late with the default slack, within what a 1 ms slack allows.
        assert!(!open_report_with_slack(1000, 1000, 1_200, 0.3, None, Some(250)).kept_up);
        let v = open_report_with_slack(1000, 1000, 1_200, 0.3, None, Some(1_000));
        assert!(v.kept_up, "{v:?}");
        let v = open_report_with_slack(1000, 1000, 1_900, 0.3, None, Some(1_000));
        assert!(v.findings[0].contains("(limit 1.750 ms)"), "{v:?}");
    }

    #[test]
    fn waiting_for_a_busy_connection_is_the_servers_lag_not_beliers() {
        // 30 ms of lag, 0.2 ms of it belier's own: every connection was busy with the server.
        let v = open_report_split(1000, 1000, 30_000, Some(200), 0.3, None, None);
        assert!(v.kept_up, "{v:?}");
        assert!(
            v.summary.contains("lag p99 30.0")
                && v.summary
                    .contains("belier's own 0.200 ms, the rest waiting for a free connection"),
            "{}",
            v.summary
        );
        // belier's own lateness over the limit is a finding, named as such.
        let v = open_report_split(1000, 1000, 30_000, Some(2_000), 0.3, None, None);
        assert!(!v.kept_up);
        assert_eq!(v.findings.len(), 1, "{v:?}");
        assert!(
            v.findings[0].contains("its own scheduling lag p99 2.0"),
            "{v:?}"
        );
        // Without a split (scripted users, older results files) the whole lag is judged.
        assert!(!open_report_split(1000, 1000, 30_000, None, 0.3, None, None).kept_up);
    }

    #[test]
    fn within_tolerance_is_kept_up() {
        assert!(open_report(995, 1000, 100, 0.5, None).kept_up);
        assert!(!open_report(985, 1000, 100, 0.5, None).kept_up);
    }

    #[test]
    fn host_limits() {
        let host = HostUsage {
            open_fds_peak: 950,
            fd_limit: 1024,
            ephemeral_ports_peak: Some(27_000),
            ephemeral_ports_total: Some(28_232),
        };
        let v = open_report(100, 100, 10, 0.1, Some(host));
        assert_eq!(v.findings.len(), 2, "{v:?}");
    }

    /// A plan of two executors, its first a closed loop (the run's information) and its
    /// second an open loop that dropped `dropped` of its 100 arrivals.
    fn executors_verdict(dropped: u64) -> Verdict {
        let figures = |name: &str, arrivals: Option<u64>, dropped: Option<u64>| {
            belier_results::ScenarioFigures {
                name: name.to_string(),
                load: String::new(),
                requests: 100,
                failures: 0,
                iterations: 100,
                arrivals,
                dropped,
                rate: 20.0,
                p50_us: Some(1_000),
                p90_us: Some(1_000),
                p99_us: Some(1_000),
            }
        };
        let (totals, series) = Collector::new(1, Duration::from_secs(1)).finish();
        verdict(&Report {
            scenarios: vec![
                figures("browse", None, None),
                figures("checkout", Some(100), Some(dropped)),
            ],
            info: &fixtures::info(),
            totals: &totals,
            series: &series,
            elapsed: Duration::from_secs(5),
            interrupted: false,
            warnings: vec![],
            thresholds: vec![],
            changes: vec![],
            host: None,
        })
    }

    #[test]
    fn each_open_loop_executor_is_judged_on_its_own_arrivals() {
        let v = executors_verdict(0);
        assert!(v.kept_up, "{v:?}");
        assert!(
            v.summary
                .contains("checkout: 100 of 100 iterations started"),
            "{v:?}"
        );
        let v = executors_verdict(10);
        assert!(!v.kept_up);
        assert_eq!(
            v.findings,
            vec![
                "scenario `checkout` did not reach its rate: 90 of 100 iterations started \
                 (10 dropped)"
                    .to_string()
            ]
        );
    }
}
