use super::*;
use crate::DraftStep;

/// A HAR 1.2 entry with the fields the specification requires (positional, so the flow below
/// reads as a table).
#[allow(clippy::too_many_arguments)]
fn entry(
    started: &str,
    time_ms: f64,
    method: &str,
    url: &str,
    req_headers: &str,
    post: &str,
    resp_headers: &str,
    mime: &str,
    body: &str,
) -> String {
    format!(
        r#"{{"startedDateTime": "{started}", "time": {time_ms},
  "request": {{"method": "{method}", "url": "{url}", "httpVersion": "HTTP/1.1", "cookies": [],
    "headers": [{req_headers}], "queryString": [], {post} "headersSize": -1, "bodySize": -1}},
  "response": {{"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [],
    "headers": [{resp_headers}], "content": {{"size": 0, "mimeType": "{mime}", "text": {body}}},
    "redirectURL": "", "headersSize": -1, "bodySize": -1}},
  "cache": {{}}, "timings": {{"send": 0, "wait": {time_ms}, "receive": 0}}}}"#
    )
}

fn har(entries: &[String]) -> String {
    format!(
        r#"{{"log": {{"version": "1.2", "creator": {{"name": "test", "version": "1"}},
"entries": [{}]}}}}"#,
        entries.join(",\n")
    )
}

fn flow() -> String {
    let json = r#"{"name": "Content-Type", "value": "application/json"}"#;
    har(&[
        entry(
            "2026-11-25T19:30:00.000Z",
            20.0,
            "POST",
            "http://127.0.0.1:8080/api/login",
            &format!(
                r#"{json}, {{"name": "Accept", "value": "*/*"}}, {{"name": "Cookie", "value": "sid=secret"}}, {{"name": ":authority", "value": "x"}}"#
            ),
            r#""postData": {"mimeType": "application/json", "text": "{\"user\":\"ann\",\"password\":\"pw\"}"},"#,
            json,
            "application/json",
            r#""{\"token\":\"tk-81c2e9f0a7\",\"user\":\"ann\"}""#,
        ),
        entry(
            "2026-11-25T19:30:00.010Z",
            5.0,
            "GET",
            "https://other.example/config",
            r#"{"name": "Accept", "value": "*/*"}"#,
            "",
            "",
            "application/json",
            r#""{}""#,
        ),
        entry(
            "2026-11-25T19:30:01.520Z",
            10.0,
            "GET",
            "http://127.0.0.1:8080/api/items?page=1",
            r#"{"name": "Accept", "value": "*/*"}, {"name": "Authorization", "value": "Bearer tk-81c2e9f0a7"}"#,
            "",
            json,
            "application/json",
            r#""[{\"id\":7}]""#,
        ),
        entry(
            "2026-11-25T19:30:01.560Z",
            10.0,
            "GET",
            "http://127.0.0.1:8080/api/style.css",
            r#"{"name": "Accept", "value": "*/*"}"#,
            "",
            "",
            "text/css",
            r#""""#,
        ),
        entry(
            "2026-11-25T19:30:01.600Z",
            10.0,
            "GET",
            "http://127.0.0.1:8080/api/items/7",
            r#"{"name": "Accept", "value": "*/*"}, {"name": "Authorization", "value": "Bearer tk-81c2e9f0a7"}"#,
            "",
            json,
            "application/json",
            r#""{\"id\":7}""#,
        ),
    ])
}

