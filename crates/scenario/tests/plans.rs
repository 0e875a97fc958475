//! Parsing plans: every step kind and option, and every malformed plan's error.

mod common;

use std::time::Duration;

use belier_engine::user::Users;
use belier_engine::{Profile, Spacing, Stage};
use belier_plan::{LoadModel, Metric, Order, Scheme, DEFAULT_ABORT_AFTER};
use belier_scenario::VirtualUsers;

const FULL: &str = r#"
target: https://api.example.test:8443/v1/
headers:
  Accept: application/json
  X-Run: "{{ run }}"
timeout: 5s
insecure: true
cacert: ca.pem
cert: client.pem
key: client.key
sni: api.internal
http2: true
max_streams: 10
keepalive: false
cookies: false
variables:
  run: r42
  password: secret
data:
  users: { file: users.csv, order: unique }
  terms: terms.jsonl
load:
  vus: 5
  stages: [{ duration: 30s, target: 50 }, "1m:50", { duration: 10s, target: 0 }]
  pacing: 2s
  duration: 2m
  iterations: 1000
  seed: 9
scenarios:
  - name: shopper
    weight: 3
    steps:
      - name: login
        post: /login
        json: { user: "{{ users.email }}", password: "{{ password }}", remember: true, n: 3 }
        extract:
          token: { json: $.token }
          csrf: { regex: 'csrf=(\w+)' }
          where: { header: Location }
          session: { cookie: SID }
        check:
          status: [200, 201]
          body_contains: token
          body_matches: '"token":'
          json: { $.ok: true }
          header: { Content-Type: application/json }
          max_latency: 200ms
        abort_on_fail: true
        timeout: 2s
      - pause: 1s..3s
      - group: browse
        steps:
          - get: /items?q={{ terms.term }}
            headers: { Authorization: "Bearer {{ token }}" }
            check: { header: [ETag, Date] }
          - loop: 3
            steps:
              - method: put
                url: https://api.example.test:8443/v1/items/{{ random_int(1, 9) }}
                body: "id={{ uuid }}&s={{ random_string(4) }}&vu={{ vu }}&i={{ iteration }}"
              - pause: 250ms
      - loop: { count: 2, steps: [{ delete: "/items/{{ where }}", name: cleanup }] }
  - name: reader
    steps:
      - path: /items
      - name: login
        path: /login
thresholds:
  - p99 < 200ms
  - "login: p95 <= 1s"
  - error_rate < 1%
  - rate > 900/s
  - checks > 99%
  - "GET /items: max < 2s"
  - login: requests >= 1
  - { expr: "p99.9 < 5s", abort: true, after: 10s }
  - expr: error_rate < 5%
    abort: true
  - { expr: "requests < 1000000", abort: true }
  - { expr: "checks > 90%", abort: false }
"#;

fn full_files() -> Vec<(&'static str, &'static str)> {
    vec![
        ("users.csv", "email,password\nann@x.test,a\nbob@x.test,b\n"),
        (
            "terms.jsonl",
            "{\"term\": \"shoes\"}\n{\"term\": \"hats\"}\n",
        ),
    ]
}

