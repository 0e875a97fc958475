//! `belier capacity URL --slo EXPR`: runs the capacity search's steps as open-loop runs and
//! reports what it found. The search itself (which rate next, what a step's figures say) is
//! `belier_capacity`'s; this module turns each planned step into a run and its recordings
//! into the figures the search judges.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use belier_capacity::{
    overload, LimitedBy, Outcome, Overload, Search, SearchSettings, Slos, Step, StepFigures,
    StepKind, StepPlan, Verdict,
};
use belier_engine::{Load, Profile, Spacing, StopWhen, DEFAULT_MAX_CONNECTIONS};
use clap::Args;

use crate::args::{parse_duration, ArrivalsArg, Format, RequestArgs};
use crate::settings::{self, InputError, Output, Settings};
use crate::signals::{self, Signals};

/// Exit code when no rate met the SLOs, not even the start rate.
pub const EXIT_NO_CAPACITY: u8 = 5;

/// Options of `belier capacity URL`.
#[derive(Debug, Args)]
pub struct CapacityArgs {
    /// What to request, and how.
    #[command(flatten)]
    pub request: RequestArgs,

    /// An SLO every judged window must meet (repeatable): p99<50ms, p99.9<200ms, p50<…,
    /// mean<…, max<…, errors<0.1% (requests without a status below 400) [default: errors<1%]
    #[arg(long = "slo", value_name = "EXPR", help_heading = "Search")]
    pub slo: Vec<String>,

    /// First rate tried, per second.
    #[arg(
        long = "start-rate",
        value_name = "R",
        default_value_t = 10.0,
        help_heading = "Search"
    )]
    pub start_rate: f64,

    /// Factor between rates while growing, until a step fails.
    #[arg(
        long = "growth",
        value_name = "F",
        default_value_t = 2.0,
        help_heading = "Search"
    )]
    pub growth: f64,

    /// Bisection stops when the failing rate is within this much above the passing one.
    #[arg(long = "precision", value_name = "PCT", default_value = "5%", value_parser = parse_share, help_heading = "Search")]
    pub precision: f64,

    /// Highest rate tried.
    #[arg(long = "max-rate", value_name = "R", help_heading = "Search")]
    pub max_rate: Option<f64>,

    /// Start of each step, recorded but not judged.
    #[arg(long = "warmup", value_name = "D", default_value = "5s", value_parser = crate::args::parse_duration_or_zero, help_heading = "Search")]
    pub warmup: Duration,

    /// Judged part of each step.
    #[arg(long = "window", value_name = "D", default_value = "15s", value_parser = parse_duration, help_heading = "Search")]
    pub window: Duration,

    /// Confirmations of the answer, each a step of --confirm-window.
    #[arg(
        long = "confirm",
        value_name = "N",
        default_value_t = 1,
        help_heading = "Search"
    )]
    pub confirm: u32,

    /// Judged part of a confirmation step.
    #[arg(long = "confirm-window", value_name = "D", default_value = "30s", value_parser = parse_duration, help_heading = "Search")]
    pub confirm_window: Duration,

    /// The whole search's budget; when it runs out, the bracket reached is reported.
    #[arg(long = "max-time", value_name = "D", value_parser = parse_duration, help_heading = "Search")]
    pub max_time: Option<Duration>,

    /// Overload steps past the answer, as multiples of it; then one step at 0.8× to see
    /// whether the service recovers.
    #[arg(
        long = "overload",
        value_name = "LIST",
        default_value = "1.25,1.5,2",
        value_delimiter = ',',
        conflicts_with = "no_overload",
        help_heading = "Search"
    )]
    pub overload: Vec<f64>,

    /// No overload or recovery steps.
    #[arg(long = "no-overload", help_heading = "Search")]
    pub no_overload: bool,

    /// Judged part of an overload or recovery step.
    #[arg(long = "overload-window", value_name = "D", default_value = "10s", value_parser = parse_duration, help_heading = "Search")]
    pub overload_window: Duration,

    /// Prometheus server (http://HOST:PORT) that --slo 'prom:QUERY<VALUE' SLOs are queried
    /// from, at the end of each judged window.
    #[arg(long = "prometheus", value_name = "URL", help_heading = "Search")]
    pub prometheus: Option<String>,

    /// Pause between steps, so that what one step left queued at the server does not weigh
    /// on the next.
    #[arg(long = "drain", value_name = "D", default_value = "2s", value_parser = crate::args::parse_duration_or_zero, help_heading = "Search")]
    pub drain: Duration,

    /// Arrival spacing of every step.
    #[arg(long = "arrivals", value_name = "SPACING", help_heading = "Open loop")]
    pub arrivals: Option<ArrivalsArg>,

    /// Seed of Poisson arrivals.
    #[arg(
        long = "seed",
        value_name = "N",
        requires = "arrivals",
        help_heading = "Open loop"
    )]
    pub seed: Option<u64>,

    /// Connections a step may open at most.
    #[arg(long = "max-connections", value_name = "N", help_heading = "Open loop")]
    pub max_connections: Option<usize>,

    /// Arrivals due while this many requests are in flight are dropped (the generator then
    /// did not hold the step's rate, and the search says so).
    #[arg(long = "max-in-flight", value_name = "N", help_heading = "Open loop")]
    pub max_in_flight: Option<u64>,

    /// Worker threads [default: number of cores]
    #[arg(short = 't', long = "threads", value_name = "N")]
    pub threads: Option<usize>,

    /// Report format.
    #[arg(long = "output", value_name = "FORMAT", default_value = "text")]
    pub output: Format,

    /// Write the report to FILE instead of standard output.
    #[arg(long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Keep the search in FILE, rewritten after every step (the steps so far survive a crash
    /// or Ctrl-C); `belier report FILE` shows it again.
    #[arg(long = "save", value_name = "FILE")]
    pub save: Option<PathBuf>,
}

