//! `{{ env.NAME }}` in every place a plan takes templates, with a fake environment, and
//! `--var`'s `Plan::set_variable`: as the plan reads them, and as its users send them.

use std::collections::BTreeMap;
use std::path::Path;

use belier_engine::user::{Action, Outgoing, Users};
use belier_plan::{Copies, Environment, Plan, PlanError};
use belier_scenario::VirtualUsers;

fn parse(text: &str) -> Result<Plan, PlanError> {
    let env: BTreeMap<String, Option<String>> = [
        ("HOST", "127.0.0.1"),
        ("PORT", "9001"),
        ("TOKEN", "s3cr3t-t0ken"),
        ("ODD", "a b#c"),
        ("CRLF", "a\r\nX-Injected: 1"),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_string(), Some(v.to_string())))
    .collect();
    belier_plan::parse_with(text, Path::new("p.yaml"), Environment::Only(&env))
}

fn first_request(plan: &Plan) -> Outgoing {
    let users = plan.users();
    let mut user = users.user(0);
    match user.next() {
        Action::Send(out) => out,
        other => panic!("expected a request, got {other:?}"),
    }
}

fn header<'a>(out: &'a Outgoing, name: &str) -> Option<&'a str> {
    out.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

const PLAN: &str = r#"
target: http://{{ env.HOST }}:{{ env.PORT }}/{{ env.BASE | default("api") }}
headers:
  Authorization: "Bearer {{ env.TOKEN }}"
variables:
  token: "{{ env.TOKEN }}"
  user: ann
scenarios:
  - steps:
      - post: /q/{{ env.ODD }}/{{ user }}
        headers: { X-Token: "{{ token }}", X-Default: "{{ env.NOPE | default('d') }}" }
        json: { t: "{{ env.TOKEN }}", u: "{{ user }}" }
"#;

#[test]
fn env_values_reach_target_headers_paths_bodies_and_variables() {
    let plan = parse(PLAN).unwrap();
    assert_eq!(plan.target.host, "127.0.0.1");
    assert_eq!(plan.target.port, 9001);
    assert_eq!(plan.target.base_path, "/api");
    let out = first_request(&plan);
    assert_eq!(out.path_and_query, "/api/q/a%20b%23c/ann");
    assert_eq!(header(&out, "Authorization"), Some("Bearer s3cr3t-t0ken"));
    assert_eq!(header(&out, "X-Token"), Some("s3cr3t-t0ken"));
    assert_eq!(header(&out, "X-Default"), Some("d"));
    let body: serde_json::Value = serde_json::from_slice(&out.body).unwrap();
    assert_eq!(body, serde_json::json!({ "t": "s3cr3t-t0ken", "u": "ann" }));
}

