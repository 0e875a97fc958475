//! The plan parser never panics: arbitrary text, and arbitrary YAML-shaped documents built
//! from the plan's own vocabulary (so the fuzzing reaches past the first unknown key).

use std::path::Path;

use proptest::prelude::*;

/// Keys and scalars a plan uses, so generated documents look like plans.
const WORDS: &[&str] = &[
    "target",
    "headers",
    "timeout",
    "insecure",
    "http2",
    "keepalive",
    "cookies",
    "variables",
    "data",
    "scenarios",
    "load",
    "thresholds",
    "name",
    "weight",
    "steps",
    "get",
    "post",
    "path",
    "url",
    "method",
    "json",
    "body",
    "body_file",
    "extract",
    "check",
    "status",
    "regex",
    "header",
    "cookie",
    "pause",
    "group",
    "loop",
    "count",
    "vus",
    "rate",
    "stages",
    "duration",
    "pacing",
    "iterations",
    "max_vus",
    "arrivals",
    "seed",
    "file",
    "order",
    "unique",
    "abort_on_fail",
    "max_latency",
    "body_contains",
    "body_matches",
    "http://127.0.0.1:8080",
    "/",
    "/a/{{ x }}",
    "{{ vu }}",
    "{{ random_int(1, 2) }}",
    "1s",
    "1s..2s",
    "200ms",
    "p99 < 200ms",
    "x: p99 < 1s",
    "$.token",
    "(a",
    "200",
    "0",
    "-1",
    "true",
    "null",
    "~",
    "{{",
    "}}",
    "&a",
    "*a",
    "a.csv",
    "poisson",
    "30s:10",
];

fn yaml_value() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(WORDS).prop_map(|w| {
        if w.contains([':', '{', '}', '&', '*', '[', '~']) {
            format!("{w:?}")
        } else {
            w.to_string()
        }
    });
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(|v| format!("[{}]", v.join(", "))),
            prop::collection::vec((prop::sample::select(WORDS), inner), 0..6).prop_map(|kv| {
                let entries: Vec<String> =
                    kv.into_iter().map(|(k, v)| format!("{k:?}: {v}")).collect();
                format!("{{{}}}", entries.join(", "))
            }),
        ]
    })
}

fn plan_document() -> impl Strategy<Value = String> {
    (
        prop::sample::select(&["http://127.0.0.1:8080", "https://h:1/b", "x"][..]),
        yaml_value(),
        yaml_value(),
        yaml_value(),
    )
        .prop_map(|(target, scenarios, load, thresholds)| {
            format!("target: {target}\nscenarios: [{{ steps: {scenarios} }}]\nload: {load}\nthresholds: {thresholds}\n")
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = belier_plan::parse(&text, Path::new("fuzz.yaml"));
    }

    #[test]
    fn yaml_shaped_documents_never_panic(doc in plan_document()) {
        if let Ok(plan) = belier_plan::parse(&doc, Path::new("fuzz.yaml")) {
            let _ = plan.describe();
        }
    }

    #[test]
    fn arbitrary_values_anywhere_never_panic(value in yaml_value(), key in prop::sample::select(WORDS)) {
        let doc = format!("target: http://127.0.0.1:8080\n{key}: {value}\nscenarios: [{{ steps: [{{ get: / }}] }}]\n");
        let _ = belier_plan::parse(&doc, Path::new("fuzz.yaml"));
    }
}

#[test]
fn hostile_documents_are_refused() {
    let deep = format!(
        "target: http://h\nscenarios: {}{}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert!(belier_plan::parse(&deep, Path::new("p.yaml")).is_err());
    let mut bomb = String::from("target: http://h\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n",
            p = i - 1
        ));
    }
    let err = belier_plan::parse(&bomb, Path::new("p.yaml")).unwrap_err();
    assert!(err.to_string().contains("too large"), "{err}");
    let empty = belier_plan::parse("", Path::new("p.yaml")).unwrap_err();
    assert!(empty.to_string().starts_with("p.yaml:1:1:"), "{empty}");
}
