//! Plan scripts through the real binary against a signed API on 127.0.0.1: the server
//! recomputes each request's HMAC-SHA256 signature (RustCrypto's, independent of the ring
//! code the scripts call) and answers 401 to a wrong one. A `before_request` hook signs every
//! body with a secret variable; an `after_response` hook counts the accepted ones in a custom
//! counter, which must equal the server's count, in the report and in a threshold; a script
//! that fails at run time is counted on every iteration while the run goes on.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

const SECRET: &str = "s3cret-key";

#[derive(Default)]
struct Counts {
    accepted: AtomicU64,
    rejected: AtomicU64,
}

/// The signed API: `X-Signature` must be the hex HMAC-SHA256 of the body under [`SECRET`].
async fn signed(State(counts): State<Arc<Counts>>, request: Request<Body>) -> StatusCode {
    let signature = request
        .headers()
        .get("x-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = to_bytes(request.into_body(), 1 << 20).await.unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(&body);
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // Bodies differ per request (a uuid), so a signature copied across requests fails.
    if signature == expected && body.len() > 20 {
        counts.accepted.fetch_add(1, Ordering::Relaxed);
        StatusCode::OK
    } else {
        counts.rejected.fetch_add(1, Ordering::Relaxed);
        StatusCode::UNAUTHORIZED
    }
}

/// Starts the signed API on a thread of its own; it lives as long as the test process.
fn start() -> (SocketAddr, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let state = Arc::clone(&counts);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let app = axum::Router::new()
                .route("/orders", axum::routing::post(signed))
                .with_state(state);
            axum::serve(listener, app).await.unwrap();
        });
    });
    (addr, counts)
}

fn plan_file(name: &str, text: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("scripts-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (file, content) in files {
        std::fs::write(dir.join(file), content).unwrap();
    }
    let path = dir.join("plan.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

fn plan(addr: SocketAddr, secret: &str) -> String {
    format!(
        r#"target: http://{addr}
variables:
  secret: "{secret}"
load:
  vus: 4
  iterations: 100
scenarios:
  - name: signed
    steps:
      - name: order
        post: /orders
        json: {{ id: "{{{{ uuid }}}}", user: "{{{{ vu }}}}" }}
        before_request: {{ file: sign.rhai }}
        after_response: |
          if response.status == 200 {{ counter("signed_ok"); }}
          trend("order_ms", response.latency_ms);
      - name: broken
        script: |
          let n = 1;
          n.no_such_method();
thresholds:
  - "signed_ok: count == 100"
  - "order_ms: p99 < 10s"
"#
    )
}

const SIGN: &str = "// Signs the body with the plan's secret.\n\
                    request.headers[\"X-Signature\"] = hmac_sha256_hex(vars.secret, request.body);\n";

fn run(path: &Path) -> (Option<i32>, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_belier"))
        .arg("run")
        .arg(path)
        .args(["--output", "json", "--duration", "60s"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let doc =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: stderr {stderr}"));
    (out.status.code(), doc, stderr)
}

fn row<'a>(doc: &'a Value, table: &str, name: &str) -> &'a Value {
    doc[table]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no {table} row {name}: {doc}"))
}

#[test]
fn a_hook_signs_every_request_and_a_script_counter_matches_the_server() {
    let (addr, counts) = start();
    let path = plan_file("signed", &plan(addr, SECRET), &[("sign.rhai", SIGN)]);
    let (code, doc, stderr) = run(&path);
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_eq!(counts.rejected.load(Ordering::Relaxed), 0);
    assert_eq!(counts.accepted.load(Ordering::Relaxed), 100);
    assert_eq!(doc["summary"]["requests"], 100);
    let order = row(&doc, "steps", "order");
    assert_eq!(
        (order["requests"].as_u64(), order["failures"].as_u64()),
        (Some(100), Some(0))
    );
    let ok = row(&doc, "metrics", "signed_ok");
    assert_eq!(
        (ok["kind"].as_str(), ok["count"].as_u64()),
        (Some("counter"), Some(100))
    );
    let trend = row(&doc, "metrics", "order_ms");
    assert_eq!(trend["count"], 100);
    assert!(trend["values_us"]["max"].as_u64().unwrap() > 0, "{trend}");
    // The failing script: counted on each of the 100 iterations, its message reported.
    let broken = row(&doc, "checks", "broken: script");
    assert_eq!(
        (broken["passed"].as_u64(), broken["failed"].as_u64()),
        (Some(0), Some(100))
    );
    let warnings = doc["warnings"].to_string();
    assert!(
        warnings.contains(
            "script `broken: script` failed 100 times: Function not found: no_such_method"
        ),
        "{warnings}"
    );
    assert!(!warnings.contains(SECRET) && !doc.to_string().contains(SECRET));
    let thresholds = doc["thresholds"].to_string();
    assert!(
        thresholds.contains("signed_ok: count == 100"),
        "{thresholds}"
    );
    assert!(
        doc["thresholds"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["passed"] == true),
        "{thresholds}"
    );
}

#[test]
fn a_wrong_secret_is_rejected_by_the_server_and_the_counter_says_so() {
    let (addr, counts) = start();
    let path = plan_file(
        "wrong",
        &plan(addr, "not-the-secret"),
        &[("sign.rhai", SIGN)],
    );
    let (code, doc, stderr) = run(&path);
    // Every request answered 401: the counter stays 0 and its threshold fails (exit 4).
    assert_eq!(code, Some(4), "stderr: {stderr}");
    assert_eq!(counts.rejected.load(Ordering::Relaxed), 100);
    assert_eq!(counts.accepted.load(Ordering::Relaxed), 0);
    assert_eq!(row(&doc, "metrics", "signed_ok")["count"], 0);
    assert_eq!(row(&doc, "steps", "order")["failures"], 100);
}