#[test]
fn every_option_and_step_kind_parses() {
    let plan = common::load("full", FULL, &full_files()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plan.target.scheme, Scheme::Https);
    assert_eq!(plan.target.host, "api.example.test");
    assert_eq!(plan.target.port, 8443);
    assert_eq!(plan.target.base_path, "/v1");
    let o = &plan.options;
    assert_eq!(o.timeout, Some(Duration::from_secs(5)));
    assert!(o.insecure && o.http2 && !o.keepalive && !o.cookies);
    assert_eq!(o.max_streams, Some(10));
    assert_eq!(o.sni.as_deref(), Some("api.internal"));
    assert!(o.cacert.as_ref().unwrap().ends_with("ca.pem"));
    assert!(o.cert.as_ref().unwrap().ends_with("client.pem"));
    assert!(o.key.as_ref().unwrap().ends_with("client.key"));
    assert_eq!(o.headers[0], ("Accept".into(), "application/json".into()));
    assert_eq!(
        plan.variables,
        [
            ("run".into(), "r42".into()),
            ("password".into(), "secret".into())
        ]
    );
    let feeders = plan.feeders();
    assert_eq!(
        (feeders[0].name.as_str(), feeders[0].order, feeders[0].len()),
        ("users", Order::Unique, 2)
    );
    assert_eq!(
        (feeders[1].name.as_str(), feeders[1].order, feeders[1].len()),
        ("terms", Order::Sequential, 2)
    );

    let stages = vec![
        Stage {
            duration: Duration::from_secs(30),
            target: 50.0,
        },
        Stage {
            duration: Duration::from_secs(60),
            target: 50.0,
        },
        Stage {
            duration: Duration::from_secs(10),
            target: 0.0,
        },
    ];
    assert_eq!(
        plan.load.model,
        LoadModel::Closed {
            vus: Profile::staged(5.0, stages),
            pacing: Some(Duration::from_secs(2))
        }
    );
    assert_eq!(plan.load.duration, Some(Duration::from_secs(120)));
    assert_eq!(plan.load.iterations, Some(1000));
    assert_eq!(plan.load.seed, 9);
    assert_eq!(plan.load.pacing(), Some(Duration::from_secs(2)));

    assert_eq!(
        plan.steps(),
        [
            "login",
            "GET /items?q={{ terms.term }}",
            "PUT /v1/items/{{ random_int(1, 9) }}",
            "cleanup",
            "GET /items"
        ]
    );
    let checks = plan.checks();
    for name in [
        "login: status in [200, 201]",
        "login: body contains \"token\"",
        "login: body matches /\"token\":/",
        "login: json $.ok == true",
        "login: header Content-Type == \"application/json\"",
        "login: latency <= 200ms",
        "login: extract token",
        "login: extract session",
        "GET /items?q={{ terms.term }}: header ETag present",
        "GET /items?q={{ terms.term }}: variables set",
        "cleanup: variables set",
    ] {
        assert!(
            checks.iter().any(|c| c == name),
            "missing check {name:?} in {checks:?}"
        );
    }
    let users: std::sync::Arc<dyn Users> = plan.users();
    assert_eq!(users.steps(), plan.steps());
    assert_eq!(users.checks(), plan.checks());
    let metrics: Vec<Metric> = plan.thresholds.iter().map(|t| t.metric).collect();
    assert_eq!(
        metrics,
        [
            Metric::Percentile(99.0),
            Metric::Percentile(95.0),
            Metric::ErrorRate,
            Metric::Rate,
            Metric::Checks,
            Metric::Max,
            Metric::Requests,
            Metric::Percentile(99.9),
            Metric::ErrorRate,
            Metric::Requests,
            Metric::Checks
        ]
    );
    let aborts: Vec<Option<Duration>> = plan.thresholds.iter().map(|t| t.abort_after).collect();
    let s = Duration::from_secs;
    assert_eq!(aborts[..7], [None; 7]);
    // Given, then the documented default.
    assert_eq!(
        aborts[7..],
        [
            Some(s(10)),
            Some(DEFAULT_ABORT_AFTER),
            Some(DEFAULT_ABORT_AFTER),
            None
        ]
    );
    assert_eq!(plan.thresholds[1].scope.as_deref(), Some("login"));
    assert_eq!(plan.thresholds[5].scope.as_deref(), Some("GET /items"));
    assert_eq!(plan.thresholds[6].expression, "login: requests >= 1");

    let text = plan.describe();
    for part in [
        "target: https://api.example.test:8443/v1",
        "shopper (weight 3, 75.0 %)",
        "pause 1s..3s",
        "group browse:",
        "loop 3 times:",
        "extract token ← json $.token",
        "closed loop",
        "users: ",
        "p99 < 200ms",
        "p99.9 < 5s   (stops the run when it fails, judged from 10s on)",
        "error_rate < 5%   (stops the run when it fails, judged from 5s on)",
        "\n  checks > 90%\n",
    ] {
        assert!(text.contains(part), "describe lacks {part:?}:\n{text}");
    }
}

