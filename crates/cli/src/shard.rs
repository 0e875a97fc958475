//! `--shard I/N`: this process runs shard I (from 1) of a test split across N processes or
//! machines, and its results file says so, so that `belier report` of the N files is the
//! one-machine report. The engine decides what a shard takes ([`belier_engine::Shard`]); this
//! module checks the flag against the run and records the shard's share in the results.

use belier_engine::{Config, Load, Shard, Spacing};
use belier_results::{RunInfo, ShardInfo};

use crate::settings::InputError;

/// The flag, as errors name it.
const FLAG: &str = "--shard <I/N>";

/// Makes `engine` shard `shard` of its run, or says why this run cannot be split so.
/// `seed_given`: the Poisson seed was chosen by the user (or the plan), not drawn at random.
pub fn apply(
    engine: &mut Config,
    shard: Option<Shard>,
    seed_given: bool,
) -> Result<(), InputError> {
    let Some(shard) = shard else {
        return Ok(());
    };
    if let Load::Open {
        spacing: Spacing::Poisson { .. },
        ..
    } = engine.load
    {
        if !seed_given && !shard.is_whole() {
            // Every shard draws the whole run's Poisson sequence and keeps its own arrivals;
            // shards drawing different sequences would not add up to one Poisson process.
            return Err(InputError::new(
                FLAG,
                shard,
                "with --arrivals poisson every shard must draw the same sequence: give the same --seed N to every shard",
            ));
        }
    }
    engine.shard = shard;
    if engine.max_connections() == 0 {
        let what = match (&engine.load, engine.users.is_some()) {
            (Load::Closed { .. }, true) => "users",
            (Load::Closed { .. }, false) => "connections",
            (Load::Open { .. }, _) => "--max-connections",
        };
        return Err(InputError::new(
            FLAG,
            shard,
            format!(
                "the run has {} {what}, too few for {} shards: this one would get none",
                engine.load.max_connections(),
                shard.count()
            ),
        ));
    }
    Ok(())
}

/// `info` of the whole run made this shard's: its share of the connections, rate, budgets
/// and caps (so that merged shards add up to the whole run's) and which shard it is.
pub fn info(mut info: RunInfo, shard: Shard) -> RunInfo {
    if shard.is_whole() {
        return info;
    }
    let share = |n: u64| shard.share(n);
    let part = |x: f64| x / shard.count() as f64;
    info.connections = share(info.connections as u64) as usize;
    info.requests = info.requests.map(share);
    info.rate = info.rate.map(part);
    for stage in &mut info.stages {
        stage.target = match info.model {
            belier_results::Model::Open => part(stage.target),
            // Connections: the slots below the level that are this shard's.
            belier_results::Model::Closed => share(stage.target.ceil() as u64) as f64,
        };
    }
    info.max_connections = info.max_connections.map(|n| share(n as u64) as usize);
    info.max_in_flight = info.max_in_flight.map(share);
    info.virtual_users = info.virtual_users.map(share);
    info.shard = Some(ShardInfo::one(shard.index() + 1, shard.count()));
    info
}

#[cfg(test)]
mod tests {
    use super::*;
    use belier_engine::{Profile, RequestSpec};

    fn config(load: Load) -> Config {
        let mut c = Config::new(RequestSpec {
            method: "GET".into(),
            host: "127.0.0.1".into(),
            port: 1,
            path_and_query: "/".into(),
            headers: vec![],
            body: vec![],
        });
        c.load = load;
        c
    }

    #[test]
    fn a_shard_needs_a_connection_and_poisson_a_seed() {
        let closed = |n: f64| {
            config(Load::Closed {
                connections: Profile::constant(n),
            })
        };
        let shard = |s: &str| Some(s.parse::<Shard>().unwrap());
        assert!(apply(&mut closed(10.0), shard("4/4"), false).is_ok());
        let err = apply(&mut closed(2.0), shard("3/4"), false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value '3/4' for '--shard <I/N>': the run has 2 connections, too few for 4 shards: this one would get none"
        );
        let poisson = |seed_given| {
            let mut c = config(Load::Open {
                rate: Profile::constant(100.0),
                spacing: Spacing::Poisson { seed: 1 },
                max_connections: 100,
                max_in_flight: None,
            });
            apply(&mut c, shard("1/2"), seed_given).map(|_| c.shard)
        };
        assert!(poisson(false).unwrap_err().to_string().contains("--seed"));
        assert_eq!(poisson(true), Ok(Shard::new(0, 2).unwrap()));
    }
}
