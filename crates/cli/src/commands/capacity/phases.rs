//! A plan's `setup` and `teardown` around a capacity search: setup once before the first
//! step, its values shared with every step's fresh users; teardown once after the last step,
//! whatever ended the search (its end, its time budget, Ctrl-C).

use std::sync::Arc;

use belier_scenario::{PlanUsers, VirtualUsers};

use super::step::Target;
use crate::settings::Settings;
use crate::signals::{self, Signals};

/// Runs the plan's setup, if it has one, with the connection settings of a step; gives its
/// values to the steps to come and to the teardown, which it returns. `Err(code)`: interrupted
/// before any load; a failed setup is an error naming why.
pub fn setup(
    target: &mut Target,
    settings: &Settings,
    signals: &Signals,
) -> anyhow::Result<Result<Option<Arc<PlanUsers>>, u8>> {
    let Target::Plan { plan, setup, .. } = target else {
        return Ok(Ok(None));
    };
    let teardown = plan.teardown();
    let Some(users) = plan.setup() else {
        return Ok(Ok(teardown));
    };
    let done = crate::phase::run(settings, &users, Some(signals))?;
    eprintln!("capacity: {}", done.line("setup"));
    if done.interrupted {
        return Ok(Err(signals::INTERRUPTED));
    }
    done.require_setup_passed()?;
    if let Some(teardown) = &teardown {
        teardown.share(&done.outcome);
    }
    *setup = Some(done.outcome);
    Ok(Ok(teardown))
}

/// Runs the plan's teardown, if it has one; a failed teardown is a line on standard error
/// (the capacity report has no warnings).
pub fn teardown(users: Option<Arc<PlanUsers>>, settings: &Settings) -> anyhow::Result<()> {
    let Some(users) = users else {
        return Ok(());
    };
    let done = crate::phase::run(settings, &users, None)?;
    eprintln!("capacity: {}", done.line("teardown"));
    Ok(())
}