#[test]
fn open_loop_and_defaults() {
    let plan = common::load(
        "open",
        "target: http://127.0.0.1:8080\nload: { rate: 20, stages: ['10s:100'], max_vus: 300, arrivals: poisson, seed: 4 }\nscenarios: [{ steps: [{ get: / }] }]\n",
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        plan.load.model,
        LoadModel::Open {
            rate: Profile::staged(
                20.0,
                vec![Stage {
                    duration: Duration::from_secs(10),
                    target: 100.0
                }]
            ),
            max_vus: 300,
            spacing: Spacing::Poisson { seed: 4 },
        }
    );
    assert!(matches!(
        plan.load.engine_load(),
        belier_engine::Load::Open {
            max_connections: 300,
            ..
        }
    ));
    assert_eq!(plan.target.url(), "http://127.0.0.1:8080");
    assert!(plan.options.keepalive && plan.options.cookies && !plan.options.http2);

    let plan = common::load(
        "defaults",
        "target: http://h\nscenarios: [{ steps: [{ path: / }] }]\n",
        &[],
    )
    .unwrap();
    assert_eq!(
        plan.load.model,
        LoadModel::Closed {
            vus: Profile::constant(1.0),
            pacing: None
        }
    );
    assert_eq!(plan.target.port, 80);
    assert_eq!(plan.steps(), ["GET /"]);
    let plan = common::load(
        "ramp",
        "target: http://h\nload: { stages: ['10s:10'] }\nscenarios: [{ steps: [{ path: / }] }]\n",
        &[],
    )
    .unwrap();
    assert_eq!(
        plan.load.model,
        LoadModel::Closed {
            vus: Profile::staged(
                0.0,
                vec![Stage {
                    duration: Duration::from_secs(10),
                    target: 10.0
                }]
            ),
            pacing: None
        }
    );
}

