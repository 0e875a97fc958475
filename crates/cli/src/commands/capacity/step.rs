//! What a capacity step runs: the level the search chose, as a load on the target. A level is
//! a rate of requests (an open loop), of a plan's iterations (an open loop of its scripted
//! users), of new connections (an open loop with a connection per request), or a number of
//! connections (a closed loop).

use std::path::PathBuf;
use std::time::Duration;

use belier_capacity::{Dimension, StepPlan};
use belier_engine::{Config, Load, Profile, Spacing, StopWhen, DEFAULT_MAX_CONNECTIONS};
use belier_plan::{LoadModel, Plan};
use belier_scenario::{PhaseOutcome, VirtualUsers};

use crate::args::Format;
use crate::plan::Connection;
use crate::settings::{Draft, Http2, InputError, Output, Settings};

/// What the search loads.
pub enum Target {
    /// The request the flags describe.
    Url {
        /// The engine's configuration of that request (TLS, timeout).
        engine: Box<Config>,
        /// The URL, as given.
        url: String,
        /// HTTP/2, as the flags ask for it.
        http2: Http2,
    },
    /// A plan's scripted users: each step makes them anew, so that data rows, cookies and
    /// extracted values start over as in a run of their own.
    Plan {
        /// The plan, with the flags that change it applied.
        plan: Box<Plan>,
        /// Where it was read from.
        path: PathBuf,
        /// How its connections are made.
        connection: Connection,
        /// What the plan's `setup` extracted, once it has run: every step's users start
        /// with it.
        setup: Option<PhaseOutcome>,
    },
}

/// How every step's load is shaped, beyond its level.
pub struct Shape {
    /// What the level is.
    pub dimension: Dimension,
    /// Spacing of an open loop's arrivals.
    pub spacing: Spacing,
    /// `--max-connections` (for a plan, its users), if given.
    pub max_connections: Option<usize>,
    /// `--max-in-flight`, if given.
    pub max_in_flight: Option<u64>,
    /// Worker threads.
    pub threads: usize,
    /// Recording interval.
    pub interval: Duration,
    /// With the held-connections dimension: the request rate of every step.
    pub hold_rate: Option<f64>,
    /// Connections held beside every step (with the held-connections dimension, their
    /// number is each step's level).
    pub hold: Option<belier_engine::Hold>,
}

impl Target {
    /// The URL the report names: the one given, or the plan's target.
    pub fn url(&self) -> String {
        match self {
            Target::Url { url, .. } => url.clone(),
            Target::Plan { plan, .. } => plan.target.url(),
        }
    }

    /// The run of one step: its level held for its warm-up and window.
    pub fn step(&self, step: &StepPlan, shape: &Shape) -> Result<Settings, InputError> {
        let (mut engine, url, http2, plan_path, open_default) = match self {
            Target::Url { engine, url, http2 } => (
                engine.as_ref().clone(),
                url.clone(),
                http2.clone(),
                None,
                DEFAULT_MAX_CONNECTIONS,
            ),
            Target::Plan {
                plan,
                path,
                connection,
                setup,
            } => {
                let users = plan.users();
                if let Some(values) = setup {
                    users.share(values);
                }
                let engine = crate::plan::engine_for(plan, connection, users)?;
                let max_vus = match &plan.load.model {
                    LoadModel::Open { max_vus, .. } => *max_vus,
                    LoadModel::Closed { .. } => DEFAULT_MAX_CONNECTIONS,
                };
                let http2 = crate::plan::http2(plan, path);
                (
                    engine,
                    plan.target.url(),
                    http2,
                    Some(path.clone()),
                    max_vus,
                )
            }
        };
        engine.load = match shape.dimension {
            Dimension::Connections => Load::Closed {
                connections: Profile::constant(step.rate),
            },
            Dimension::HeldConnections => Load::Open {
                rate: Profile::constant(shape.hold_rate.unwrap_or(step.rate)),
                spacing: shape.spacing,
                max_connections: shape.max_connections.unwrap_or(open_default),
                max_in_flight: shape.max_in_flight,
            },
            Dimension::Rate | Dimension::IterationRate | Dimension::ConnectionRate => Load::Open {
                rate: Profile::constant(step.rate),
                spacing: shape.spacing,
                max_connections: shape.max_connections.unwrap_or(open_default),
                max_in_flight: shape.max_in_flight,
            },
        };
        if shape.dimension == Dimension::ConnectionRate {
            engine.keepalive = false;
        }
        engine.hold = shape.hold.map(|mut hold| {
            if shape.dimension == Dimension::HeldConnections {
                hold.connections = step.rate.round() as u64;
            }
            hold
        });
        engine.interval = shape.interval;
        engine.stop = StopWhen {
            requests: None,
            duration: Some(step.duration()),
            iterations: None,
        };
        Draft {
            engine,
            url,
            output: Output {
                format: Format::Text,
                out: None,
                save: None,
                keep: None,
                name: "capacity".into(),
                html: None,
                junit: None,
                tui: false,
                metrics: None,
                metrics_out: Vec::new(),
                traces_out: None,
                web: None,
            },
            raw: None,
            plan: plan_path,
            threads: shape.threads,
            http2,
            cap_given: shape.max_connections.is_some(),
            // A search is never split.
            part: belier_engine::Shard::WHOLE,
        }
        .finish()
    }
}

/// The recording interval of the steps: a second, or 100 ms when the warm-up is not a whole
/// number of seconds, so that the judged window starts on an interval.
pub fn interval(warmup: Duration) -> Result<Duration, InputError> {
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

/// Whether the positional argument names a plan file rather than a URL.
pub fn is_plan(arg: &str) -> bool {
    !arg.contains("://")
        && (arg.ends_with(".yaml") || arg.ends_with(".yml") || std::path::Path::new(arg).is_file())
}

/// What a step's judged window (`window` long) achieved, per second: the arrivals taken up
/// for a rate (completions lag behind arrivals when the server queues, and would read as
/// more than was sent); for connections, the requests they carried per second of the window
/// and the `tail` after the step's end in which its last responses came (as goodput counts
/// them: dividing by the window alone reads the connections' last round trip as more load).
pub fn achieved(
    dimension: Dimension,
    totals: &belier_stats::Recorder,
    window: Duration,
    tail: Duration,
) -> f64 {
    if dimension.is_rate() {
        let secs = window.as_secs_f64().max(f64::MIN_POSITIVE);
        totals.scheduled().saturating_sub(totals.dropped()) as f64 / secs
    } else {
        let secs = (window + tail).as_secs_f64().max(f64::MIN_POSITIVE);
        totals.requests() as f64 / secs
    }
}