#[test]
fn a_login_flow_becomes_a_plan_with_the_token_extracted() {
    let options = HarOptions {
        include_hosts: vec![],
        exclude_static: true,
    };
    let import = from_har(&flow(), "flow.har", &options).unwrap();
    let d = &import.draft;
    assert_eq!(d.origin, "http://127.0.0.1:8080");
    assert_eq!(d.headers, vec![("Accept".to_string(), "*/*".to_string())]);
    let mut requests: Vec<&DraftRequest> = d.requests().collect();
    assert_eq!(requests.len(), 4);
    // The other host's request is kept, with its origin (no HTML document: the first
    // request's origin is the target).
    let other = requests.remove(1);
    assert_eq!(other.origin.as_deref(), Some("https://other.example"));
    assert_eq!(other.path, "/config");
    assert!(requests.iter().all(|r| r.origin.is_none()));
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/api/login");
    assert_eq!(
        requests[0].body.as_deref(),
        Some(r#"{"user":"ann","password":"pw"}"#)
    );
    // Cookie and pseudo-headers dropped, Content-Type kept.
    assert_eq!(
        requests[0].headers,
        vec![("Content-Type".to_string(), "application/json".to_string())]
    );
    assert_eq!(
        requests[0].extract,
        vec![(
            "token".to_string(),
            super::super::Extract::Json("$.token".into())
        )]
    );
    assert_eq!(requests[1].path, "/api/items?page=1");
    assert_eq!(
        requests[1].headers,
        vec![(
            "Authorization".to_string(),
            "Bearer {{ token }}".to_string()
        )]
    );
    assert_eq!(requests[2].path, "/api/items/7");
    // 19:30:00.020 → 19:30:01.520: a 1.5 s pause; 40 ms between the last two is no pause.
    assert_eq!(d.steps[2], DraftStep::Pause(Duration::from_millis(1500)));
    assert_eq!(d.steps.len(), 5);
    assert_eq!(import.correlations.len(), 1);
    assert_eq!(import.correlations[0].used_by, vec![2, 3]);
    assert!(
        import.notes.iter().any(|n| n.contains("1 static")),
        "{:?}",
        import.notes
    );
    assert_eq!(import.notes.len(), 1, "{:?}", import.notes);
    let yaml = d.to_yaml("test");
    assert!(
        yaml.contains("url: \"https://other.example/config\""),
        "{yaml}"
    );
    assert!(
        !yaml.contains("tk-81c2e9f0a7") && !yaml.contains("secret"),
        "{yaml}"
    );
    let plan = belier_plan::parse(&yaml, std::path::Path::new("flow.yaml"))
        .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    assert_eq!(plan.hosts.len(), 1);
}

#[test]
fn the_first_html_document_gives_the_target() {
    let page = |started: &str, url: &str, mime: &str| {
        entry(started, 5.0, "GET", url, "", "", "", mime, r#""x""#)
    };
    let text = har(&[
        page(
            "2026-11-25T19:30:00.000Z",
            "https://cdn.example/app.json",
            "application/json",
        ),
        page(
            "2026-11-25T19:30:00.010Z",
            "http://shop.example:8080/",
            "text/html; charset=utf-8",
        ),
        page(
            "2026-11-25T19:30:00.020Z",
            "https://api.example/items",
            "application/json",
        ),
    ]);
    let import = from_har(&text, "pages.har", &HarOptions::default()).unwrap();
    assert_eq!(import.draft.origin, "http://shop.example:8080");
    let origins: Vec<Option<&str>> = import
        .draft
        .requests()
        .map(|r| r.origin.as_deref())
        .collect();
    assert_eq!(
        origins,
        [
            Some("https://cdn.example"),
            None,
            Some("https://api.example")
        ]
    );
}

#[test]
fn include_host_picks_the_origin() {
    let options = HarOptions {
        include_hosts: vec!["other.example".into()],
        exclude_static: false,
    };
    let import = from_har(&flow(), "flow.har", &options).unwrap();
    assert_eq!(import.draft.origin, "https://other.example");
    assert_eq!(import.draft.requests().count(), 1);
    let none = HarOptions {
        include_hosts: vec!["nowhere.example".into()],
        exclude_static: false,
    };
    let e = from_har(&flow(), "flow.har", &none).unwrap_err();
    assert!(
        e.to_string()
            .contains("no request left to import among 5 entries"),
        "{e}"
    );
}

#[test]
fn syntax_errors_name_line_and_column() {
    let e = from_har(
        "{\"log\": {\"entries\": [\n  {\"startedDateTime\": }\n]}}",
        "bad.har",
        &HarOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e.input, "bad.har");
    assert_eq!(e.pos, Some((2, 23)));
    assert!(
        e.to_string().starts_with(
            "bad.har:2:23: entry 0 (log.entries[0].startedDateTime): the file is not valid JSON"
        ),
        "{e}"
    );
}

#[test]
fn missing_fields_name_the_entry() {
    let mut text = flow();
    text = text.replacen(r#""url": "http://127.0.0.1:8080/api/items/7","#, "", 1);
    let e = from_har(&text, "flow.har", &HarOptions::default()).unwrap_err();
    assert!(
        e.message.contains(
            "entry 4 (log.entries[4].request): not a HAR 1.2 document: missing field `url`"
        ),
        "{e}"
    );
    let e = from_har(
        r#"{"log": {"version": "1.2"}}"#,
        "x.har",
        &HarOptions::default(),
    )
    .unwrap_err();
    assert!(
        e.message
            .contains("log: not a HAR 1.2 document: missing field `entries`"),
        "{e}"
    );
    let e = from_har("[1, 2]", "x.har", &HarOptions::default()).unwrap_err();
    assert!(
        e.message.contains("not a HAR 1.2 document: invalid type"),
        "{e}"
    );
}

#[test]
fn bad_values_name_the_entry_and_field() {
    let text = flow().replacen("2026-11-25T19:30:01.600Z", "yesterday", 1);
    let e = from_har(&text, "flow.har", &HarOptions::default()).unwrap_err();
    assert!(
        e.message
            .contains("entry 4 (log.entries[4].startedDateTime): expected an ISO 8601"),
        "{e}"
    );
    let text = flow().replacen("http://127.0.0.1:8080/api/items/7", "not a url", 1);
    let e = from_har(&text, "flow.har", &HarOptions::default()).unwrap_err();
    assert!(
        e.message
            .contains("entry 4 (log.entries[4].request.url): `not a url` is not a URL"),
        "{e}"
    );
    let text = flow().replacen("Bearer tk-81c2e9f0a7", "{{x}}", 1);
    let e = from_har(&text, "flow.har", &HarOptions::default()).unwrap_err();
    assert!(e.message.contains("holds `{{`"), "{e}");
}

/// What a plan cannot hold (the fuzzing finds: a header name that is no token, or 1,100
/// characters long; CR, LF, NUL) is refused at its entry and field, never written into a plan
/// that does not read back.
#[test]
fn what_a_plan_cannot_hold_is_refused_at_its_entry_and_field() {
    let long = "X".repeat(1100);
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "Accept",
            "X Y".into(),
            "entry 0 (log.entries[0].request.headers[1].name): the header name `X Y` holds a space",
        ),
        (
            "Accept",
            "X:Y".into(),
            "entry 0 (log.entries[0].request.headers[1].name): the header name `X:Y` holds `:`",
        ),
        (
            "Accept",
            long,
            "entry 0 (log.entries[0].request.headers[1].name): the header name `XXXX",
        ),
        (
            "*/*",
            "*/*\\r\\nX-Injected: 1".into(),
            "entry 0 (log.entries[0].request.headers[1].value): the value of header `Accept` holds a line break (CR, \\r)",
        ),
        (
            "*/*",
            "\\u0000".into(),
            "entry 0 (log.entries[0].request.headers[1].value): the value of header `Accept` holds a NUL byte",
        ),
        (
            "\"POST\"",
            "\"POST\\r\\nX: 1\"".into(),
            "entry 0 (log.entries[0].request.method): the method `POST\\r\\nX: 1` holds a line break",
        ),
        (
            "http://127.0.0.1:8080/api/login",
            "http://127.0.0.1:8080/api/login\\r\\nX: 1".into(),
            "entry 0 (log.entries[0].request.url): `http://127.0.0.1:8080/api/login\\r\\nX: 1` holds a line break",
        ),
        (
            "\"mimeType\": \"application/json\", \"text\"",
            "\"mimeType\": \"application/json\\nX: 1\", \"text\"".into(),
            "entry 0 (log.entries[0].request.postData.mimeType): the value of header `Content-Type` holds a line break",
        ),
    ];
    for (from, to, expected) in cases {
        let text = flow().replacen(from, &to, 1);
        assert_ne!(text, flow(), "{from} not found");
        let e = from_har(&text, "flow.har", &HarOptions::default()).unwrap_err();
        assert!(e.message.starts_with(expected), "{e}\nexpected: {expected}");
        assert!(e.to_string().starts_with("flow.har: entry 0"), "{e}");
    }
    // The 1,100-character name is shown cut, its length said.
    let text = flow().replacen("Accept", &"X".repeat(1100), 1);
    let e = from_har(&text, "flow.har", &HarOptions::default()).unwrap_err();
    assert!(
        e.message.ends_with("is 1100 characters long (at most 256)") && e.message.len() < 200,
        "{e}"
    );
}

#[test]
fn form_params_become_a_urlencoded_body() {
    assert_eq!(
        form(&[
            Param {
                name: "a b".into(),
                value: Some("1&2".into())
            },
            Param {
                name: "c".into(),
                value: None
            },
        ]),
        "a+b=1%262&c="
    );
}

#[test]
fn absurd_times_are_no_time() {
    for time in ["1e300", "-5", "0"] {
        let text = flow().replacen("\"time\": 20", &format!("\"time\": {time}"), 1);
        let import = from_har(&text, "flow.har", &HarOptions::default()).unwrap();
        assert_eq!(import.draft.requests().count(), 5, "{time}");
    }
}

proptest::proptest! {
    /// Whatever the bytes, a HAR import answers with a plan or an error, never a panic.
    #[test]
    fn mangled_har_never_panics(cut in 0usize..4000, junk in "[\\[\\]{}\",:0-9a-z -]{0,12}") {
        let text = flow();
        let mut at = cut.min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let mangled = format!("{}{junk}{}", &text[..at], &text[at..]);
        let _ = from_har(&mangled, "x.har", &HarOptions::default());
        let _ = from_har(&text[..at], "x.har", &HarOptions::default());
    }
}
