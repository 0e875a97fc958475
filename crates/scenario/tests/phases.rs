//! `setup:` and `teardown:` in a plan: what their templates may read, what users get from
//! setup, and their strict rule, driven by hand with fake replies.

mod common;

use belier_engine::user::{Action, ErrorKind, User, Users};
use belier_scenario::VirtualUsers;
use common::{header, reply, send};

const PLAN: &str = r#"
target: http://127.0.0.1:8080
setup:
  - name: login
    post: /login
    extract: { token: { json: $.token } }
  - name: me
    get: /me
    headers: { Authorization: "Bearer {{ token }}" }
scenarios:
  - steps:
      - name: items
        get: /items
        headers: { Authorization: "Bearer {{ token }}" }
teardown:
  - name: logout
    delete: /session
    headers: { Authorization: "Bearer {{ token }}" }
"#;

/// Answers the phase user's requests with `replies` (status, body) and ends its iteration.
fn run_phase(user: &mut dyn User, replies: &[(u16, &str)]) {
    for (status, body) in replies {
        send(user);
        let head = format!("HTTP/1.1 {status} X\r\n\r\n");
        user.reply(
            &reply(*status, head.as_bytes(), body.as_bytes()),
            &mut |_, _| {},
        );
    }
    assert_eq!(user.next(), Action::EndIteration);
}

#[test]
fn setup_values_reach_every_user_and_teardown() {
    let plan = common::load("phases", PLAN, &[]).unwrap();
    let setup = plan.setup().unwrap();
    assert_eq!(setup.steps(), ["login", "me"]);
    run_phase(
        setup.user(0).as_mut(),
        &[(200, r#"{"token":"t1"}"#), (204, "")],
    );
    let outcome = setup.outcome();
    assert!(outcome.passed(), "{outcome:?}");
    assert_eq!(outcome.requests, ["login 200", "me 204"]);

    let users = plan.users();
    // The users' rows and checks hold none of setup's.
    assert_eq!(users.steps(), ["items"]);
    assert!(users.checks().is_empty(), "{:?}", users.checks());
    users.share(&outcome);
    for vu in 0..3 {
        let items = send(users.user(vu).as_mut());
        assert_eq!(header(&items, "authorization"), Some("Bearer t1"));
    }
    let teardown = plan.teardown().unwrap();
    teardown.share(&outcome);
    let logout = send(teardown.user(0).as_mut());
    assert_eq!(logout.method, "DELETE");
    assert_eq!(header(&logout, "authorization"), Some("Bearer t1"));
}

#[test]
fn the_first_failed_setup_step_ends_it_with_the_reason() {
    let plan = common::load("phases-fail", PLAN, &[]).unwrap();
    // A redirect passes a user's default rule (below 400) but not a phase's.
    let setup = plan.setup().unwrap();
    let mut user = setup.user(0);
    send(user.as_mut());
    let verdict = user.reply(
        &reply(302, b"HTTP/1.1 302 X\r\n\r\n", br#"{"token":"t"}"#),
        &mut |_, _| {},
    );
    assert!(verdict.failed);
    assert_eq!(user.next(), Action::EndIteration, "`me` is not sent");
    let outcome = setup.outcome();
    assert!(!outcome.passed());
    assert_eq!(
        outcome.failure.as_deref(),
        Some("login: status 302 (expected 2xx)")
    );

    // A 2xx whose extraction finds nothing fails on that check.
    let setup = plan.setup().unwrap();
    run_phase(setup.user(0).as_mut(), &[(200, "{}")]);
    assert_eq!(
        setup.outcome().failure.as_deref(),
        Some("check `login: extract token` failed")
    );

    let setup = plan.setup().unwrap();
    let mut user = setup.user(0);
    send(user.as_mut());
    user.failed(ErrorKind::ConnectRefused);
    assert_eq!(user.next(), Action::EndIteration);
    assert_eq!(
        setup.outcome().failure.as_deref(),
        Some("login: no response (connect_refused)")
    );
}

#[test]
fn teardown_reads_setup_variables_but_not_the_users() {
    let text = PLAN.replace(
        "        headers: { Authorization: \"Bearer {{ token }}\" }\nteardown:",
        "        headers: { Authorization: \"Bearer {{ token }}\" }\n        extract: { mine: { header: X-Mine } }\nteardown:",
    )
    .replace("    delete: /session\n", "    delete: /session/{{ mine }}\n");
    let err = common::load("phases-scope", &text, &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("plan.yaml:18:22: undefined variable `mine`"),
        "{err}"
    );
}
