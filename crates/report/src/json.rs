//! The machine-readable report.

use belier_stats::{FigureRow, LatencySummary};
use serde_json::{json, Map, Value};

use crate::format::percentile_label;
use crate::summary::Summary;
use crate::Report;

/// Version of the JSON shape; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// JSON Schema (draft 2020-12) of [`render_json`]'s output.
pub const SCHEMA: &str = include_str!("../schema/report.schema.json");

/// Renders `report` as a pretty-printed JSON document.
pub fn render_json(report: &Report) -> String {
    let mut s =
        serde_json::to_string_pretty(&to_value(report)).expect("JSON values always serialise");
    s.push('\n');
    s
}

fn latency(l: &LatencySummary, measured_from: &str) -> Value {
    let percentiles: Map<String, Value> = l
        .percentiles_us
        .iter()
        .map(|&(p, v)| (percentile_label(p), json!(v)))
        .collect();
    json!({
        "measured_from": measured_from,
        "count": l.count,
        "min": l.min_us,
        "mean": l.mean_us,
        "stdev": l.stdev_us,
        "max": l.max_us,
        "percentiles": percentiles,
    })
}

/// A summary measured from `measured_from`, or null when nothing was recorded (no TLS, no new
/// connection, no lag split).
fn recorded(l: &LatencySummary, measured_from: &str) -> Value {
    if l.count == 0 {
        Value::Null
    } else {
        latency(l, measured_from)
    }
}

fn to_value(r: &Report) -> Value {
    let s = Summary::of(r);
    let t = r.totals;
    let phases: Map<String, Value> = s
        .phases
        .iter()
        .map(|(m, l)| (m.name().to_string(), recorded(l, m.name())))
        .collect();
    let status: Map<String, Value> = t
        .status_counts()
        .map(|(code, n)| (code.to_string(), json!(n)))
        .collect();
    let mut doc = json!({
        "schema_version": SCHEMA_VERSION,
        "run": r.info,
        "interrupted": r.interrupted,
        "warnings": r.warnings,
        "summary": summary(&s),
        "latency_us": latency(&s.latency, "intended_start"),
        "latency_uncorrected_us": latency(&s.uncorrected, "dispatch"),
        "phases_us": phases,
        "open_loop": open_loop(&s),
        "host": r.host,
        "verdict": s.verdict,
        "status_codes": status,
        "errors": errors(&s),
        "steps": step_rows(&s),
        "checks": check_rows(&s),
        "metrics": metric_rows(&s),
        "iterations": s.has_steps.then(|| json!({
            "count": t.iterations(),
            "rate_per_s": s.iteration_rate,
        })),
        "thresholds": r.thresholds,
        "series": r.series,
    });
    // Only a steered run has the key, so the document of any other run stays as it was.
    if !r.changes.is_empty() {
        doc["changes"] = json!(r.changes);
    }
    // Only a plan of several loads has the key, likewise.
    if !r.scenarios.is_empty() {
        doc["scenarios"] = json!(r.scenarios);
    }
    // Only a run of gRPC calls has the key, likewise: its calls by status code name.
    if t.grpc_counts().next().is_some() {
        let grpc: Map<String, Value> = t
            .grpc_counts()
            .map(|(code, n)| {
                let name = belier_stats::grpc_code_name(code);
                (name.to_string(), json!(n))
            })
            .collect();
        doc["grpc_codes"] = json!(grpc);
    }
    // Only a run with streamed messages has the key, likewise.
    if let Some(m) = &s.messages {
        doc["messages"] = messages(m);
    }
    // Only a run over several server (or source) addresses has the keys, likewise.
    for (key, table) in crate::routes::json(r) {
        doc[key] = table;
    }
    // Only a run that read the server's own time has the key, likewise.
    if let Some(timing) = server_timing(r) {
        doc["server_timing"] = timing;
    }
    // Only a run with responses has the key, likewise.
    if let Some(slowest) = crate::exemplars::json(r) {
        doc["slowest"] = slowest;
    }
    // Only a run that held connections has the key, likewise.
    if let Some(held) = crate::held::json(r) {
        doc["held"] = held;
    }
    // Only a run over QUIC has the key, likewise.
    if let Some(quic) = crate::quic::json(r) {
        doc["quic"] = quic;
    }
    // Only a targets run has the key, likewise.
    if s.has_targets {
        doc["targets"] = json!(target_rows(&s));
    }
    doc
}