/// Each malformed plan gives `plan.yaml:LINE:COL: message`.
#[test]
fn malformed_plans_are_located() {
    let head = "target: http://127.0.0.1:8080\n";
    let cases: &[(&str, &str, &str)] = &[
        ("unknown-top", "scenarios: []\nthreshold: []\n", "3:1: unknown key `threshold` in the plan; did you mean `thresholds`?"),
        ("unknown-step", "scenarios:\n  - steps:\n      - pauze: 1s\n", "4:9: unknown key `pauze` in a request step; did you mean `pause`?"),
        ("unknown-check", "scenarios:\n  - steps:\n      - get: /\n        check: { stauts: 200 }\n", "5:18: unknown key `stauts` in check; did you mean `status`?"),
        ("wrong-type", "scenarios:\n  - steps: 3\n", "3:12: expected steps (a list), found a scalar"),
        ("wrong-type-map", "scenarios: { a: 1 }\n", "2:12: expected scenarios (a list), found a mapping"),
        ("bad-duration", "timeout: 5 parsecs\nscenarios: [{ steps: [{ get: / }] }]\n", "2:10: expected timeout (a duration such as `250ms`, `2s`, `1m30s`), found `5 parsecs`: unknown unit `parsecs` (use us, ms, s, m or h)"),
        ("bad-pause", "scenarios:\n  - steps:\n      - pause: 3s..1s\n", "4:16: pause range `3s..1s`: the low end is above the high end"),
        ("bad-threshold", "scenarios: [{ steps: [{ get: / }] }]\nthresholds:\n  - p99 < 200\n", "4:11: `200`: a latency needs a unit, e.g. `200ms` or `1s`"),
        ("bad-scoped-threshold", "scenarios: [{ steps: [{ get: /, name: login }] }]\nthresholds:\n  - login: p99 < 1x\n", "4:18: expected a latency such as `200ms`, found `1x`"),
        ("threshold-bad-key", "scenarios: [{ steps: [{ get: / }] }]\nthresholds:\n  - { expr: p99 < 1s, abrot: true }\n", "4:23: unknown key `abrot` in a threshold; did you mean `abort`?"),
        ("threshold-bad-after", "scenarios: [{ steps: [{ get: / }] }]\nthresholds:\n  - { expr: p99 < 1s, abort: true, after: 10 parsecs }\n", "4:43: expected after (a duration such as `250ms`, `2s`, `1m30s`), found `10 parsecs`"),
        ("threshold-bad-abort", "scenarios: [{ steps: [{ get: / }] }]\nthresholds:\n  - { expr: p99 < 1s, abort: soon }\n", "4:30: expected abort (true or false), found `soon`"),
        ("threshold-after-alone", "scenarios: [{ steps: [{ get: / }] }]\nthresholds:\n  - { expr: p99 < 1s, after: 2s }\n", "4:23: `after` delays the judgement of a threshold that aborts the run"),
        ("threshold-no-expr", "scenarios: [{ steps: [{ get: / }] }]\nthresholds:\n  - { abort: true, after: 2s }\n", "4:5: a threshold written as a mapping needs `expr`"),
        ("threshold-bad-expr", "scenarios: [{ steps: [{ get: / }] }]\nthresholds:\n  - { expr: 'p99 < 200', abort: true }\n", "4:20: `200`: a latency needs a unit"),
        ("threshold-count-live", "scenarios: [{ steps: [{ get: / }] }]\nthresholds:\n  - { expr: requests == 100, abort: true }\n", "4:37: `requests == 100` can only be judged at the end of the run"),
        ("threshold-count-below-live", "scenarios: [{ steps: [{ get: / }] }]\nthresholds:\n  - expr: requests >= 100\n    abort: true\n", "5:12: `requests >= 100` can only be judged at the end of the run"),
        ("bad-metric", "scenarios: [{ steps: [{ get: / }] }]\nthresholds: [\"q99 < 1s\"]\n", "3:15: unknown metric `q99`"),
        ("unknown-step-threshold", "scenarios: [{ steps: [{ get: /, name: login }] }]\nthresholds: ['logn: p99 < 1s']\n", "3:14: unknown step `logn` in threshold; did you mean `login`?"),
        ("undefined-var", "scenarios:\n  - steps:\n      - get: /a/{{ tokn }}\n", "4:17: undefined variable `tokn`: not in `variables`, not extracted by an earlier step"),
        ("var-before-extract", "scenarios:\n  - steps:\n      - get: /a\n        headers: { A: 'x {{ token }}' }\n        extract: { token: { header: X } }\n", "5:26: undefined variable `token`"),
        ("bad-regex", "scenarios:\n  - steps:\n      - get: /\n        extract: { a: { regex: 'x(' } }\n", "5:32: bad regex `x(`"),
        ("bad-jsonpath", "scenarios:\n  - steps:\n      - get: /\n        extract: { a: { json: 'token' } }\n", "5:31: bad JSONPath `token`"),
        ("missing-data", "data: { users: nothere.csv }\nscenarios: [{ steps: [{ get: / }] }]\n", "2:16: cannot read data file"),
        ("unknown-column", "data: { users: users.csv }\nscenarios: [{ steps: [{ get: '/{{ users.mail }}' }] }]\n", "3:32: data `users` has no column `mail` (its columns: email, password)"),
        ("bad-template", "scenarios: [{ steps: [{ get: '/{{ random_int(5, 1) }}' }] }]\n", "2:32: random_int(5, 1): the low bound is above the high one"),
        ("unclosed-template", "scenarios: [{ steps: [{ get: '/{{ x' }] }]\n", "2:32: `{{` without a closing `}}`"),
        ("url-template", "scenarios: [{ steps: [{ url: 'http://127.0.0.1:8080/a/{{ nope }}' }] }]\n", "2:55: undefined variable `nope`"),
        ("templated-origin", "scenarios: [{ steps: [{ url: 'http://{{ host }}/a' }] }]\n", "2:30: the origin (scheme, host, port) of a `url` cannot use templates"),
        ("hosts-over-http2", "http2: true\nscenarios: [{ steps: [{ url: 'http://other.test/x' }] }]\n", "2:8: http2 takes a plan on one host: its steps also go to http://other.test:80"),
        ("early-without-http3", "quic_0rtt: true\nscenarios: [{ steps: [{ get: / }] }]\n", "2:12: quic_0rtt needs `http3: true`: 0-RTT is QUIC's"),
        ("early-post", "http3: true\nquic_0rtt: true\nscenarios: [{ steps: [{ get: / }, { post: /x, name: login }] }]\n", "3:12: quic_0rtt sends requests as early data, which can be replayed: only GET, HEAD and OPTIONS steps may go as it, and step `login` is a POST"),
        ("bad-follow", "follow: 21\nscenarios: [{ steps: [{ get: / }] }]\n", "2:9: expected at most 20 redirects to follow, found 21"),
        ("url-credentials", "scenarios: [{ steps: [{ url: 'http://u:p@other.test/x' }] }]\n", "2:30: a `url` cannot carry credentials"),
        ("no-path", "scenarios: [{ steps: [{ name: x }] }]\n", "2:23: expected a step: a request"),
        ("relative-path", "scenarios: [{ steps: [{ get: items }] }]\n", "2:30: expected a path starting with `/`"),
        ("bad-status", "scenarios: [{ steps: [{ get: /, check: { status: 99 } }] }]\n", "2:50: expected a status code from 100 to 599, found 99"),
        ("bad-bool", "keepalive: maybe\nscenarios: [{ steps: [{ get: / }] }]\n", "2:12: expected keepalive (true or false), found `maybe`"),
        ("bad-order", "data: { users: { file: users.csv, order: shuffled } }\nscenarios: [{ steps: [{ get: / }] }]\n", "2:42: expected order `sequential`, `random` or `unique`, found `shuffled`"),
        ("bad-load", "load: { vus: 3, arrivals: poisson }\nscenarios: [{ steps: [{ get: / }] }]\n", "2:17: `arrivals` does not apply to a closed loop"),
        ("bad-stage", "load: { stages: ['10s-5'] }\nscenarios: [{ steps: [{ get: / }] }]\n", "2:18: expected a stage `DURATION:TARGET`"),
        ("yaml-syntax", "scenarios: [{ steps: [\n", "YAML syntax"),
        ("dup-key", "scenarios: []\nscenarios: []\n", "3:1: duplicate key `scenarios` in the plan"),
        ("empty-steps", "scenarios: [{ steps: [] }]\n", "2:22: expected at least one step"),
        ("zero-weight", "scenarios: [{ weight: 0, steps: [{ get: / }] }]\n", "2:23: expected a weight ≥ 1"),
        ("two-bodies", "scenarios: [{ steps: [{ post: /, body: a, json: 1 }] }]\n", "2:43: give one of `body`, `json`, `body_file`, `form` or `multipart`"),
        ("missing-body-file", "scenarios: [{ steps: [{ post: /, body_file: no.json }] }]\n", "2:45: cannot read body file"),
    ];
    for (name, body, want) in cases {
        let text = format!("{head}{body}");
        let err = match common::load(name, &text, &[("users.csv", "email,password\na,b\n")]) {
            Ok(_) => panic!("{name}: parsed:\n{text}"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("plan.yaml:"), "{name}: {err}");
        let after = err.split_once("plan.yaml:").map(|(_, r)| r).unwrap_or("");
        assert!(
            after.starts_with(want) || (want.starts_with("YAML") && after.contains(want)),
            "{name}: got `{err}`, want `{want}`"
        );
        // Every message starts with line:col.
        let mut parts = after.splitn(3, ':');
        let line: usize = parts
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("{name}: {err}"));
        let col: usize = parts
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("{name}: {err}"));
        assert!(line >= 1 && col >= 1, "{name}: {err}");
    }
}

