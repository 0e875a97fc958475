//! What the console knows of its runs: the one in progress (its intervals, totals, steering
//! handle) and those that ended (their reports and results files). The run loop feeds it once
//! per settled interval; the API reads it and streams each new interval to every open page.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use belier_engine::Control;
use belier_stats::{ErrorKind, Point, Recorder};
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::broadcast;

/// Intervals kept for a page that opens mid-run: two hours of one-second intervals.
pub const KEPT_INTERVALS: usize = 7_200;

/// Events buffered for a page that reads its stream slowly; one that falls further behind
/// skips to the latest.
const STREAM_BACKLOG: usize = 64;

/// What a run's level means, as the page and the API name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Requests per second (open loop).
    Rate,
    /// A plan's iterations per second (open loop).
    Iterations,
    /// Connections at once (closed loop).
    Connections,
    /// A plan's virtual users at once (closed loop).
    Users,
}

impl Unit {
    /// Whether the level is a rate (set with `POST /api/run/rate`) rather than a number of
    /// connections or users (`POST /api/run/users`).
    pub fn is_rate(self) -> bool {
        matches!(self, Unit::Rate | Unit::Iterations)
    }
}

/// A run as it starts, handed over by whoever runs it.
pub struct RunStart {
    /// How the run was set up (the report's run information), shown as given.
    pub settings: Value,
    /// What its level means.
    pub unit: Unit,
    /// The handle that steers it.
    pub control: Control,
    /// A plan's step names, in order (empty otherwise).
    pub steps: Vec<String>,
}

/// A run's HTML report.
pub enum Report {
    /// The report itself.
    Html(String),
    /// The file the run wrote it to (a console of many runs keeps none of them in memory).
    File(PathBuf),
}

/// What a run left behind, for the page's links.
pub struct RunEnd {
    /// The HTML report.
    pub report: Report,
    /// The results file, if the run kept one.
    pub results: Option<PathBuf>,
    /// Whether it was stopped before its planned end.
    pub interrupted: bool,
}

/// A run of this console, in progress or ended.
struct Run {
    id: u64,
    settings: Value,
    unit: Unit,
    control: Control,
    steps: Vec<String>,
    intervals: VecDeque<Value>,
    totals: Value,
    stop_asked: bool,
    end: Option<RunEnd>,
}

#[derive(Default)]
struct Inner {
    runs: Vec<Run>,
    /// A run is being prepared (between a launch and its first [`Hub::begin`]).
    launching: bool,
}

/// The console's state, shared by the run loop and the API.
pub struct Hub {
    inner: Mutex<Inner>,
    events: broadcast::Sender<Arc<str>>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub {
            inner: Mutex::default(),
            events: broadcast::channel(STREAM_BACKLOG).0,
        }
    }
}

/// A run's number in this console, from 1.
pub type RunId = u64;

impl Hub {
    /// A new run in progress; returns its number.
    pub fn begin(&self, start: RunStart) -> RunId {
        let mut inner = self.lock();
        let id = inner.runs.len() as u64 + 1;
        inner.launching = false;
        inner.runs.push(Run {
            id,
            settings: start.settings,
            unit: start.unit,
            control: start.control,
            steps: start.steps,
            intervals: VecDeque::new(),
            totals: totals(&Recorder::new(), &[], 0.0),
            stop_asked: false,
            end: None,
        });
        let event = run_json(inner.runs.last().expect("just pushed"), false);
        drop(inner);
        self.send("begin", &event);
        id
    }

