//! The worker: serves one run at a time to the coordinator that holds its token; each run's
//! results file stays in its own directory (`run-N/results.jsonl`).
//!
//! The run itself is the caller's: a [`Runner`] turns a [`Job`] (the run's arguments and
//! shard) into a [`Prepared`] run or a reason, and the prepared run, started at the agreed
//! instant, writes its results file as any run does. The worker follows that file as it grows
//! and streams it to the coordinator line by line, with a [`Note::Alive`] whenever a second
//! passes without one, so the coordinator can tell a silent worker from a quiet run. A
//! coordinator that goes away stops the run.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use tokio::sync::mpsc;

use crate::clock::{instant_at, wall_ns};
use crate::protocol::{
    path, same_secret, ClockReading, Hello, Job, Note, Refusal, Start, Steering, PROTOCOL,
};

/// How often the worker looks at the results file for new lines.
const FOLLOW: Duration = Duration::from_millis(20);
/// A [`Note::Alive`] goes after this long without a line.
const ALIVE: Duration = Duration::from_secs(1);

/// Turns jobs into runs: what the worker runs is the caller's.
pub trait Runner: Send + Sync + 'static {
    /// Validates `job` and makes its run ready to start, or says why it cannot run. `dir` is
    /// the worker's own directory for this run (a plan file sent with the job goes there).
    fn prepare(&self, job: &Job, dir: &Path) -> Result<Box<dyn Prepared>, String>;
}

/// Steers a running run for the coordinator.
pub trait Helm: Send + Sync {
    /// Holds `steering`'s level from now on (0: pause; a level while paused resumes at it),
    /// or says why the run cannot take it.
    fn steer(&self, steering: Steering) -> Result<(), String>;
}

/// The helm of a run that cannot be steered.
struct Fixed;

impl Helm for Fixed {
    fn steer(&self, _: Steering) -> Result<(), String> {
        Err("this run cannot be steered".into())
    }
}

/// A run ready to start.
pub trait Prepared: Send + 'static {
    /// What steers the run once it runs; by default, nothing: a steer is refused.
    fn helm(&self) -> Arc<dyn Helm> {
        Arc::new(Fixed)
    }

    /// Runs from `start` on, writing the run's results file to `results` (each record
    /// flushed as it is complete, the end line last), until the run ends or `stop` is set.
    /// Blocks until then; an error says why the run could not go on.
    fn run(
        self: Box<Self>,
        start: Instant,
        results: &Path,
        stop: Arc<AtomicBool>,
    ) -> Result<(), String>;
}

/// How a worker serves.
pub struct Options {
    /// The token coordinators must send; none: any local coordinator may use the worker.
    pub token: Option<String>,
    /// Where each run's directory goes (`run-N/`, its results file `run-N/results.jsonl`).
    pub dir: PathBuf,
    /// belier's version, told at hello.
    pub version: String,
}

/// What the worker is doing.
enum Slot {
    Idle,
    /// The run and its directory.
    Ready(Box<dyn Prepared>, PathBuf),
    Running(Arc<AtomicBool>, Arc<dyn Helm>),
}

struct Worker {
    options: Options,
    runner: Box<dyn Runner>,
    slot: Mutex<Slot>,
    runs: Mutex<u64>,
}

type Shared = Arc<Worker>;

/// Serves coordinators on `listener` until `quit` says so (checked every 100 ms); a run in
/// progress then stops first.
pub fn serve(
    listener: std::net::TcpListener,
    options: Options,
    runner: Box<dyn Runner>,
    quit: impl Fn() -> bool + Send + 'static,
) -> std::io::Result<()> {
    std::fs::create_dir_all(&options.dir)?;
    listener.set_nonblocking(true)?;
    let worker = Arc::new(Worker {
        options,
        runner,
        slot: Mutex::new(Slot::Idle),
        runs: Mutex::new(0),
    });
    let app = Router::new()
        .route(path::HELLO, post(hello))
        .route(path::CLOCK, post(clock))
        .route(
            path::PREPARE,
            post(prepare).layer(DefaultBodyLimit::max(crate::files::MAX_PREPARE_BYTES)),
        )
        .route(path::START, post(start))
        .route(path::STEER, post(steer))
        .route(path::ABORT, post(abort))
        .layer(middleware::from_fn_with_state(Arc::clone(&worker), guard))
        .with_state(Arc::clone(&worker));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let shutdown = async move {
            while !quit() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            if let Slot::Running(stop, _) = &*worker.slot.lock().expect("slot lock") {
                stop.store(true, Ordering::Relaxed);
            }
        };
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
    })
}

/// Refuses (401) a request without the worker's token.
async fn guard(State(w): State<Shared>, request: Request, next: Next) -> Response {
    if let Some(token) = &w.options.token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| same_secret(g.as_bytes(), token.as_bytes())) {
            return refuse(
                StatusCode::UNAUTHORIZED,
                "this worker takes work only from a coordinator with its token".into(),
            );
        }
    }
    next.run(request).await
}