/// `5%` or `0.05`.
fn parse_share(s: &str) -> Result<f64, String> {
    let (number, scale) = match s.trim().strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (s.trim(), 1.0),
    };
    number
        .trim()
        .parse::<f64>()
        .map(|v| v / scale)
        .map_err(|_| format!("expected a share such as 5% or 0.05, not '{s}'"))
}

/// Runs the search and writes its report; the exit code says whether a capacity was found.
pub fn run(args: CapacityArgs, signals: &Signals, cores: usize) -> anyhow::Result<u8> {
    let slos = Slos::parse(&args.slo).map_err(|e| {
        InputError::new(
            "--slo <EXPR>",
            &e.expression,
            format!("at position {}: {}", e.position, e.message),
        )
    })?;
    let search_settings = SearchSettings {
        start_rate: args.start_rate,
        growth: args.growth,
        precision: args.precision,
        max_rate: args.max_rate,
        warmup: args.warmup,
        window: args.window,
        confirm: args.confirm,
        confirm_window: args.confirm_window,
        max_time: args.max_time,
        overload: if args.no_overload {
            Vec::new()
        } else {
            args.overload.clone()
        },
        overload_window: args.overload_window,
        recovery: 0.8,
    };
    if !slos.prometheus().is_empty() && args.prometheus.is_none() {
        return Err(InputError::new(
            "--slo <EXPR>",
            &slos.prometheus()[0].expression,
            "a prom: SLO needs --prometheus URL, the Prometheus server to query",
        )
        .into());
    }
    let mut search =
        Search::new(search_settings).map_err(|e| InputError::new(e.flag, "", e.message))?;
    let interval = step_interval(args.warmup)?;
    let (base, url) = settings::request_config(&args.request)?;
    let threads = settings::threads(args.threads, cores)?;

    let started = Instant::now();
    let mut steps: Vec<Step> = Vec::new();
    let mut overload_steps = Vec::new();
    let mut recovery = None;
    let mut interrupted = false;
    while let Some(plan) = search.next_step(started.elapsed()) {
        if !steps.is_empty() {
            std::thread::sleep(args.drain);
        }
        if signals.stop_requested() {
            interrupted = true;
            break;
        }
        eprintln!(
            "{}",
            step_line(
                steps.len() + 1,
                &plan,
                &search.answer(),
                started.elapsed(),
                args.max_time
            )
        );
        let mut settings = step_settings(&base, &url, &plan, &args, threads, interval)?;
        let fd_limit = crate::limits::fit_connections(&mut settings)?;
        let finished =
            crate::load::execute_judged(&settings, signals, fd_limit, Some(plan.warmup))?;
        if finished.interrupted {
            interrupted = true;
            break;
        }
        let window = finished.window.clone().unwrap_or_default();
        let generator = generator_verdict(&finished, &window, &plan);
        let prometheus = query_prometheus(&slos, args.prometheus.as_deref());
        let mut figures = StepFigures {
            target_rate: plan.rate,
            achieved_rate: window.scheduled().saturating_sub(window.dropped()) as f64
                / plan.window.as_secs_f64(),
            window: plan.window,
            totals: &window,
            generator: None,
            prometheus,
        };
        if !generator.kept_up && generator_to_blame(&finished, &window, &plan, &slos, &figures) {
            figures.generator = Some(generator.findings.join("; "));
        }
        let verdict = slos.judge(&figures);
        let step = Step::measure(&plan, &verdict, &window, plan.window);
        match plan.kind {
            // An overload step that met the SLOs shows no way of failing: the capacity was
            // set low (a confirmation moved it down), and it says nothing of the behaviour.
            StepKind::Overload if matches!(verdict, Verdict::Fail(_)) => {
                overload_steps.push(step.overload());
            }
            StepKind::Recovery if !matches!(verdict, Verdict::Generator(_)) => {
                let intervals: Vec<(Duration, bool)> = finished
                    .series
                    .points()
                    .iter()
                    .map(|p| (p.offset, slos.met_by(p)))
                    .collect();
                recovery = Some(overload::recovery(&intervals));
            }
            _ => {}
        }
        eprintln!(
            "capacity:   {}",
            match &verdict {
                Verdict::Pass => "pass".to_string(),
                Verdict::Fail(why) => format!("fail: {why}"),
                Verdict::Generator(why) => format!("generator: {why}"),
            }
        );
        search.record(&plan, verdict);
        steps.push(step);
        if let Some(path) = &args.save {
            let so_far = Outcome::new(
                url.clone(),
                slos.expressions().iter().map(|s| s.to_string()).collect(),
                search.answer(),
                steps.clone(),
                None,
                started.elapsed(),
            );
            if let Err(e) = save(path, &so_far) {
                eprintln!("capacity: the search is not saved: {e}");
            }
        }
    }

    let answer = search.answer();
    let overload = answer.max_rate.and_then(|c| {
        let behaviour = overload::classify(c, slos.latency_bound_us(), &overload_steps)?;
        Some(Overload::new(behaviour, recovery))
    });
    let outcome = Outcome::new(
        url,
        slos.expressions().iter().map(|s| s.to_string()).collect(),
        answer,
        steps,
        overload,
        started.elapsed(),
    );
    if let Some(path) = &args.save {
        if let Err(e) = save(path, &outcome) {
            eprintln!("capacity: the search is not saved: {e}");
        }
    }
    let code = if interrupted {
        signals::INTERRUPTED
    } else if outcome.limited_by == LimitedBy::Slo && outcome.max_rate.is_none() {
        EXIT_NO_CAPACITY
    } else {
        0
    };
    let text = match args.output {
        Format::Text => outcome.render_text(),
        Format::Json => outcome.to_json(),
    };
    match &args.out {
        None => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
        }
        Some(path) => {
            if let Err(e) = std::fs::write(path, &text) {
                print!("{text}");
                anyhow::bail!("cannot write the report to {}: {e}", path.display());
            }
            eprintln!("report written to {}", path.display());
        }
    }
    Ok(code)
}

