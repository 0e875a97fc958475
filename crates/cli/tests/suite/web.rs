//! The web console (#15): headless Chromium (over chromedriver) opens `belier web`, starts a
//! run against the built-in target from the form at 200/s, sees the charts' numbers move, raises
//! the rate to 400/s and stops; the target's own arrivals show both rates and the results file
//! holds the change. Then the safety rules over plain HTTP: no token off the loopback, 401
//! without the token, 403 from another origin; and `--web` on a flag run offering its report
//! and results file. And the hostile client (a page of another site, or one that rebinds its
//! name to 127.0.0.1) refused by both kinds of console, steering above what the flags accept
//! refused while the run goes on, the page showing the failed share of a run of 400s, and the
//! slowest requests of a traced run with the trace ids the server received, and an HTTP/3
//! run's QUIC figures.

use std::path::Path;
use std::time::{Duration, Instant};

use belier_testserver::{Behaviour, Config, Server};
use belier_testsupport::hostile;
use belier_testsupport::temp_dir;
use belier_testsupport::webdriver;
use belier_testsupport::{free_port, Belier};
use serde_json::Value;
use webdriver::Browser;

belier_testsupport::binary!(BELIER);

/// Longest the page may take to show something (a debug build on a busy machine).
const WAIT: Duration = Duration::from_secs(30);

/// A request to the console: status, headers we look at, body.
struct Answer {
    status: u16,
    set_cookie: Option<String>,
    body: String,
}

fn request(method: &str, url: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(10)))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let mut response = if method == "GET" {
        let mut r = agent.get(url);
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        r.call()
    } else {
        let mut r = agent.post(url);
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        r.send(body.to_string())
    }
    .expect("the console answers");
    Answer {
        status: response.status().as_u16(),
        set_cookie: response
            .headers()
            .get("set-cookie")
            .map(|v| v.to_str().unwrap().to_string()),
        body: response.body_mut().read_to_string().unwrap(),
    }
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The number shown in `css`, if any.
fn number(browser: &Browser, css: &str) -> Option<f64> {
    browser.text(css).trim().parse().ok()
}

/// The page's figures are those of the latest interval the API holds. (How near each interval
/// comes to the rate set is for the target's own count to say, over seconds: one interval of a
/// busy debug build may run late and the next catch up.)
fn shows_the_latest_interval(browser: &Browser, console: &str) {
    for _ in 0..10 {
        let n = number(browser, "#interval-count").unwrap_or(0.0) as usize;
        let rate = browser.text("#rate-now");
        let p99 = browser.text("#p99-now");
        if n == 0 || number(browser, "#interval-count") != Some(n as f64) {
            continue; // an interval came in between
        }
        let run = json(&request("GET", &format!("{console}/api/run"), &[], "").body);
        let interval = &run["intervals"][n - 1];
        assert_eq!(rate, format!("{:.1}", interval["rate"].as_f64().unwrap()));
        assert_eq!(p99, format!("{:.2}", interval["p99_ms"].as_f64().unwrap()));
        return;
    }
    panic!("the page's interval count never held still");
}

