//! `belier import` through the real binary: a HAR recording (a hand-written HAR 1.2 fixture,
//! see below) and curl commands made into plans, and those plans run against a local shop
//! API that issues tokens and refuses requests without one, so a passing run proves the
//! token was extracted and sent. Bad input exits 2 naming the file, entry and field.
//!
//! The HAR fixture `tests/fixtures/login-flow.har` is written by hand to the HAR 1.2
//! specification, in the shape Chromium's developer tools save (pages, timings, `Host` and
//! hop-by-hop headers, cookies, a static stylesheet, a font on another origin): headless
//! Chromium has no command-line switch that writes a HAR (its `--log-net-log` writes a NetLog,
//! another format), and driving its DevTools protocol to build one would test that code
//! rather than belier's importer. Its origin is `http://shop.test:8080`; runs reach the local
//! shop with `--connect-to`.

use std::path::{Path, PathBuf};

use belier_testsupport::assert_exit;
use belier_testsupport::shop;
use belier_testsupport::temp_dir;
use serde_json::Value;
use shop::Shop;

belier_testsupport::binary!();

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `belier run PLAN --connect-to SHOP --output json`, parsed.
fn run_plan(plan: &Path, shop: &Shop) -> Value {
    let out = belier()
        .arg("run")
        .arg(plan)
        .args(["--connect-to", &shop.addr.to_string(), "--output", "json"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `belier import har HAR ARGS --exclude-static --out PLAN`, which must exit 0; what it said.
fn import_har(har: &Path, args: &[String], plan: &Path) -> String {
    let out = belier()
        .args(["import", "har"])
        .arg(har)
        .args(args)
        .args(["--exclude-static", "--out"])
        .arg(plan)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    text(&out.stderr)
}

#[test]
fn a_har_login_flow_replays_with_the_token_it_is_issued() {
    let dir = temp_dir("har");
    let plan = dir.join("plan.yaml");
    let said = import_har(&fixture("login-flow.har"), &[], &plan);
    assert!(
        said.contains(
            "extracted `token` from the response of request 2 (json $.token), used by request 3, 4"
        ),
        "{said}"
    );
    assert!(said.contains("2 static resources left out"), "{said}");
    // The recorded token, session cookie and password appear in no message.
    for secret in ["tok-7f3a9c21e84b", "s3cr3t", "correct horse"] {
        assert!(!said.contains(secret), "{said}");
    }
    let yaml = std::fs::read_to_string(&plan).unwrap();
    assert!(
        !yaml.contains("tok-7f3a9c21e84b") && !yaml.contains("s3cr3t"),
        "{yaml}"
    );
    // It holds the recording's bodies (a password here): its owner's only.
    assert_private(&plan);

    let check = belier().arg("check").arg(&plan).output().unwrap();
    assert_exit(&check, 0);

    let shop = Shop::start();
    let doc = run_plan(&plan, &shop);
    let seen = shop.seen();
    let got: Vec<(&str, &str, u16)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.target.as_str(), s.status))
        .collect();
    assert_eq!(
        got,
        [
            ("GET", "/", 200),
            ("POST", "/api/login", 200),
            ("GET", "/api/items?page=1", 200),
            ("GET", "/api/items/42", 200),
        ]
    );
    let tokens = shop.tokens();
    assert_eq!(tokens.len(), 1);
    let bearer = format!("Bearer {}", tokens[0]);
    for s in &seen[2..] {
        assert_eq!(s.header("authorization"), Some(bearer.as_str()), "{s:?}");
    }
    // Headers kept as recorded; cookies, Host and Accept-Encoding left to belier.
    assert_eq!(seen[1].header("origin"), Some("http://shop.test:8080"));
    assert_eq!(seen[1].header("content-type"), Some("application/json"));
    assert!(seen[1].header("user-agent").unwrap().contains("Chrome/131"));
    assert_eq!(seen[1].header("cookie"), None);
    assert_eq!(seen[1].header("accept-encoding"), None);
    assert_eq!(
        serde_json::from_slice::<Value>(&seen[1].body).unwrap(),
        serde_json::json!({"user": "ann", "password": "correct horse"})
    );
    assert_eq!(doc["summary"]["requests"], 4);
    let failed: u64 = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["failed"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(failed, 0, "{}", doc["steps"]);
}

/// A test server on 127.0.0.1:0 that keeps the requests it saw.
fn counting_server() -> belier_testserver::Server {
    belier_testserver::Server::start(belier_testserver::Config {
        threads: 1,
        record_requests: 1000,
        ..belier_testserver::Config::default()
    })
    .expect("test server starts")
}

/// `(method, target)` of every request `server` saw, sorted, once it is idle.
fn seen_by(server: &belier_testserver::Server) -> Vec<(String, String)> {
    server.wait_idle(std::time::Duration::from_secs(5));
    let mut seen: Vec<(String, String)> = server
        .recent_requests()
        .iter()
        .map(|r| (r.method.clone(), r.target.clone()))
        .collect();
    seen.sort();
    seen
}

/// `tests/fixtures/two-hosts.har` (HAR 1.2, a page on one host calling an API on another, a
/// script and a tracker) names its hosts 127.0.0.1:1111 and 127.0.0.1:2222: the test puts its
/// two servers' ports there. The plan keeps both hosts, the page's as the target; the
/// tracker is left out by `--include-host`, the script by `--exclude-static`.
#[test]
fn a_har_on_two_hosts_replays_on_both() {
    let dir = temp_dir("har-two-hosts");
    let (page, api) = (counting_server(), counting_server());
    let har = std::fs::read_to_string(fixture("two-hosts.har"))
        .unwrap()
        .replace("127.0.0.1:1111", &page.addr().to_string())
        .replace("127.0.0.1:2222", &api.addr().to_string());
    let har_file = dir.join("two-hosts.har");
    std::fs::write(&har_file, har).unwrap();
    let plan = dir.join("plan.yaml");
    let hosts = [
        "--include-host".to_string(),
        page.addr().to_string(),
        "--include-host".to_string(),
        api.addr().to_string(),
    ];
    let said = import_har(&har_file, &hosts, &plan);
    assert!(said.contains("1 static resources left out"), "{said}");
    assert!(
        said.contains("tracker.test:80 (1)") || said.contains("tracker.test (1)"),
        "{said}"
    );
    let yaml = std::fs::read_to_string(&plan).unwrap();
    assert!(
        yaml.contains(&format!("target: \"http://{}\"", page.addr())),
        "{yaml}"
    );
    assert!(
        yaml.contains(&format!("url: \"http://{}/api/items/7\"", api.addr())),
        "{yaml}"
    );
    let check = belier().arg("check").arg(&plan).output().unwrap();
    assert_exit(&check, 0);
    assert!(
        text(&check.stdout).contains(&api.addr().to_string()),
        "{}",
        text(&check.stdout)
    );

    let out = belier()
        .arg("run")
        .arg(&plan)
        .args(["-i", "3", "--output", "json"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["requests"], 12, "{doc}");
    let three = |method: &str, target: &str| vec![(method.to_string(), target.to_string()); 3];
    assert_eq!(
        seen_by(&page),
        [three("GET", "/"), three("POST", "/cart")].concat()
    );
    assert_eq!(
        seen_by(&api),
        [
            three("GET", "/api/items/7"),
            three("GET", "/api/items?page=1")
        ]
        .concat()
    );
    assert!(page
        .recent_requests()
        .iter()
        .filter(|r| r.method == "POST")
        .all(|r| r.body == br#"{"item":7,"n":1}"#));
}

#[test]
fn a_malformed_har_exits_2_naming_file_line_and_entry() {
    let dir = temp_dir("bad-har");
    let good = std::fs::read_to_string(fixture("login-flow.har")).unwrap();
    let cases = [
        (
            "syntax.har",
            good.replacen("\"time\": 20.0,", "\"time\": 20.0,,", 1),
            "syntax.har:225:22: entry 3 (log.entries[3]): the file is not valid JSON",
        ),
        (
            "missing.har",
            good.replacen("\"method\": \"POST\",", "", 1),
            "entry 3 (log.entries[3].request): not a HAR 1.2 document: missing field `method`",
        ),
        (
            "date.har",
            good.replacen("2026-11-25T19:40:05.100Z", "Nov 25", 1),
            "entry 5 (log.entries[5].startedDateTime): expected an ISO 8601 date",
        ),
    ];
    for (name, content, expected) in cases {
        let file = dir.join(name);
        std::fs::write(&file, content).unwrap();
        let out = belier()
            .args(["import", "har"])
            .arg(&file)
            .output()
            .unwrap();
        assert_exit(&out, 2);
        let said = text(&out.stderr);
        assert!(
            said.contains(name) && said.contains(expected),
            "{name}: {said}"
        );
    }
    let out = belier()
        .args(["import", "har", "/nonexistent/x.har"])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(text(&out.stderr).contains("/nonexistent/x.har: cannot read the HAR file"));
}

/// `file` is readable and writable by its owner only.
fn assert_private(file: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{}: {mode:o}", file.display());
}

/// The fuzzing's finds (a header name that is no token or 1,100 characters long, which made a
/// plan that did not read back: exit 1, "please report this") and CR/LF, which was copied into
/// the plan: refused with exit 2 at the HAR's entry and header, or the curl argument, and no
/// plan written.
#[test]
fn a_har_or_curl_command_a_plan_cannot_hold_exits_2_naming_where() {
    let dir = temp_dir("unholdable");
    let good = std::fs::read_to_string(fixture("login-flow.har")).unwrap();
    let accept = "\"name\": \"Accept\",\n              \"value\": \"text/html\"";
    assert!(good.contains(accept));
    let long = "X".repeat(1100);
    let cases = [
        (
            "name.har",
            accept.replace("Accept", "Accept Me"),
            "entry 0 (log.entries[0].request.headers[5].name): the header name `Accept Me` holds a space",
        ),
        (
            "long.har",
            accept.replace("Accept", &long),
            "entry 0 (log.entries[0].request.headers[5].name): the header name `XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX…` is 1100 characters long (at most 256)",
        ),
        (
            "crlf.har",
            accept.replace("text/html", "text/html\\r\\nX-Injected: 1"),
            "entry 0 (log.entries[0].request.headers[5].value): the value of header `Accept` holds a line break (CR, \\r)",
        ),
    ];
    for (name, replacement, expected) in cases {
        let file = dir.join(name);
        std::fs::write(&file, good.replacen(accept, &replacement, 1)).unwrap();
        let plan = dir.join(format!("{name}.yaml"));
        let out = belier()
            .args(["import", "har"])
            .arg(&file)
            .arg("--out")
            .arg(&plan)
            .output()
            .unwrap();
        assert_exit(&out, 2);
        let said = text(&out.stderr);
        assert!(
            said.contains(&format!("{}: {expected}", file.display())),
            "{name}: {said}"
        );
        assert!(!said.contains("please report"), "{said}");
        assert!(!plan.exists(), "{name}: no plan is written");
    }
    for (command, expected) in [
        (
            "curl http://h/ -H 'X-A: a\r\nX-Injected: 1'",
            "curl command: argument 2 (`-H` `X-A: a\\r\\nX-Injected: 1`): the value of header `X-A` holds a line break",
        ),
        (
            "curl http://h/ -H 'Content-Length: 100' -d hello",
            "curl command: argument 2 (`-H` `Content-Length: 100`): `Content-Length: 100` does not match the body, which is 5 bytes",
        ),
    ] {
        let plan = dir.join("curl.yaml");
        let out = belier()
            .args(["import", "curl", command, "--out"])
            .arg(&plan)
            .output()
            .unwrap();
        assert_exit(&out, 2);
        assert!(
            text(&out.stderr).contains(expected),
            "{command}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "no flags printed");
        assert!(!plan.exists());
    }
}

/// What the shop must see for one imported curl command: method, target, headers, body.
struct Expected<'a> {
    method: &'a str,
    target: &'a str,
    headers: &'a [(&'a str, &'a str)],
    body: &'a str,
}

#[test]
fn curl_commands_become_flags_and_plans_that_send_the_same_request() {
    let dir = temp_dir("curl");
    let order = dir.join("order.json");
    std::fs::write(&order, "{\"item\": 42,\n \"qty\": 2}\n").unwrap();
    let cases = [
        (
            r#"curl -X PUT 'http://shop.test:8080/api/echo/1?v=2' -H 'X-Trace: abc' -H 'Content-Type: application/json' --data-raw '{"a":1}'"#.to_string(),
            Expected {
                method: "PUT",
                target: "/api/echo/1?v=2",
                headers: &[("x-trace", "abc"), ("content-type", "application/json")],
                body: r#"{"a":1}"#,
            },
        ),
        (
            "curl -sS -G http://shop.test:8080/api/search -d q=lamp --data-urlencode 'sort=price desc' -u ann:pw -A belier-test/1 -e http://shop.test:8080/ -b 'k=v' -L".to_string(),
            Expected {
                method: "GET",
                target: "/api/search?q=lamp&sort=price+desc",
                headers: &[
                    ("authorization", "Basic YW5uOnB3"),
                    ("user-agent", "belier-test/1"),
                    ("referer", "http://shop.test:8080/"),
                    ("cookie", "k=v"),
                ],
                body: "",
            },
        ),
        (
            format!("curl --json @{} http://shop.test:8080/api/orders --compressed", order.display()),
            Expected {
                method: "POST",
                target: "/api/orders",
                headers: &[
                    ("content-type", "application/json"),
                    ("accept", "application/json"),
                    ("accept-encoding", "gzip, deflate, br, zstd"),
                ],
                body: "{\"item\": 42,\n \"qty\": 2}\n",
            },
        ),
    ];
    for (i, (command, expected)) in cases.iter().enumerate() {
        let plan = dir.join(format!("curl-{i}.yaml"));
        let out = belier()
            .args(["import", "curl", command, "--out"])
            .arg(&plan)
            .output()
            .unwrap();
        assert_exit(&out, 0);
        assert_private(&plan);
        let printed = text(&out.stdout);
        let words = shell_words::split(printed.trim()).unwrap();
        assert_eq!(words[0], "belier", "{printed}");
        // -L, -b and --compressed become belier's own flags.
        for (curl, ours) in [
            ("-L", "--follow 20"),
            ("-b", "--cookies"),
            ("--compressed", "--compressed"),
        ] {
            assert_eq!(
                command.contains(&format!(" {curl} ")) || command.ends_with(&format!(" {curl}")),
                printed.contains(ours),
                "{curl} → {ours}: {printed}"
            );
        }

        let shop = Shop::start();
        let flags_run = belier()
            .args(&words[1..])
            .args(["-n", "2", "-c", "1", "--connect-to", &shop.addr.to_string()])
            .output()
            .unwrap();
        assert_exit(&flags_run, 0);
        run_plan(&plan, &shop);
        let seen = shop.seen();
        assert_eq!(
            seen.len(),
            3,
            "{command}: two by the flags, one by the plan: {seen:?}"
        );
        for s in &seen {
            assert_eq!(
                (s.method.as_str(), s.target.as_str()),
                (expected.method, expected.target),
                "{command}"
            );
            for (name, value) in expected.headers {
                assert_eq!(s.header(name), Some(*value), "{command}: {name} in {s:?}");
            }
            assert_eq!(text(&s.body), expected.body, "{command}");
        }
    }
}

#[test]
fn a_bad_curl_command_exits_2_naming_the_option() {
    for (command, expected) in [
        (
            "curl --proxy-anyauth http://h/",
            "curl command: unknown curl option `--proxy-anyauth`",
        ),
        (
            "curl -d @/nonexistent/body http://h/",
            "cannot read the data file `/nonexistent/body`",
        ),
        ("curl 'http://h/", "cannot be split as a shell would"),
    ] {
        let out = belier().args(["import", "curl", command]).output().unwrap();
        assert_exit(&out, 2);
        assert!(
            text(&out.stderr).contains(expected),
            "{command}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty());
    }
}