/// CR, LF or NUL in what goes on the wire as written (a header, a path, a method, a URL), a
/// header name that is no token, and framing headers that contradict the body: refused at
/// load, at their place, before anything is sent.
#[test]
fn request_splitting_and_false_framing_are_refused_where_written() {
    let head = "target: http://127.0.0.1:8080\n";
    let long = "X".repeat(1100);
    let long_name = format!("scenarios: [{{ steps: [{{ get: /, headers: {{ {long}: v }} }}] }}]\n");
    let cases: &[(&str, &str, &str)] = &[
        ("value-crlf", "scenarios:\n  - steps:\n      - get: /a\n        headers:\n          X-A: \"a\\r\\nX: 1\"\n", "6:16: the value of header `X-A` holds a line break (CR, \\r)"),
        ("value-lf-in-template", "variables: { v: x }\nscenarios:\n  - steps:\n      - get: /a\n        headers: { X-A: \"{{ v }}\\nX: 1\" }\n", "6:25: the value of header `X-A` holds a line break (LF, \\n)"),
        ("value-nul", "scenarios: [{ steps: [{ get: /, headers: { X-A: \"a\\0\" } }] }]\n", "2:49: the value of header `X-A` holds a NUL byte"),
        ("plan-headers", "headers:\n  X-A: \"a\\nX: 1\"\nscenarios: [{ steps: [{ get: / }] }]\n", "3:8: the value of header `X-A` holds a line break"),
        ("name-crlf", "scenarios: [{ steps: [{ get: /, headers: { \"X\\r\\nY\": 1 } }] }]\n", "2:44: the header name `X\\r\\nY` holds a line break"),
        ("name-colon", "scenarios: [{ steps: [{ get: /, headers: { \"X:Y\": 1 } }] }]\n", "2:44: the header name `X:Y` holds `:`"),
        ("name-long", &long_name, "2:44: the header name `XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX…` is 1100 characters long (at most 256)"),
        ("path-crlf", "scenarios:\n  - steps:\n      - get: \"/a\\r\\nX: 1\"\n", "4:14: the path `/a\\r\\nX: 1` holds a line break"),
        ("path-space", "scenarios: [{ steps: [{ get: '/a HTTP/1.0' }] }]\n", "2:30: the path `/a HTTP/1.0` holds a space or control character (a space): percent-encode it"),
        ("path-after-template", "variables: { v: x }\nscenarios: [{ steps: [{ get: \"/{{ v }}\\nX: 1\" }] }]\n", "3:30: the path `/{{ v }}\\nX: 1` holds a line break"),
        ("url-crlf", "scenarios: [{ steps: [{ url: \"http://other.test\\r\\n/x\" }] }]\n", "2:30: the URL `http://other.test\\r\\n` holds a line break"),
        ("method-crlf", "scenarios: [{ steps: [{ method: \"GET\\r\\n\", path: / }] }]\n", "2:33: the method `GET\\r\\n` holds a line break"),
        ("content-length", "scenarios: [{ steps: [{ post: /, body: hello, headers: { Content-Length: 100 } }] }]\n", "2:74: `Content-Length: 100` does not match the body, which is 5 bytes"),
        ("content-length-no-body", "headers: { Content-Length: 5 }\nscenarios: [{ steps: [{ get: / }] }]\n", "3:23: `Content-Length: 5` does not match the body, which is 0 bytes"),
        ("content-length-templated-body", "variables: { v: x }\nscenarios: [{ steps: [{ post: /, body: \"{{ v }}\", headers: { Content-Length: 1 } }] }]\n", "3:78: `Content-Length` with a body that changes per request"),
        ("transfer-encoding", "scenarios: [{ steps: [{ post: /, body: hello, headers: { Transfer-Encoding: chunked } }] }]\n", "2:77: `Transfer-Encoding: chunked` with a body of 5 bytes that is not chunk-encoded"),
    ];
    for (name, body, want) in cases {
        let text = format!("{head}{body}");
        let err = match common::load(name, &text, &[]) {
            Ok(_) => panic!("{name}: parsed:\n{text}"),
            Err(e) => e.to_string(),
        };
        let after = err.split_once("plan.yaml:").map_or("", |(_, r)| r);
        assert!(
            after.starts_with(want),
            "{name}: got `{err}`, want `{want}`"
        );
    }
    // A Content-Length that is the body's length is sent as given.
    let text = format!("{head}scenarios: [{{ steps: [{{ post: /, body: hello, headers: {{ Content-Length: 5 }} }}] }}]\n");
    common::load("content-length-ok", &text, &[]).unwrap();
}