#[test]
fn a_browser_starts_steers_and_stops_a_run_from_the_form() {
    let Some(browser) = Browser::start("web") else {
        return;
    };
    let target = Server::start(Config {
        record_requests: 50_000,
        ..Config::default()
    })
    .unwrap();
    let dir = temp_dir("browser");
    let port = free_port();
    let mut belier = BELIER.spawn_in(&dir, &["web", "--listen", &format!("127.0.0.1:{port}")]);
    belier.wait_for("web console at");
    let console = format!("http://127.0.0.1:{port}");

    browser.goto(&format!("{console}/"));
    browser.wait_until("the form", WAIT, |b| {
        b.script("return !document.getElementById('new-run').hidden;", &[]) == true
    });
    browser.type_into("#f-url", &target.url("/"));
    browser.script("document.getElementById('f-model').value = 'open';", &[]);
    browser.type_into("#f-rate", "200");
    browser.type_into("#f-duration", "60s");
    browser.click("#start");

    // The figures and the charts move from one interval to the next.
    let intervals = |b: &Browser| number(b, "#interval-count").unwrap_or(0.0) as u64;
    let chart = |b: &Browser| {
        b.script(
            "return [...document.querySelectorAll('#chart-rate polyline, #chart-latency polyline')]\
             .map(p => p.getAttribute('points')).join('|');",
            &[],
        )
        .as_str()
        .unwrap_or_default()
        .to_string()
    };
    browser.wait_until("a first interval", WAIT, |b| intervals(b) >= 1);
    let first = (intervals(&browser), chart(&browser));
    browser.wait_until("two more intervals", WAIT, |b| intervals(b) >= first.0 + 2);
    let later = (intervals(&browser), chart(&browser));
    assert_ne!(first.1, later.1, "the charts did not change");
    assert!(!later.1.is_empty());
    shows_the_latest_interval(&browser, &console);
    assert_eq!(number(&browser, "#target-now"), Some(200.0));

    // Raise the rate to 400/s with the level field.
    browser.type_into("#level", "400");
    browser.click("#set");
    let raised_at = intervals(&browser);
    browser.wait_until("the target at 400/s", WAIT, |b| {
        number(b, "#target-now") == Some(400.0) && intervals(b) >= raised_at + 2
    });
    browser.wait_until("two full intervals at 400/s", WAIT, |b| {
        intervals(b) >= raised_at + 4
    });
    shows_the_latest_interval(&browser, &console);
    let markers = browser.script(
        "return document.querySelectorAll('#chart-rate line.change, #chart-latency line.change')\
         .length;",
        &[],
    );
    assert_eq!(markers, 2, "the change is marked on both charts");
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-console.png");
    browser.screenshot(&shot);
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 10_000,
        "{}",
        shot.display()
    );

    browser.click("#stop");
    browser.wait_until("the run ended", WAIT, |b| b.text("#state") == "ended");
    browser.wait_until("the report link", WAIT, |b| {
        b.script("return !document.getElementById('links').hidden;", &[]) == true
    });
    let report = browser.script("return document.getElementById('report-link').href;", &[]);
    let report = request("GET", report.as_str().unwrap(), &[], "");
    assert_eq!(report.status, 200);
    assert!(report.body.contains("<svg"), "an HTML report with charts");

    // The results file the page links to is the run's, and holds the change.
    let results = request("GET", &format!("{console}/runs/1/results.jsonl"), &[], "");
    assert_eq!(results.status, 200);
    let on_disk = std::fs::read_to_string(dir.join("belier-runs/run-1/results.jsonl")).unwrap();
    assert_eq!(results.body, on_disk);
    let lines: Vec<Value> = on_disk.lines().map(json).collect();
    let changes: Vec<&Value> = lines.iter().filter_map(|l| l.get("change")).collect();
    assert_eq!(changes.len(), 1, "{changes:?}");
    let change = changes[0];
    assert_eq!(change["what"], "rate");
    assert_eq!(change["level"], 400.0);
    assert_eq!(change["from"], 200.0);
    let at_s = change["at_s"].as_f64().unwrap();

    // The target's own arrivals: 2 s before the change at 200/s, 2 s after it at 400/s.
    let run = json(&request("GET", &format!("{console}/api/run"), &[], "").body);
    let sent = run["totals"]["requests"].as_u64().unwrap();
    assert_eq!(
        target.counts().requests,
        sent,
        "the target saw what belier counted"
    );
    let seen = target.recent_requests();
    assert_eq!(seen.len() as u64, sent);
    let start = seen[0].arrived;
    let count = |from: f64, to: f64| {
        seen.iter()
            .filter(|r| {
                let t = r.arrived.duration_since(start).as_secs_f64();
                t >= from && t < to
            })
            .count() as f64
    };
    let before = count(at_s - 2.0, at_s);
    let after = count(at_s + 0.5, at_s + 2.5);
    assert!(
        (before - 400.0).abs() <= 12.0,
        "{before} requests in the 2 s before the change"
    );
    assert!(
        (after - 800.0).abs() <= 24.0,
        "{after} requests in 2 s after the change"
    );

    belier.interrupt();
    let (code, _, stderr) = belier.finish();
    assert_eq!(code, Some(0), "Ctrl-C ends belier web: {stderr}");
}