/// The document's `server_timing`, when the run read the server's own time (see
/// [`crate::server_timing`]).
fn server_timing(report: &Report) -> Option<Value> {
    let times = report.totals.server_times()?;
    let summary = |row: &FigureRow, from: &str| match row.counts.figures {
        0 => Value::Null,
        _ => latency(&row.summary(), from),
    };
    let metrics: Map<String, Value> = times
        .metrics
        .iter()
        .filter(|(_, row)| row.counts.figures > 0)
        .map(|(name, row)| (name.clone(), summary(row, "server")))
        .collect();
    let c = times.counts;
    Some(json!({
        "timed": c.timed,
        "missing": c.missing,
        "malformed": c.malformed,
        "dropped": c.dropped,
        "above_latency": c.above_latency,
        "metrics_us": metrics,
        "server_us": summary(&times.server, "server"),
        "outside_us": summary(&times.outside, "outside"),
    }))
}

/// The document's `messages`: a run's streamed messages (streaming gRPC calls', WebSockets',
/// streamed bodies'), with the keys only some runs have.
fn messages(m: &crate::summary::MessageFigures) -> Value {
    let mut doc = json!({
        "calls": m.counts.calls,
        "sent": m.counts.sent,
        "received": m.counts.received,
        "sent_per_call": m.sent_per_call,
        "received_per_call": m.received_per_call,
        "first_message_us": recorded(&m.first, "first_message"),
        "gap_us": recorded(&m.gaps, "gap"),
        "round_trip_us": recorded(&m.round_trips, "round_trip"),
    });
    // What the messages are, but for a gRPC run's (whose keys are unchanged).
    if !m.counts.unit.is_grpc() {
        doc["unit"] = json!(m.counts.unit);
    }
    // WebSocket runs: the round trips from each message's actual send, too.
    if m.round_trips_sent.count > 0 {
        doc["round_trip_uncorrected_us"] = recorded(&m.round_trips_sent, "round_trip_sent");
    }
    // WebSocket runs: the sockets by the close code they ended with.
    if !m.closes.is_empty() {
        let closes: Map<String, Value> = m
            .closes
            .iter()
            .map(|(code, n)| (code.to_string(), json!(n)))
            .collect();
        doc["close_codes"] = json!(closes);
    }
    // WebSocket runs with --deflate: the sockets by what they agreed.
    if !m.extensions.is_empty() {
        let extensions: Map<String, Value> = m
            .extensions
            .iter()
            .map(|(extension, n)| (extension.clone(), json!(n)))
            .collect();
        doc["extensions"] = json!(extensions);
    }
    if m.counts.unit == belier_stats::MessageUnit::Tokens {
        doc["tokens"] = json!(m.counts.tokens);
        doc["tokens_per_s"] = json!(m.token_rate);
        doc["tokens_per_s_per_stream"] = json!(m.tokens_per_stream_rate);
    }
    let c = m.counts;
    if c.reconnections > 0 || c.reconnection_stops > 0 {
        doc["reconnections"] = json!({
            "count": c.reconnections,
            "with_last_event_id": c.reconnections_with_id,
            "wait_us": c.reconnection_wait_us,
            "wait_mean_us": m.reconnection_wait_mean_us,
            "stops": c.reconnection_stops,
        });
    }
    doc
}

/// The document's `summary`: counts, rates, bytes, connections.
fn summary(s: &Summary) -> Value {
    let (r, t) = (s.report, s.report.totals);
    json!({
        "requests": t.requests(),
        "responses": t.responses(),
        "succeeded": t.succeeded(),
        "errors": t.errors(),
        "duration_s": r.elapsed.as_secs_f64(),
        "attempted_rps": s.attempted_rate,
        "throughput_rps": s.throughput,
        "success_ratio": s.success_ratio,
        "bytes_in": t.bytes_in(),
        "bytes_out": t.bytes_out(),
        "bytes_decoded": t.bytes_decoded(),
        "bytes_in_per_request": s.bytes_in_per_request,
        "bytes_out_per_request": s.bytes_out_per_request,
        "connections_opened": t.connections_opened(),
        "connections_peak": s.connections_peak,
        "server_closes": t.server_closes(),
        "resent": t.resent(),
        "kernel_stamped": t.kernel_stamped(),
        "wakeups": t.wakeups(),
        "tls_handshakes": t.histogram(belier_stats::Metric::Tls).len(),
        "tls_session": t.tls_session(),
        "tls_resumed": t.tls_resumed(),
    })
}

