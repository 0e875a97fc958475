//! The OpenTelemetry Collector of the span tests (`otel-collector/`, a Go module with its
//! go.sum: the collector's core with only the OTLP receiver and the file exporter, all of one
//! release): built with the Go toolchain once per test process into `target/otel-collector/`,
//! started on 127.0.0.1 with a configuration the test's directory holds, its received spans
//! read back from the JSON lines its file exporter writes there.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::grpc::build_go_server;
use crate::net::{free_port, wait_for_listener};
use crate::process::BOUND;

const INSTALL: &str =
    "Go 1.26 or later, which the collector v0.161 needs: scripts/install-test-deps";

/// A running collector, its OTLP/HTTP receiver on 127.0.0.1; killed when dropped.
pub struct Collector {
    binary: PathBuf,
    config: PathBuf,
    file: PathBuf,
    child: Option<Child>,
    /// Its receiver's port on 127.0.0.1, kept across restarts.
    pub port: u16,
}

impl Collector {
    /// Builds (once per process) and starts a collector writing to `dir/spans.jsonl`; `None`
    /// after [`crate::missing()`] (which fails under CI) when there is no Go toolchain.
    pub fn start(dir: &Path) -> Option<Collector> {
        let binary = built()?;
        let port = free_port();
        let file = dir.join("spans.jsonl");
        let config = dir.join("otelcol.yaml");
        std::fs::write(&config, config_yaml(port, &file)).expect("the collector's config");
        let mut collector = Collector {
            binary,
            config,
            file,
            child: None,
            port,
        };
        collector.restart();
        Some(collector)
    }

    /// `http://127.0.0.1:PORT`, the receiver's base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Starts it again (after [`Collector::stop`]) on the same port, appending to the same
    /// file; returns once the port answers.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "the collector is running");
        let log = std::fs::File::create(self.config.with_extension("log")).expect("a log file");
        let child = Command::new(&self.binary)
            .arg("--config")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log file"))
            .stderr(log)
            .spawn()
            .expect("the collector starts");
        self.child = Some(child);
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        assert!(
            wait_for_listener(addr, BOUND),
            "the collector does not listen on {addr}: {}",
            self.log()
        );
    }

    /// Stops it as a service manager would (SIGTERM; the file exporter writes out what it
    /// took) and waits for its end; the port then refuses connections.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let ok = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill -TERM the collector");
        let deadline = Instant::now() + BOUND;
        while child.try_wait().expect("the collector's status").is_none() {
            assert!(Instant::now() < deadline, "the collector did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops it and returns every span it wrote.
    pub fn spans(mut self) -> Vec<ReceivedSpan> {
        self.stop();
        read_spans(&self.file)
    }

    /// What it logged (warnings and errors only).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.config.with_extension("log")).unwrap_or_default()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The configuration: the OTLP receiver over HTTP only, the file exporter appending JSON
/// lines, the collector's own telemetry off (it would take port 8888).
fn config_yaml(port: u16, file: &Path) -> String {
    format!(
        "receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{port}
exporters:
  file:
    path: {}
    append: true
    flush_interval: 50ms
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
",
        file.display()
    )
}

/// One span as the collector wrote it (OTLP JSON: ids in hex, times in nanoseconds).
#[derive(Clone, Debug, PartialEq)]
pub struct ReceivedSpan {
    /// The trace id, 32 hex digits.
    pub trace_id: String,
    /// The span id, 16 hex digits.
    pub span_id: String,
    /// The parent's span id; empty for a root.
    pub parent_span_id: String,
    /// Its name.
    pub name: String,
    /// Its kind (2 internal, 3 client).
    pub kind: i64,
    /// Its start, in nanoseconds since the Unix epoch.
    pub start: u64,
    /// Its end, likewise.
    pub end: u64,
    /// Its status code (0 unset, 2 error).
    pub status: i64,
    /// Its attributes, each value as text (OTLP JSON writes integers as strings).
    pub attributes: Vec<(String, String)>,
}

impl ReceivedSpan {
    /// The value of attribute `key`, as text.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Every span in the file's lines (none when it does not exist).
fn read_spans(file: &Path) -> Vec<ReceivedSpan> {
    let Ok(f) = std::fs::File::open(file) else {
        return Vec::new();
    };
    let mut spans = Vec::new();
    for line in std::io::BufReader::new(f).lines() {
        let line = line.expect("the collector's file");
        if line.trim().is_empty() {
            continue;
        }
        let json: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
        for resource in array(&json, "resourceSpans") {
            for scope in array(resource, "scopeSpans") {
                spans.extend(array(scope, "spans").iter().map(span));
            }
        }
    }
    spans
}

fn array<'a>(json: &'a serde_json::Value, key: &str) -> &'a [serde_json::Value] {
    json.get(key)
        .and_then(serde_json::Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A JSON value as text: a string as it is, anything else as JSON.
fn text(json: Option<&serde_json::Value>) -> String {
    match json {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

fn number(json: Option<&serde_json::Value>) -> u64 {
    text(json).parse().unwrap_or(0)
}

fn span(json: &serde_json::Value) -> ReceivedSpan {
    let attributes = array(json, "attributes")
        .iter()
        .map(|kv| {
            let value = kv["value"].as_object().and_then(|v| v.values().next());
            (text(kv.get("key")), text(value))
        })
        .collect();
    ReceivedSpan {
        trace_id: text(json.get("traceId")),
        span_id: text(json.get("spanId")),
        parent_span_id: text(json.get("parentSpanId")),
        name: text(json.get("name")),
        kind: json["kind"].as_i64().unwrap_or(0),
        start: number(json.get("startTimeUnixNano")),
        end: number(json.get("endTimeUnixNano")),
        status: json["status"]["code"].as_i64().unwrap_or(0),
        attributes,
    }
}

/// The collector binary, built once per process; `None` (after [`crate::missing()`]) without Go.
fn built() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| build_go_server("otel-collector", INSTALL))
        .clone()
}

#[cfg(test)]
mod tests {
    /// `scripts/test` runs this one before the tests it times, so that the span tests do not
    /// pay Go's cold build of the collector inside their deadlines and the suite's clock (2 min
    /// on two cores from an empty Go cache, 540 MB of it; about 90 s after grpc-go's server
    /// has built the packages they share); it is also an ordinary test of the build.
    #[test]
    fn the_otel_collector_builds() {
        if let Some(collector) = super::built() {
            assert!(
                collector.is_file(),
                "{} was not written",
                collector.display()
            );
        }
    }
}