/// Whether belier held the step's rate in its judged window: the run's verdict (arrivals
/// sent, its own lateness, its threads' CPU, open files and ports) on the window alone, so that
/// connections opened in the warm-up do not count against it.
fn generator_verdict(
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
        info: &info,
        totals: window,
        series: &series,
        elapsed: plan.window,
        interrupted: false,
        warnings: Vec::new(),
        host: finished.host,
        thresholds: Vec::new(),
    })
}

/// Waited after a step before querying Prometheus about it, so that the scrape that saw its
/// window's end is in (a scrape interval of up to a second, and the time to store it).
const SCRAPE_MARGIN: Duration = Duration::from_millis(1500);

/// The value of each Prometheus SLO's query at the end of the step's window (the run's end). A
/// query that fails is said on standard error and counts as no data, which fails the SLO.
fn query_prometheus(slos: &Slos, base: Option<&str>) -> Vec<Option<f64>> {
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
/// limits) may have decided the step. Arrivals belier dropped were never offered: always. The
/// rest only when the step failed: belier's own lateness counts in the latency (measured from
/// the intended start), so a step that met the SLOs with it met them without it; and only when
/// it may have made the difference: latencies shorter by belier's own lateness p99 would have
/// passed, or a worker thread was near a full core, or open files or ports near their limits.
fn generator_to_blame(
    finished: &crate::load::Finished,
    window: &belier_stats::Recorder,
    plan: &StepPlan,
    slos: &Slos,
    figures: &StepFigures<'_>,
) -> bool {
    if window.dropped() * 100 > window.scheduled() {
        return true;
    }
    if slos.judge(figures) == Verdict::Pass {
        return false;
    }
    let own = window.histogram(belier_stats::Metric::Dispatch);
    let own = if own.is_empty() { window.lag_us() } else { own };
    let own_p99 = if own.is_empty() {
        0
    } else {
        own.value_at_quantile(0.99)
    };
    let busy = finished
        .series
        .points()
        .iter()
        .filter(|p| p.offset >= plan.warmup)
        .any(|p| p.cpu >= belier_report::CPU_LIMIT);
    let near = |used: u64, limit: u64| limit > 0 && used * 10 >= limit * 9;
    let resources = finished.host.is_some_and(|h| {
        near(h.open_fds_peak, h.fd_limit)
            || h.ephemeral_ports_peak
                .zip(h.ephemeral_ports_total)
                .is_some_and(|(peak, total)| near(peak, total))
    });
    !slos.fails_without(figures, own_p99) || busy || resources
}

/// Writes the search so far to `path` through a temporary file renamed over it, so that the
/// file always holds a whole document.
fn save(path: &std::path::Path, outcome: &Outcome) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, outcome.to_json())?;
    std::fs::rename(&tmp, path)
}