/// The open loop's schedule and lag; null for a closed loop.
fn open_loop(s: &Summary) -> Option<Value> {
    let t = s.report.totals;
    s.open_loop.as_ref().map(|o| {
        json!({
        "scheduled": t.scheduled(),
        "dropped": t.dropped(),
        "target_rps": o.target_rate,
        "achieved_rps": o.sent_rate,
        "lag_us": latency(&o.lag, "intended_start"),
        "dispatch_lag_us": recorded(&o.dispatch, "intended_start"),
        })
    })
}

/// Each error kind that happened, with an example message.
fn errors(s: &Summary) -> Vec<Value> {
    s.errors
        .iter()
        .map(|e| {
            json!({
                "kind": e.kind.name(),
                "description": e.kind.description(),
                "count": e.count,
                "example": e.example,
            })
        })
        .collect()
}

/// Locust's table as JSON: one object per request step.
fn step_rows(s: &Summary) -> Vec<Value> {
    let totals = s.report.totals;
    s.steps
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mut row = step_row(l);
            // Only a step with responses has the key.
            if !totals.step_exemplars(i).is_empty() {
                row["slowest"] = json!(totals.step_exemplars(i));
            }
            row
        })
        .collect()
}

/// A targets run's per-target table: each step row under its target's method and URL, with
/// its requests that got no response (`errors`) apart from its failures (which count error
/// statuses as well).
fn target_rows(s: &Summary) -> Vec<Value> {
    let targets = &s.report.info.targets;
    s.steps
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mut row = step_row(l);
            if let Value::Object(fields) = &mut row {
                fields.remove("name");
                let (method, url) = targets.get(i).map_or(("", l.name.as_str()), |t| {
                    (t.method.as_str(), t.url.as_str())
                });
                fields.insert("method".into(), json!(method));
                fields.insert("url".into(), json!(url));
                fields.insert(
                    "errors".into(),
                    json!(l.requests.saturating_sub(l.responses)),
                );
            }
            row
        })
        .collect()
}

/// One row of the per-step table.
fn step_row(l: &crate::steps::StepLine) -> Value {
    let [p50, p90, p99] = l.percentiles_us;
    json!({
        "name": l.name,
        "requests": l.requests,
        "failures": l.failures,
        "failure_ratio": l.failure_ratio,
        "rate_per_s": l.rate,
        "bytes_in": l.bytes_in,
        "bytes_out": l.bytes_out,
        "latency_us": (l.responses > 0).then(|| json!({
            "count": l.responses,
            "min": l.min_us,
            "p50": p50,
            "p90": p90,
            "p99": p99,
            "max": l.max_us,
        })),
    })
}

fn check_rows(s: &Summary) -> Vec<Value> {
    s.checks
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "passed": c.passed,
                "failed": c.failed,
                "pass_ratio": c.pass_ratio,
            })
        })
        .collect()
}