    /// A settled interval of run `id`, `point`, with everything settled so far, `total`.
    pub fn interval(&self, id: RunId, point: &Point, total: &Recorder) {
        let mut inner = self.lock();
        let Some(run) = inner.runs.iter_mut().find(|r| r.id == id) else {
            return;
        };
        let steer = run.control.state();
        let mut interval = json!({
            "t_s": (point.offset + point.width).as_secs_f64(),
            "width_s": point.width.as_secs_f64(),
            "requests": point.requests,
            "errors": point.errors,
            "rate": point.rate(),
            "target": run.unit.is_rate().then(|| point.target_rate()),
            "level": if steer.paused { 0.0 } else { steer.level },
            "p50_ms": point.p50_us as f64 / 1e3,
            "p90_ms": point.p90_us as f64 / 1e3,
            "p99_ms": point.p99_us as f64 / 1e3,
            "in_flight": point.in_flight,
            "connections": point.connections_peak,
        });
        if total.held().is_some() {
            interval["held"] = json!(point.held);
        }
        if run.intervals.len() == KEPT_INTERVALS {
            run.intervals.pop_front();
        }
        run.intervals.push_back(interval.clone());
        run.totals = totals(
            total,
            &run.steps,
            (point.offset + point.width).as_secs_f64(),
        );
        let event = json!({
            "run": id,
            "interval": interval,
            "totals": run.totals,
            "steering": steering(run),
        });
        drop(inner);
        self.send("interval", &event);
    }

    /// Run `id` has ended and left `end` behind.
    pub fn end(&self, id: RunId, end: RunEnd) {
        let mut inner = self.lock();
        let Some(run) = inner.runs.iter_mut().find(|r| r.id == id) else {
            return;
        };
        run.end = Some(end);
        let event = run_json(run, false);
        drop(inner);
        self.send("end", &event);
    }

    /// Whether a stop of run `id` was asked for through the API.
    pub fn stop_requested(&self, id: RunId) -> bool {
        self.lock().runs.iter().any(|r| r.id == id && r.stop_asked)
    }

    /// A run that was launched could not start (`why`): the console is free again, and the
    /// pages hear of it.
    pub fn failed(&self, why: &str) {
        self.lock().launching = false;
        self.send("failed", &json!({ "error": why }));
    }

    /// Whether a run is in progress (or being prepared).
    pub fn busy(&self) -> bool {
        let inner = self.lock();
        inner.launching || inner.runs.last().is_some_and(|r| r.end.is_none())
    }

    /// Marks a run as being prepared, unless one is in progress already: returns whether
    /// the caller may go on.
    pub(crate) fn reserve(&self) -> bool {
        let mut inner = self.lock();
        if inner.launching || inner.runs.last().is_some_and(|r| r.end.is_none()) {
            return false;
        }
        inner.launching = true;
        true
    }

    /// Undoes [`Hub::reserve`] when a launch failed.
    pub(crate) fn release(&self) {
        self.lock().launching = false;
    }

    /// The latest run, with its intervals, as `GET /api/run` shows it (`null` before any).
    pub(crate) fn current(&self) -> Value {
        self.lock()
            .runs
            .last()
            .map_or(Value::Null, |r| run_json(r, true))
    }

    /// Every run of this console, newest first, without intervals.
    pub(crate) fn list(&self) -> Value {
        Value::Array(
            self.lock()
                .runs
                .iter()
                .rev()
                .map(|r| run_json(r, false))
                .collect(),
        )
    }

    /// Runs `f` with the latest run's steering handle and unit, if that run is in progress.
    pub(crate) fn steer<T>(&self, f: impl FnOnce(&Control, Unit) -> T) -> Option<T> {
        let inner = self.lock();
        let run = inner.runs.last().filter(|r| r.end.is_none())?;
        Some(f(&run.control, run.unit))
    }

    /// Asks the run in progress to stop; false if there is none.
    pub(crate) fn stop(&self) -> bool {
        let mut inner = self.lock();
        let Some(run) = inner.runs.last_mut().filter(|r| r.end.is_none()) else {
            return false;
        };
        run.stop_asked = true;
        run.control.stop();
        true
    }

    /// Tells every page that the steering of the run in progress changed.
    pub(crate) fn steered(&self) {
        let inner = self.lock();
        let Some(run) = inner.runs.last() else { return };
        let event = json!({"run": run.id, "steering": steering(run)});
        drop(inner);
        self.send("steering", &event);
    }

    /// The HTML report of run `id`, once it has ended: the text, or the file that holds it.
    pub(crate) fn report(&self, id: RunId) -> Option<Result<String, PathBuf>> {
        let inner = self.lock();
        let run = inner.runs.iter().find(|r| r.id == id)?;
        run.end.as_ref().map(|e| match &e.report {
            Report::Html(html) => Ok(html.clone()),
            Report::File(path) => Err(path.clone()),
        })
    }

