//! Plan scripts driven by hand with fake replies: what hooks change in a request, what they
//! read from a response, the variables and custom metrics they set, `end_iteration()`, a
//! failing script counted as its own check without stopping the user, and load-time errors
//! that name the plan's or the script file's line.

mod common;

use belier_engine::user::{Action, MetricKind, Tally, User, Users};
use belier_scenario::VirtualUsers;
use common::{header, reply, send};

const PLAN: &str = r#"
target: http://127.0.0.1:8080
variables: { secret: key }
scenarios:
  - steps:
      - name: prep
        script: |
          vars.note = "n" + "1";
          counter("prepared");
      - name: order
        post: /orders
        body: "id={{ note }}"
        headers: { X-Drop: x }
        before_request: |
          request.headers["X-Signature"] = hmac_sha256_hex(vars.secret, request.body);
          request.headers.remove("X-Drop");
          request.path += "?signed=1";
        after_response: |
          let order = json(response.body);
          vars.order_id = order.id;
          if response.status == 200 { counter("signed_ok", 2); }
          trend("server_ms", 12.5);
          if order.id == "stop" { end_iteration(); }
      - name: next
        get: /orders/{{ order_id }}
"#;

fn drained(user: &mut dyn User) -> Vec<Tally> {
    let mut out = Vec::new();
    user.drain(&mut |t| out.push(t));
    out
}

