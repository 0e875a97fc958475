//! `belier capacity URL --slo EXPR` (or a plan): runs the capacity search's steps and reports
//! what it found. The search itself (which level next, what a step's figures say) is
//! `belier_capacity`'s; [`step`] turns each planned step into a run, [`judge`] tells whether
//! its window says anything of the server, and this module runs the loop and writes the report.

mod cpu;
mod drain;
mod judge;
mod measure;
mod phases;
mod step;
mod target;
use target::target;

use std::io::Write as _;
use std::time::{Duration, Instant};

use belier_capacity::{
    overload, Dimension, LimitedBy, Outcome, Overload, Search, SearchSettings, Slos, Step,
    StepKind, StepPlan, Verdict,
};
use belier_engine::Spacing;

use crate::args::{ArrivalsArg, CapacityArgs, CapacityFormat, DimensionArg};
use crate::settings::{self, InputError};
use crate::signals::{self, Signals};
use step::{Shape, Target};

/// Exit code when no rate met the SLOs, not even the start rate.
pub const EXIT_NO_CAPACITY: u8 = 5;

/// Allowed in the budget for starting a step (its threads, its connections) and judging it.
const STEP_START: Duration = Duration::from_millis(500);

/// The pause between steps when the target cannot be probed (HTTP/2).
const UNPROBED_PAUSE: Duration = Duration::from_secs(2);

/// Runs the search and writes its report; the exit code says whether a capacity was found.
pub fn run(args: CapacityArgs, signals: &Signals, cores: usize) -> anyhow::Result<u8> {
    let slos = checked_slos(&args)?;
    let keep = crate::history::keep(&args.keep, args.name.as_deref())?;
    let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let mut target = target(&args)?;
    let dimension = match (args.dimension, &target) {
        (DimensionArg::Rate, Target::Plan { .. }) => Dimension::IterationRate,
        (DimensionArg::Rate, Target::Url { .. }) => Dimension::Rate,
        (DimensionArg::Connections, _) => Dimension::Connections,
        (DimensionArg::ConnectionRate, _) => Dimension::ConnectionRate,
        (DimensionArg::HeldConnections, _) => Dimension::HeldConnections,
    };
    let mut search = Search::new(search_settings(&args, dimension))
        .map_err(|e| InputError::new(e.flag, "", e.message))?;
    let shape = shape(&args, dimension, cores)?;
    // Every step's settings are decided the same way, so deciding the first step's before
    // anything starts refuses what no step could run (HTTP/2 options, too many connections).
    // A plan's setup and teardown run with them.
    let first = target.step(
        &StepPlan {
            rate: args
                .max_rate
                .map_or(args.start_rate, |m| m.min(args.start_rate)),
            kind: StepKind::Grow,
            warmup: args.warmup,
            window: args.window,
        },
        &shape,
    )?;
    let teardown = match phases::setup(&mut target, &first, signals)? {
        Ok(teardown) => teardown,
        Err(code) => return Ok(code),
    };
    let url = target.url();
    let slo_texts: Vec<String> = slos.expressions().iter().map(|s| s.to_string()).collect();
    let outcome_of = |search: &Search, steps: &[Step], overload, elapsed| {
        Outcome::new(
            url.clone(),
            dimension,
            slo_texts.clone(),
            search.answer(),
            steps.to_vec(),
            overload,
            elapsed,
        )
    };

    let prober = announce_prober(drain::Prober::start(&first.engine), args.drain);
    let runner = measure::Runner {
        target: &target,
        shape: &shape,
        slos: &slos,
        prometheus: args.prometheus.as_deref(),
        signals,
    };

    let started = Instant::now();
    let mut steps: Vec<Step> = Vec::new();
    let save_so_far = |search: &Search, steps: &[Step]| {
        if let Some(path) = &args.save {
            let so_far = outcome_of(search, steps, None, started.elapsed());
            if let Err(e) = save(path, &so_far) {
                eprintln!("capacity: the search is not saved: {e}");
            }
        }
    };
    // The teardown runs whatever ended the search, an error included.
    let searched = run_steps(
        &mut search,
        &mut steps,
        &runner,
        prober.as_ref(),
        &args,
        started,
        &save_so_far,
    );
    phases::teardown(teardown, &first)?;
    let interrupted = searched?;

    let mut outcome = outcome_of(&search, &steps, None, started.elapsed());
    outcome.overload = past_capacity(&outcome, &slos, &steps);
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
    write_report(&args, &outcome)?;
    if let Some(keep) = &keep {
        keep_search(keep, &outcome, started_at)?;
    }
    Ok(code)
}

/// Keeps the finished search in the history (`--history`), after its report is written.
fn keep_search(
    keep: &crate::history::Keep,
    outcome: &Outcome,
    started_at: String,
) -> anyhow::Result<()> {
    let search = belier_history::CapacitySearch {
        outcome,
        started_at,
        belier_version: env!("CARGO_PKG_VERSION"),
        host: belier_engine::host::name(),
    };
    let id = crate::history::keep_capacity(keep, &search)
        .map_err(|e| e.context("cannot keep the search in the history"))?;
    eprintln!(
        "capacity: search kept in the history {} as run {id}",
        keep.db.shown()
    );
    Ok(())
}