/// Runs belier with `args` (and `BELIER_WEB_TOKEN` set to `env_token`, or unset): it must
/// exit 2 before anything else, printing nothing on stdout; its stderr.
fn refused_at_start(args: &[&str], env_token: Option<&str>) -> String {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_belier"));
    command.args(args).env_remove("BELIER_WEB_TOKEN");
    if let Some(t) = env_token {
        command.env("BELIER_WEB_TOKEN", t);
    }
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty());
    stderr
}

#[test]
fn off_the_loopback_a_token_is_required() {
    for args in [
        &["--web=0.0.0.0:5665", "http://127.0.0.1:1/", "-n", "1"][..],
        &["web", "--listen", "0.0.0.0:5665"],
    ] {
        let stderr = refused_at_start(args, None);
        assert!(
            stderr.contains("not a loopback address") && stderr.contains("token"),
            "{stderr}"
        );
    }
}

#[test]
fn off_the_loopback_a_short_token_is_refused_at_start() {
    let web_run = [
        "--web=0.0.0.0:5665",
        "--web-token",
        "s3cret-15-chars",
        "http://127.0.0.1:1/",
        "-n",
        "1",
    ];
    let console = ["web", "--listen", "0.0.0.0:5665", "--token", "s3cret"];
    for (args, env_token, flag) in [
        (&web_run[..], None, "'--web-token <TOKEN>'"),
        (&console[..], None, "'--token <TOKEN>'"),
        // The environment's token is held to the same rule.
        (&console[..3], Some("s3cret"), "'--token <TOKEN>'"),
    ] {
        let stderr = refused_at_start(args, env_token);
        assert!(
            stderr.contains(flag) && stderr.contains("at least 16 characters"),
            "{stderr}"
        );
        assert!(
            !stderr.contains("s3cret"),
            "the token is not shown: {stderr}"
        );
    }
}

