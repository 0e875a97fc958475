//! Scenarios with a `load:` of their own: each runs as its own executor, at the same time as
//! the others, and the plan's `load` drives the scenarios without one. Also where a
//! threshold's `NAME:` scope is told apart: a step's row, or such an executor.

use crate::error::Result;
use crate::model::{Executor, LoadPlan};
use crate::yaml::{closest, Node, Reader};

/// The plan's executors (empty when no scenario has a `load:`: the plan's `load` is the only
/// one, as it always was). `top_load` is the `load` key of the plan, if written; `names` the
/// compiled scenarios' names, in order.
pub(super) fn executors(
    rd: Reader<'_>,
    top_load: Option<&Node>,
    scenarios: &Node,
    names: &[String],
    shared: &LoadPlan,
) -> Result<Vec<Executor>> {
    let mut own = Vec::new();
    for (i, item) in rd.seq(scenarios, "scenarios")?.iter().enumerate() {
        let fields = rd.map(item, "a scenario", &[])?;
        if let Some(node) = fields.get("load") {
            own.push((i, super::load(rd, Some(node))?));
        }
    }
    if own.is_empty() {
        return Ok(Vec::new());
    }
    let rest: Vec<usize> = (0..names.len())
        .filter(|i| !own.iter().any(|(o, _)| o == i))
        .collect();
    if let (true, Some(key)) = (rest.is_empty(), top_load) {
        return Err(rd.err(
            key,
            "the plan's `load` applies to no scenario: each has a `load:` of its own (remove one of them)",
        ));
    }
    let mut out: Vec<(usize, Executor)> = own
        .into_iter()
        .map(|(i, load)| {
            let executor = Executor {
                name: names[i].clone(),
                load,
                shared: false,
                scenarios: vec![i],
            };
            (i, executor)
        })
        .collect();
    if let Some(&first) = rest.first() {
        let joined: Vec<&str> = rest.iter().map(|&i| names[i].as_str()).collect();
        out.push((
            first,
            Executor {
                name: joined.join(" + "),
                load: shared.clone(),
                shared: true,
                scenarios: rest,
            },
        ));
    }
    // In the plan's order: the shared load where its first scenario is.
    out.sort_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, e)| e).collect())
}