fn refuse(status: StatusCode, error: String) -> Response {
    let body = serde_json::to_vec(&Refusal { error }).expect("a refusal serialises");
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn json<T: serde::Serialize>(value: &T) -> Response {
    let body = serde_json::to_vec(value).expect("a message serialises");
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The message in `body`, or the answer refusing it.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Box<Response>> {
    serde_json::from_slice(body).map_err(|e| {
        Box::new(refuse(
            StatusCode::BAD_REQUEST,
            format!("cannot read the message: {e}"),
        ))
    })
}

async fn hello(State(w): State<Shared>, body: Bytes) -> Response {
    let theirs: Hello = match parse(&body) {
        Ok(h) => h,
        Err(r) => return *r,
    };
    if theirs.protocol != PROTOCOL {
        return refuse(
            StatusCode::CONFLICT,
            format!(
                "protocol {} (belier {}) here, {} (belier {}) there",
                PROTOCOL, w.options.version, theirs.protocol, theirs.belier
            ),
        );
    }
    json(&Hello {
        protocol: PROTOCOL,
        belier: w.options.version.clone(),
    })
}

async fn clock() -> Response {
    json(&ClockReading { wall_ns: wall_ns() })
}

async fn prepare(State(w): State<Shared>, body: Bytes) -> Response {
    let job: Job = match parse(&body) {
        Ok(j) => j,
        Err(r) => return *r,
    };
    if matches!(*w.slot.lock().expect("slot lock"), Slot::Running(..)) {
        return refuse(StatusCode::CONFLICT, "busy with another run".into());
    }
    let dir = {
        let mut runs = w.runs.lock().expect("runs lock");
        *runs += 1;
        w.options.dir.join(format!("run-{runs}"))
    };
    let worker = Arc::clone(&w);
    let prepared = tokio::task::spawn_blocking(move || {
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        worker.runner.prepare(&job, &dir).map(|p| (p, dir))
    })
    .await
    .unwrap_or_else(|_| Err("preparing the run panicked".into()));
    match prepared {
        Ok((p, dir)) => {
            *w.slot.lock().expect("slot lock") = Slot::Ready(p, dir);
            json(&serde_json::json!({}))
        }
        Err(why) => refuse(StatusCode::UNPROCESSABLE_ENTITY, why),
    }
}

async fn start(State(w): State<Shared>, body: Bytes) -> Response {
    let when: Start = match parse(&body) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let (prepared, dir) = {
        let mut slot = w.slot.lock().expect("slot lock");
        match std::mem::replace(&mut *slot, Slot::Idle) {
            Slot::Ready(p, dir) => {
                *slot = Slot::Running(Arc::clone(&stop), p.helm());
                (p, dir)
            }
            other => {
                let why = match &other {
                    Slot::Running(..) => "busy with another run",
                    _ => "no run prepared",
                };
                *slot = other;
                return refuse(StatusCode::CONFLICT, why.into());
            }
        }
    };
    let (lines, out) = mpsc::channel::<Bytes>(64);
    let deadline = instant_at(when.local_ns());
    let results = dir.join("results.jsonl");
    let worker = Arc::clone(&w);
    std::thread::spawn(move || {
        let run = {
            let (results, stop) = (results.clone(), Arc::clone(&stop));
            std::thread::spawn(move || prepared.run(deadline, &results, stop))
        };
        let mut follower = Follower::new(results);
        while !run.is_finished() {
            if !follower.pump(&lines) {
                // The coordinator is gone: nobody is left to take the results.
                stop.store(true, Ordering::Relaxed);
            }
            std::thread::sleep(FOLLOW);
        }
        let failed = match run.join() {
            Ok(Ok(())) => None,
            Ok(Err(why)) => Some(why),
            Err(_) => Some("the run panicked".to_string()),
        };
        follower.pump(&lines);
        if let Some(why) = failed {
            let _ = lines.blocking_send(Bytes::from(Note::Failed(why).line()));
        }
        *worker.slot.lock().expect("slot lock") = Slot::Idle;
    });
    let stream = futures_util::stream::unfold(out, |mut out| async move {
        out.recv()
            .await
            .map(|line| (Ok::<_, std::convert::Infallible>(line), out))
    });
    (
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(stream),
    )
        .into_response()
}

async fn steer(State(w): State<Shared>, body: Bytes) -> Response {
    let steering: Steering = match parse(&body) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let helm = match &*w.slot.lock().expect("slot lock") {
        Slot::Running(_, helm) => Arc::clone(helm),
        _ => return refuse(StatusCode::CONFLICT, "no run is going".into()),
    };
    match helm.steer(steering) {
        Ok(()) => json(&serde_json::json!({})),
        Err(why) => refuse(StatusCode::BAD_REQUEST, why),
    }
}

async fn abort(State(w): State<Shared>) -> Response {
    let mut slot = w.slot.lock().expect("slot lock");
    match &*slot {
        Slot::Running(stop, _) => stop.store(true, Ordering::Relaxed),
        Slot::Ready(..) => *slot = Slot::Idle,
        Slot::Idle => {}
    }
    json(&serde_json::json!({}))
}

/// Follows a results file as the run writes it, line by line.
struct Follower {
    path: PathBuf,
    file: Option<std::fs::File>,
    /// The start of a line not yet complete.
    partial: Vec<u8>,
    last_sent: Instant,
}

impl Follower {
    fn new(path: PathBuf) -> Follower {
        Follower {
            path,
            file: None,
            partial: Vec::new(),
            last_sent: Instant::now(),
        }
    }

    /// Sends the lines completed since the last call (or a [`Note::Alive`] after a quiet
    /// second); false once the coordinator no longer takes them.
    fn pump(&mut self, lines: &mpsc::Sender<Bytes>) -> bool {
        if self.file.is_none() {
            self.file = std::fs::File::open(&self.path).ok();
        }
        if let Some(file) = &mut self.file {
            // A read error is a line not readable yet; the next call tries again.
            let _ = file.read_to_end(&mut self.partial);
        }
        let mut open = true;
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            open &= lines.blocking_send(Bytes::from(line)).is_ok();
            self.last_sent = Instant::now();
        }
        if self.last_sent.elapsed() >= ALIVE {
            open &= lines
                .blocking_send(Bytes::from(Note::Alive {}.line()))
                .is_ok();
            self.last_sent = Instant::now();
        }
        open
    }
}
