//! `--metrics-listen` (#16): the Prometheus page belier serves during and after a run holds
//! exactly what the report counts, a real Prometheus scraping it agrees, and a listener off the
//! loopback needs a token that scrapes must present.

use std::process::Command;
use std::time::{Duration, Instant};

use belier_testserver::{Config, Server};
use belier_testsupport::hostile;
use belier_testsupport::process;
use belier_testsupport::prometheus as prometheus_support;
use process::{free_port, Belier, BOUND};
use serde_json::Value;

belier_testsupport::binary!(BELIER);

/// A 3 s open loop at 100/s on one thread serving `/metrics` on `listen`, lingering 60 s
/// after it (Ctrl-C ends the linger), with `more` flags.
fn lingering_run(url: &str, listen: &str, more: &[&str]) -> Belier {
    let mut args = vec![
        url,
        "--rate",
        "100",
        "-z",
        "3s",
        "-t",
        "1",
        "--metrics-listen",
        listen,
        "--metrics-linger",
        "60s",
    ];
    args.extend_from_slice(more);
    BELIER.spawn(&args)
}

/// `GET url` with an optional Authorization header: status and body.
fn get(url: &str, authorization: Option<&str>) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.get(url);
    if let Some(a) = authorization {
        request = request.header("Authorization", a);
    }
    let mut response = request.call().expect("the exporter answers");
    let status = response.status().as_u16();
    (status, response.body_mut().read_to_string().unwrap())
}

/// The value of each sample whose series starts with `prefix`.
fn samples<'a>(text: &'a str, prefix: &'a str) -> impl Iterator<Item = (&'a str, f64)> + 'a {
    text.lines()
        .filter(move |l| l.starts_with(prefix))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            (series, value.parse().unwrap())
        })
}

#[test]
fn the_page_holds_what_the_report_counts() {
    let server = Server::start(Config::default()).unwrap();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut belier = BELIER.spawn(&[
        &server.url("/"),
        "-n",
        "500",
        "-c",
        "5",
        "--metrics-listen",
        &listen,
        "--metrics-linger",
        "3s",
        "--output",
        "json",
    ]);
    belier.wait_for("serving the final metrics");
    let (status, page) = get(&format!("http://{listen}/metrics"), None);
    let (code, stdout, stderr) = belier.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(status, 200, "{page}");
    let report: Value = serde_json::from_str(&stdout).expect("a JSON report");
    let requests = report["summary"]["requests"].as_u64().unwrap();
    assert_eq!(requests, 500);
    assert_eq!(server.counts().requests, 500);

    let total: f64 = samples(&page, "belier_requests_total{")
        .map(|(_, v)| v)
        .sum();
    assert_eq!(total, requests as f64, "{page}");
    let responses = report["summary"]["responses"].as_u64().unwrap() as f64;
    let d = "belier_request_duration_seconds";
    let count = samples(&page, &format!("{d}_count ")).next().unwrap().1;
    assert_eq!(count, responses, "{page}");
    let bucket = format!("{d}_bucket{{");
    let buckets: Vec<(&str, f64)> = samples(&page, &bucket).collect();
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{page}");
    let (last, last_count) = buckets.last().unwrap();
    assert!(last.ends_with("{le=\"+Inf\"}"), "{page}");
    assert_eq!(*last_count, count);
    let bytes_in = samples(&page, "belier_bytes_received_total ")
        .next()
        .unwrap()
        .1;
    assert_eq!(bytes_in, report["summary"]["bytes_in"].as_f64().unwrap());
    assert!(page.contains("belier_run_ended 1"), "{page}");
    assert!(
        page.contains("belier_run_info{url=\"http://127.0.0.1:"),
        "{page}"
    );
    server.stop();
}