#[test]
fn hooks_sign_the_request_read_the_response_and_count() {
    let plan = common::load("hooks", PLAN, &[]).unwrap();
    let users = plan.users();
    let names: Vec<_> = users
        .metrics()
        .iter()
        .map(|m| (m.name.as_str(), m.kind))
        .collect();
    assert_eq!(
        names,
        [
            ("prepared", MetricKind::Counter),
            ("signed_ok", MetricKind::Counter),
            ("server_ms", MetricKind::Trend)
        ]
    );
    let check = |name: &str| users.checks().iter().position(|c| c == name).unwrap();
    let mut user = users.user(0);
    let out = send(user.as_mut());
    assert_eq!(out.path_and_query, "/orders?signed=1");
    assert_eq!(out.body, b"id=n1");
    assert_eq!(header(&out, "X-Drop"), None);
    let tallies = drained(user.as_mut());
    assert!(tallies.contains(&Tally::Count { metric: 0, n: 1 }));
    assert!(tallies.contains(&Tally::Check {
        check: check("prep: script"),
        passed: true
    }));
    assert!(tallies.contains(&Tally::Check {
        check: check("order: before_request"),
        passed: true
    }));

    let head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n";
    let verdict = user.reply(&reply(200, head, br#"{"id": "A7"}"#), &mut |_, _| {});
    assert!(!verdict.failed);
    let tallies = drained(user.as_mut());
    assert!(tallies.contains(&Tally::Check {
        check: check("order: after_response"),
        passed: true
    }));
    assert!(tallies.contains(&Tally::Count { metric: 1, n: 2 }));
    assert!(tallies.contains(&Tally::Value {
        metric: 2,
        us: 12_500
    }));
    assert_eq!(send(user.as_mut()).path_and_query, "/orders/A7");

    // `end_iteration()`: the next step is skipped.
    user.reply(&reply(200, head, b""), &mut |_, _| {});
    assert_eq!(user.next(), Action::EndIteration);
    send(user.as_mut());
    user.reply(&reply(200, head, br#"{"id": "stop"}"#), &mut |_, _| {});
    assert_eq!(user.next(), Action::EndIteration);
}

#[test]
fn the_signature_is_hmac_sha256_of_the_body() {
    let plan = common::load("hmac", PLAN, &[]).unwrap();
    let users = plan.users();
    let mut user = users.user(0);
    let out = send(user.as_mut());
    // Computed independently: python3 -c 'import hmac,hashlib;
    // print(hmac.new(b"key", b"id=n1", hashlib.sha256).hexdigest())'
    assert_eq!(
        header(&out, "X-Signature"),
        Some("885ffb0eff3d7a1aef86887a734fc4569b59a3ec9cf37d43a7a906afcbb68a98")
    );
}

#[test]
fn a_failing_script_fails_its_step_and_the_user_goes_on() {
    let plan = common::load(
        "failing",
        r#"
target: http://127.0.0.1:8080
scenarios:
  - steps:
      - name: broken
        script: { file: hooks.rhai }
      - name: after
        if: failed
        get: /after
      - name: endless
        get: /endless
        after_response: "loop { }"
"#,
        &[("hooks.rhai", "// two lines\nlet x = no_such_function(1);\n")],
    )
    .unwrap();
    let users = plan.users();
    let check = |name: &str| users.checks().iter().position(|c| c == name).unwrap();
    let mut user = users.user(0);
    assert_eq!(send(user.as_mut()).path_and_query, "/after");
    let tallies = drained(user.as_mut());
    assert!(tallies.contains(&Tally::Check {
        check: check("broken: script"),
        passed: false
    }));
    user.reply(&reply(200, b"HTTP/1.1 200 OK\r\n\r\n", b""), &mut |_, _| {});
    assert_eq!(send(user.as_mut()).path_and_query, "/endless");
    let verdict = user.reply(&reply(200, b"HTTP/1.1 200 OK\r\n\r\n", b""), &mut |_, _| {});
    assert!(
        verdict.failed,
        "a script over its operation limit fails its step"
    );
    let tallies = drained(user.as_mut());
    assert!(tallies.contains(&Tally::Check {
        check: check("endless: after_response"),
        passed: false
    }));
    assert_eq!(user.next(), Action::EndIteration);
    let errors = users.script_errors();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(errors[0].script, "broken: script");
    assert!(
        errors[0].message.contains("no_such_function") && errors[0].message.contains("line 2"),
        "{errors:?}"
    );
    assert!(
        errors[1].message.contains("Too many operations"),
        "{errors:?}"
    );
}

fn load_error(name: &str, plan: &str, files: &[(&str, &str)]) -> String {
    common::load(name, plan, files).unwrap_err().to_string()
}

#[test]
fn load_errors_name_the_plan_or_script_line() {
    let e = load_error(
        "syntax",
        "target: http://127.0.0.1:8080\nscenarios:\n  - steps:\n      - script: |\n          let a = 1;\n          let b = ;\n",
        &[],
    );
    assert!(
        e.ends_with("plan.yaml:6:19: script syntax: Unexpected ';'"),
        "{e}"
    );
    let e = load_error(
        "file-syntax",
        "target: http://127.0.0.1:8080\nscenarios:\n  - steps:\n      - script: { file: s.rhai }\n",
        &[("s.rhai", "let a = 1;\nlet b = (;\n")],
    );
    assert!(e.contains("s.rhai:2:10: script syntax"), "{e}");
    let e = load_error(
        "undefined",
        "target: http://127.0.0.1:8080\nscenarios:\n  - steps:\n      - script: \"vars.x = vars.nope\"\n",
        &[],
    );
    assert!(e.ends_with("plan.yaml:4:27: undefined variable `nope`: not in `variables`, not extracted or set by an earlier step"), "{e}");
    let e = load_error(
        "dynamic-metric",
        "target: http://127.0.0.1:8080\nscenarios:\n  - steps:\n      - script: \"let n = `a`; counter(n, 1);\"\n",
        &[],
    );
    assert!(
        e.contains("plan.yaml:4:31: name the metric of `counter(...)` with a string literal"),
        "{e}"
    );
    let e = load_error(
        "two-kinds",
        "target: http://127.0.0.1:8080\nscenarios:\n  - steps:\n      - script: 'counter(\"m\"); trend(\"m\", 1);'\n",
        &[],
    );
    assert!(e.contains("metric `m` is a counter elsewhere"), "{e}");
    let e = load_error(
        "missing-file",
        "target: http://127.0.0.1:8080\nscenarios:\n  - steps:\n      - script: { file: nope.rhai }\n",
        &[],
    );
    assert!(e.contains("plan.yaml:4:25: cannot read script file"), "{e}");
    let e = load_error(
        "threshold",
        "target: http://127.0.0.1:8080\nscenarios:\n  - steps:\n      - script: 'counter(\"hits\")'\nthresholds:\n  - \"hits: p99 < 1s\"\n",
        &[],
    );
    assert!(
        e.contains(
            "plan.yaml:6:5: `hits` is a custom counter: its thresholds measure `count` or `rate`"
        ),
        "{e}"
    );
}