/// How every step loads the target: its dimension, arrival spacing, limits, threads and
/// interval.
fn shape(args: &CapacityArgs, dimension: Dimension, cores: usize) -> anyhow::Result<Shape> {
    Ok(Shape {
        dimension,
        spacing: match args.open_loop.arrivals.unwrap_or(ArrivalsArg::Even) {
            ArrivalsArg::Even => Spacing::Even,
            ArrivalsArg::Poisson => Spacing::Poisson {
                seed: args.open_loop.seed.unwrap_or(belier_plan::DEFAULT_SEED),
            },
        },
        max_connections: args.open_loop.max_connections,
        max_in_flight: args.open_loop.max_in_flight,
        threads: settings::threads(args.sending.threads, cores)?,
        interval: step::interval(args.warmup)?,
        hold_rate: hold_rate(args, dimension)?,
        hold: match dimension {
            // The level is the number held; one stands in until a step sets it.
            Dimension::HeldConnections => settings::hold(&args.hold, Some(1))?,
            _ => settings::hold(&args.hold, args.hold.hold)?,
        },
    })
}

/// The rate every step of a held-connections search sends beside them (`--rate`), which only
/// that search takes; and the `--hold` it must not be given, since it searches that number.
fn hold_rate(args: &CapacityArgs, dimension: Dimension) -> Result<Option<f64>, InputError> {
    if dimension != Dimension::HeldConnections {
        return match args.rate {
            Some(rate) => Err(InputError::new(
                "--rate <R>",
                rate,
                "is the load beside held connections: give --dimension held-connections (other searches vary the rate themselves)",
            )),
            None => Ok(None),
        };
    }
    if let Some(n) = args.hold.hold {
        return Err(InputError::new(
            "--hold <N>",
            n,
            "is what --dimension held-connections searches: leave it out",
        ));
    }
    let Some(rate) = args.rate else {
        return Err(InputError::new(
            "--dimension <D>",
            "held-connections",
            "needs --rate R: the load every step sends beside the held connections",
        ));
    };
    if !rate.is_finite() || rate <= 0.0 || rate > crate::limits::MAX_RATE {
        return Err(InputError::new(
            "--rate <R>",
            rate,
            format!(
                "must be a positive number of requests per second, at most {}",
                crate::limits::MAX_RATE
            ),
        ));
    }
    Ok(Some(rate))
}

/// How the service behaved past its capacity: goodput weighed against what it served at
/// its capacity, and whether it recovered.
fn past_capacity(outcome: &Outcome, slos: &Slos, steps: &[Step]) -> Option<Overload> {
    let overload_steps: Vec<_> = steps
        .iter()
        // An overload step that met the SLOs shows no way of failing: the capacity was set
        // low (a confirmation moved it down), and it says nothing of the behaviour.
        .filter(|s| s.kind == StepKind::Overload && s.pass == Some(false))
        .map(Step::overload)
        .collect();
    outcome.capacity_goodput().and_then(|c| {
        let behaviour = overload::classify(c, slos.latency_bound_us(), &overload_steps)?;
        Some(Overload::new(behaviour, belier_capacity::recovery(steps)))
    })
}

/// The SLOs the flags give, checked; and what no search can be (split into shards).
fn checked_slos(args: &CapacityArgs) -> anyhow::Result<Slos> {
    if let Some(shard) = &args.shard {
        // Each step's verdict needs the whole step's latency and errors, which no shard sees.
        return Err(InputError::new(
            "--shard <I/N>",
            shard,
            "a capacity search cannot be split: each step is judged on the whole load, of which a shard sees only part; run the search from one machine",
        )
        .into());
    }
    let slos = Slos::parse(&args.slo).map_err(|e| {
        InputError::new(
            "--slo <EXPR>",
            &e.expression,
            format!("at position {}: {}", e.position, e.message),
        )
    })?;
    if !slos.prometheus().is_empty() && args.prometheus.is_none() {
        return Err(InputError::new(
            "--slo <EXPR>",
            &slos.prometheus()[0].expression,
            "a prom: SLO needs --prometheus URL, the Prometheus server to query",
        )
        .into());
    }
    Ok(slos)
}

/// The search's settings from the flags.
fn search_settings(args: &CapacityArgs, dimension: Dimension) -> SearchSettings {
    SearchSettings {
        start_rate: args.start_rate,
        growth: args.growth,
        precision: args.precision,
        max_rate: args.max_rate,
        warmup: args.warmup,
        window: args.window,
        confirm: args.confirm,
        confirm_window: args.confirm_window,
        max_time: args.max_time,
        // The grace of the step's last requests, its start, and the Prometheus queries.
        step_overhead: belier_engine::DEFAULT_GRACE
            + STEP_START
            + if args.prometheus.is_some() {
                judge::SCRAPE_MARGIN + STEP_START
            } else {
                Duration::ZERO
            },
        overload: if args.no_overload {
            Vec::new()
        } else {
            args.overload.clone()
        },
        overload_window: args.overload_window,
        recovery: 0.8,
        whole: dimension.whole(),
    }
}

