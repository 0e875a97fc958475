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
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Extension, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use http_body_util::BodyExt;
use tokio::sync::mpsc;

use crate::clock::{instant_at, wall_ns};
use crate::protocol::{
    path, ClockReading, Hello, Job, Note, Refusal, Start, Steering, MAX_MESSAGE_BYTES,
    MAX_PREPARE_BYTES, PROTOCOL,
};

pub mod admit;
mod listen;

use listen::{Connection, Served};

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
    /// The token coordinators must send (`Authorization: Bearer TOKEN`): a worker has one
    /// even on the loopback, where any local process and any web page could reach it.
    pub token: String,
    /// Where each run's directory goes (`run-N/`, its results file `run-N/results.jsonl`).
    pub dir: PathBuf,
    /// belier's version, told at hello.
    pub version: String,
}

/// What the worker is doing.
enum Slot {
    Idle,
    /// A prepare is reading its job or preparing its run: a second one waits its turn.
    Preparing,
    /// The run, its directory, and the connection that prepared it: only that connection
    /// starts it, and its close frees the worker.
    Ready(Box<dyn Prepared>, PathBuf, u64),
    Running(Arc<AtomicBool>, Arc<dyn Helm>),
}

struct Worker {
    options: Options,
    /// The address the worker is bound to, which requests must name.
    listen: SocketAddr,
    runner: Box<dyn Runner>,
    slot: Mutex<Slot>,
    runs: Mutex<u64>,
}

impl Worker {
    fn slot(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Served for Worker {
    fn stop_run(&self) {
        if let Slot::Running(stop, _) = &*self.slot() {
            stop.store(true, Ordering::Relaxed);
        }
    }

    /// A run the closed connection prepared and did not start is dropped.
    fn closed(&self, id: u64) {
        let mut slot = self.slot();
        if matches!(&*slot, Slot::Ready(_, _, by) if *by == id) {
            *slot = Slot::Idle;
        }
    }
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
        listen: listener.local_addr()?,
        options,
        runner,
        slot: Mutex::new(Slot::Idle),
        runs: Mutex::new(0),
    });
    let app = Router::new()
        .route(path::HELLO, post(hello))
        .route(path::CLOCK, post(clock))
        .route(path::PREPARE, post(prepare))
        .route(path::START, post(start))
        .route(path::STEER, post(steer))
        .route(path::ABORT, post(abort))
        // A prepare reads its own body, within its own bound, once it holds the worker.
        .layer(DefaultBodyLimit::max(MAX_MESSAGE_BYTES))
        .layer(middleware::from_fn_with_state(Arc::clone(&worker), guard))
        .with_state(Arc::clone(&worker));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let served = runtime.block_on(listen::serve(listener, app, worker, quit));
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}

/// Refuses a request that is not its coordinator's ([`admit`]), before its body is read.
async fn guard(State(w): State<Shared>, request: Request, next: Next) -> Response {
    match admit::admit(request.uri(), request.headers(), w.listen, &w.options.token) {
        Ok(()) => next.run(request).await,
        Err(r) => refuse(r.status, r.why),
    }
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
    crate::protocol::decode(body).map_err(|e| Box::new(refuse(StatusCode::BAD_REQUEST, e)))
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

/// The worker held by one prepare; let go (idle again) unless the prepare fills it.
struct Claim(Option<Shared>);

impl Claim {
    /// Holds the idle worker, or says what it is busy with.
    fn take(w: &Shared) -> Result<Claim, &'static str> {
        let mut slot = w.slot();
        match &*slot {
            Slot::Idle => {
                *slot = Slot::Preparing;
                Ok(Claim(Some(Arc::clone(w))))
            }
            Slot::Preparing => Err("another prepare is under way"),
            Slot::Ready(..) => Err("a run is prepared already"),
            Slot::Running(..) => Err("busy with another run"),
        }
    }

    fn fill(mut self, with: Slot) {
        if let Some(w) = self.0.take() {
            *w.slot() = with;
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        // Also when the prepare's request is dropped half-read.
        if let Some(w) = self.0.take() {
            let mut slot = w.slot();
            if matches!(*slot, Slot::Preparing) {
                *slot = Slot::Idle;
            }
        }
    }
}

fn too_large() -> Response {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "a job (with its files, in base64) is at most {MAX_PREPARE_BYTES} bytes on this worker"
        ),
    )
}