/// A run records a statistics row per step (and per redirect hop it may follow): a plan with
/// more than a results file holds would record what `belier report` refuses to read.
#[test]
fn plans_with_more_rows_than_a_results_file_holds_are_refused() {
    let steps = |n: usize| {
        (0..n)
            .map(|i| format!("      - get: /s{i}\n"))
            .collect::<String>()
    };
    let plan = |n: usize, follow: &str| {
        format!(
            "target: http://127.0.0.1:8080\n{follow}scenarios:\n  - steps:\n{}",
            steps(n)
        )
    };
    assert!(common::load("rows-ok", &plan(1024, ""), &[]).is_ok());
    let err = common::load("rows-many", &plan(1025, ""), &[])
        .expect_err("1,025 steps are refused")
        .to_string();
    assert!(
        err.contains("plan.yaml:1:1: the plan has 1025 statistics rows")
            && err.contains("more than the 1024 a results file holds"),
        "{err}"
    );
    // 300 steps that may each follow 3 redirects are 1,200 rows.
    let err = common::load("rows-follow", &plan(300, "follow: 3\n"), &[])
        .expect_err("300 steps × 4 rows are refused")
        .to_string();
    assert!(err.contains("the plan has 1200 statistics rows"), "{err}");
}

#[test]
fn bad_targets() {
    for (target, want) in [
        (
            "ftp://h",
            "1:9: expected an http or https URL, found scheme `ftp`",
        ),
        (
            "http://h/?q=1",
            "1:9: the target URL is a base: no query or fragment",
        ),
        ("not a url", "1:9: expected a base URL"),
    ] {
        let text = format!("target: {target}\nscenarios: [{{ steps: [{{ get: / }}] }}]\n");
        let err = common::load("bad-target", &text, &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.split_once("plan.yaml:").unwrap().1.starts_with(want),
            "{err}"
        );
    }
    let err = common::load("no-target", "scenarios: []\n", &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with(
            "plan.yaml:1:1: expected `target: URL` (e.g. `target: http://127.0.0.1:8080`)"
        ),
        "{err}"
    );
}