#[test]
fn every_call_needs_the_token_and_control_refuses_other_origins() {
    let port = free_port();
    let dir = temp_dir("token");
    let mut belier = BELIER.spawn_in(
        &dir,
        &[
            "web",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--token",
            "generate",
        ],
    );
    let line = belier.wait_for("web console at");
    let token = line
        .rsplit_once("?token=")
        .expect("the token printed")
        .1
        .to_string();
    assert_eq!(token.len(), 64, "{line}");
    let console = format!("http://127.0.0.1:{port}");
    let bearer = format!("Bearer {token}");
    let auth = [("Authorization", bearer.as_str())];

    for path in ["/", "/api/run", "/api/runs", "/api/stream", "/console.js"] {
        let a = request("GET", &format!("{console}{path}"), &[], "");
        assert_eq!(a.status, 401, "GET {path} without the token");
    }
    let wrong = request(
        "GET",
        &format!("{console}/api/run"),
        &[("Authorization", "Bearer nope")],
        "",
    );
    assert_eq!(wrong.status, 401);
    for path in ["/api/run/pause", "/api/run/stop", "/api/runs"] {
        let a = request("POST", &format!("{console}{path}"), &[], "{}");
        assert_eq!(a.status, 401, "POST {path} without the token");
    }
    assert_eq!(
        request("GET", &format!("{console}/api/run"), &auth, "").body,
        "null"
    );

    // Opening the page once with ?token= sets a cookie that then opens everything.
    let opened = request("GET", &format!("{console}/?token={token}"), &[], "");
    assert_eq!(opened.status, 303);
    let cookie = opened.set_cookie.expect("a cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    // Named by the port: a console on another port of 127.0.0.1 neither reads nor overwrites it.
    assert!(
        cookie.starts_with(&format!("belier_console_{port}={token};")),
        "{cookie}"
    );
    let unported = format!("belier_console={token}");
    let other_port = format!("belier_console_{}={token}", port.wrapping_add(1));
    for stale in [unported.as_str(), other_port.as_str()] {
        let a = request(
            "GET",
            &format!("{console}/api/run"),
            &[("Cookie", stale)],
            "",
        );
        assert_eq!(a.status, 401, "{stale}");
    }
    let cookie = cookie.split(';').next().unwrap().to_string();
    let page = request("GET", &format!("{console}/"), &[("Cookie", &cookie)], "");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("/console.js") && !page.body.contains("://cdn"));

    // Control from another origin: 403 even with the token; the console's own origin passes
    // the check (and finds no run to pause: 409).
    let own = format!("http://127.0.0.1:{port}");
    for (origin, status) in [("http://evil.example", 403), (own.as_str(), 409)] {
        let a = request(
            "POST",
            &format!("{console}/api/run/pause"),
            &[("Cookie", &cookie), ("Origin", origin)],
            "",
        );
        assert_eq!(a.status, status, "{origin}: {}", a.body);
    }
    let a = request(
        "POST",
        &format!("{console}/api/runs"),
        &[("Cookie", &cookie), ("Sec-Fetch-Site", "cross-site")],
        "{}",
    );
    assert_eq!(a.status, 403);
    // Control is POST only.
    let a = request("GET", &format!("{console}/api/run/stop"), &auth, "");
    assert_eq!(a.status, 405);
    // No file outside the console's runs: unknown runs and paths are 404.
    for path in [
        "/runs/1/report.html",
        "/runs/1/results.jsonl",
        "/runs/..%2f..%2fetc/passwd",
    ] {
        let a = request("GET", &format!("{console}{path}"), &auth, "");
        assert_eq!(a.status, 404, "{path}");
    }
    // A form value gets the flag's validation and words.
    let a = request(
        "POST",
        &format!("{console}/api/runs"),
        &auth,
        r#"{"url": "http://127.0.0.1:1/", "connections": "0"}"#,
    );
    assert_eq!(a.status, 400);
    assert!(a.body.contains("'--connections <N>'"), "{}", a.body);

    belier.interrupt();
    let (code, _, stderr) = belier.finish();
    assert_eq!(code, Some(0), "Ctrl-C ends belier web: {stderr}");
    assert_eq!(
        stderr.matches(&token).count(),
        1,
        "the token is printed once: {stderr}"
    );
}

/// Most a steering that was refused may add to belier's memory: a level of 1e9 it took would
/// add gigabytes.
const RSS_SLACK_KIB: u64 = 64 * 1024;

/// The console answered in a way no page of another site may frame.
fn frameless(reply: &hostile::Reply) {
    assert_eq!(
        reply.header("content-security-policy"),
        Some("frame-ancestors 'none'"),
        "{:?}",
        reply.headers
    );
    assert_eq!(reply.header("x-frame-options"), Some("DENY"));
}

