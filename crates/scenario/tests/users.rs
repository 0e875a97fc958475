//! Driving plan users by hand with fake replies: what they send, how they pause, which
//! scenario and row they pick, and what they conclude.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use belier_engine::user::{Action, ErrorKind, User, Users};
use belier_scenario::VirtualUsers;
use common::{header, ok, reply, send};

const LOGIN: &str = r#"
target: http://127.0.0.1:8080/api
variables: { user: ann }
scenarios:
  - name: journey
    steps:
      - name: login
        post: /login
        json: { user: "{{ user }}", n: 1, tags: ["a", "{{ vu }}"] }
        extract:
          token: { json: $.token }
        check:
          status: 200
        abort_on_fail: true
      - pause: 1s
      - loop: 2
        steps:
          - name: items
            get: /items?page={{ iteration }}
            headers: { Authorization: "Bearer {{ token }}" }
          - pause: 100ms..200ms
"#;

#[test]
fn login_token_feeds_the_next_requests() {
    let plan = common::load("login", LOGIN, &[]).unwrap();
    let users = plan.users();
    let mut user = users.user(3);
    let login = send(user.as_mut());
    assert_eq!(login.method, "POST");
    assert_eq!(login.path_and_query, "/api/login");
    assert!(login.keep_body, "extraction needs the body");
    assert_eq!(header(&login, "content-type"), Some("application/json"));
    let body: serde_json::Value = serde_json::from_slice(&login.body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"user": "ann", "n": 1, "tags": ["a", "3"]})
    );

    let mut tallies = Vec::new();
    let verdict = user.reply(
        &reply(200, b"HTTP/1.1 200 OK\r\n\r\n", br#"{"token": "s3cret"}"#),
        &mut |check, passed| tallies.push((users.checks()[check].clone(), passed)),
    );
    assert!(!verdict.failed);
    assert_eq!(
        tallies,
        [
            ("login: status in [200]".to_string(), true),
            ("login: extract token".to_string(), true)
        ]
    );
    assert_eq!(user.next(), Action::Pause(Duration::from_secs(1)));
    for _ in 0..2 {
        let items = send(user.as_mut());
        assert_eq!(items.path_and_query, "/api/items?page=0");
        assert_eq!(header(&items, "Authorization"), Some("Bearer s3cret"));
        assert!(!items.keep_body);
        assert_eq!(users.steps()[items.step], "items");
        assert!(!ok(user.as_mut()));
        match user.next() {
            Action::Pause(d) => assert!(
                d >= Duration::from_millis(100) && d <= Duration::from_millis(200),
                "{d:?}"
            ),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(user.next(), Action::EndIteration);
    // The next iteration starts over, with the iteration number moved on.
    let again = send(user.as_mut());
    assert_eq!(again.path_and_query, "/api/login");
}

#[test]
fn a_failed_extraction_fails_the_step_and_abort_ends_the_iteration() {
    let plan = common::load("abort", LOGIN, &[]).unwrap();
    let users = plan.users();
    let mut user = users.user(0);
    send(user.as_mut());
    let mut failed_checks = Vec::new();
    let verdict = user.reply(
        &reply(200, b"HTTP/1.1 200 OK\r\n\r\n", b"{}"),
        &mut |c, passed| {
            if !passed {
                failed_checks.push(users.checks()[c].clone());
            }
        },
    );
    assert!(verdict.failed);
    assert_eq!(failed_checks, ["login: extract token"]);
    assert_eq!(
        user.next(),
        Action::EndIteration,
        "abort_on_fail ends the iteration"
    );

    // A request with no response fails the step, and aborts too.
    send(user.as_mut());
    assert!(user.failed(ErrorKind::ConnectRefused).failed);
    assert_eq!(user.next(), Action::EndIteration);
}

#[test]
fn a_variable_never_extracted_fails_its_step_at_run_time() {
    let plan = common::load(
        "unset",
        "target: http://h\nscenarios:\n  - steps:\n      - get: /a\n        extract: { t: { header: X-T } }\n      - get: /b/{{ t }}\n",
        &[],
    )
    .unwrap();
    let users = plan.users();
    let mut user = users.user(0);
    send(user.as_mut());
    assert!(
        user.reply(&reply(200, b"HTTP/1.1 200 OK\r\n\r\n", b""), &mut |_, _| {})
            .failed
    );
    let b = send(user.as_mut());
    assert_eq!(b.path_and_query, "/b/");
    let mut seen = Vec::new();
    let verdict = user.reply(&reply(200, b"HTTP/1.1 200 OK\r\n\r\n", b""), &mut |c, p| {
        seen.push((users.checks()[c].clone(), p))
    });
    assert!(verdict.failed);
    assert_eq!(seen, [("GET /b/{{ t }}: variables set".to_string(), false)]);
}

#[test]
fn checks_replace_the_status_rule_and_each_is_tallied() {
    let plan = common::load(
        "checks",
        r#"
target: http://h
scenarios:
  - steps:
      - name: plain
        get: /plain
      - name: checked
        get: /checked
        check:
          status: [404]
          body_contains: missing
          max_latency: 5ms
"#,
        &[],
    )
    .unwrap();
    let users = plan.users();
    let mut user = users.user(0);
    send(user.as_mut());
    assert!(
        user.reply(
            &reply(503, b"HTTP/1.1 503 X\r\n\r\n", b""),
            &mut |_, _| panic!("no checks")
        )
        .failed
    );
    let out = send(user.as_mut());
    assert!(out.keep_body);
    let mut seen = Vec::new();
    let verdict = user.reply(
        &reply(404, b"HTTP/1.1 404 X\r\n\r\n", b"page missing"),
        &mut |c, p| seen.push((users.checks()[c].clone(), p)),
    );
    assert!(verdict.failed, "the latency check fails (10 ms > 5 ms)");
    assert_eq!(
        seen,
        [
            ("checked: status in [404]".to_string(), true),
            ("checked: body contains \"missing\"".to_string(), true),
            ("checked: latency <= 5ms".to_string(), false),
        ]
    );
}

#[test]
fn weights_split_three_to_one() {
    let plan = common::load(
        "weights",
        "target: http://h\nscenarios:\n  - { name: a, weight: 3, steps: [{ get: /a }] }\n  - { name: b, steps: [{ get: /b }] }\n",
        &[],
    )
    .unwrap();
    let users = plan.users();
    let mut a = 0;
    let iterations = 2000;
    for vu in 0..20 {
        let mut user = users.user(vu);
        for _ in 0..iterations / 20 {
            if send(user.as_mut()).path_and_query == "/a" {
                a += 1;
            }
            ok(user.as_mut());
            assert_eq!(user.next(), Action::EndIteration);
        }
    }
    let share = a as f64 / iterations as f64;
    assert!((share - 0.75).abs() <= 0.03, "share of a: {share}");
    // Seeded: the same user makes the same choices.
    let picks = |vu| {
        let mut user = users.user(vu);
        (0..20)
            .map(|_| {
                let p = send(user.as_mut()).path_and_query;
                ok(user.as_mut());
                user.next();
                p
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(picks(5), picks(5));
    // Another seed, other choices.
    let mut reseeded = plan.clone();
    reseeded.load.seed = 99;
    let other = reseeded.users();
    let mut user = other.user(5);
    let again: Vec<String> = (0..20)
        .map(|_| {
            let p = send(user.as_mut()).path_and_query;
            ok(user.as_mut());
            user.next();
            p
        })
        .collect();
    assert_ne!(again, picks(5));
}

const FEEDERS: &str = r#"
target: http://h
data:
  seq: seq.csv
  rnd: { file: seq.csv, order: random }
  once: { file: once.jsonl, order: unique }
scenarios:
  - name: s
    steps:
      - get: /s/{{ seq.id }}
  - name: r
    steps:
      - get: /r/{{ rnd.id }}
  - name: u
    steps:
      - get: /u/{{ once.id }}
"#;

fn feeder_plan(test: &str, scenario: &str) -> belier_plan::Plan {
    let rows: String = (0..100)
        .map(|i| format!("{{\"id\": \"u{i}\"}}\n"))
        .collect();
    let plan = FEEDERS.replace(
        &format!("  - name: {scenario}\n"),
        &format!("  - name: {scenario}\n    weight: 1000000\n"),
    );
    common::load(
        test,
        &plan,
        &[("seq.csv", "id\na\nb\nc\n"), ("once.jsonl", &rows)],
    )
    .unwrap()
}

fn paths(user: &mut dyn User, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        match user.next() {
            Action::Send(o) => {
                out.push(o.path_and_query);
                ok(user);
                assert_eq!(user.next(), Action::EndIteration);
            }
            Action::Stop => break,
            other => panic!("{other:?}"),
        }
    }
    out
}

#[test]
fn sequential_rows_start_per_user_and_wrap() {
    let plan = feeder_plan("seq", "s");
    let users = plan.users();
    let mut first: Vec<String> = Vec::new();
    for p in paths(users.user(1).as_mut(), 20) {
        if p.starts_with("/s/") {
            first.push(p);
        }
    }
    assert!(first.len() >= 15, "{first:?}");
    assert_eq!(&first[..4], ["/s/b", "/s/c", "/s/a", "/s/b"]);
    let other: Vec<String> = paths(users.user(2).as_mut(), 20)
        .into_iter()
        .filter(|p| p.starts_with("/s/"))
        .collect();
    assert_eq!(other[0], "/s/c");
}

#[test]
fn random_rows_cover_the_data() {
    let plan = feeder_plan("rnd", "r");
    let users = plan.users();
    let seen: HashSet<String> = paths(users.user(0).as_mut(), 60)
        .into_iter()
        .filter(|p| p.starts_with("/r/"))
        .collect();
    assert_eq!(seen.len(), 3, "{seen:?}");
}

#[test]
fn unique_rows_never_repeat_across_threads_and_exhaustion_is_reported() {
    let plan = feeder_plan("unique", "u");
    let users = plan.users();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let users = Arc::clone(&users);
            std::thread::spawn(move || {
                let mut got = Vec::new();
                for vu in 0..3 {
                    let mut user = users.user(t * 3 + vu);
                    got.extend(
                        paths(user.as_mut(), 1000)
                            .into_iter()
                            .filter(|p| p.starts_with("/u/")),
                    );
                    assert_eq!(user.next(), Action::Stop, "a stopped user stays stopped");
                }
                got
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in threads {
        all.extend(t.join().unwrap());
    }
    let distinct: HashSet<&String> = all.iter().collect();
    assert_eq!(all.len(), 100, "every row used");
    assert_eq!(distinct.len(), 100, "no row used twice");
    let ex = users.exhausted();
    assert_eq!(ex.len(), 1);
    assert_eq!(
        (ex[0].data.as_str(), ex[0].rows, ex[0].users_stopped),
        ("once", 100, 12)
    );
    // A new run starts the rows over.
    assert!(plan.users().exhausted().is_empty());
}

const COOKIES: &str = r#"
target: http://h
scenarios:
  - steps:
      - get: /login
      - get: /account/page
        extract: { sid: { cookie: SID } }
      - get: /logout
      - get: /account/page
"#;

#[test]
fn cookies_are_kept_per_user_and_expire() {
    let plan = common::load("cookies", COOKIES, &[]).unwrap();
    let users = plan.users();
    let mut ann = users.user(0);
    let mut bob = users.user(1);
    send(ann.as_mut());
    ann.reply(
        &reply(
            200,
            b"HTTP/1.1 200 OK\r\nSet-Cookie: SID=ann1; Path=/; HttpOnly\r\n\r\n",
            b"",
        ),
        &mut |_, _| {},
    );
    send(bob.as_mut());
    bob.reply(
        &reply(
            200,
            b"HTTP/1.1 200 OK\r\nSet-Cookie: SID=bob1; Path=/\r\n\r\n",
            b"",
        ),
        &mut |_, _| {},
    );
    let a = send(ann.as_mut());
    assert_eq!(header(&a, "Cookie"), Some("SID=ann1"));
    assert!(
        !ok(ann.as_mut()),
        "the cookie extraction finds the jar's value"
    );
    let b = send(bob.as_mut());
    assert_eq!(header(&b, "Cookie"), Some("SID=bob1"));
    send(ann.as_mut());
    ann.reply(
        &reply(
            200,
            b"HTTP/1.1 200 OK\r\nSet-Cookie: SID=; Path=/; Max-Age=0\r\n\r\n",
            b"",
        ),
        &mut |_, _| {},
    );
    let a = send(ann.as_mut());
    assert_eq!(header(&a, "Cookie"), None, "Max-Age=0 deleted it");

    let off = common::load(
        "no-cookies",
        &COOKIES.replace("target: http://h\n", "target: http://h\ncookies: false\n"),
        &[],
    )
    .unwrap();
    let users = off.users();
    let mut user = users.user(0);
    send(user.as_mut());
    user.reply(
        &reply(200, b"HTTP/1.1 200 OK\r\nSet-Cookie: SID=x\r\n\r\n", b""),
        &mut |_, _| {},
    );
    assert_eq!(header(&send(user.as_mut()), "Cookie"), None);
}

#[test]
fn nested_loops_and_groups_run_in_order() {
    let plan = common::load(
        "loops",
        r#"
target: http://h
scenarios:
  - steps:
      - group: outer
        steps:
          - loop: { count: 2, steps: [{ get: /a }, { loop: 0, steps: [{ get: /never }] }, { loop: 2, steps: [{ get: /b }] }] }
      - get: /c
"#,
        &[],
    )
    .unwrap();
    let users = plan.users();
    let mut user = users.user(0);
    assert_eq!(
        paths_in_iteration(user.as_mut()),
        ["/a", "/b", "/b", "/a", "/b", "/b", "/c"]
    );
    assert_eq!(
        paths_in_iteration(user.as_mut()),
        ["/a", "/b", "/b", "/a", "/b", "/b", "/c"]
    );
}

fn paths_in_iteration(user: &mut dyn User) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        match user.next() {
            Action::Send(o) => {
                out.push(o.path_and_query);
                ok(user);
            }
            Action::EndIteration => return out,
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn headers_bodies_and_timeouts_render() {
    let plan = common::load(
        "render",
        r#"
target: http://h
headers: { User-Agent: belier-test, X-Vu: "{{ vu }}" }
variables: { q: "a b" }
scenarios:
  - steps:
      - put: "/s?q={{ q }}&r={{ random_int(1, 1) }}"
        headers: { user-agent: mine }
        body: "n={{ q }}"
        timeout: 750ms
      - post: /file
        body_file: body.bin
"#,
        &[("body.bin", "raw {{ not a template }}")],
    )
    .unwrap();
    let users = plan.users();
    let mut user = users.user(4);
    let out = send(user.as_mut());
    assert_eq!(out.path_and_query, "/s?q=a%20b&r=1");
    assert_eq!(header(&out, "User-Agent"), Some("mine"));
    assert_eq!(header(&out, "X-Vu"), Some("4"));
    assert_eq!(out.body, b"n=a b");
    assert_eq!(out.timeout, Some(Duration::from_millis(750)));
    ok(user.as_mut());
    let file = send(user.as_mut());
    assert_eq!(file.body, b"raw {{ not a template }}");
    assert_eq!(file.timeout, None);

    // A command line's header replaces the plan's, on every step.
    let mut plan = plan;
    plan.set_header("x-vu", "fixed");
    plan.set_header("User-Agent", "cli");
    let users = plan.users();
    let mut user = users.user(4);
    let out = send(user.as_mut());
    assert_eq!(header(&out, "X-Vu"), Some("fixed"));
    assert_eq!(header(&out, "User-Agent"), Some("cli"));
    assert_eq!(
        out.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("user-agent"))
            .count(),
        1
    );
    assert!(plan
        .options
        .headers
        .contains(&("x-vu".to_string(), "fixed".to_string())));
}

/// Values that come at run time (an extracted one, a `--var`) go into headers cleaned of CR,
/// LF and NUL, and into paths percent-encoded: a server's answer cannot split the next request.
#[test]
fn extracted_values_are_cleaned_before_they_reach_a_header_or_a_path() {
    const PLAN: &str = r#"
target: http://127.0.0.1:8080
variables: { given: x }
scenarios:
  - steps:
      - get: /login
        extract:
          token: { json: $.token }
          echoed: { header: X-Echo }
      - get: "/items/{{ token }}"
        headers: { Authorization: "Bearer {{ token }}", X-Echo: "{{ echoed }}", X-Given: "{{ given }}" }
"#;
    let mut plan = common::load("cleaned", PLAN, &[]).unwrap();
    plan.set_variable("given", "v\r\nX-Injected: 3").unwrap();
    let users = plan.users();
    let mut user = users.user(0);
    send(user.as_mut());
    user.reply(
        &reply(
            200,
            b"HTTP/1.1 200 OK\r\nX-Echo: e\0X-Injected: 2\r\n\r\n",
            br#"{"token": "t\r\nX-Injected: 1\u0000"}"#,
        ),
        &mut |_, _| {},
    );
    let next = send(user.as_mut());
    assert_eq!(next.path_and_query, "/items/t%0D%0AX-Injected:%201%00");
    assert_eq!(
        header(&next, "Authorization"),
        Some("Bearer tX-Injected: 1")
    );
    assert_eq!(header(&next, "X-Echo"), Some("eX-Injected: 2"));
    assert_eq!(header(&next, "X-Given"), Some("vX-Injected: 3"));
    for (name, value) in &next.headers {
        assert!(
            !name.contains(['\r', '\n', '\0']) && !value.contains(['\r', '\n', '\0']),
            "{name}: {value:?}"
        );
    }
}