/// The line on standard error as a step starts: which step, its rate, the bracket so far and
/// the time the budget has left, `capacity: step 6, bisect at 150.0/s for 3 s; passed 100.0/s,
/// failed 200.0/s; 42 s so far, 258 s left`.
fn step_line(
    n: usize,
    plan: &StepPlan,
    answer: &belier_capacity::Answer,
    elapsed: Duration,
    budget: Option<Duration>,
) -> String {
    let kind = match plan.kind {
        StepKind::Grow => "grow",
        StepKind::Bisect => "bisect",
        StepKind::Confirm => "confirm",
        StepKind::Overload => "overload",
        StepKind::Recovery => "recovery",
    };
    let mut line = format!(
        "capacity: step {n}, {kind} at {:.1}/s for {} s",
        plan.rate,
        plan.duration().as_secs_f64()
    );
    if let Some(p) = answer.passed {
        line += &format!("; passed {p:.1}/s");
    }
    if let Some((f, _)) = &answer.failed {
        line += &format!(", failed {f:.1}/s");
    }
    line += &format!("; {:.0} s so far", elapsed.as_secs_f64());
    if let Some(b) = budget {
        line += &format!(", {:.0} s left", b.saturating_sub(elapsed).as_secs_f64());
    }
    line
}

/// The recording interval of the steps: a second, or 100 ms when the warm-up is not a whole
/// number of seconds, so that the judged window starts on an interval.
fn step_interval(warmup: Duration) -> Result<Duration, InputError> {
    let ms = warmup.as_millis();
    if !ms.is_multiple_of(100) {
        return Err(InputError::new(
            "--warmup <D>",
            humantime::format_duration(warmup),
            "must be a whole number of tenths of a second",
        ));
    }
    Ok(if ms.is_multiple_of(1000) {
        Duration::from_secs(1)
    } else {
        Duration::from_millis(100)
    })
}

/// One step as a run: an open loop at the step's constant rate for its warm-up and window.
fn step_settings(
    base: &belier_engine::Config,
    url: &str,
    plan: &StepPlan,
    args: &CapacityArgs,
    threads: usize,
    interval: Duration,
) -> Result<Settings, InputError> {
    let mut engine = base.clone();
    engine.load = Load::Open {
        rate: Profile::constant(plan.rate),
        spacing: match args.arrivals.unwrap_or(ArrivalsArg::Even) {
            ArrivalsArg::Even => Spacing::Even,
            ArrivalsArg::Poisson => Spacing::Poisson {
                seed: args.seed.unwrap_or(belier_scenario::DEFAULT_SEED),
            },
        },
        max_connections: args.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS),
        max_in_flight: args.max_in_flight,
    };
    engine.threads = threads;
    engine.interval = interval;
    engine.stop = StopWhen {
        requests: None,
        duration: Some(plan.duration()),
        iterations: None,
    };
    Ok(Settings {
        engine,
        url: url.to_string(),
        output: Output {
            format: Format::Text,
            out: None,
            save: None,
            name: "capacity".into(),
            html: None,
        },
        max_connections_given: args.max_connections.is_some(),
        ramp_up: None,
        raw: None,
        plan: None,
    })
}