/// The hostile client against a tokenless console at `addr` (`127.0.0.1:PORT`): a page of
/// another site posting `text/plain` to `control` (no CORS preflight announces it), and a page
/// that rebound its own name to 127.0.0.1 (same-origin to itself, so only its `Host` gives it
/// away) reading or steering. Every refusal, and the console's own page, cannot be framed.
fn hostile_pages_are_refused(addr: &str, control: &str) {
    let port = addr.rsplit_once(':').unwrap().1;
    let foreign = hostile::page_post(addr, control, addr, "http://evil.example", "{}");
    assert_eq!(foreign.status, 403, "POST {control}: {}", foreign.body);
    frameless(&foreign);
    for name in hostile::rebound_hosts(port.parse().unwrap()) {
        let origin = format!("http://{name}");
        let post = hostile::page_post(addr, control, &name, &origin, r#"{"rate": 1}"#);
        assert_eq!(
            post.status, 403,
            "POST {control} with Host {name}: {}",
            post.body
        );
        for path in ["/api/run", "/"] {
            let get = hostile::send(addr, "GET", path, &[("Host", &name)], "");
            assert_eq!(get.status, 403, "GET {path} with Host {name}: {}", get.body);
            frameless(&get);
        }
    }
    let nameless = hostile::send(addr, "GET", "/api/run", &[], "");
    assert!(nameless.status >= 400, "no Host: {}", nameless.status);
    for host in [addr.to_string(), format!("localhost:{port}")] {
        let page = hostile::send(addr, "GET", "/", &[("Host", &host)], "");
        assert_eq!(page.status, 200, "Host {host}");
        frameless(&page);
    }
}

/// Asks the console at `console` for a level (`body` to `path`) beyond what the run's flags
/// accept: a 400, and belier's memory has not grown; the refusal's words.
fn refused_level(belier: &Belier, console: &str, path: &str, body: &str) -> String {
    let before = belier.rss_kib();
    let refused = request("POST", &format!("{console}{path}"), &[], body);
    assert_eq!(refused.status, 400, "{body}: {}", refused.body);
    std::thread::sleep(Duration::from_millis(500));
    let after = belier.rss_kib();
    assert!(
        after < before + RSS_SLACK_KIB,
        "RSS {before} KiB before the refused level, {after} KiB after"
    );
    refused.body
}

/// Waits for the console's run to have settled an interval, and returns the run.
fn running(console: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let run = json(&request("GET", &format!("{console}/api/run"), &[], "").body);
        if run["intervals"].as_array().is_some_and(|i| !i.is_empty()) {
            return run;
        }
        assert!(Instant::now() < deadline, "no interval: {run}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn hostile_pages_and_levels_beyond_the_flags_leave_a_web_run_alone() {
    let target = Server::start(Config::default()).unwrap();
    let port = free_port();
    let mut belier = BELIER.spawn(&[
        &target.url("/"),
        "--rate",
        "100",
        "-n",
        "400",
        "-t",
        "1",
        &format!("--web=127.0.0.1:{port}"),
        "--web-linger",
        "60s",
    ]);
    belier.wait_for("web console at");
    let addr = format!("127.0.0.1:{port}");
    let console = format!("http://{addr}");
    hostile_pages_are_refused(&addr, "/api/run/stop");

    running(&console);
    let refused = refused_level(&belier, &console, "/api/run/rate", r#"{"rate": 1e12}"#);
    assert!(
        refused.contains("1000000000000 is above this run's limit of 10000000")
            && refused.contains("--rate"),
        "{refused}"
    );

    // The run went on at its own rate and ended as asked, every request seen by the target.
    let run = wait_until_ended(&console);
    assert_eq!(run["interrupted"], false, "{run}");
    assert_eq!(run["steering"]["changes"], 0, "{run}");
    assert_eq!(run["totals"]["requests"], 400);
    assert_eq!(target.counts().requests, 400);
    belier.wait_for("offers the report");
    belier.interrupt();
    let (code, _, stderr) = belier.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn the_page_shows_the_failed_share_of_a_run_of_400s() {
    let Some(browser) = Browser::start("web-failed") else {
        return;
    };
    let target = Server::start(Config {
        defaults: Behaviour {
            status: 400,
            ..Behaviour::default()
        },
        ..Config::default()
    })
    .unwrap();
    let port = free_port();
    let mut belier = BELIER.spawn(&[
        &target.url("/"),
        "-n",
        "50",
        "-c",
        "2",
        &format!("--web=127.0.0.1:{port}"),
        "--web-linger",
        "60s",
    ]);
    belier.wait_for("web console at");
    browser.goto(&format!("http://127.0.0.1:{port}/"));
    browser.wait_until("the run ended", WAIT, |b| b.text("#state") == "ended");
    browser.wait_until("the totals", WAIT, |b| b.text("#requests-now") == "50");
    // What a person sees: no error (every response came back whole), none succeeded, all
    // failed, as the text report says.
    assert_eq!(browser.text("#errors-now"), "0");
    assert_eq!(browser.text("#success-now"), "0.00 %");
    assert_eq!(browser.text("#failed-now"), "50");
    assert_eq!(browser.text("#failed-share"), "failed (4xx/5xx) · 100.0 %");
    assert_eq!(target.counts().requests, 50);
    belier.wait_for("offers the report");
    belier.interrupt();
    let (code, stdout, stderr) = belier.finish();
    assert_eq!(code, Some(0), "{stderr}");
    for line in ["0.00 % success", "Errors                   0"] {
        assert!(
            stdout.contains(line),
            "{line:?} not in the text report:\n{stdout}"
        );
    }
}

/// `belier ARGS --web` on a free port of 127.0.0.1, its page open in `browser` until the run
/// has ended and the page's totals show `requests`: the running belier (lingering) and the
/// console's address.
fn watched_run(browser: &Browser, args: &[&str], requests: &str) -> (Belier, String) {
    let port = free_port();
    let web = format!("--web=127.0.0.1:{port}");
    let mut all = args.to_vec();
    all.extend([web.as_str(), "--web-linger", "60s"]);
    let mut belier = BELIER.spawn(&all);
    belier.wait_for("web console at");
    let console = format!("http://127.0.0.1:{port}");
    browser.goto(&format!("{console}/"));
    browser.wait_until("the run ended", WAIT, |b| b.text("#state") == "ended");
    browser.wait_until("the totals", WAIT, |b| b.text("#requests-now") == requests);
    (belier, console)
}

#[test]
fn the_page_lists_the_slowest_requests_with_the_traces_the_server_received() {
    let Some(browser) = Browser::start("web-slowest") else {
        return;
    };
    let target = Server::start(Config {
        record_requests: 1000,
        ..Config::default()
    })
    .unwrap();
    let url = target.url("/?delay=1ms");
    let args = [&url, "-n", "50", "-c", "2", "--trace-sample", "100%"];
    let (belier, console) = watched_run(&browser, &args, "50");
    // What a person sees: the five slowest, slowest first, each with its trace id, which is
    // one the server received in a traceparent header.
    let run = json(&request("GET", &format!("{console}/api/run"), &[], "").body);
    let slowest = run["totals"]["slowest"].as_array().expect("the slowest");
    assert_eq!(slowest.len(), 5, "{slowest:?}");
    let received: Vec<String> = target
        .recent_requests()
        .iter()
        .flat_map(|r| r.headers.iter())
        .filter(|(n, _)| n.eq_ignore_ascii_case("traceparent"))
        .map(|(_, v)| v.clone())
        .collect();
    assert_eq!(received.len(), 50);
    for (row, e) in slowest.iter().enumerate() {
        let cell = |n: usize| {
            browser.text(&format!(
                "#slowest tbody tr:nth-child({}) td:nth-child({n})",
                row + 1
            ))
        };
        let trace = e["trace_id"].as_str().unwrap();
        assert_eq!(cell(4), trace);
        assert_eq!(
            cell(1),
            format!("{:.2} ms", e["latency_ms"].as_f64().unwrap())
        );
        assert_eq!(cell(2), "200");
        assert!(cell(3).ends_with(" UTC"), "{}", cell(3));
        assert!(
            received.iter().any(|tp| tp.contains(trace)),
            "{trace} was not sent"
        );
    }
    belier.interrupt();
    let (code, _, stderr) = belier.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn the_page_shows_an_http3_runs_quic_figures() {
    let Some(browser) = Browser::start("web-quic") else {
        return;
    };
    let (tls, _) = belier_testserver::TlsConfig::self_signed(&["127.0.0.1"]);
    let target = Server::start(Config {
        tls: Some(tls),
        http3: true,
        ..Config::default()
    })
    .unwrap();
    let url = target.url("/");
    let args = [
        &url,
        "--http3",
        "-k",
        "-n",
        "200",
        "-c",
        "4",
        "--max-streams",
        "2",
        "-t",
        "1",
    ];
    let (belier, console) = watched_run(&browser, &args, "200");
    // What a person sees: the QUIC table, its two connections' handshakes and the datagrams
    // they carried, as the run's totals have them.
    let run = json(&request("GET", &format!("{console}/api/run"), &[], "").body);
    let quic = &run["totals"]["quic"];
    assert_eq!(quic["handshakes"], 2, "{quic}");
    let cell = |row: usize, n: usize| {
        browser.text(&format!(
            "#quic tbody tr:nth-child({row}) td:nth-child({n})"
        ))
    };
    assert_eq!((cell(1, 1), cell(1, 2)), ("handshakes".into(), "2".into()));
    assert_eq!(cell(2, 1), "datagrams sent");
    assert_eq!(cell(2, 2), quic["datagrams_sent"].to_string());
    assert_eq!(
        cell(4, 2),
        format!("{} of {}", quic["packets_lost"], quic["packets_sent"])
    );
    belier.interrupt();
    let (code, _, stderr) = belier.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(target.counts().requests, 200);
}

#[test]
fn a_web_run_offers_its_report_and_results_at_the_end() {
    let target = Server::start(Config::default()).unwrap();
    let dir = temp_dir("flags");
    let save = dir.join("run.jsonl");
    let port = free_port();
    let mut belier = BELIER.spawn(&[
        &target.url("/"),
        "--rate",
        "100",
        "-n",
        "150",
        &format!("--web=127.0.0.1:{port}"),
        "--web-linger",
        "60s",
        "--save",
        save.to_str().unwrap(),
    ]);
    belier.wait_for("web console at");
    let console = format!("http://127.0.0.1:{port}");
    let run = wait_until_ended(&console);
    assert_eq!(run["totals"]["requests"], 150);
    assert_eq!(target.counts().requests, 150);
    let report = request(
        "GET",
        &format!("{console}{}", run["report"].as_str().unwrap()),
        &[],
        "",
    );
    assert_eq!(report.status, 200);
    assert!(report.body.contains("150"));
    let results = request(
        "GET",
        &format!("{console}{}", run["results"].as_str().unwrap()),
        &[],
        "",
    );
    assert_eq!(results.body, std::fs::read_to_string(&save).unwrap());
    // A console that only watches starts no run.
    let a = request("POST", &format!("{console}/api/runs"), &[], "{}");
    assert_eq!(a.status, 404);
    belier.wait_for("offers the report");
    belier.interrupt();
    let (code, stdout, stderr) = belier.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("150"),
        "the report is printed as usual: {stdout}"
    );
}

#[test]
fn belier_web_runs_a_plan_of_its_directory_and_steers_its_users() {
    let target = Server::start(Config::default()).unwrap();
    let dir = temp_dir("plan");
    std::fs::write(
        dir.join("visit.yaml"),
        format!(
            "target: {}\nload:\n  vus: 1\n  duration: 1m\nscenarios:\n  - name: visitor\n    \
             steps:\n      - name: home\n        get: /\n      - pause: 50ms\n",
            target.url("")
        ),
    )
    .unwrap();
    let port = free_port();
    let mut belier = BELIER.spawn_in(&dir, &["web", "--listen", &format!("127.0.0.1:{port}")]);
    belier.wait_for("web console at");
    let addr = format!("127.0.0.1:{port}");
    hostile_pages_are_refused(&addr, "/api/runs");
    let console = format!("http://{addr}");
    let call = |method: &str, path: &str, body: &str| {
        request(method, &format!("{console}{path}"), &[], body)
    };
    let offered = json(&call("GET", "/api/console", "").body);
    assert_eq!(offered["plans"], serde_json::json!(["visit.yaml"]));
    let started = call(
        "POST",
        "/api/runs",
        r#"{"plan": "visit.yaml", "connections": "2", "duration": "30s"}"#,
    );
    assert_eq!(started.status, 202, "{}", started.body);
    let again = call("POST", "/api/runs", r#"{"plan": "visit.yaml"}"#);
    assert_eq!(again.status, 409, "one run at a time");
    let intervals = || {
        json(&call("GET", "/api/run", "").body)["intervals"]
            .as_array()
            .map_or(0, Vec::len)
    };
    let deadline = Instant::now() + WAIT;
    while intervals() < 2 {
        assert!(Instant::now() < deadline, "no intervals");
        std::thread::sleep(Duration::from_millis(100));
    }
    let wrong = call("POST", "/api/run/rate", r#"{"rate": 10}"#);
    assert_eq!(wrong.status, 409);
    assert!(wrong.body.contains("/api/run/users"), "{}", wrong.body);
    let fraction = call("POST", "/api/run/users", r#"{"users": 2.5}"#);
    assert_eq!(fraction.status, 400, "{}", fraction.body);
    // More users than `--vus` or the open-file limit would let the run start with: refused,
    // named, and nothing grows.
    let huge = refused_level(&belier, &console, "/api/run/users", r#"{"users": 1e9}"#);
    assert!(
        huge.contains("1000000000 is above this run's limit of")
            && (huge.contains("open-file limit") || huge.contains("--vus")),
        "{huge}"
    );
    let raised = call("POST", "/api/run/users", r#"{"users": 4}"#);
    assert_eq!(raised.status, 200, "{}", raised.body);
    assert_eq!(json(&raised.body)["level"], 4.0);
    assert_eq!(json(&raised.body)["unit"], "users");
    let raised_at = intervals();
    while intervals() < raised_at + 2 {
        assert!(
            Instant::now() < deadline + WAIT,
            "no intervals after the change"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(call("POST", "/api/run/stop", "").status, 200);
    let run = loop {
        let run = json(&call("GET", "/api/run", "").body);
        if run["state"] == "ended" {
            break run;
        }
        assert!(Instant::now() < deadline + 2 * WAIT, "the run did not end");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(run["interrupted"], true);
    assert_eq!(run["settings"]["plan"], "visit.yaml");
    let steps = &run["totals"]["steps"];
    assert_eq!(steps[0]["step"], "home", "{steps}");
    assert_eq!(steps[0]["requests"], run["totals"]["requests"]);
    assert_eq!(
        target.counts().requests,
        run["totals"]["requests"].as_u64().unwrap()
    );
    let results = std::fs::read_to_string(dir.join("belier-runs/run-1/results.jsonl")).unwrap();
    let change = results
        .lines()
        .map(json)
        .find_map(|l| l.get("change").cloned())
        .expect("the change in the results file");
    assert_eq!(
        (&change["what"], &change["level"], &change["from"]),
        (&"users".into(), &4.0.into(), &2.0.into())
    );
    let past = json(&call("GET", "/api/runs", "").body);
    assert_eq!(past.as_array().unwrap().len(), 1);
    assert_eq!(past[0]["report"], "/runs/1/report.html");
    belier.interrupt();
    let (code, _, stderr) = belier.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

/// The console's `/api/run` once its run has ended (within [`WAIT`]).
fn wait_until_ended(console: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let run = json(&request("GET", &format!("{console}/api/run"), &[], "").body);
        if run["state"] == "ended" {
            return run;
        }
        assert!(Instant::now() < deadline, "the run did not end: {run}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