    /// The results file of run `id`, once it has ended, if it kept one.
    pub(crate) fn results(&self, id: RunId) -> Option<PathBuf> {
        let inner = self.lock();
        let run = inner.runs.iter().find(|r| r.id == id)?;
        run.end.as_ref().and_then(|e| e.results.clone())
    }

    /// A receiver of every event from now on: its name, a newline, its JSON.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<str>> {
        self.events.subscribe()
    }

    fn send(&self, name: &str, data: &Value) {
        // No page open is not an error.
        let _ = self.events.send(Arc::from(format!("{name}\n{data}")));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves a state that is still whole.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A run as the API shows it; with `intervals`, every interval kept.
fn run_json(run: &Run, intervals: bool) -> Value {
    let state = match (&run.end, run.control.state().paused) {
        (Some(_), _) => "ended",
        (None, true) => "paused",
        (None, false) => "running",
    };
    let mut v = json!({
        "id": run.id,
        "state": state,
        "settings": run.settings,
        "steering": steering(run),
        "latest": run.intervals.back(),
        "totals": run.totals,
    });
    if let Some(end) = &run.end {
        v["interrupted"] = json!(end.interrupted);
        v["report"] = json!(format!("/runs/{}/report.html", run.id));
        if end.results.is_some() {
            v["results"] = json!(format!("/runs/{}/results.jsonl", run.id));
        }
    }
    if intervals {
        v["intervals"] = json!(run.intervals);
    }
    v
}

fn steering(run: &Run) -> Value {
    let s = run.control.state();
    // Every change so far, for the charts' markers: from `at_s` on, the level (0: paused).
    let history: Vec<Value> = run
        .control
        .history()
        .iter()
        .map(|&(at, level)| json!({"at_s": at.as_secs_f64(), "level": level}))
        .collect();
    json!({
        "unit": run.unit,
        "level": s.level,
        "paused": s.paused,
        "changes": s.changes,
        "history": history,
        "stop_asked": run.stop_asked,
    })
}

/// The tables: responses by status, failures by error kind, a plan's steps, and the messages
/// of streaming gRPC calls (only for a run that made some), with their rates over the
/// `settled_s` seconds the totals cover.
fn totals(total: &Recorder, steps: &[String], settled_s: f64) -> Value {
    let latency = total.latency_us();
    let ms = |h: &hdrhistogram::Histogram<u64>, q: f64| {
        if h.is_empty() {
            0.0
        } else {
            h.value_at_quantile(q) as f64 / 1e3
        }
    };
    // gRPC calls by their code's name, in the same table (a run's calls are all gRPC or all
    // HTTP).
    let statuses: Vec<Value> = total
        .status_counts()
        .map(|(code, n)| json!({"status": code, "count": n}))
        .chain(
            total
                .grpc_counts()
                .map(|(code, n)| json!({"status": belier_stats::grpc_code_name(code), "count": n})),
        )
        .collect();
    let errors: Vec<Value> = ErrorKind::ALL
        .iter()
        .map(|&k| (k, total.errors_of(k)))
        .filter(|&(_, n)| n > 0)
        .map(|(k, n)| json!({"kind": k.name(), "count": n}))
        .collect();
    let step_rows: Vec<Value> = total
        .steps()
        .iter()
        .enumerate()
        .map(|(i, row)| {
            json!({
                "step": steps.get(i).cloned().unwrap_or_else(|| format!("step {}", i + 1)),
                "requests": row.counts.requests,
                "failures": row.counts.failures,
                "p50_ms": ms(row.values_us(), 0.5),
                "p99_ms": ms(row.values_us(), 0.99),
            })
        })
        .collect();
    // As the text report counts them: a response of 400 or more is no error (it came back
    // whole) but it did not succeed.
    let mut doc = json!({
        "requests": total.requests(),
        "succeeded": total.succeeded(),
        "failed_responses": total.responses() - total.succeeded(),
        "errors": total.errors(),
        "p50_ms": ms(latency, 0.5),
        "p90_ms": ms(latency, 0.9),
        "p99_ms": ms(latency, 0.99),
        "statuses": statuses,
        "error_kinds": errors,
        "steps": step_rows,
    });
    if let Some(times) = total.server_times() {
        doc["server_timing"] = server_timing(times, &ms);
    }
    // HTTP/3 runs only: QUIC's own figures so far.
    if let Some(q) = total.quic() {
        doc["quic"] = json!({
            "handshakes": q.handshakes,
            "datagrams_sent": q.datagrams_sent,
            "datagrams_received": q.datagrams_received,
            "packets_sent": q.packets_sent,
            "packets_lost": q.packets_lost,
            "ended": q.ended,
            "ended_by_server": q.ended_by_server(),
        });
    }
    if !total.exemplars().is_empty() {
        doc["slowest"] = slowest(total.exemplars(), steps);
    }
    if let Some(m) = total.messages() {
        let per_s = |n: u64| {
            if settled_s > 0.0 {
                n as f64 / settled_s
            } else {
                0.0
            }
        };
        doc["messages"] = json!({
            "unit": m.unit(),
            "calls": m.calls(),
            "sent": m.sent(),
            "received": m.received(),
            "sent_per_s": per_s(m.sent()),
            "received_per_s": per_s(m.received()),
        });
    }
    doc
}

/// The run's slowest responses so far, slowest first (see [`belier_stats::Exemplar`]): their
/// latency, what they answered, when they were due (ms since the Unix epoch), their trace and
/// span ids when traced, and their step's name in a plan.
fn slowest(kept: &[belier_stats::Exemplar], steps: &[String]) -> Value {
    let rows: Vec<Value> = kept
        .iter()
        .map(|e| {
            let answer = match e.grpc {
                Some(code) => belier_stats::grpc_code_name(code).to_string(),
                None => e.status.to_string(),
            };
            json!({
                "latency_ms": e.latency_us as f64 / 1e3,
                "status": answer,
                "due_unix_ms": e.intended_unix_us / 1000,
                "trace_id": e.trace_id.map(|t| t.to_string()),
                "span_id": e.span_id.map(|s| s.to_string()),
                "step": e.step.map(|n| {
                    steps.get(n as usize).cloned().unwrap_or_else(|| format!("step {}", n + 1))
                }),
            })
        })
        .collect();
    json!(rows)
}

/// The run's server timing (`--server-timing`) so far: what became of the responses, and a
/// row per metric, then the server's time and the time outside it (count, p50, p99).
fn server_timing(
    times: &belier_stats::ServerTimes,
    ms: &dyn Fn(&hdrhistogram::Histogram<u64>, f64) -> f64,
) -> Value {
    let named = times.metrics.iter().map(|(name, row)| (name.as_str(), row));
    let whole = [
        ("server's time", &times.server),
        ("outside", &times.outside),
    ];
    let rows: Vec<Value> = named
        .chain(whole)
        .filter(|(_, row)| row.counts.figures > 0)
        .map(|(name, row)| {
            json!({
                "name": name,
                "count": row.counts.figures,
                "p50_ms": ms(row.values_us(), 0.5),
                "p99_ms": ms(row.values_us(), 0.99),
            })
        })
        .collect();
    let c = times.counts;
    json!({
        "timed": c.timed,
        "missing": c.missing,
        "malformed": c.malformed,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use belier_engine::{Config, Load, Profile, RequestSpec, Spacing};
    use belier_stats::{Gauges, Outcome, Point, Recorder, Sample};

    use super::*;

    /// A real run's handle (the engine's Control has no other constructor): an open loop at
    /// 1/s against a port nothing listens on, stopped at the end of the test.
    fn control() -> (belier_engine::Run, Control) {
        let mut config = Config::new(RequestSpec {
            method: "GET".into(),
            host: "127.0.0.1".into(),
            port: 9,
            path_and_query: "/".into(),
            headers: vec![],
            body: vec![],
        });
        config.load = Load::Open {
            rate: Profile::constant(1.0),
            spacing: Spacing::Even,
            max_connections: 1,
            max_in_flight: None,
        };
        config.stop.duration = Some(Duration::from_secs(30));
        config.threads = 1;
        let run = belier_engine::start(&config).expect("the engine starts");
        let control = run.control();
        (run, control)
    }

    #[test]
    fn grpc_calls_are_in_the_status_table_by_their_codes_name() {
        let mut total = Recorder::new();
        for code in [0, 8, 8] {
            let now = std::time::Instant::now();
            let outcome = belier_stats::Outcome::Grpc { code };
            total.record(&belier_stats::Sample::simulated(now, 0, 1_000, outcome));
        }
        let statuses = &totals(&total, &[], 1.0)["statuses"];
        assert_eq!(
            statuses,
            &json!([{"status": "OK", "count": 1}, {"status": "RESOURCE_EXHAUSTED", "count": 2}])
        );
    }

    #[test]
    fn streaming_calls_messages_and_rates_are_in_the_totals_and_other_runs_have_none() {
        let mut total = Recorder::new();
        let gaps = belier_stats::MessageTimes::default();
        for _ in 0..3 {
            let call = belier_stats::CallMessages::one_way(1, 50, Some(500), &gaps);
            total.record_simulated_stream(1_000, &call);
        }
        assert_eq!(
            totals(&total, &[], 2.0)["messages"],
            json!({"unit": "grpc", "calls": 3, "sent": 3, "received": 150, "sent_per_s": 1.5,
                   "received_per_s": 75.0})
        );
        let http = totals(&Recorder::new(), &[], 2.0);
        assert!(http.get("messages").is_none(), "{http}");
    }

    #[test]
    fn the_slowest_responses_are_in_the_totals_with_their_traces_and_steps() {
        assert!(totals(&Recorder::new(), &[], 1.0).get("slowest").is_none());
        let mut total = Recorder::new();
        let t = std::time::Instant::now();
        let trace = belier_stats::Trace {
            trace_id: belier_stats::TraceId(0xab),
            span_id: belier_stats::SpanId(0xcd),
        };
        let slow = Sample {
            trace: Some(trace),
            ..Sample::simulated(t, 0, 250_000, Outcome::Response { status: 200 })
        };
        total.record(&slow);
        total.record_step(1, &slow, false);
        total.record(&Sample::simulated(
            t,
            0,
            900,
            Outcome::Response { status: 404 },
        ));
        let steps = ["login".to_string(), "browse".to_string()];
        let slowest = &totals(&total, &steps, 1.0)["slowest"];
        assert_eq!(slowest[0]["latency_ms"], 250.0, "{slowest}");
        assert_eq!(
            slowest[0]["trace_id"],
            format!("{:032x}", 0xab),
            "{slowest}"
        );
        assert_eq!(slowest[0]["span_id"], format!("{:016x}", 0xcd), "{slowest}");
        assert_eq!(slowest[0]["step"], "browse", "{slowest}");
        assert_eq!(slowest[1]["status"], "404", "{slowest}");
        assert!(slowest[1]["trace_id"].is_null(), "{slowest}");
        assert_eq!(
            slowest[0]["due_unix_ms"].as_u64(),
            Some(belier_stats::unix_us(t) / 1000)
        );
    }

    #[test]
    fn quic_figures_are_in_the_totals_of_http3_runs_only() {
        let mut total = Recorder::new();
        assert!(totals(&total, &[], 1.0).get("quic").is_none());
        let mut q = belier_stats::Quic {
            handshakes: 2,
            packets_sent: 900,
            packets_lost: 4,
            ..belier_stats::Quic::default()
        };
        q.end("idle_timeout");
        total.record_quic(&q);
        let quic = &totals(&total, &[], 1.0)["quic"];
        assert_eq!(quic["handshakes"], 2, "{quic}");
        assert_eq!(
            (&quic["packets_lost"], &quic["packets_sent"]),
            (&json!(4), &json!(900))
        );
        assert_eq!(quic["ended"], json!({"idle_timeout": 1}), "{quic}");
        assert_eq!(quic["ended_by_server"], 1, "{quic}");
    }

    #[test]
    fn server_timing_rows_are_in_the_totals_of_runs_that_read_it() {
        let mut total = Recorder::new();
        let now = std::time::Instant::now();
        for value in [Some(&b"app;dur=4, db;dur=1"[..]), None] {
            let ok = belier_stats::Outcome::Response { status: 200 };
            total.record(&belier_stats::Sample::simulated(now, 0, 10_000, ok));
            let header = belier_stats::TimingHeader::ServerTiming;
            total.record_server_timing(header, value, 10_000);
        }
        let st = &totals(&total, &[], 1.0)["server_timing"];
        assert_eq!(
            (&st["timed"], &st["missing"]),
            (&json!(1), &json!(1)),
            "{st}"
        );
        let names: Vec<&str> = st["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["app", "db", "server's time", "outside"]);
        let outside = st["rows"][3]["p50_ms"].as_f64().unwrap();
        assert!((outside - 6.0).abs() <= 0.006, "{st}");
        let plain = totals(&Recorder::new(), &[], 1.0);
        assert!(plain.get("server_timing").is_none(), "{plain}");
    }

    fn point(requests: u64) -> Point {
        let mut r = Recorder::new();
        r.record_errors(belier_stats::ErrorKind::ALL[0], requests);
        Point::of(
            &r,
            Gauges::default(),
            Duration::ZERO,
            Duration::from_secs(1),
        )
    }

    #[test]
    fn one_run_at_a_time_and_its_intervals_stay_bounded() {
        let (run, control) = control();
        let hub = Hub::default();
        let mut events = hub.subscribe();
        assert!(hub.reserve() && !hub.reserve(), "one launch at a time");
        hub.release();
        assert!(!hub.busy());
        let id = hub.begin(RunStart {
            settings: json!({"url": "http://127.0.0.1:9/"}),
            unit: Unit::Rate,
            control,
            steps: vec![],
        });
        assert_eq!(id, 1);
        assert!(hub.busy() && !hub.reserve());
        hub.interval(id, &point(1), &Recorder::new());
        assert!(events.try_recv().unwrap().starts_with("begin\n"));
        assert!(events.try_recv().unwrap().starts_with("interval\n{"));
        let (two, total) = (point(2), Recorder::new());
        for _ in 0..KEPT_INTERVALS + 3 {
            hub.interval(id, &two, &total);
        }
        let current = hub.current();
        assert_eq!(
            current["intervals"].as_array().unwrap().len(),
            KEPT_INTERVALS
        );
        assert_eq!(current["latest"]["requests"], 2);
        assert!(
            current["latest"].get("held").is_none(),
            "no connections were held"
        );
        assert_eq!(current["state"], "running");
        // A page that read too slowly skips to the latest events.
        assert!(matches!(
            events.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(_))
        ));
        assert!(events.try_recv().unwrap().starts_with("interval\n"));
        // A run holding connections shows how many were open at the interval's end.
        let mut holding = Recorder::new();
        holding.record_held_opened();
        let held = Point::of(
            &Recorder::new(),
            Gauges {
                held: 40,
                ..Gauges::default()
            },
            Duration::ZERO,
            Duration::from_secs(1),
        );
        hub.interval(id, &held, &holding);
        assert_eq!(hub.current()["latest"]["held"], 40);
        // Changes through the handle show in the steering and its history.
        assert_eq!(hub.steer(|c, _| c.set_level(3.0)), Some(Ok(())));
        assert_eq!(hub.current()["steering"]["history"][0]["level"], 3.0);
        assert!(!hub.stop_requested(id));
        assert!(hub.stop() && hub.stop_requested(id));
        hub.end(
            id,
            RunEnd {
                report: Report::Html("<html>".into()),
                results: None,
                interrupted: true,
            },
        );
        assert!(!hub.busy() && !hub.stop(), "nothing left to stop");
        assert!(hub.steer(|_, _| ()).is_none(), "nothing left to steer");
        let list = hub.list();
        assert_eq!(list[0]["state"], "ended");
        assert_eq!(list[0]["report"], "/runs/1/report.html");
        assert!(list[0].get("results").is_none() && list[0].get("intervals").is_none());
        assert_eq!(hub.report(1), Some(Ok("<html>".into())));
        assert_eq!(hub.report(2), None);
        run.stop();
        run.join();
    }
}
