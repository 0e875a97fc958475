//! `if:` and `choice:` steps, driven by hand with fake replies: which requests a user sends
//! after which answers, how a weighted choice splits its passes, and the load-time errors.

mod common;

use belier_engine::user::{Action, User, Users};
use belier_scenario::VirtualUsers;
use common::reply;

const PLAN: &str = r#"
target: http://127.0.0.1:8080
variables: { role: user }
scenarios:
  - steps:
      - name: login
        post: /login
        check: { status: 200 }
      - name: on-200
        if: 'status == 200 && check("login: status in [200]")'
        get: /ok
      - name: after-failure
        if: failed || status >= 500
        get: /failed
      - if: role == 'admin'
        group: admin
        steps:
          - get: /admin
      - choice:
          - weight: 3
            steps: [{ name: a, get: /a }]
          - steps: [{ name: b, get: /b }]
"#;

/// Runs one iteration, answering every request with `status` (the login) then 200; returns
/// the paths sent.
fn iteration(user: &mut dyn User, login_status: u16) -> Vec<String> {
    let mut paths = Vec::new();
    let mut status = login_status;
    loop {
        match user.next() {
            Action::Send(out) => {
                paths.push(out.path_and_query);
                let head = format!("HTTP/1.1 {status} X\r\n\r\n");
                user.reply(&reply(status, head.as_bytes(), b""), &mut |_, _| {});
                status = 200;
            }
            Action::EndIteration => return paths,
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn if_follows_the_last_status_failure_checks_and_variables() {
    let plan = common::load("if", PLAN, &[]).unwrap();
    let users = plan.users();
    let mut user = users.user(0);
    let ok = iteration(user.as_mut(), 200);
    assert_eq!(ok[..2], ["/login", "/ok"]);
    assert!(ok[2] == "/a" || ok[2] == "/b", "{ok:?}");
    assert_eq!(ok.len(), 3);
    let failed = iteration(user.as_mut(), 503);
    assert_eq!(failed[..2], ["/login", "/failed"]);
    assert_eq!(failed.len(), 3);
}

#[test]
fn a_weighted_choice_splits_by_weight_and_repeats_with_the_seed() {
    let plan = common::load("choice", PLAN, &[]).unwrap();
    let users = plan.users();
    let picks = |vu: u64| -> Vec<String> {
        let mut user = users.user(vu);
        (0..4000)
            .map(|_| iteration(user.as_mut(), 200).pop().unwrap())
            .collect()
    };
    let first = picks(0);
    let a = first.iter().filter(|p| *p == "/a").count();
    let b = first.iter().filter(|p| *p == "/b").count();
    assert_eq!(a + b, 4000);
    // 3 : 1 of 4000 is 3000 : 1000; the binomial's standard deviation is 27, so ±140 is
    // over five of them.
    assert!((2860..=3140).contains(&a), "a {a}, b {b}");
    assert_eq!(first, picks(0), "the same user's seed gives the same picks");
    assert_ne!(first, picks(1), "another user's picks differ");
}

#[test]
fn conditions_are_checked_when_the_plan_loads() {
    let cases = [
        (
            "      - if: rol == 'x'\n        get: /x\n",
            "5:13: undefined variable `rol`",
        ),
        (
            "      - if: status ==\n        get: /x\n",
            "5:22: expected a value",
        ),
        (
            "      - if: (failed\n        get: /x\n",
            "5:20: expected `)`",
        ),
        (
            "      - if: \"check('x: status in [200]')\"\n        get: /x\n",
            "5:20: no check `x: status in [200]` in the steps before",
        ),
        (
            "      - choice: [{ steps: [{ get: /x }] }]\n",
            "5:17: a choice needs at least two branches",
        ),
        (
            "      - choice: [{ weight: 0, steps: [{ get: /x }] }, { steps: [{ get: /y }] }]\n",
            "5:28: expected a weight ≥ 1",
        ),
        (
            "      - choice: [{ steps: [{ get: /x }] }, { wait: 1 }]\n",
            "5:46: unknown key `wait` in a choice branch",
        ),
    ];
    for (step, want) in cases {
        let text = format!(
            "target: http://127.0.0.1:8080\nscenarios:\n  - steps:\n      - get: /first\n{step}"
        );
        let err = common::load("if-errors", &text, &[])
            .unwrap_err()
            .to_string();
        let after = err.split_once("plan.yaml:").map(|(_, r)| r).unwrap_or("");
        assert!(after.starts_with(want), "got `{err}`, want `{want}`");
    }
}

#[test]
fn check_lists_conditions_and_branches() {
    let plan = common::load("if-describe", PLAN, &[]).unwrap();
    let text = plan.describe();
    for line in [
        "    - if status == 200 && check(\"login: status in [200]\"):",
        "      - GET /ok  → row `on-200`",
        "    - if role == 'admin':",
        "      - group admin:",
        "    - choice of 2 (one by weight):",
        "      - weight 3 (75.0 %):",
        "        - GET /a  → row `a`",
        "      - weight 1 (25.0 %):",
    ] {
        assert!(
            text.contains(&format!("{line}\n")),
            "no `{line}` in:\n{text}"
        );
    }
}