#[test]
fn prometheus_scraping_belier_agrees_with_the_report() {
    let server = Server::start(Config::default()).unwrap();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let dir = std::env::temp_dir().join(format!("belier-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report_path = dir.join("report.json");
    let mut belier = lingering_run(
        &server.url("/"),
        &listen,
        &["--output", "json", "--out", report_path.to_str().unwrap()],
    );
    belier.wait_for("Prometheus metrics at");
    let Some(prometheus) = prometheus_support::Prometheus::start(&[listen.parse().unwrap()]) else {
        return;
    };
    // The report is written before the final figures linger.
    belier.wait_for("serving the final metrics");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let requests = report["summary"]["requests"].as_u64().unwrap();
    assert!(requests > 0);

    let query = format!(
        "{}/api/v1/query?query=sum(belier_requests_total)",
        prometheus.url()
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let scraped = loop {
        let (_, body) = get(&query, None);
        let doc: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let value = doc["data"]["result"][0]["value"][1]
            .as_str()
            .and_then(|v| v.parse::<f64>().ok());
        if value == Some(requests as f64) || Instant::now() > deadline {
            break value;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(scraped, Some(requests as f64), "the report says {requests}");

    // Ctrl-C ends the linger at once; the run itself was not interrupted.
    let asked = Instant::now();
    belier.interrupt();
    let (code, _, stderr) = belier.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(asked.elapsed() < Duration::from_secs(10), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
    server.stop();
}

#[test]
fn off_the_loopback_a_token_is_required_and_checked() {
    let server = Server::start(Config::default()).unwrap();
    let port = free_port();
    let (code, _, stderr) = BELIER
        .spawn(&[
            &server.url("/"),
            "-n",
            "10",
            "--metrics-listen",
            &format!("0.0.0.0:{port}"),
        ])
        .finish();
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--metrics-listen"), "{stderr}");
    assert!(stderr.contains("--metrics-token"), "{stderr}");
    assert_eq!(
        server.counts().requests,
        0,
        "refused before sending anything"
    );
    // A token from the environment will do, and stays out of the output too.
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args([
            &server.url("/"),
            "-n",
            "5",
            "-c",
            "1",
            "--metrics-linger",
            "0",
        ])
        .args(["--metrics-listen", &format!("0.0.0.0:{port}")])
        .env("BELIER_METRICS_TOKEN", "env-s3cret-of-20-chars")
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{printed}");
    assert!(!printed.contains("env-s3cret"), "{printed}");
    // Off the loopback, a token one could guess is refused before anything is sent.
    for (token, env) in [(Some("s3cret"), None), (None, Some("s3cret"))] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_belier"));
        command
            .args([&server.url("/"), "-n", "5"])
            .args(["--metrics-listen", &format!("0.0.0.0:{port}")])
            .args(token.map(|t| ["--metrics-token", t]).into_iter().flatten())
            .env_remove("BELIER_METRICS_TOKEN");
        if let Some(e) = env {
            command.env("BELIER_METRICS_TOKEN", e);
        }
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("'--metrics-token <TOKEN>'")
                && stderr.contains("at least 16 characters")
                && !stderr.contains("s3cret"),
            "{stderr}"
        );
    }
    assert_eq!(server.counts().requests, 5);

    let listen = format!("127.0.0.1:{port}");
    let secret = "s3cret-token";
    let mut belier = BELIER.spawn(&[
        &server.url("/"),
        "-n",
        "20",
        "-c",
        "2",
        "--metrics-listen",
        &listen,
        "--metrics-token",
        secret,
        "--metrics-linger",
        "30s",
    ]);
    belier.wait_for("serving the final metrics");
    let url = format!("http://{listen}/metrics");
    assert_eq!(get(&url, None).0, 401);
    assert_eq!(get(&url, Some("Bearer wrong")).0, 401);
    let (status, page) = get(&url, Some(&format!("Bearer {secret}")));
    assert_eq!(status, 200);
    assert!(
        page.contains("belier_requests_total{status=\"200\"} 20"),
        "{page}"
    );
    assert!(!page.contains(secret));
    belier.interrupt();
    let (code, stdout, stderr) = belier.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        !stdout.contains(secret) && !stderr.contains(secret),
        "{stdout}{stderr}"
    );
    server.stop();
}

#[test]
fn pages_of_other_sites_get_nothing_from_a_loopback_exporter() {
    let server = Server::start(Config::default()).unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut belier = lingering_run(&server.url("/"), &addr, &[]);
    belier.wait_for("serving the final metrics");
    // A page that rebound its name to 127.0.0.1 reads nothing.
    for name in hostile::rebound_hosts(port) {
        let reply = hostile::send(&addr, "GET", "/metrics", &[("Host", &name)], "");
        assert_eq!(reply.status, 403, "Host {name}: {}", reply.body);
        assert!(!reply.body.contains("belier_"), "{}", reply.body);
    }
    // A page's no-cors POST changes nothing and reads nothing: GET only.
    let post = hostile::page_post(&addr, "/metrics", &addr, "http://evil.example", "x");
    assert_eq!(post.status, 405, "{}", post.body);
    assert!(!post.body.contains("belier_"), "{}", post.body);
    // The loopback's own names read the page.
    for host in [
        addr.clone(),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        let reply = hostile::send(&addr, "GET", "/metrics", &[("Host", &host)], "");
        assert_eq!(reply.status, 200, "Host {host}");
        let requests: f64 = samples(&reply.body, "belier_requests_total{status=\"200\"}")
            .map(|(_, v)| v)
            .sum();
        assert_eq!(requests as u64, server.counts().requests, "Host {host}");
    }
    belier.interrupt();
    let (code, _, stderr) = belier.finish();
    assert_eq!(code, Some(0), "{stderr}");
    server.stop();
}

/// The Grafana dashboard in the repository, parsed.
fn dashboard() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../dashboards/grafana-belier.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("the dashboard is in the repo"))
        .expect("the dashboard is JSON")
}

/// Every PromQL expression of the dashboard, and the variables of each made concrete as
/// Grafana makes them: all instances, a rate interval of several scrapes.
fn dashboard_queries(doc: &Value) -> Vec<(String, String)> {
    doc["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter())
        .map(|t| {
            let expr = t["expr"].as_str().expect("every target has an expression");
            let concrete = expr
                .replace("$__rate_interval", "15s")
                .replace("$instance", ".*");
            (expr.to_string(), concrete)
        })
        .collect()
}

/// The metric names a `/metrics` page defines (a histogram's series included).
fn exported_names(page: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for line in page.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let (name, kind) = rest.split_once(' ').unwrap();
        names.insert(name.to_string());
        if kind == "histogram" {
            for suffix in ["_bucket", "_sum", "_count"] {
                names.insert(format!("{name}{suffix}"));
            }
        }
    }
    names
}

#[test]
fn the_grafana_dashboard_imports_as_it_is_and_queries_what_belier_exports() {
    let doc = dashboard();
    // Importable as it is: the data source is an input the import asks for.
    assert_eq!(doc["__inputs"][0]["name"], "DS_PROMETHEUS");
    assert_eq!(doc["__inputs"][0]["pluginId"], "prometheus");
    let panels = doc["panels"].as_array().unwrap();
    let mut ids: Vec<u64> = panels.iter().map(|p| p["id"].as_u64().unwrap()).collect();
    ids.dedup();
    assert_eq!(ids.len(), panels.len(), "panel ids are unique");
    for p in panels {
        assert_eq!(p["datasource"]["uid"], "${DS_PROMETHEUS}", "{}", p["title"]);
        for t in p["targets"].as_array().unwrap() {
            assert_eq!(t["datasource"]["uid"], "${DS_PROMETHEUS}", "{}", p["title"]);
        }
    }
    let queries = dashboard_queries(&doc);
    let all: String = queries.iter().map(|(e, _)| e.as_str()).collect();
    for wanted in [
        "histogram_quantile(0.5,",
        "histogram_quantile(0.9,",
        "histogram_quantile(0.99,",
        "belier_target_rate",
        "belier_in_flight",
        "sum by (status)",
        "sum by (error)",
    ] {
        assert!(all.contains(wanted), "the dashboard shows {wanted}");
    }

    // The names the exporter really serves, from a run's page.
    let server = Server::start(Config::default()).unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let mut belier = lingering_run(&server.url("/?delay=2ms"), &listen, &[]);
    belier.wait_for("Prometheus metrics at");
    // The open loop's target rate shows from the first settled interval on.
    let deadline = Instant::now() + BOUND;
    let page = loop {
        let (status, page) = get(&format!("http://{listen}/metrics"), None);
        assert_eq!(status, 200);
        if page.contains("# TYPE belier_target_rate") || Instant::now() > deadline {
            break page;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let exported = exported_names(&page);
    assert!(
        exported.contains("belier_request_duration_seconds_bucket"),
        "{page}"
    );
    for (expr, _) in &queries {
        for (i, _) in expr.match_indices("belier_") {
            let name: String = expr[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            assert!(
                exported.contains(&name),
                "{name} in `{expr}` is not exported: {exported:?}"
            );
        }
    }

    // Each expression parses and runs in a real Prometheus scraping that run.
    let Some(prometheus) = prometheus_support::Prometheus::start(&[listen.parse().unwrap()]) else {
        return;
    };
    belier.wait_for("serving the final metrics");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(false)
        .build()
        .into();
    let query = |promql: &str| -> Value {
        let mut response = agent
            .get(format!("{}/api/v1/query", prometheus.url()))
            .query("query", promql)
            .call()
            .expect("prometheus answers");
        serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap()
    };
    // A broken expression is an error, so the check below can fail.
    assert_eq!(
        query("sum(rate(belier_requests_total[15s])")["status"],
        "error"
    );
    let deadline = Instant::now() + BOUND;
    for (expr, concrete) in &queries {
        loop {
            let answer = query(concrete);
            assert_eq!(answer["status"], "success", "`{expr}`: {answer}");
            // Rates need two scrapes of the run: wait for the run's figures to show, except
            // where a run without errors or drops rightly has none.
            let quiet = expr.contains("> 0");
            if quiet
                || answer["data"]["result"]
                    .as_array()
                    .is_some_and(|r| !r.is_empty())
            {
                break;
            }
            assert!(Instant::now() < deadline, "`{expr}` has no data: {answer}");
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    belier.interrupt();
    let (code, _, stderr) = belier.finish();
    assert_eq!(code, Some(0), "{stderr}");
    server.stop();
}
