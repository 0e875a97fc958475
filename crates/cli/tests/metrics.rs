//! `--metrics-listen` (#16): the Prometheus page belier serves during and after a run holds
//! exactly what the report counts, a real Prometheus scraping it agrees, and a listener off the
//! loopback needs a token that scrapes must present.

#[path = "support/process.rs"]
mod process;
#[path = "support/prometheus.rs"]
mod prometheus_support;

use std::process::Command;
use std::time::{Duration, Instant};

use belier_testserver::{Config, Server};
use process::{free_port, Belier};
use serde_json::Value;

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
    let mut belier = Belier::spawn(&[
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
    let mut belier = Belier::spawn(&[
        &server.url("/"),
        "--rate",
        "100",
        "-z",
        "3s",
        "-t",
        "1",
        "--metrics-listen",
        &listen,
        "--metrics-linger",
        "60s",
        "--output",
        "json",
        "--out",
        report_path.to_str().unwrap(),
    ]);
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
    let (code, _, stderr) = Belier::spawn(&[
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
        .env("BELIER_METRICS_TOKEN", "env-s3cret")
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{printed}");
    assert!(!printed.contains("env-s3cret"), "{printed}");
    assert_eq!(server.counts().requests, 5);

    let listen = format!("127.0.0.1:{port}");
    let secret = "s3cret-token";
    let mut belier = Belier::spawn(&[
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