#[test]
fn a_plan_keeps_what_it_read_of_the_environment_and_loads_again_from_that_alone() {
    let plan = parse(PLAN).unwrap();
    let read: Vec<(&str, Option<&str>)> = plan
        .environment
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_deref()))
        .collect();
    let expected = [
        ("BASE", None),
        ("HOST", Some("127.0.0.1")),
        ("NOPE", None),
        ("ODD", Some("a b#c")),
        ("PORT", Some("9001")),
        ("TOKEN", Some("s3cr3t-t0ken")),
    ];
    assert_eq!(
        read, expected,
        "every name read, set or not, and nothing else"
    );
    // As a worker loads it: from what was read, whatever its own environment holds.
    let dir = std::env::temp_dir().join(format!("belier-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("p.yaml");
    std::fs::write(&file, PLAN).unwrap();
    let env = Environment::Only(&plan.environment);
    let again = belier_plan::load_with(&file, &Copies::new(), env).unwrap();
    assert_eq!(again.environment, plan.environment);
    let out = first_request(&again);
    assert_eq!(out.path_and_query, "/api/q/a%20b%23c/ann");
    assert_eq!(header(&out, "Authorization"), Some("Bearer s3cr3t-t0ken"));
    assert_eq!(
        header(&out, "X-Default"),
        Some("d"),
        "unset there, unset here"
    );
    // A name the map does not hold is not set, even when this process has it.
    let none = std::collections::BTreeMap::new();
    let text = "target: http://h\nscenarios: [{ steps: [{ get: /, headers: { A: \"{{ env.PATH }}\" } }] }]\n";
    std::fs::write(&file, text).unwrap();
    let e = belier_plan::load_with(&file, &Copies::new(), Environment::Only(&none));
    let _ = std::fs::remove_dir_all(&dir);
    let e = e.unwrap_err().to_string();
    assert!(e.contains("environment variable `PATH` is not set"), "{e}");
}

#[test]
fn check_output_names_the_environment_never_its_values() {
    let plan = parse(PLAN).unwrap();
    let shown = plan.describe();
    assert!(!shown.contains("s3cr3t"), "{shown}");
    assert!(
        shown.contains("target: http://{{ env.HOST }}:{{ env.PORT }}/"),
        "{shown}"
    );
    assert!(shown.contains("token: {{ env.TOKEN }}"), "{shown}");
    assert!(
        shown.contains("Authorization: Bearer {{ env.TOKEN }}"),
        "{shown}"
    );
}

#[test]
fn a_missing_variable_is_an_error_at_its_braces() {
    let cases = [
        (
            "target: http://{{ env.NOHOST }}:1\nscenarios: [{ steps: [{ get: / }] }]\n",
            "p.yaml:1:16: environment variable `NOHOST` is not set",
        ),
        (
            "target: http://h\nvariables:\n  k: \"x{{ env.KEY }}\"\nscenarios: [{ steps: [{ get: / }] }]\n",
            "p.yaml:3:8: environment variable `KEY` is not set",
        ),
        (
            "target: http://h\nscenarios:\n  - steps:\n      - get: /a\n        headers: { A: \"{{ env.SECRET }}\" }\n",
            "p.yaml:5:24: environment variable `SECRET` is not set",
        ),
        (
            "target: http://h\nvariables:\n  k: \"{{ uuid }}\"\nscenarios: [{ steps: [{ get: / }] }]\n",
            "p.yaml:3:6: only `{{ env.NAME }}` may be used in a variable",
        ),
    ];
    for (text, expected) in cases {
        let e = parse(text).unwrap_err().to_string();
        assert!(e.starts_with(expected), "{e}\nexpected: {expected}");
    }
}

#[test]
fn an_environment_value_that_would_split_a_header_is_refused_at_its_braces() {
    let cases = [
        (
            "target: http://h\nheaders: { X-A: \"x {{ env.CRLF }}\" }\nscenarios: [{ steps: [{ get: / }] }]\n",
            "p.yaml:2:17: the value of header `X-A` holds a line break (CR, \\r)",
        ),
        (
            "target: \"http://h{{ env.CRLF }}\"\nscenarios: [{ steps: [{ get: / }] }]\n",
            "p.yaml:1:9: the target URL holds a line break (CR, \\r)",
        ),
    ];
    for (text, expected) in cases {
        let e = parse(text).unwrap_err().to_string();
        assert!(e.starts_with(expected), "{e}\nexpected: {expected}");
        assert!(!e.contains("Injected"), "the value stays unshown: {e}");
    }
    // In a path it is percent-encoded as it is rendered, as any value there.
    let plan = parse("target: http://h\nscenarios: [{ steps: [{ get: \"/{{ env.CRLF }}\" }] }]\n")
        .unwrap();
    assert_eq!(
        first_request(&plan).path_and_query,
        "/a%0D%0AX-Injected:%201"
    );
}

#[test]
fn set_variable_replaces_the_plans_value_and_refuses_unknown_names() {
    let mut plan = parse(PLAN).unwrap();
    plan.set_variable("user", "bob").unwrap();
    plan.set_variable("token", "other").unwrap();
    let out = first_request(&plan);
    assert_eq!(out.path_and_query, "/api/q/a%20b%23c/bob");
    assert_eq!(header(&out, "X-Token"), Some("other"));
    assert!(plan.describe().contains("token: (set by --var)"));
    let e = plan.set_variable("usr", "x").unwrap_err();
    assert_eq!(
        e,
        "the plan has no variable `usr` (its variables: token, user)"
    );
}