/// Runs the search's steps until it ends or a step cannot start, waiting after each for the
/// server to drain; `Ok(true)` when Ctrl-C stopped it.
fn run_steps(
    search: &mut Search,
    steps: &mut Vec<Step>,
    runner: &measure::Runner<'_>,
    prober: Option<&drain::Prober>,
    args: &CapacityArgs,
    started: Instant,
    save_so_far: &dyn Fn(&Search, &[Step]),
) -> anyhow::Result<bool> {
    let signals = runner.signals;
    while let Some(plan) = search.next_step(started.elapsed()) {
        if signals.stop_requested() {
            return Ok(true);
        }
        eprintln!(
            "{}",
            step_line(
                steps.len() + 1,
                &plan,
                runner.shape.dimension,
                &search.answer(),
                started.elapsed(),
                args.max_time
            )
        );
        let Some((mut step, verdict)) = runner.run(&plan)? else {
            return Ok(true);
        };
        let said = match &verdict {
            Verdict::Pass => "pass".to_string(),
            Verdict::Fail(why) => format!("fail: {why}"),
            Verdict::Generator(why) => format!("generator: {why}"),
        };
        let voided = matches!(verdict, Verdict::Generator(_));
        search.record(&plan, verdict);
        // A voided step the search goes on from is run again: say so, or the same step
        // twice reads as a repeat.
        let again = if voided && !search.finished() {
            "; void, run again"
        } else {
            ""
        };
        eprintln!("capacity:   {said}{again}");
        if !search.finished() {
            // No step runs on what the last one left queued; the wait counts in the budget.
            let left = args
                .max_time
                .map_or(args.drain, |b| b.saturating_sub(started.elapsed()));
            wait_for_drain(&mut step, prober, args.drain.min(left), signals);
        }
        steps.push(step);
        save_so_far(search, steps);
    }
    Ok(false)
}

/// Writes the report in the format asked for (and the HTML page beside it, if asked for).
fn write_report(args: &CapacityArgs, outcome: &Outcome) -> anyhow::Result<()> {
    if let Some(path) = &args.html {
        match std::fs::write(path, belier_report::render_capacity_html(outcome)) {
            Ok(()) => eprintln!("HTML report written to {}", path.display()),
            Err(e) => eprintln!("cannot write the HTML report to {}: {e}", path.display()),
        }
    }
    let text = match args.output {
        CapacityFormat::Text => belier_report::render_capacity_text(outcome),
        CapacityFormat::Json => outcome.to_json(),
        CapacityFormat::Html => belier_report::render_capacity_html(outcome),
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
    Ok(())
}

/// Says how the search waits between steps: for probes at the idle latency, or a fixed pause
/// when the target cannot be probed.
fn announce_prober(prober: Option<drain::Prober>, longest: Duration) -> Option<drain::Prober> {
    match &prober {
        Some(p) => eprintln!(
            "capacity: the idle target answers a probe in {:.1} ms; after each step, belier waits \
             until it does so again (at most {})",
            p.baseline().as_secs_f64() * 1000.0,
            humantime::format_duration(longest)
        ),
        None => eprintln!(
            "capacity: the target cannot be probed (HTTP/2, or no answer); steps are {} apart",
            humantime::format_duration(UNPROBED_PAUSE.min(longest))
        ),
    }
    prober
}

/// Waits after `step` until the server has drained, for at most `longest`, and notes how it
/// went in the step; without a probe, pauses.
fn wait_for_drain(
    step: &mut Step,
    prober: Option<&drain::Prober>,
    longest: Duration,
    signals: &Signals,
) {
    let Some(prober) = prober.filter(|_| !longest.is_zero()) else {
        std::thread::sleep(UNPROBED_PAUSE.min(longest));
        return;
    };
    let waited = prober.wait(longest, signals);
    step.drain_s = Some(waited.after.as_secs_f64());
    step.drained = Some(waited.drained);
    if !waited.drained {
        eprintln!(
            "capacity:   the server did not answer at its idle latency within {:.1} s",
            waited.after.as_secs_f64()
        );
    } else if waited.after > Duration::ZERO {
        eprintln!(
            "capacity:   the server drained in {:.1} s",
            waited.after.as_secs_f64()
        );
    }
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
    dimension: Dimension,
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
        "capacity: step {n}, {kind} at {} for {} s",
        dimension.level(plan.rate),
        plan.duration().as_secs_f64()
    );
    if let Some(p) = answer.passed {
        line += &format!("; passed {}", dimension.level(p));
    }
    if let Some((f, _)) = &answer.failed {
        line += &format!(", failed {}", dimension.level(*f));
    }
    line += &format!("; {:.0} s so far", elapsed.as_secs_f64());
    if let Some(b) = budget {
        line += &format!(", {:.0} s left", b.saturating_sub(elapsed).as_secs_f64());
    }
    line
}
