//! The load fields of a run's information (model, stages, rates, budgets) as its reports
//! and results file describe them.

use std::time::Duration;

use belier_engine::{host, Load, Profile, Run, Spacing};
use belier_results::{Model, RunInfo, StageInfo};

use crate::settings::Settings;

/// The information of a local run of `settings`, started as `run`.
pub fn run_info(settings: &Settings, run: &Run) -> RunInfo {
    let config = &settings.engine;
    let open_loop = matches!(config.load, Load::Open { .. });
    let info = RunInfo {
        belier_version: env!("CARGO_PKG_VERSION").to_string(),
        url: settings.url.clone(),
        address: run.addr().to_string(),
        method: config.request.method.clone(),
        connections: config.load.max_connections(),
        threads: run.workers(),
        keepalive: config.keepalive,
        protocol: match (config.http2, config.http3) {
            (_, true) => "HTTP/3",
            (true, false) => "HTTP/2",
            (false, false) => "HTTP/1.1",
        }
        .into(),
        requests: config.stop.requests,
        duration_s: config.stop.duration.map(|d| d.as_secs_f64()),
        schedule_s: open_loop
            .then_some(config.schedule_end())
            .flatten()
            .map(|d| d.as_secs_f64()),
        timeout_s: config.timeout.as_secs_f64(),
        host_cores: crate::limits::cores(),
        host_name: host::name(),
        started_at: humantime::format_rfc3339_seconds(run.started_at()).to_string(),
        ..load_info(settings)
    };
    crate::shard::info(info, config.shard)
}

/// The load fields of the run information, with placeholders for the rest.
pub fn load_info(settings: &Settings) -> RunInfo {
    let users = settings.engine.users.as_deref();
    let stage_info = |p: &Profile| {
        p.stages()
            .iter()
            .map(|s| StageInfo {
                duration_s: s.duration.as_secs_f64(),
                target: s.target,
            })
            .collect()
    };
    let ramp_up = match &settings.engine.load {
        Load::Closed { connections } => ramp_up(connections),
        Load::Open { .. } => None,
    };
    let (model, rate, stages, arrivals, seed, max_connections, max_in_flight) =
        match &settings.engine.load {
            Load::Closed { connections } => {
                let stages = if ramp_up.is_some() {
                    vec![]
                } else {
                    stage_info(connections)
                };
                (Model::Closed, None, stages, None, None, None, None)
            }
            Load::Open {
                rate,
                spacing,
                max_connections,
                max_in_flight,
            } => {
                let (arrivals, seed) = match spacing {
                    Spacing::Even => ("even", None),
                    Spacing::Poisson { seed } => ("poisson", Some(*seed)),
                };
                (
                    Model::Open,
                    Some(rate.start()),
                    stage_info(rate),
                    Some(arrivals.to_string()),
                    seed,
                    Some(*max_connections),
                    *max_in_flight,
                )
            }
        };
    RunInfo {
        belier_version: String::new(),
        url: String::new(),
        address: String::new(),
        method: String::new(),
        connections: 0,
        threads: 0,
        keepalive: true,
        protocol: String::new(),
        requests: None,
        duration_s: None,
        schedule_s: None,
        timeout_s: 0.0,
        host_cores: 0,
        host_name: None,
        shard_hosts: Vec::new(),
        workers: Vec::new(),
        started_at: String::new(),
        model,
        rate,
        stages,
        ramp_up_s: ramp_up.map(|d| d.as_secs_f64()),
        arrivals,
        seed,
        max_connections,
        max_in_flight,
        timer_slack_us: (model == Model::Open)
            .then_some(settings.engine.timer_slack.as_micros() as u64),
        shards: 1,
        shard: None,
        plan: settings.plan.as_ref().map(|p| p.display().to_string()),
        virtual_users: settings
            .engine
            .users
            .is_some()
            .then(|| settings.engine.load.max_connections() as u64),
        pacing_s: settings.engine.pacing.map(|d| d.as_secs_f64()),
        steps: users.map(|u| u.steps().to_vec()).unwrap_or_default(),
        checks: users.map(|u| u.checks().to_vec()).unwrap_or_default(),
        metrics: users.map(|u| u.metrics().to_vec()).unwrap_or_default(),
        // A stream's rows are known at its end only (the end line names them): how many
        // have come by now is a race with the run that has already started.
        targets: settings
            .targets
            .as_ref()
            .filter(|t| !t.users.is_stream())
            .map(crate::settings::TargetsRun::rows)
            .unwrap_or_default(),
    }
}

/// A closed loop's ramp-up (`--ramp-up`): stages that then hold their last level, reported as
/// the ramp's length rather than as stages.
fn ramp_up(connections: &Profile) -> Option<Duration> {
    (connections.end().is_none() && !connections.stages().is_empty())
        .then(|| connections.stages().iter().map(|s| s.duration).sum())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use belier_engine::{Profile, Stage};

    use super::ramp_up;

    #[test]
    fn a_ramp_up_is_stages_that_then_hold() {
        let stage = |s, target| Stage {
            duration: Duration::from_secs(s),
            target,
        };
        let held = Profile::staged(0.0, vec![stage(4, 8.0)]).then_hold();
        assert_eq!(ramp_up(&held), Some(Duration::from_secs(4)));
        let staged = Profile::staged(0.0, vec![stage(4, 8.0), stage(2, 0.0)]);
        assert_eq!(ramp_up(&staged), None, "stages that end are stages");
        assert_eq!(ramp_up(&Profile::constant(8.0)), None);
    }
}