/// One prepare at a time: the worker is held before the job is read, and the job is read
/// within [`MAX_PREPARE_BYTES`], so no number of prepares can make it buffer more than one.
async fn prepare(
    State(w): State<Shared>,
    Extension(conn): Extension<Connection>,
    request: Request,
) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_PREPARE_BYTES as u64) {
        return too_large();
    }
    let claim = match Claim::take(&w) {
        Ok(c) => c,
        Err(why) => return refuse(StatusCode::CONFLICT, why.into()),
    };
    let limited = http_body_util::Limited::new(request.into_body(), MAX_PREPARE_BYTES);
    let body = match limited.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return too_large(),
        Err(e) => return refuse(StatusCode::BAD_REQUEST, format!("cannot read the job: {e}")),
    };
    let job: Job = match parse(&body) {
        Ok(j) => j,
        Err(r) => return *r,
    };
    if let Some(why) = crate::environment::problem(&job.env) {
        return refuse(StatusCode::UNPROCESSABLE_ENTITY, why);
    }
    let dir = {
        let mut runs = w.runs.lock().unwrap_or_else(PoisonError::into_inner);
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
            claim.fill(Slot::Ready(p, dir, conn.0));
            json(&serde_json::json!({}))
        }
        Err(why) => refuse(StatusCode::UNPROCESSABLE_ENTITY, why),
    }
}

/// The run prepared on this connection, now running; or why not.
fn take_ready(
    w: &Worker,
    conn: Connection,
    stop: &Arc<AtomicBool>,
) -> Result<(Box<dyn Prepared>, PathBuf), &'static str> {
    let mut slot = w.slot();
    match std::mem::replace(&mut *slot, Slot::Idle) {
        Slot::Ready(p, dir, by) if by == conn.0 => {
            *slot = Slot::Running(Arc::clone(stop), p.helm());
            Ok((p, dir))
        }
        other => {
            let why = match &other {
                Slot::Running(..) => "busy with another run",
                Slot::Ready(..) => "the run was prepared by another coordinator",
                Slot::Preparing => "a prepare is under way",
                Slot::Idle => "no run prepared",
            };
            *slot = other;
            Err(why)
        }
    }
}

async fn start(
    State(w): State<Shared>,
    Extension(conn): Extension<Connection>,
    body: Bytes,
) -> Response {
    let when: Start = match parse(&body) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    if let Err(why) = when.check(wall_ns()) {
        return refuse(StatusCode::BAD_REQUEST, why);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (prepared, dir) = match take_ready(&w, conn, &stop) {
        Ok(ready) => ready,
        Err(why) => return refuse(StatusCode::CONFLICT, why.into()),
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
        *worker.slot() = Slot::Idle;
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
    let helm = match &*w.slot() {
        Slot::Running(_, helm) => Arc::clone(helm),
        _ => return refuse(StatusCode::CONFLICT, "no run is going".into()),
    };
    match helm.steer(steering) {
        Ok(()) => json(&serde_json::json!({})),
        Err(why) => refuse(StatusCode::BAD_REQUEST, why),
    }
}

async fn abort(State(w): State<Shared>) -> Response {
    let mut slot = w.slot();
    match &*slot {
        Slot::Running(stop, _) => stop.store(true, Ordering::Relaxed),
        Slot::Ready(..) => *slot = Slot::Idle,
        Slot::Idle | Slot::Preparing => {}
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