fn metric_rows(s: &Summary) -> Vec<Value> {
    s.metrics
        .iter()
        .map(|m| {
            let [p50, p90, p99] = m.percentiles_us;
            let trend = m.kind == belier_stats::MetricKind::Trend && m.count > 0;
            json!({
                "name": m.name,
                "kind": m.kind,
                "count": m.count,
                "rate_per_s": m.rate,
                "values_us": trend.then(|| json!({
                    "min": m.min_us,
                    "p50": p50,
                    "p90": p90,
                    "p99": p99,
                    "max": m.max_us,
                })),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::fixtures;

    fn sample_report_json() -> Value {
        let info = fixtures::info();
        let (totals, series) = fixtures::results();
        let report = Report {
            host: Some(belier_results::HostUsage {
                open_fds_peak: 60,
                fd_limit: 1024,
                ephemeral_ports_peak: Some(12),
                ephemeral_ports_total: Some(28_232),
            }),
            ..fixtures::report(&info, &totals, &series)
        };
        serde_json::from_str(&render_json(&report)).unwrap()
    }

    #[test]
    fn output_validates_against_schema() {
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let doc = sample_report_json();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}");
    }

    #[test]
    fn a_run_with_steps_validates_and_adds_up() {
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let run = crate::seeded::with_steps();
        let doc: Value = serde_json::from_str(&render_json(&run.report())).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}");
        let steps = doc["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 3);
        let sum: u64 = steps.iter().map(|s| s["requests"].as_u64().unwrap()).sum();
        assert_eq!(sum, doc["summary"]["requests"].as_u64().unwrap());
        assert!(steps[2]["latency_us"].is_null());
        assert_eq!(doc["iterations"]["count"], 200);
        assert_eq!(doc["thresholds"][1]["passed"], false);
        assert_eq!(doc["run"]["steps"][0], "login");
        crate::golden::check("report-steps.json", &render_json(&run.report()));
        // A threshold that stopped the run says when and at what value.
        let mut stopped = crate::seeded::with_steps();
        stopped.thresholds[1].stopped_run = Some(belier_results::ThresholdStop {
            at_ms: 1_000,
            actual: "error_rate = 5.00 %".into(),
        });
        let with_stop: Value = serde_json::from_str(&render_json(&stopped.report())).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&with_stop)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
        assert_eq!(with_stop["thresholds"][1]["stopped_run"]["at_ms"], 1_000);
        assert!(doc["thresholds"][1].get("stopped_run").is_none());
        // A step row missing a field is not a belier report.
        let mut broken = doc.clone();
        broken["steps"][0]
            .as_object_mut()
            .unwrap()
            .remove("failures");
        assert!(!validator.is_valid(&broken));
    }

    /// `run`'s JSON report, which the schema must take.
    fn valid_json(run: &crate::seeded::Run) -> Value {
        let doc: Value = serde_json::from_str(&render_json(&run.report())).unwrap();
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}");
        doc
    }

    /// Checks that `run`'s text report holds each of `lines` and the markdown report of it
    /// beside a run without messages each of `rows`; returns that markdown.
    fn text_and_markdown_hold(run: &crate::seeded::Run, lines: &[&str], rows: &[&str]) -> String {
        let text = crate::render_text(&run.report());
        let missing: Vec<_> = lines.iter().filter(|l| !text.contains(*l)).collect();
        assert!(missing.is_empty(), "{missing:?} not in {text}");
        let plain = crate::seeded::base();
        let reports = [plain.report(), run.report()];
        let md = crate::render_markdown(&crate::seeded::named(&reports));
        let missing: Vec<_> = rows.iter().filter(|r| !md.contains(*r)).collect();
        assert!(missing.is_empty(), "{missing:?} not in {md}");
        md
    }

    #[test]
    fn a_run_of_llm_streams_names_its_figures_in_text_json_and_markdown() {
        let run = crate::seeded::llm_streams();
        let m = &valid_json(&run)["messages"];
        let (unit, tokens) = (&m["unit"], &m["tokens"]);
        assert_eq!((unit, tokens), (&json!("tokens"), &json!(4_000)));
        // 39 tokens after the first in 390 ms, each stream.
        assert_eq!(m["tokens_per_s_per_stream"], 100.0);
        let lines = [
            "\nTokens  (100 streams)\n",
            "  output tokens        4,000   40.0 per stream\n",
            "  ttft             100     80.000",
            "  itl            3,900     10.000",
        ];
        let rows = [
            "| Streams |",
            "| First (TTFT) p50 |",
            "| Tokens/s per stream |",
        ];
        let md = text_and_markdown_hold(&run, &lines, &rows);
        assert!(!md.contains("Streaming calls"), "{md}");
    }

    #[test]
    fn a_run_of_sse_reconnections_counts_them_in_text_json_and_markdown() {
        let run = crate::seeded::sse_reconnections();
        let r = &valid_json(&run)["messages"]["reconnections"];
        assert_eq!(
            r,
            &json!({
                "count": 40,
                "with_last_event_id": 30,
                "wait_us": 2_000_000,
                "wait_mean_us": 50_000.0,
                "stops": 2,
            })
        );
        let lines = [
            "\nStreams  (60 streams)\n",
            "  reconnections           40   30 with Last-Event-ID, each after 50.000 ms on average\n",
            "  stopped                  2   responses not a 200 event stream",
        ];
        let rows = [
            "| Reconnections | – | 40 |",
            "| With Last-Event-ID | – | 30 |",
            "| Reconnection wait (mean) | – | 50.000 ms |",
            "| Reconnections stopped | – | 2 |",
        ];
        text_and_markdown_hold(&run, &lines, &rows);
        // LLM streams, which never reconnect, have none of it.
        let llm = crate::seeded::llm_streams();
        assert!(valid_json(&llm)["messages"]["reconnections"].is_null());
        assert!(!crate::render_text(&llm.report()).contains("reconnections"));
    }

    #[test]
    fn a_run_of_streaming_calls_has_its_messages_in_text_and_json() {
        let mut run = crate::seeded::streaming();
        let doc: Value = serde_json::from_str(&render_json(&run.report())).unwrap();
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}");
        let m = &doc["messages"];
        assert_eq!(
            (&m["calls"], &m["sent"], &m["received"]),
            (&json!(200), &json!(200), &json!(20_000))
        );
        assert_eq!(m["received_per_call"], 100.0);
        assert_eq!(m["first_message_us"]["count"], 200);
        assert_eq!(m["gap_us"]["count"], 19_800);
        assert_eq!(m["gap_us"]["percentiles"]["p50"], 250);
        assert!(m["round_trip_us"].is_null());
        let text = crate::render_text(&run.report());
        for line in [
            "\nMessages  (200 streaming calls)\n",
            "  Received            20,000   100.0 per call\n",
            "  Sent                   200   1.0 per call\n",
            "  gap           19,800      0.250      0.250",
        ] {
            assert!(text.contains(line), "{line:?} in {text}");
        }
        // Round trips where answers answered messages one for one.
        crate::seeded::add_round_trip(&mut run);
        let doc: Value = serde_json::from_str(&render_json(&run.report())).unwrap();
        assert!(validator.is_valid(&doc));
        assert_eq!(doc["messages"]["round_trip_us"]["max"], 1_500);
        let text = crate::render_text(&run.report());
        assert!(
            text.contains("\n  round trip         1      1.500"),
            "{text}"
        );
        // Without streaming calls, neither has them.
        let plain = crate::seeded::base();
        assert!(!render_json(&plain.report()).contains("\"messages\""));
        assert!(!crate::render_text(&plain.report()).contains("Messages"));
    }

    #[test]
    fn a_targets_run_has_a_per_target_table_that_validates() {
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let mut run = crate::seeded::with_steps();
        run.info.plan = None;
        run.info.checks = vec![];
        let urls = [
            "http://127.0.0.1:8080/a",
            "http://127.0.0.1:8080/b",
            "http://127.0.0.1:8080/c",
        ];
        run.info.targets = ["GET", "POST", "PUT"]
            .iter()
            .zip(urls)
            .map(|(m, u)| belier_results::TargetInfo {
                method: m.to_string(),
                url: u.to_string(),
            })
            .collect();
        run.info.steps = run
            .info
            .targets
            .iter()
            .map(|t| format!("{} {}", t.method, t.url))
            .collect();
        let doc: Value = serde_json::from_str(&render_json(&run.report())).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}");
        let targets = doc["targets"].as_array().unwrap();
        assert_eq!(targets.len(), 3);
        assert_eq!(
            (&targets[1]["method"], &targets[1]["url"]),
            (&json!("POST"), &json!(urls[1]))
        );
        // The same rows as the step table, with the requests that got no response apart.
        for (t, s) in targets.iter().zip(doc["steps"].as_array().unwrap()) {
            assert_eq!(t["requests"], s["requests"]);
            assert_eq!(t["latency_us"], s["latency_us"]);
            let responses = s["latency_us"]["count"].as_u64().unwrap_or(0);
            assert_eq!(
                t["errors"].as_u64().unwrap(),
                s["requests"].as_u64().unwrap() - responses
            );
        }
        assert!(
            targets[0]["errors"].as_u64().unwrap() > 0,
            "the seeded timeouts"
        );
        assert_eq!(doc["run"]["targets"][2]["method"], "PUT");
        let text = crate::render_text(&run.report());
        assert!(text.contains("\nTargets  (latency"), "{text}");
        assert!(text.contains("  target "), "{text}");
        let report = run.report();
        let named = [crate::NamedReport {
            name: "targets",
            report: &report,
        }];
        assert!(crate::render_markdown(&named).contains("| Target | Requests |"));
        assert!(crate::render_html(&[crate::HtmlRun {
            name: "targets".into(),
            report: &report,
        }])
        .contains("<th>target</th>"));
        // Any other run's document has no such key.
        let plain: Value =
            serde_json::from_str(&render_json(&crate::seeded::with_steps().report())).unwrap();
        assert!(plain.get("targets").is_none());
        assert!(plain["run"].get("targets").is_none());
    }

    #[test]
    fn schema_rejects_a_broken_document() {
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let mut doc = sample_report_json();
        doc["summary"]["requests"] = json!("many");
        assert!(!validator.is_valid(&doc));
        let mut doc = sample_report_json();
        doc.as_object_mut().unwrap().remove("latency_us");
        assert!(!validator.is_valid(&doc));
    }

    #[test]
    fn golden_json_report() {
        let got = serde_json::to_string_pretty(&sample_report_json()).unwrap() + "\n";
        crate::golden::check("report.json", &got);
    }

    #[test]
    fn counts_add_up_in_json() {
        let doc = sample_report_json();
        let s = &doc["summary"];
        let errors: u64 = doc["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["count"].as_u64().unwrap())
            .sum();
        assert_eq!(
            s["responses"].as_u64().unwrap() + errors,
            s["requests"].as_u64().unwrap()
        );
        assert_eq!(s["requests"], 1000);
    }
}
