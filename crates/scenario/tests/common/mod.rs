//! Helpers shared by the plan tests.
#![allow(dead_code)]

use std::time::Duration;

use belier_engine::user::{Action, Outgoing, Reply, User};

/// A fresh directory for one test's plan and data files.
pub use belier_testsupport::temp_dir as dir;

/// Writes `files` into a fresh directory, then loads `plan.yaml` from it.
pub fn load(
    test: &str,
    plan: &str,
    files: &[(&str, &str)],
) -> Result<belier_plan::Plan, belier_plan::PlanError> {
    let dir = dir(test);
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("write");
    }
    let path = dir.join("plan.yaml");
    std::fs::write(&path, plan).expect("write plan");
    belier_plan::load(&path)
}

/// A reply with this status, headers and body.
pub fn reply<'a>(status: u16, head: &'a [u8], body: &'a [u8]) -> Reply<'a> {
    Reply {
        status,
        head,
        body,
        body_truncated: false,
        latency: Duration::from_millis(10),
        grpc: None,
    }
}

/// The next action, which must be a request.
pub fn send(user: &mut dyn User) -> Outgoing {
    match user.next() {
        Action::Send(out) => out,
        other => panic!("expected a request, got {other:?}"),
    }
}

/// A header of an outgoing request.
pub fn header<'a>(out: &'a Outgoing, name: &str) -> Option<&'a str> {
    out.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Answers the last request with `200 OK` and no body; returns whether the step failed.
pub fn ok(user: &mut dyn User) -> bool {
    user.reply(&reply(200, b"HTTP/1.1 200 OK\r\n\r\n", b""), &mut |_, _| {})
        .failed
}
