use std::collections::BTreeMap;
use std::time::Duration;

use belier_capacity::overload::{Behaviour, Recovery};
use belier_capacity::{Answer, Dimension, LimitedBy, Outcome, Overload, Step, StepKind};

use super::render_capacity_text;

fn outcome(max_rate: f64, steps: Vec<Step>) -> Outcome {
    Outcome::new(
        "http://127.0.0.1:8080/".into(),
        Dimension::Rate,
        vec!["p99<25ms".into()],
        Answer {
            max_rate: Some(max_rate),
            limited_by: LimitedBy::Slo,
            passed: Some(max_rate),
            failed: Some((1_970.0, "p99 = 41.0 ms (wanted p99<25ms)".into())),
            generator: None,
        },
        steps,
        Some(Overload::new(
            Behaviour::Sheds,
            Some(Recovery {
                recovered: true,
                drained_after: Some(Duration::from_millis(2_400)),
                probed: true,
            }),
        )),
        Duration::from_secs(300),
    )
}

fn overload_step() -> Step {
    Step {
        kind: StepKind::Overload,
        target_rate: 100.0,
        achieved_rate: 100.0,
        goodput: 100.0,
        requests: 1_000,
        p50_ms: Some(1.0),
        p99_ms: Some(2.0),
        p999_ms: Some(3.0),
        error_share: 0.3,
        errors: BTreeMap::new(),
        rejected: 0,
        pass: Some(false),
        why: None,
        cancelled: 100,
        host_cpu: Some(0.97),
        drain_s: Some(1.3),
        drained: Some(true),
        server_timing: None,
    }
}

#[test]
fn the_text_says_the_answer_and_the_behaviour_past_it() {
    let text = render_capacity_text(&outcome(1_880.0, vec![]));
    assert!(
        text.contains("Capacity: 1,880/s with p99<25ms; 1,970/s failed"),
        "{text}"
    );
    assert!(text.contains("Past capacity: sheds"), "{text}");
    assert!(
        text.contains("drained 2.4 s after the overload; recovered at 0.8× (its step met"),
        "{text}"
    );
}

#[test]
fn cancelled_requests_show_apart_from_the_failed() {
    let text = render_capacity_text(&outcome(1_880.0, vec![overload_step()]));
    assert!(text.contains("failed cancelled  result"), "{text}");
    assert!(
        text.contains("20.00%       100  fail; host CPU 97 % busy"),
        "{text}"
    );
    assert!(text.contains("; drained in 1.3 s"), "{text}");
}

#[test]
fn connections_read_as_connections() {
    let mut o = outcome(64.0, vec![]);
    o.dimension = Dimension::Connections;
    let text = render_capacity_text(&o);
    assert!(text.contains("connections under SLO p99<25ms"), "{text}");
    assert!(text.contains("connections  requests/s"), "{text}");
}

#[test]
fn each_steps_server_timing_shows_beside_its_p99_and_its_document_meets_the_schema() {
    let mut timed = overload_step();
    timed.server_timing = Some(belier_capacity::StepTiming {
        timed: 900,
        server_p50_ms: 4.0,
        server_p99_ms: 6.5,
        outside_p50_ms: 120.0,
        outside_p99_ms: 310.25,
    });
    let o = outcome(1_880.0, vec![overload_step(), timed]);
    let text = render_capacity_text(&o);
    assert!(text.contains("Server timing by step"), "{text}");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("2  overload") && l.contains("6.50 ms"))
        .unwrap_or_else(|| panic!("no server timing row of step 2\n{text}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "2", "overload", "2.00", "ms", "4.00", "ms", "6.50", "ms", "120.00", "ms", "310.25",
            "ms"
        ]
    );
    // Step 1 has none, so no row.
    assert_eq!(text.matches("1  overload").count(), 1, "{text}");
    let doc: serde_json::Value = serde_json::from_str(&o.to_json()).unwrap();
    let schema: serde_json::Value = serde_json::from_str(belier_capacity::SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(
        doc["capacity"]["steps"][1]["server_timing"]["outside_p99_ms"],
        310.25
    );
}
