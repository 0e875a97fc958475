//! The plan's `load`: virtual users or an arrival rate, their stages, pacing, bounds and
//! arrivals, checked and turned into the engine's load.

use std::time::Duration;

use belier_engine::{Profile, Spacing, Stage, DEFAULT_MAX_CONNECTIONS};

use crate::error::Result;
use crate::model::{LoadModel, LoadPlan};
use crate::yaml::{Fields, Kind, Node, Reader};

/// Seed of the users' generators when the plan sets none: runs repeat by default.
pub const DEFAULT_SEED: u64 = 1;

const LOAD_KEYS: &[&str] = &[
    "vus",
    "stages",
    "pacing",
    "duration",
    "iterations",
    "rate",
    "max_vus",
    "arrivals",
    "seed",
];

fn stages(rd: Reader<'_>, node: &Node) -> Result<Vec<Stage>> {
    let mut out = Vec::new();
    for item in rd.seq(node, "stages")? {
        let (duration, target) = match &item.kind {
            Kind::Scalar { .. } => {
                let text = rd.str(item, "a stage")?;
                let Some((d, t)) = text.rsplit_once(':') else {
                    return Err(rd.err(
                        item,
                        format!(
                            "expected a stage `DURATION:TARGET` such as `30s:100`, found `{text}`"
                        ),
                    ));
                };
                let duration = crate::duration::parse(d)
                    .map_err(|why| rd.err(item, format!("bad stage duration `{d}`: {why}")))?;
                let target: f64 = t
                    .trim()
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| {
                        rd.err(
                            item,
                            format!("bad stage target `{t}`: expected a number ≥ 0"),
                        )
                    })?;
                (duration, target)
            }
            _ => {
                let f = rd.map(item, "a stage", &["duration", "target"])?;
                let (Some(d), Some(t)) = (f.get("duration"), f.get("target")) else {
                    return Err(rd.err(item, "a stage needs `duration` and `target`"));
                };
                let target = rd.f64(t, "a stage target")?;
                if target < 0.0 {
                    return Err(rd.err(t, "expected a stage target ≥ 0"));
                }
                (rd.duration(d, "a stage duration")?, target)
            }
        };
        out.push(Stage { duration, target });
    }
    if out.is_empty() {
        return Err(rd.err(node, "expected at least one stage"));
    }
    Ok(out)
}

pub(super) fn load(rd: Reader<'_>, node: Option<&Node>) -> Result<LoadPlan> {
    let Some(node) = node else {
        return Ok(LoadPlan {
            model: LoadModel::Closed {
                vus: Profile::constant(1.0),
                pacing: None,
            },
            duration: None,
            iterations: None,
            seed: DEFAULT_SEED,
        });
    };
    let f = rd.map(node, "load", LOAD_KEYS)?;
    let stages = f.get("stages").map(|n| stages(rd, n)).transpose()?;
    let duration = f
        .get("duration")
        .map(|n| rd.duration(n, "duration"))
        .transpose()?;
    let iterations = f
        .get("iterations")
        .map(|n| rd.u64(n, "iterations"))
        .transpose()?;
    let seed = f
        .get("seed")
        .map(|n| rd.u64(n, "seed"))
        .transpose()?
        .unwrap_or(DEFAULT_SEED);
    let only = |keys: &[&str], model: &str| -> Result<()> {
        for k in keys {
            if let Some(key) = f.key_node(k) {
                return Err(rd.err(key, format!("`{k}` does not apply to {model}")));
            }
        }
        Ok(())
    };
    let model = match f.get("rate") {
        Some(rate_node) => {
            only(&["vus", "pacing"], "an open loop (`rate`); use `max_vus`")?;
            open_loop(rd, &f, rate_node, stages, seed)?
        }
        None => {
            only(
                &["max_vus", "arrivals"],
                "a closed loop (`vus`); set `rate` for an open loop",
            )?;
            closed_loop(rd, node, &f, stages)?
        }
    };
    Ok(LoadPlan {
        model,
        duration,
        iterations,
        seed,
    })
}

/// An open loop: iterations arrive at `rate` (per second, over `stages` if given), up to
/// `max_vus` at once, evenly spaced or as a Poisson process drawn from `seed`.
fn open_loop(
    rd: Reader<'_>,
    f: &Fields<'_>,
    rate_node: &Node,
    stages: Option<Vec<Stage>>,
    seed: u64,
) -> Result<LoadModel> {
    let rate = rd.f64(rate_node, "rate (iterations per second)")?;
    if rate < 0.0 {
        return Err(rd.err(rate_node, "expected a rate ≥ 0"));
    }
    let profile = match stages {
        Some(s) => Profile::staged(rate, s),
        None => Profile::constant(rate),
    };
    let max_vus = match f.get("max_vus") {
        Some(n) => match rd.u64(n, "max_vus")? {
            0 => return Err(rd.err(n, "expected max_vus ≥ 1")),
            v => usize::try_from(v).unwrap_or(usize::MAX),
        },
        None => DEFAULT_MAX_CONNECTIONS,
    };
    let spacing = match f.get("arrivals") {
        None => Spacing::Even,
        Some(n) => match rd.str(n, "arrivals")? {
            "even" => Spacing::Even,
            "poisson" => Spacing::Poisson { seed },
            other => {
                return Err(rd.err(
                    n,
                    format!("expected arrivals `even` or `poisson`, found `{other}`"),
                ))
            }
        },
    };
    Ok(LoadModel::Open {
        rate: profile,
        max_vus,
        spacing,
    })
}

/// A closed loop: `vus` users (over `stages` if given), each starting its next iteration when
/// the last ends, or every `pacing`.
fn closed_loop(
    rd: Reader<'_>,
    node: &Node,
    f: &Fields<'_>,
    stages: Option<Vec<Stage>>,
) -> Result<LoadModel> {
    let vus = f.get("vus").map(|n| rd.u64(n, "vus")).transpose()?;
    let profile = match (vus, stages) {
        (vus, Some(s)) => Profile::staged(vus.unwrap_or(0) as f64, s),
        (Some(v), None) => Profile::constant(v as f64),
        (None, None) => Profile::constant(1.0),
    };
    let pacing = f
        .get("pacing")
        .map(|n| rd.duration(n, "pacing"))
        .transpose()?;
    if pacing == Some(Duration::ZERO) {
        return Err(rd.err(f.get("pacing").unwrap_or(node), "expected a pacing above 0"));
    }
    Ok(LoadModel::Closed {
        vus: profile,
        pacing,
    })
}
