//! What the capacity tests share: targets of known capacity (belier's test server with a
//! fixed number of handlers, each holding a request for a service time), running
//! `belier capacity` one search at a time, and checking its JSON against the schema.
#![allow(dead_code)]

use std::process::{Command, Output};
use std::time::Duration;

use belier_testserver::{Config, Handlers, Server};
use serde_json::Value;

pub fn target(workers: usize, service_ms: u64, queue: Option<usize>, shed: bool) -> Server {
    Server::start(Config {
        threads: 2,
        handlers: Some(Handlers {
            workers,
            service_time: Duration::from_millis(service_ms),
            queue,
            shed,
        }),
        ..Config::default()
    })
    .expect("target starts")
}

/// One search at a time: each loads the machine's two cores with a server and belier, and
/// belier's verdict on itself (its own lateness) is part of every step.
pub static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn capacity(args: &[&str]) -> (Output, Value) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .arg("capacity")
        .args(["--output", "json", "--drain", "300ms", "-t", "1"])
        .args(args)
        .output()
        .expect("belier runs");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, doc)
}

pub fn validate(doc: &Value) {
    let schema: Value = serde_json::from_str(belier_capacity::SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{doc:#}");
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