#[test]
fn data_file_errors_name_the_data_file_and_line() {
    let plan =
        "target: http://h\ndata: { users: users.csv }\nscenarios: [{ steps: [{ get: / }] }]\n";
    let err = common::load("bad-csv", plan, &[("users.csv", "email,pass\na,b\nc\n")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("users.csv:3:1: expected 2 fields"), "{err}");
    let plan = "target: http://h\ndata: { t: t.jsonl }\nscenarios: [{ steps: [{ get: / }] }]\n";
    let err = common::load("bad-jsonl", plan, &[("t.jsonl", "{\"a\": 1}\nnope\n")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("t.jsonl:2:"), "{err}");
    let err = common::load(
        "no-rows",
        "target: http://h\ndata: { t: t.csv }\nscenarios: [{ steps: [{ get: / }] }]\n",
        &[("t.csv", "a,b\n")],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("t.csv:1:1: data `t` has no rows"), "{err}");
}

#[test]
fn unreadable_plan_is_an_error() {
    let err = belier_plan::load(std::path::Path::new("/nonexistent/plan.yaml")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("/nonexistent/plan.yaml:1:1: cannot read the plan"),
        "{err}"
    );
}

/// The complete example at the top of the plan format (docs/src/reference/plan-format.md) parses, and means what the text says.
#[test]
fn the_documented_example_parses() {
    let doc = include_str!("../../../docs/src/reference/plan-format.md");
    let example = doc
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the plan format starts with a yaml example");
    let plan = common::load(
        "doc",
        example,
        &[("users.csv", "email,name\nann@x.test,Ann\n")],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plan.steps(), ["login", "item", "GET /items"]);
    assert_eq!(plan.target.base_path, "/api");
    assert_eq!(plan.thresholds.len(), 3);
    assert_eq!(plan.load.duration, Some(Duration::from_secs(60)));
}

/// The `load:` and `data:` examples of the plan format parse too.
#[test]
fn the_documented_fragments_parse() {
    let doc = include_str!("../../../docs/src/reference/plan-format.md");
    let mut seen = 0;
    for block in doc
        .split("```yaml\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
    {
        if !(block.starts_with("load:")
            || block.starts_with("data:")
            || block.starts_with("thresholds:"))
        {
            continue;
        }
        // A block with scenarios of its own (loads per scenario) needs none added.
        let steps = if block.contains("\nscenarios:") {
            ""
        } else {
            // `checkout` has a load of its own, for the thresholds scoped to it.
            "scenarios: [{ steps: [{ get: '/{{ users.email }}', name: login }, { get: '/{{ terms.term }}' }] }, \
             { name: checkout, load: { vus: 1 }, steps: [{ get: /checkout }] }]\n"
        };
        let data = if block.starts_with("data:") {
            ""
        } else {
            "data: { users: users.csv, terms: terms.jsonl }\n"
        };
        let text = format!("target: http://127.0.0.1:8080\n{data}{block}{steps}");
        common::load(
            "fragments",
            &text,
            &[
                ("users.csv", "email\na\n"),
                ("terms.jsonl", "{\"term\": \"x\"}\n"),
            ],
        )
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
        seen += 1;
    }
    assert_eq!(
        seen, 7,
        "closed and open load, scenarios with loads of their own, data, thresholds, aborting ones, \
         streamed messages' thresholds"
    );
}

#[test]
fn form_and_multipart_bodies_are_checked_and_shown() {
    let plan = r#"target: http://h
variables: { who: ann }
scenarios:
  - steps:
      - post: /f
        form: { q: "a b", who: "{{ who }}", tag: [x, "{{ who }}"] }
      - post: /u
        multipart:
          title: "hi {{ who }}"
          doc: { file: doc.bin, content_type: image/png }
          raw: { file: doc.bin, filename: other.dat }
"#;
    let loaded = common::load("multipart-ok", plan, &[("doc.bin", "12345")]).unwrap();
    let shown = loaded.describe();
    assert!(
        shown.contains("- POST /f  → row `POST /f` [form: q, who, tag, tag]"),
        "{shown}"
    );
    assert!(
        shown.contains(
            "[multipart: title, doc ← file doc.bin (5 bytes), raw ← file other.dat (5 bytes)]"
        ),
        "{shown}"
    );

    for (test, text, expected) in [
        (
            "multipart-missing",
            "target: http://h\nscenarios:\n  - steps:\n      - post: /u\n        multipart:\n          doc: { file: nope.bin }\n",
            ":6:24: cannot read multipart file `",
        ),
        (
            "multipart-no-file",
            "target: http://h\nscenarios:\n  - steps:\n      - post: /u\n        multipart: { doc: { filename: a } }\n",
            ":5:27: file part `doc` needs `file:`",
        ),
        (
            "form-and-body",
            "target: http://h\nscenarios:\n  - steps:\n      - post: /u\n        body: x\n        form: { a: b }\n",
            ":6:9: give one of `body`, `json`, `body_file`, `form` or `multipart`",
        ),
        (
            "form-undefined",
            "target: http://h\nscenarios:\n  - steps:\n      - post: /u\n        form: { a: \"{{ nope }}\" }\n",
            ":5:21: undefined variable `nope`",
        ),
    ] {
        let err = common::load(test, text, &[]).unwrap_err().to_string();
        assert!(err.contains(expected), "{test}: {err}\nexpected: {expected}");
        assert!(err.contains("plan.yaml:"), "{err}");
    }
}

/// `url:` steps on other hosts: each new origin joins the plan's hosts once, in the order the
/// steps name them; the target's own origin is not another host; rows name the whole URL.
#[test]
fn url_steps_on_other_hosts_join_the_plan_hosts() {
    let plan = common::load(
        "hosts",
        "target: http://127.0.0.1:8080/api\n\
         compressed: true\n\
         scenarios:\n  - steps:\n\
         \x20     - url: http://127.0.0.1:9090/b\n\
         \x20     - url: http://127.0.0.1:8080/own\n\
         \x20     - url: https://[::1]:7070/c?x=1\n\
         \x20     - { method: POST, url: 'http://127.0.0.1:9090/d' }\n",
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let hosts: Vec<String> = plan.hosts.iter().map(|h| h.url()).collect();
    assert_eq!(hosts, ["http://127.0.0.1:9090", "https://[::1]:7070"]);
    assert_eq!(
        plan.steps(),
        [
            "GET http://127.0.0.1:9090/b",
            "GET /own",
            "GET https://[::1]:7070/c?x=1",
            "POST http://127.0.0.1:9090/d"
        ]
    );
    assert!(plan.options.compressed);
    let shown = plan.describe();
    assert!(shown.contains("compressed on"), "{shown}");
    assert!(
        shown.contains(
            "hosts: http://127.0.0.1:8080/api (the target's) and http://127.0.0.1:9090, \
             https://[::1]:7070"
        ),
        "{shown}"
    );
}

/// `follow: N` gives every statistics row N rows more, one per hop, setup's too.
#[test]
fn follow_gives_each_row_its_hops() {
    let plan = common::load(
        "follow",
        "target: http://127.0.0.1:8080\n\
         follow: 2\n\
         setup: [{ get: /token, name: token }]\n\
         scenarios:\n  - steps: [{ get: /a }, { get: /b }, { get: /a }]\n",
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plan.options.follow, 2);
    assert_eq!(
        plan.steps(),
        [
            "GET /a",
            "GET /a → redirect 1",
            "GET /a → redirect 2",
            "GET /b",
            "GET /b → redirect 1",
            "GET /b → redirect 2"
        ]
    );
    assert_eq!(
        plan.setup().unwrap().steps(),
        ["token", "token → redirect 1", "token → redirect 2"]
    );
    assert!(plan.describe().contains("follow 2 redirects"));
}