/// Checks a threshold's scope (`NAME:` before its expression, at `item`): a step's statistics
/// row, or an executor's figures (a scenario with a load of its own, or the shared load). A
/// name that is both, or a scenario whose figures are mixed with others', is an error.
pub(super) fn check_scope(
    rd: Reader<'_>,
    item: &Node,
    scope: &str,
    steps: &[String],
    executors: &[Executor],
    scenarios: &[String],
) -> Result<()> {
    let step = steps.iter().any(|s| s == scope);
    let executor = executors.iter().any(|e| e.name == scope);
    if step && executor {
        return Err(rd.err(
            item,
            format!("`{scope}` names both a step and a scenario with a load of its own: rename one, so that the threshold says which it judges"),
        ));
    }
    if step || executor {
        return Ok(());
    }
    if scenarios.iter().any(|s| s == scope) {
        let why = match executors.iter().find(|e| e.shared) {
            Some(shared) => format!(
                "scenario `{scope}` shares the plan's `load` ({}), so its figures are not its own; give it a `load:` of its own",
                shared.name
            ),
            None => format!(
                "scenario `{scope}` has no `load:` of its own: the plan's one load drives every scenario, so its figures are the run's (drop `{scope}:`)"
            ),
        };
        return Err(rd.err(item, why));
    }
    let mut names: Vec<&str> = steps.iter().map(String::as_str).collect();
    names.extend(executors.iter().map(|e| e.name.as_str()));
    let what = if executors.is_empty() {
        "step"
    } else {
        "step or scenario"
    };
    let mut m = format!("unknown {what} `{scope}` in threshold");
    match closest(scope, &names) {
        Some(near) => m.push_str(&format!("; did you mean `{near}`?")),
        None => m.push_str(&format!("; {what}s are: {}", names.join(", "))),
    }
    Err(rd.err(item, m))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::model::{LoadModel, Plan};
    use crate::PlanError;

    fn parse(text: &str) -> Result<Plan, PlanError> {
        crate::parse::plan(text, Path::new("p.yaml"), &|_| {
            Err(std::env::VarError::NotPresent)
        })
    }

    fn plan(scenarios: &str, thresholds: &str) -> Result<Plan, PlanError> {
        parse(&format!(
            "target: http://127.0.0.1:1\n{scenarios}thresholds:\n{thresholds}"
        ))
    }

    const THREE: &str = "\
load: { vus: 2 }
scenarios:
  - name: browse
    load: { vus: 10, duration: 5s }
    steps: [ { name: page, get: /browse } ]
  - name: other
    steps: [ { get: /other } ]
  - name: checkout
    load: { rate: 20, duration: 5s, max_vus: 50 }
    steps: [ { name: pay, post: /checkout } ]
  - name: more
    steps: [ { get: /more } ]
";

    fn error(result: Result<Plan, PlanError>) -> String {
        match result {
            Ok(_) => panic!("the plan should have been refused"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn scenarios_with_a_load_are_executors_in_plan_order() {
        let p = plan(THREE, "  - checkout: p99 < 300ms\n").unwrap();
        let names: Vec<&str> = p.executors.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["browse", "other + more", "checkout"]);
        assert!(p.executors[1].shared && !p.executors[0].shared);
        assert_eq!(p.executors[1].load, p.load, "the shared one is the plan's");
        assert_eq!(
            p.executors[0].load.duration,
            Some(std::time::Duration::from_secs(5))
        );
        assert!(matches!(
            p.executors[2].load.model,
            LoadModel::Open { max_vus: 50, .. }
        ));
        assert_eq!(
            p.executors[2].load.summary(),
            "open loop, 20 iterations/s, at most 50 users, even arrivals, duration: 5s"
        );
        // Each executor runs its scenarios only (its users: `belier-scenario`'s
        // tests/executors.rs).
        let scenarios: Vec<&[usize]> = p.executors.iter().map(|e| e.scenarios()).collect();
        assert_eq!(scenarios, [&[0][..], &[1, 3], &[2]]);
        let check = p.describe();
        assert!(check.contains("loads: 3 at once"), "{check}");
        assert!(check.contains("  browse (weight 1"), "{check}");
        assert!(
            check.contains("    load: closed loop, 10 users\n      duration: 5s"),
            "{check}"
        );
        assert!(
            check.contains("    shared load (other + more):\n      load: closed loop, 2 users"),
            "{check}"
        );
    }

    #[test]
    fn a_plan_without_scenario_loads_has_one_load_as_before() {
        let p = parse(
            "target: http://127.0.0.1:1\nload: { vus: 3 }\nscenarios:\n  - steps: [ { get: / } ]\n",
        )
        .unwrap();
        assert!(p.executors.is_empty());
        assert!(p.describe().contains("\nload: closed loop, 3 users\n"));
    }

    #[test]
    fn loads_that_cannot_apply_are_refused_at_their_line() {
        let all_own = "\
load: { vus: 2 }
scenarios:
  - name: a
    load: { vus: 1 }
    steps: [ { get: /a } ]
";
        let e = error(plan(all_own, "  - p99 < 1s\n"));
        assert!(
            e.starts_with("p.yaml:2:1:") && e.contains("applies to no scenario"),
            "{e}"
        );
        let bad_key = "\
scenarios:
  - name: a
    load: { vus: 1, max_vus: 3 }
    steps: [ { get: /a } ]
";
        let e = error(plan(bad_key, "  - p99 < 1s\n"));
        assert!(
            e.starts_with("p.yaml:4:21:") && e.contains("`max_vus` does not apply"),
            "{e}"
        );
        let unknown = "\
scenarios:
  - name: a
    load: { users: 1 }
    steps: [ { get: /a } ]
";
        let e = error(plan(unknown, "  - p99 < 1s\n"));
        assert!(
            e.starts_with("p.yaml:4:13:") && e.contains("`users`"),
            "{e}"
        );
    }

    #[test]
    fn threshold_scopes_name_a_step_or_an_executor() {
        assert!(plan(
            THREE,
            "  - \"pay: p99 < 1s\"\n  - \"other + more: rate > 1/s\"\n"
        )
        .is_ok());
        let e = error(plan(THREE, "  - \"chekout: p99 < 1s\"\n"));
        assert!(e.starts_with("p.yaml:15:5:"), "{e}");
        assert!(
            e.contains("unknown step or scenario `chekout` in threshold; did you mean `checkout`?"),
            "{e}"
        );
        let e = error(plan(THREE, "  - \"other: p99 < 1s\"\n"));
        assert!(
            e.contains("scenario `other` shares the plan's `load` (other + more)"),
            "{e}"
        );
        let clash = THREE.replace("name: pay", "name: checkout");
        let e = error(plan(&clash, "  - \"checkout: p99 < 1s\"\n"));
        assert!(e.contains("names both a step and a scenario"), "{e}");
        let single = "scenarios:\n  - name: solo\n    steps: [ { get: /a } ]\n";
        let e = error(plan(single, "  - \"solo: p99 < 1s\"\n"));
        assert!(
            e.contains("scenario `solo` has no `load:` of its own"),
            "{e}"
        );
    }
}
