//! Every plan an importer writes reads back: from random HAR files and curl commands, an
//! import either is refused (an `ImportError`, which `belier import` answers with exit 2,
//! naming the entry or argument) or gives a plan the plan reader takes. Before this held, a
//! HAR header name that is no token, or 1,100 characters long, or a CR/LF in a value, made a
//! plan that did not read back (or, worse, one that split requests).

use std::path::Path;

use belier_import::{from_curl, from_har, HarOptions};
use proptest::prelude::*;
use serde_json::json;

/// Text of every kind a header, a path or a body may hold: tokens, separators, YAML's
/// indicators, quotes, controls (CR, LF, NUL, tab), non-ASCII, a template's braces.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[A-Za-z0-9_-]{1,12}",
        4 => "[ -~]{0,24}",
        2 => "[ -~\t\r\n\u{0}\u{85}\u{a0}\u{feff}é€:#&*!|>%@`'\"{}\\[\\]-]{0,24}",
        1 => "[A-Za-z]{1000,1100}",
    ]
}

/// A header name: mostly tokens, sometimes anything.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]{0,16}",
        2 => text(),
    ]
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["GET", "POST", "PUT", "delete", "PATCH"]).prop_map(String::from),
        1 => text(),
    ]
}

fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec((name(), text()), 0..5)
}

/// A path and query after `http://127.0.0.1:8080`.
fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "(/[a-z0-9._-]{0,8}){1,3}(\\?[a-z]=[a-z0-9]{0,4})?",
        1 => text().prop_map(|t| format!("/{t}")),
    ]
}

fn entry(
    at_ms: usize,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: Option<&str>,
    token: &str,
) -> serde_json::Value {
    let mut request = json!({
        "method": method,
        "url": format!("http://127.0.0.1:8080{path}"),
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": headers.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>(),
        "queryString": [],
        "headersSize": -1,
        "bodySize": -1,
    });
    if let Some(body) = body {
        request["postData"] = json!({"mimeType": "text/plain", "text": body});
    }
    json!({
        "startedDateTime": format!("2026-11-25T19:30:{:02}.{:03}Z", at_ms / 1000 % 60, at_ms % 1000),
        "time": 5,
        "request": request,
        "response": {
            "status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [],
            "headers": [{"name": "Content-Type", "value": "application/json"}],
            "content": {"size": 0, "mimeType": "application/json", "text": json!({"token": token}).to_string()},
            "redirectURL": "", "headersSize": -1, "bodySize": -1,
        },
        "cache": {},
        "timings": {"send": 0, "wait": 5, "receive": 0},
    })
}

fn reads_back(yaml: &str) -> Result<(), TestCaseError> {
    match belier_plan::parse(yaml, Path::new("imported.yaml")) {
        Ok(_) => Ok(()),
        Err(e) => Err(TestCaseError::fail(format!(
            "the imported plan does not read back: {e}\n{yaml}"
        ))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Random entries (the second sends the first's token back, so correlation rewrites it)
    /// are refused or give a plan that reads back.
    #[test]
    fn har_imports_are_refused_or_read_back(
        first in (method(), path(), headers(), prop::option::of(text())),
        second in (method(), path(), headers(), prop::option::of(text())),
        token in text(),
    ) {
        let (m1, p1, h1, b1) = first;
        let (m2, p2, mut h2, b2) = second;
        h2.push(("Authorization".into(), format!("Bearer {token}")));
        let har = json!({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": [
            entry(0, &m1, &p1, &h1, b1.as_deref(), &token),
            entry(1500, &m2, &p2, &h2, b2.as_deref(), "other"),
        ]}});
        if let Ok(import) = from_har(&har.to_string(), "random.har", &HarOptions::default()) {
            reads_back(&import.draft.to_yaml("random"))?;
        }
    }

    /// Random curl commands (as a shell would quote their words) are refused or give a plan
    /// that reads back.
    #[test]
    fn curl_imports_are_refused_or_read_back(
        method in method(),
        path in path(),
        headers in headers(),
        body in prop::option::of(text()),
        agent in prop::option::of(text()),
        cookie in prop::option::of("[a-z]{1,4}=[ -~\r\n]{0,8}"),
    ) {
        let mut words = vec![
            "curl".to_string(),
            format!("http://127.0.0.1:8080{path}"),
            "-X".into(),
            method,
        ];
        for (n, v) in &headers {
            words.extend(["-H".to_string(), format!("{n}: {v}")]);
        }
        for (flag, value) in [("--data-raw", body), ("-A", agent), ("-b", cookie)] {
            if let Some(value) = value {
                words.extend([flag.to_string(), value]);
            }
        }
        let command = shell_words::join(&words);
        let mut no_files = |_: &str| Err(std::io::Error::other("no files here"));
        if let Ok(import) = from_curl(&command, &mut no_files) {
            reads_back(&import.draft.to_yaml("random"))?;
        }
    }
}
